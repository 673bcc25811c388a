"""What lessons 7.1 and 7.2's listings import: `from mjcourse import model_path`, the course's models by name.

    model_path("arm2")   # the planar two-link arm of lesson 7.1 (physai's bundled arm2.xml)
    model_path("arm7")   # the 7-dof arm with motors of lesson 7.2 (physai's stand-in for the course's own file)

Any name physai.models knows works too (bundled files, Menagerie robots). The lessons' runnable listings are
examples/l7_1_equations_of_motion.py and examples/l7_2_inverse_dynamics.py (MJC_FAST=1 for a quick run).
"""

from pathlib import Path

from physai import models

__all__ = ["model_path"]


def model_path(name: str) -> Path:
    """The MJCF file of the course's model `name` (physai.models.model_path: UnknownModelError naming the known ones)."""
    return models.model_path(name)

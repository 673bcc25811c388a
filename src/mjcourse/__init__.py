"""What lessons 7.1 and 7.2's listings import: `from mjcourse import model_path`, the course's models by name.

    model_path("arm2")   # the planar two-link arm of lesson 7.1 (physai's bundled arm2.xml)
    model_path("arm7")   # the 7-dof arm with motors of lesson 7.2 (physai's stand-in for the course's own file)

Any name physai.models knows works too (bundled files, Menagerie robots). The lessons' runnable listings are
examples/l7_1_equations_of_motion.py and examples/l7_2_inverse_dynamics.py (MJC_FAST=1 for a quick run).
"""

import os
import runpy
from pathlib import Path

from physai import models

__all__ = ["model_path", "run_script"]


def model_path(name: str) -> Path:
    """The MJCF file of the course's model `name` (physai.models.model_path: UnknownModelError naming the known ones)."""
    return models.model_path(name)


def run_script(script: Path) -> None:
    """Run a lesson's script as __main__ (the examples/l7_*.py listings' runner): MJC_FAST=1 is its PHYSAI_FAST=1
    (fewer states, no output file written)."""
    if os.environ.get("MJC_FAST") == "1":
        os.environ["PHYSAI_FAST"] = "1"
    runpy.run_path(str(script), run_name="__main__")

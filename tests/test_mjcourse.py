"""The lessons' listings find what they import and where they say to run: `from mjcourse import model_path` names the
course's models, and examples/l7_1_*.py, l7_2_*.py run the lessons' scripts (MJC_FAST=1 as their fast run)."""

import os
import subprocess
import sys
from pathlib import Path

import mujoco

from mjcourse import model_path

ROOT = Path(__file__).resolve().parents[1]


def test_model_path_names_the_course_models():
    for name, nv in (("arm2", 2), ("arm7", 7)):
        assert mujoco.MjModel.from_xml_path(str(model_path(name))).nv == nv


def run(args, env):
    return subprocess.run([sys.executable, *args], cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True,
                          timeout=600)


def test_the_lesson_listings_run_where_the_lessons_say():
    """Each example prints what the lesson's script prints with PHYSAI_FAST=1, and writes no file in the fast run."""
    for example, script in (("examples/l7_1_equations_of_motion.py", "experiments/equations-of-motion/equations_of_motion.py"),
                            ("examples/l7_2_inverse_dynamics.py", "experiments/inverse-dynamics/inverse_dynamics.py")):
        got = run([example], {"MJC_FAST": "1"})
        assert got.returncode == 0, got.stderr
        expected = run([script], {"PHYSAI_FAST": "1"})
        assert got.stdout == expected.stdout and got.stdout.count("\n") > 20, example

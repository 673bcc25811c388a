"""Lesson 7.1's listing, where the lesson says to run it: `python examples/l7_1_equations_of_motion.py` (MJC_FAST=1 for a quick run).

It runs physai's own script for the lesson, experiments/equations-of-motion/equations_of_motion.py,
which prints the lesson's numbers beside its own (MJC_FAST=1 is that script's PHYSAI_FAST=1: fewer states, and no
output file written).
"""

import os
import runpy
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "experiments" / "equations-of-motion/equations_of_motion.py"

if __name__ == "__main__":
    if os.environ.get("MJC_FAST") == "1":
        os.environ["PHYSAI_FAST"] = "1"
    runpy.run_path(str(SCRIPT), run_name="__main__")

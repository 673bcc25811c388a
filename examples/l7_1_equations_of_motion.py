"""Lesson 7.1's listing, where the lesson says to run it: `python examples/l7_1_equations_of_motion.py` (MJC_FAST=1 for a quick run).

It runs physai's own script for the lesson, experiments/equations-of-motion/equations_of_motion.py,
which prints the lesson's numbers beside its own (MJC_FAST=1 is that script's PHYSAI_FAST=1: fewer states, and no
output file written).
"""

from pathlib import Path

from mjcourse import run_script

if __name__ == "__main__":
    run_script(Path(__file__).resolve().parents[1] / "experiments" / "equations-of-motion/equations_of_motion.py")

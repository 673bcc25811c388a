"""`physai lesson N PART`: run one of a lesson's scripts (build, experiment, break-it, exercises) from anywhere, or
check the learner's own Build it code (`physai lesson 11 check PATH`: physai.lessons.check11).

The scripts live in the repository checkout, experiments/NN-name/; each is run as __main__ with the
remaining arguments, e.g. `physai lesson 11 break-it --dt 10`.
"""

import argparse
import runpy
import sys

from physai.exceptions import PhysaiError
from physai.lessons import check11, lesson_dir

#: PART on the command line -> script file in the lesson's folder
PARTS = {"build": "build.py", "experiment": "experiment.py", "break-it": "break_it.py", "exercises": "exercises.py"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("number", type=int, help="lesson number, e.g. 11")
    parser.add_argument("part", choices=list(PARTS) + ["check"],
                        help="which script to run; check PATH: run Build it's checks on your own file (lesson 11)")
    parser.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments passed on to the script")


def run(args: argparse.Namespace) -> int:
    if args.part == "check":
        if args.number != 11 or len(args.script_args) != 1:
            raise PhysaiError("usage: physai lesson 11 check PATH (your Build it file, e.g. scratch/my_dynamics.py); "
                              f"lesson {args.number} has no checker" if args.number != 11 else
                              "usage: physai lesson 11 check PATH (your Build it file, e.g. scratch/my_dynamics.py)")
        return check11.check_file(args.script_args[0])
    script = lesson_dir(args.number) / PARTS[args.part]
    if not script.is_file():
        raise PhysaiError(f"lesson {args.number} has no {args.part} script ({script} is missing)")
    saved = sys.argv
    sys.argv = [str(script), *args.script_args]
    try:
        runpy.run_path(str(script), run_name="__main__")
    except SystemExit as exc:                  # the scripts end with raise SystemExit(main())
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv = saved
    return 0

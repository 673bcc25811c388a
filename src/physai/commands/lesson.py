"""`physai lesson open PATH`: serve a lesson file as a page on 127.0.0.1 (physai.lesson_page), its math typeset, its labs
running, its knowledge checks to take and its checklist saved in the browser.
`physai lesson N PART`: run one of a lesson's scripts (build, experiment, break-it, exercises) from anywhere, or
check the learner's own Build it code (`physai lesson 11 check PATH`: physai.lessons.check11).

The scripts live in the repository checkout, experiments/NN-name/; each is run as __main__ with the
remaining arguments, e.g. `physai lesson 11 break-it --dt 10`.
"""

import argparse
import runpy
import sys

from physai.commands import OneLineParser
from physai.exceptions import InvalidArgumentError, LabError, PhysaiError
from physai.lab.npm import ensure_node_modules
from physai.lab.server import port_number, serve_until_interrupted
from physai.lesson_page.reader import read_lesson
from physai.lesson_page.server import make_server
from physai.lessons import check11, lesson_dir

#: PART on the command line -> script file in the lesson's folder
PARTS = {"build": "build.py", "experiment": "experiment.py", "break-it": "break_it.py", "exercises": "exercises.py"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("number", metavar="N | open", help="lesson number, e.g. 11; or open, then the lesson file")
    parser.add_argument("part", metavar="PART | PATH",
                        help=f"which script to run ({', '.join(PARTS)}); check PATH: run Build it's checks on your own "
                             "file (lesson 11); after open: the lesson file to serve")
    parser.add_argument("script_args", nargs=argparse.REMAINDER,
                        help="arguments passed on to the script; after open PATH: --port P (default 8766; 0: any "
                             "free port), --no-browser, --verbose, --untrusted (refuse a lesson whose labs hold "
                             "JavaScript)")


def run(args: argparse.Namespace) -> int:
    if args.number == "open":
        return open_lesson(args.part, args.script_args)
    try:
        number = int(args.number)
    except ValueError:
        raise InvalidArgumentError(f"expected a lesson number (e.g. 11) or 'open', got {args.number!r}") from None
    if args.part == "check":
        if number != 11 or len(args.script_args) != 1:
            raise PhysaiError("usage: physai lesson 11 check PATH (your Build it file, e.g. scratch/my_dynamics.py); "
                              f"lesson {number} has no checker" if number != 11 else
                              "usage: physai lesson 11 check PATH (your Build it file, e.g. scratch/my_dynamics.py)")
        return check11.check_file(args.script_args[0])
    if args.part not in PARTS:
        raise InvalidArgumentError(f"unknown part {args.part!r}; expected one of {', '.join(PARTS)}, or check PATH")
    script = lesson_dir(number) / PARTS[args.part]
    if not script.is_file():
        raise PhysaiError(f"lesson {number} has no {args.part} script ({script} is missing)")
    saved = sys.argv
    sys.argv = [str(script), *args.script_args]
    try:
        runpy.run_path(str(script), run_name="__main__")
    except SystemExit as exc:                  # the scripts end with raise SystemExit(main())
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv = saved
    return 0


def open_lesson(path: str, argv: list[str]) -> int:
    """`physai lesson open PATH [--port P] [--no-browser] [--verbose]`: serve the lesson until Ctrl-C."""
    parser = OneLineParser(prog="physai lesson open PATH")
    parser.add_argument("--port", default="8766", metavar="PORT")
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--untrusted", action="store_true")
    options, unknown = parser.parse_known_args(argv)
    if unknown:
        raise InvalidArgumentError(f"physai lesson open takes PATH [--port P] [--no-browser] [--verbose] [--untrusted]; "
                                   f"got {' '.join(unknown)}")
    port = port_number(options.port)
    page = read_lesson(path)                        # LessonError when unreadable: exit 2
    scripts = [f"lab {k} ({lab.title}): {', '.join(lab.scripts())}" for k, lab in enumerate(page.labs) if lab.scripts()]
    if scripts and options.untrusted:
        raise LabError(f"{path}: its labs hold JavaScript, which would run in your browser ({'; '.join(scripts)}); "
                       "--untrusted serves only lessons whose labs hold no scripts. Read them, and open the lesson "
                       "without --untrusted if you trust its author")
    if scripts:
        page.notes.append("the lesson's labs run their JavaScript in your browser (a lab is code): open only lessons "
                          "you trust, or use --untrusted")
    server = make_server(page, port, quiet=not options.verbose)
    ensure_node_modules()
    for note in page.notes:
        print(f"physai lesson: note: {note}")
    counts = {kind: sum(b["kind"] == kind for b in page.blocks) for kind in ("lab", "check", "questions")}
    print(f"physai lesson: {page.title!r} ({path}: {counts['lab']} labs, {counts['check'] + counts['questions']} "
          f"question groups, {len(page.questions())} questions) at {server.url}  (Ctrl-C stops)", flush=True)
    return serve_until_interrupted(server, not options.no_browser)

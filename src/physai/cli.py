"""The `physai` command line: one subcommand per module in physai.commands."""

import importlib
import sys

from physai.commands import OneLineParser, one_line
from physai.exceptions import PhysaiError

#: subcommand name -> module in physai.commands that defines add_arguments(parser) and run(args) -> exit status
COMMANDS = {
    "verify": "Compare physai's dynamics with MuJoCo's on a model (a name or an MJCF file), with timings.",
    "lesson": "Open a lesson as a page (open PATH), or run its scripts: build, experiment, break-it, exercises, check.",
    "check": "The four acceptance checks of the manipulator equation on a model (a name or an MJCF file), "
             "plus the full balance against MuJoCo.",
    "lab": "Serve a lesson's interactive lab (MuJoCo in the browser) on 127.0.0.1.",
    "view": "Replay a saved physai trajectory (Trajectory.save) in the browser on 127.0.0.1, or render one moment to a PNG.",
}


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="physai", description="Rigid-body dynamics of robots, checked against MuJoCo.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    modules = {}
    for name, help_text in COMMANDS.items():
        try:
            modules[name] = importlib.import_module(f"physai.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"physai.commands.{name}":
                raise
            continue
        modules[name].add_arguments(sub.add_parser(name, help=help_text, description=help_text))
    args = parser.parse_args(argv)
    try:
        return modules[args.command].run(args)
    except PhysaiError as exc:
        print(f"physai {args.command}: error: {one_line(exc)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

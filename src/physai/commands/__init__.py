"""The `physai` subcommands, one module each (add_arguments, run), and the argument types they share."""

import argparse

from physai.exceptions import InvalidArgumentError


class OneLineParser(argparse.ArgumentParser):
    """argparse's parser whose usage errors are one line on stderr, exit status 2, pointing to --help for the usage."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {one_line(message)} (--help shows the usage)\n")


def one_line(message: object) -> str:
    """A message as one line: its lines (a MuJoCo compile error's "Element 'geom', line 1") joined by "; "."""
    return "; ".join(line.strip() for line in str(message).splitlines() if line.strip())


def positive_int(text: str) -> int:
    """argparse type of a count such as --states: a whole number >= 1, else a clear usage error."""
    return _whole_number(text, 1)


def nonnegative_int(text: str) -> int:
    """argparse type of a seed such as --seed: a whole number >= 0, else a clear usage error."""
    return _whole_number(text, 0)


def _whole_number(text: str, low: int) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= {low}, got {text!r}") from None
    if n < low:
        raise argparse.ArgumentTypeError(f"expected a whole number >= {low}, got {n}")
    return n


def require_joints(name: str, nv: int) -> None:
    """InvalidArgumentError for a model without joints: there is no dynamics to compare."""
    if nv == 0:
        raise InvalidArgumentError(f"{name} has no joints (nv = 0), so it has no dynamics to compare; expected a model "
                                   "with at least one joint")

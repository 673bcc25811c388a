"""The `physai` subcommands, one module each (add_arguments, run), and the argument types they share."""

import argparse

from physai import validation
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


def require_memory(states: int, nq: int, nv: int) -> None:
    """InvalidArgumentError, before anything is allocated, when --states N random states of a model (nq, nv) would not
    fit in this machine's memory: each keeps q, about 16 vectors of nv and two nv x nv matrices (8 bytes a number)."""
    size = 8 * states * (nq + 16 * nv + 2 * nv * nv)
    memory = validation.machine_memory()
    if size > memory:
        raise InvalidArgumentError(f"--states {states}: the states and their results would take {size / 1e9:.3g} GB, more "
                                   f"than this machine's {memory / 1e9:.3g} GB of memory; expected fewer states")


def require_joints(name: str, nv: int) -> None:
    """InvalidArgumentError for a model without joints: there is no dynamics to compare."""
    if nv == 0:
        raise InvalidArgumentError(f"{name} has no joints (nv = 0), so it has no dynamics to compare; expected a model "
                                   "with at least one joint")

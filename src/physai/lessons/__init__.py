"""Helpers shared by the lessons' scripts in experiments/ (one module per lesson, e.g. physai.lessons.lesson11).

    out = Transcript()          # print and keep every line
    out("== Step 1 ==")
    out.save(here / "build_output.txt")

    experiments_dir()           # <checkout>/experiments, where the lessons' scripts live
    lesson_dir(11)              # <checkout>/experiments/11-rigid-body-dynamics

    bound(3.6e-15, 1e-13, "N m")   # '< 1e-13 N m': a residual at machine precision, printed so that saved
                                    # outputs are the same on every CPU; raises ResidualAboveBound if it is not
"""

import math

from pathlib import Path

from physai.exceptions import PhysaiError

#: Repository checkout that holds this package (src/physai/lessons -> three levels up).
REPO_ROOT = Path(__file__).resolve().parents[3]


class Transcript:
    """Prints lines and keeps them, so a script can write exactly what it printed to a file."""

    def __init__(self, echo: bool = True):
        self.lines: list[str] = []
        self.echo = echo

    def __call__(self, line: str = "") -> None:
        self.lines.append(line)
        if self.echo:
            print(line, flush=True)

    def text(self) -> str:
        """Everything so far, one line each, ending with a newline."""
        return "\n".join(self.lines) + "\n"

    def save(self, path: Path) -> None:
        """Write the transcript to `path` (UTF-8, '\\n' line ends, so reruns are byte-identical)."""
        Path(path).write_text(self.text(), encoding="utf-8", newline="\n")


class ResidualAboveBound(PhysaiError, ArithmeticError):
    """A residual a lesson script prints as a bound is not below that bound (or is not finite)."""


def bound(value: float, limit: float, unit: str = "", what: str = "residual") -> str:
    """A residual at machine precision as the bound it stays under: '< 1e-13 N m'.

    The last digits of such a residual depend on the CPU and the BLAS kernel numpy picks, so saved outputs print
    the bound instead. `limit` is chosen with a margin, 7 times or more the worst value seen on the kernels tried
    (OpenBLAS Prescott, Haswell and SkylakeX, and SkylakeX with numpy's AVX-512 loops disabled), and the tests
    assert the value itself against the same limit. The bound is checked here, on every run: when |value|
    is not below `limit`, or is NaN, ResidualAboveBound is raised instead of printing a false claim.
    """
    v = abs(float(value))
    if not (math.isfinite(limit) and limit > 0):
        raise ValueError(f"limit must be a finite number > 0, got {limit!r}")
    if not v < limit:
        raise ResidualAboveBound(f"{what} is {float(value):.3e}{' ' + unit if unit else ''}, not below its bound "
                                 f"{limit:g}: the printed claim would be false")
    mantissa, exponent = f"{limit:e}".split("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    return f"< {mantissa}e{int(exponent)}" + (f" {unit}" if unit else "")


def experiments_dir() -> Path:
    """The checkout's experiments/ folder; raises PhysaiError when physai is not run from a checkout."""
    path = REPO_ROOT / "experiments"
    if not path.is_dir():
        raise PhysaiError(f"no experiments folder at {path}; the lessons' scripts ship with the repository "
                          "checkout, not with an installed wheel")
    return path


def lesson_dir(number: int) -> Path:
    """The folder of lesson `number`, e.g. experiments/11-rigid-body-dynamics; raises PhysaiError if absent."""
    found = sorted(experiments_dir().glob(f"{number:02d}-*"))
    if not found:
        raise PhysaiError(f"there is no lesson {number} to run; lessons with scripts: "
                          f"{', '.join(str(n) for n in lesson_numbers())}")
    return found[0]


def lesson_numbers() -> list[int]:
    """The numbers of the lessons whose scripts are in experiments/ (its folders NN-name)."""
    return sorted(int(p.name[:2]) for p in experiments_dir().glob("[0-9][0-9]-*") if p.is_dir())

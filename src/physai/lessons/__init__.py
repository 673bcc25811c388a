"""Helpers shared by the lessons' scripts in experiments/ (one module per lesson, e.g. physai.lessons.lesson11).

    out = Transcript()          # print and keep every line
    out("== Step 1 ==")
    out.save(here / "build_output.txt")

    experiments_dir()           # <checkout>/experiments, where the lessons' scripts live
    lesson_dir(11)              # <checkout>/experiments/11-rigid-body-dynamics
"""

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
        raise PhysaiError(f"lesson {number} has no folder {number:02d}-* in {experiments_dir()}")
    return found[0]

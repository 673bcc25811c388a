"""Test support, not shipped: the course's lessons (../shared/seeds/, beside the checkout) and physai's example lesson,
and their knowledge checks decoded from the text by the JSON decoder (never by physai's reader)."""

import json
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SEEDS = REPO.parent / "shared" / "seeds"
EXAMPLE = REPO / "docs" / "lesson_example.md"


def seed(number: str) -> Path:
    """The seed file NNN_*.txt; a failure (not a skip) when the shared folder is missing."""
    found = sorted(SEEDS.glob(f"{number}_*.txt"))
    assert found, f"seed {number} not found in {SEEDS} (the shared folder beside the checkout)"
    return found[0]


def json_checks(text: str) -> list[dict]:
    """The knowledge-check objects of a lesson's text: each line that opens a JSON object, decoded where it is one."""
    decoder, found = json.JSONDecoder(), []
    for m in re.finditer(r"^\{", text, flags=re.M):
        try:
            value, _ = decoder.raw_decode(text, m.start())
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict) and "questions" in value:
            found.append(value)
    return found

"""Shared test setup: Menagerie robots come from ../shared/menagerie unless MENAGERIE_ROOT is set."""

import os
from pathlib import Path

_MIRROR = Path(__file__).resolve().parents[1].parent / "shared" / "menagerie"
if "MENAGERIE_ROOT" not in os.environ and _MIRROR.is_dir():
    os.environ["MENAGERIE_ROOT"] = str(_MIRROR)

# hypothesis: the CI profile draws the same 100 examples on every run (derandomize, no example database);
# HYPOTHESIS_PROFILE=explore draws 1000 fresh ones each run.
from hypothesis import settings  # noqa: E402

settings.register_profile("ci", derandomize=True, max_examples=100, deadline=None, database=None, print_blob=True)
settings.register_profile("explore", max_examples=1000, deadline=None, database=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

"""Shared test setup: Menagerie robots come from ../shared/menagerie unless MENAGERIE_ROOT is set."""

import os
from pathlib import Path

_MIRROR = Path(__file__).resolve().parents[1].parent / "shared" / "menagerie"
if "MENAGERIE_ROOT" not in os.environ and _MIRROR.is_dir():
    os.environ["MENAGERIE_ROOT"] = str(_MIRROR)

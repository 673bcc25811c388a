"""Debian's Chromium, never a downloaded one: what the headless pictures of `physai view --out` and the browser tests
(tests/lab/browser.py) launch through Playwright.

chromium_executable() returns the real binary (not the /usr/bin shell wrappers, whose `[` test misfires under
Playwright): $PHYSAI_CHROMIUM if set, else Debian's chromium-headless-shell, else Debian's chromium.
"""

import os
from pathlib import Path

from physai.exceptions import PhysaiError

CANDIDATES = ("/usr/lib/chromium/chromium-headless-shell", "/usr/lib/chromium/chromium")


def chromium_executable() -> Path:
    """Path of the Chromium binary to launch; PhysaiError naming the install command if there is none."""
    override = os.environ.get("PHYSAI_CHROMIUM")
    if override:
        if not Path(override).is_file():
            raise PhysaiError(f"PHYSAI_CHROMIUM={override} is not a file")
        return Path(override)
    for candidate in CANDIDATES:
        if Path(candidate).is_file():
            return Path(candidate)
    raise PhysaiError("no Chromium found (looked for " + ", ".join(CANDIDATES) + "); install Debian's headless shell: "
                      "apt-get install chromium-headless-shell (.ci/run does this), or set PHYSAI_CHROMIUM")

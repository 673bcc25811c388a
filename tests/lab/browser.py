"""Test support, not shipped: the headless browser tests/test_lab.py and scripts/lab_screenshot.py drive, Debian's Chromium,
never a downloaded one.

chromium_executable() returns the real binary (not the /usr/bin shell wrappers, whose `[` test misfires under
Playwright): $PHYSAI_CHROMIUM if set, else Debian's chromium-headless-shell, else Debian's chromium.
.ci/run installs chromium-headless-shell with apt-get when it is missing.
"""

import os
import re
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
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


def chromium_version(executable: Path) -> str:
    """`chromium --version`, e.g. 'Chromium 156.0.8078.114'."""
    return subprocess.run([str(executable), "--version"], capture_output=True, text=True, timeout=30).stdout.strip()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def command_url(*args: str):
    """`physai ARGS --no-browser --port <a free port>` (physai lab, physai lesson open) in a process; yields the URL
    it prints, and stops it on exit."""
    command = [sys.executable, "-m", "physai.cli", *args, "--no-browser", "--port", str(free_port())]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        lines, url, deadline = [], None, time.time() + 300      # the first run may npm ci
        while url is None and time.time() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            match = re.search(r"http://127\.0\.0\.1:\d+/", line)
            url = match.group(0) if match else None
        assert url, f"physai {' '.join(args)} printed no URL:\n{''.join(lines)}"
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)

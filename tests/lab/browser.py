"""Test support, not shipped: the headless browser tests/test_lab.py and scripts/lab_screenshot.py drive, Debian's Chromium,
never a downloaded one.

chromium_executable (physai.lab.chromium, shared with `physai view --out`) returns the real binary; .ci/run installs
chromium-headless-shell with apt-get when it is missing.
"""

import re
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from physai.lab.chromium import chromium_executable  # noqa: F401 (the tests import it from here)


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

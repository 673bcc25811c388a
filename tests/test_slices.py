"""The suite's slices (tests/conftest.py): a test marked browser or compiled skips, with the reason, where Chromium or
the compiled extension is missing, and fails instead on CI (CI=true), so no marker hides a test CI should run; the
marker lists name files and tests that exist."""

import re
from pathlib import Path

import conftest
import pytest

from physai.engine import native

HERE = Path(__file__).resolve().parent

NEEDS_BOTH = """
import pytest

@pytest.mark.browser
def test_in_chromium():
    pass

@pytest.mark.compiled
def test_on_the_extension():
    pass

def test_plain():
    pass
"""


@pytest.fixture
def nothing_installed(pytester, monkeypatch, tmp_path):
    """A test file needing Chromium and the extension, on a machine that has neither (the guard is conftest's)."""
    monkeypatch.setenv("PHYSAI_CHROMIUM", str(tmp_path / "no-chromium"))
    monkeypatch.setattr(native, "available", lambda: False)
    pytester.makeini("[pytest]\nmarkers =\n    browser\n    compiled\n")
    pytester.makepyfile(NEEDS_BOTH)
    return pytester


def test_a_missing_requirement_skips_with_its_reason(nothing_installed, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    result = nothing_installed.runpytest_inprocess("-rs", "-p", "no:randomly", plugins=[conftest])
    result.assert_outcomes(passed=1, skipped=2)
    result.stdout.fnmatch_lines(["*browser: PHYSAI_CHROMIUM=*no-chromium is not a file*",
                                 "*compiled: the compiled extension physai.engine._native is not built*"])


def test_on_ci_a_missing_requirement_fails(nothing_installed, monkeypatch):
    monkeypatch.setenv("CI", "true")
    result = nothing_installed.runpytest_inprocess("-p", "no:randomly", plugins=[conftest])
    result.assert_outcomes(passed=1, errors=2)                   # failed in its setup: the run fails
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*CI runs every test, and this one (browser) cannot run here*",
                                 "*CI runs every test, and this one (compiled) cannot run here*"])


def test_the_marker_lists_name_existing_tests():
    for marker, files in conftest.FILE_MARKERS.items():
        missing = sorted(f for f in files if not (HERE / f).is_file())
        assert not missing, f"conftest.FILE_MARKERS[{marker!r}] names files that do not exist: {missing}"
    for table in ("SLOW", "COMPILED"):
        for file, names in getattr(conftest, table).items():
            source = (HERE / file).read_text() if (HERE / file).is_file() else ""
            gone = sorted(n for n in names if not re.search(rf"^def {re.escape(n)}\(", source, re.MULTILINE))
            assert not gone, f"conftest.{table}[{file!r}] names tests that are not in it: {gone}"

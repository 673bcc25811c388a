"""Shared test setup: Menagerie robots come from ../shared/menagerie unless MENAGERIE_ROOT is set; the hypothesis
profiles; the `robot` and `restore_isa` fixtures. Plain helpers (the model table, Robot, assert_close, run on a
backend, assert_same_text) are in tests/helpers.py."""

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


# the `robot` fixture: one helpers.Robot per key of the test module's ROBOTS (module scope), made with the module's
# ROBOT_STATES (n, seed, qd_max); test ids are the keys.
import pytest  # noqa: E402

from helpers import Robot  # noqa: E402
from physai.engine import native  # noqa: E402


def pytest_generate_tests(metafunc):
    if "robot" in metafunc.fixturenames and hasattr(metafunc.module, "ROBOTS"):
        metafunc.parametrize("robot", list(metafunc.module.ROBOTS), indirect=True, scope="module")


@pytest.fixture(scope="module")
def robot(request):
    return Robot(request.param, **getattr(request.module, "ROBOT_STATES", {}))


@pytest.fixture
def restore_isa():
    """The batch kernel's variant (physai.engine.native.set_isa) as it was before the test."""
    before = native.isa()
    yield
    assert native.set_isa(before)

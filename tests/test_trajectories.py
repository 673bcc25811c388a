"""The minimum-jerk path: boundary conditions, derivatives consistent with its positions, bad input."""

import numpy as np
import pytest

from physai.exceptions import InvalidArgumentError, ShapeError
from physai.trajectories import min_jerk

Q0, Q1, T = np.array([0.1, -0.2]), np.array([0.9, 0.4]), 1.5


def test_starts_and_ends_at_rest():
    path = min_jerk(Q0, Q1, T)
    for t, q in ((0.0, Q0), (T, Q1), (T + 1.0, Q1)):
        p, v, a = path(t)
        np.testing.assert_allclose(p, q, atol=1e-15)
        np.testing.assert_allclose(v, 0, atol=1e-15)
        np.testing.assert_allclose(a, 0, atol=1e-13)


def test_velocity_and_acceleration_are_the_derivatives():
    path, h = min_jerk(Q0, Q1, T), 1e-5
    for t in np.linspace(0.1, T - 0.1, 7):
        (pm, vm, _), (_, v, a), (pp, vp, _) = path(t - h), path(t), path(t + h)
        np.testing.assert_allclose((pp - pm) / (2 * h), v, atol=1e-9)
        np.testing.assert_allclose((vp - vm) / (2 * h), a, atol=1e-8)


def test_bad_input():
    with pytest.raises(ShapeError, match="q1 has 3 entries, the model needs 2"):
        min_jerk(Q0, np.zeros(3), T)
    for duration in (0.0, -1.0, np.nan, np.inf, None, "two", "1.5", [1.5, 2.0], True):
        with pytest.raises(InvalidArgumentError, match=r"duration is .*; expected a finite number > 0 \[s\]"):
            min_jerk(Q0, Q1, duration)


@pytest.mark.parametrize("t", [np.array([0.1, 0.2]), [0.5], np.nan, -np.inf, None, "soon", False])
def test_time_must_be_one_finite_number(t):
    """An array of two times with two joints used to broadcast time against joint; NaN gave NaN positions."""
    with pytest.raises(InvalidArgumentError, match=r"t is .*; expected a finite number \[s\]"):
        min_jerk(Q0, Q1, T)(t)
    p, v, a = min_jerk(Q0, Q1, T)(np.float64(0.3))
    assert p.shape == v.shape == a.shape == (2,)

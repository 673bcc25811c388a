"""The minimum-jerk path against the quintic through its six boundary conditions (solved independently with
numpy.polynomial) and against finite differences of its own positions; bad input."""

import numpy as np
import pytest

from numpy.polynomial import Polynomial

from physai.exceptions import InvalidArgumentError, ShapeError
from physai.trajectories import min_jerk

Q0, Q1, T = np.array([0.1, -0.2]), np.array([0.9, 0.4]), 1.5


def quintic(q0: float, q1: float, T: float) -> Polynomial:
    """The degree-5 polynomial with q(0) = q0, q(T) = q1 and zero velocity and acceleration at both ends: the six
    boundary conditions solved as a linear system for the coefficients, without the closed form min_jerk uses."""
    basis = [Polynomial.basis(k) for k in range(6)]
    A = np.array([[p.deriv(n)(t) if n else p(t) for p in basis] for n in (0, 1, 2) for t in (0.0, T)])
    return Polynomial(np.linalg.solve(A, [q0, q1, 0.0, 0.0, 0.0, 0.0]))


def test_matches_the_quintic_through_the_boundary_conditions():
    """Positions, velocities and accelerations at 101 times in [0, T] against the quintic, and held at q0 before
    the start and at q1 after the end. The acceleration's terms reach 180 |q1 - q0| / T^2 = 64 and cancel, so
    either evaluation rounds by ~eps * 64 = 1.4e-14 (1.8e-14 seen, 5.7e-15 for v, 2.3e-15 for q): bound 1e-13."""
    path = min_jerk(Q0, Q1, T)
    polys = [quintic(a, b, T) for a, b in zip(Q0, Q1)]
    for t in np.linspace(0.0, T, 101):
        for n, ours in enumerate(path(t)):
            ref = np.array([p.deriv(n)(t) if n else p(t) for p in polys])
            np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-13)
    for t, q in ((-0.5, Q0), (T + 1.0, Q1)):
        p, v, a = path(t)
        np.testing.assert_allclose(p, q, rtol=0, atol=2e-16)   # s clipped to 0 or 1; q0 + (q1 - q0) rounds within eps/2 of q1
        np.testing.assert_array_equal(v, 0)      # 30 - 60 + 30 and 60 - 180 + 120 are exactly 0
        np.testing.assert_array_equal(a, 0)


def test_velocity_and_acceleration_are_the_derivatives():
    """Central differences with h = 1e-5. Truncation h^2 max|q'''| / 6 = 2.4e-10 for v (|q'''| <= 60 |q1 - q0| / T^3)
    and h^2 max|q''''| / 6 = 9.5e-10 for a (|q''''| <= 360 |q1 - q0| / T^4); rounding eps |q| / h ~ 2e-11.
    Bounds 3e-10 and 1.2e-9 (1.5e-10 and 8.2e-10 seen; the old bounds were 1e-9 and 1e-8)."""
    path, h = min_jerk(Q0, Q1, T), 1e-5
    for t in np.linspace(0.1, T - 0.1, 7):
        (pm, vm, _), (_, v, a), (pp, vp, _) = path(t - h), path(t), path(t + h)
        np.testing.assert_allclose((pp - pm) / (2 * h), v, rtol=0, atol=3e-10)
        np.testing.assert_allclose((vp - vm) / (2 * h), a, rtol=0, atol=1.2e-9)


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

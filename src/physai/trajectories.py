"""Reference motions for inverse dynamics and replay tests."""

from collections.abc import Callable

import numpy as np

from physai import validation


def min_jerk(q0, q1, duration: float) -> Callable[[float], tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The minimum-jerk path from q0 to q1 in `duration` [s]: at(t) -> (q, qd, qdd), held at q1 after the end.

    q(t) = q0 + (q1 - q0) (10 s^3 - 15 s^4 + 6 s^5) with s = t / duration clipped to [0, 1]; it starts and ends
    at rest with zero acceleration. q0, q1: (n,) [rad | m]; duration a finite number > 0. at(t) takes one
    time t [s], a finite number (call it once per time), and returns three (n,) arrays [rad | m, /s, /s^2].
    Bad duration or t raise InvalidArgumentError.
    """
    q0 = validation.vector("q0", q0, np.size(q0))
    q1 = validation.vector("q1", q1, q0.size)
    duration = validation.number("duration", duration, "s", positive=True)

    def at(t: float):
        s = np.clip(validation.number("t", t, "s") / duration, 0.0, 1.0)
        p = 10 * s**3 - 15 * s**4 + 6 * s**5
        dp = (30 * s**2 - 60 * s**3 + 30 * s**4) / duration
        ddp = (60 * s - 180 * s**2 + 120 * s**3) / duration**2
        return q0 + (q1 - q0) * p, (q1 - q0) * dp, (q1 - q0) * ddp

    return at

"""Moving on the configuration manifold: integrate, difference and random states of a Model (physai.joints' rules).

    integrate(model, q, qd, dt)     q advanced by velocity qd for time dt  (MuJoCo's mj_integratePos)
    difference(model, q0, q1, dt)   the velocity that takes q0 to q1 in dt (MuJoCo's mj_differentiatePos)
    random_states(model, n, rng)    (q, qd): hinges and slides uniform in their range ([-pi, pi] or [-1, 1] m
                                    without one), free joints' positions in [-1, 1] m, quaternions uniform

q is (nq,) or (N, nq), qd (nv,) or (N, nv); dt [s] a finite number.
"""

import math

import numpy as np

from physai import joints, validation
from physai.engine import batching, native
from physai.engine.loaders import as_model
from physai.engine.model import Model
from physai.validation import states
from physai.exceptions import InvalidArgumentError, InvalidStateError


#: the compiled integrate and difference (physai.engine.native), named as the NumPy text names a result that is not finite
_INTEGRATE = native.kernel("integrate", "integrate", batching.result)
_DIFFERENCE = native.kernel("difference", "difference", batching.result)


def integrate(model: Model, q, qd, dt) -> np.ndarray:
    """q (+) dt qd: scalars add dt qd, quaternions turn by exp(dt w) in their own frame (mj_integratePos).

    Returns (nq,) or (N, nq); quaternions come out of unit length if they went in so (MuJoCo normalizes first).
    A zero quaternion in q raises InvalidStateError naming it (and the state of a batch); a result that overflows, one
    saying so.
    """
    if native.on:
        try:
            return _INTEGRATE(model, q, qd, dt if type(dt) is float and math.isfinite(dt) else validation.number("dt", dt, "s"))
        except InvalidStateError:                     # named after the fact: a zero quaternion, not an overflow
            model = as_model(model)
            _refuse_zero_quaternions(model, states(q=(q, model.nq))[0][0])
            raise
    model = as_model(model)
    h = validation.number("dt", dt, "s")
    (Q, V), batch = states(q=(q, model.nq), qd=(qd, model.nv))
    _refuse_zero_quaternions(model, Q)
    return batching.result(joints.integrate(model.coords, Q, V, h), batch, "integrate")


def difference(model: Model, q0, q1, dt=1.0) -> np.ndarray:
    """The velocity qd (nv,) or (N, nv) with integrate(q0, qd, dt) = q1 (mj_differentiatePos), dt > 0 [s].

    Quaternions are normalized first, as MuJoCo does; a zero quaternion in q0 or q1 raises InvalidStateError naming it.
    """
    if native.on:
        h = dt if type(dt) is float and math.isfinite(dt) and dt > 0 else validation.number("dt", dt, "s", positive=True)
        try:
            return _DIFFERENCE(model, q0, q1, h)
        except InvalidStateError:                     # named after the fact: a zero quaternion, not an overflow
            model = as_model(model)
            for name, q in (("q0", q0), ("q1", q1)):
                _refuse_zero_quaternions(model, states(**{name: (q, model.nq)})[0][0], name)
            raise
    model = as_model(model)
    h = validation.number("dt", dt, "s", positive=True)
    (Q0, Q1), batch = states(q0=(q0, model.nq), q1=(q1, model.nq))
    _refuse_zero_quaternions(model, Q0, "q0")
    _refuse_zero_quaternions(model, Q1, "q1")
    return batching.result(joints.difference(model.coords, Q0, Q1, h), batch, "difference")


def _refuse_zero_quaternions(model: Model, q: np.ndarray, name: str = "q") -> None:
    """InvalidStateError for the first zero quaternion of positions q in the engine's layout (nq, n): "q[3:7] is a zero
    quaternion (state 2); ..." (physai.joints.quat_to_mat's words; q named `name`)."""
    iq = model.coords.quats()[0]
    if len(iq):
        joints.quat_to_mat(q[iq], iq[:, 0], name)


def scalar_ranges(model: Model, ranges=None) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) for each scalar coordinate of q (model.coords.scalar_q): ranges maps a q index to (low, high)
    (e.g. MuJoCo's limited joints); otherwise [-pi, pi] for hinges and [-1, 1] m for slides and free positions."""
    c = model.coords
    hinge_q = set(model.jnt_qposadr[model.jnt_type == joints.HINGE].tolist())
    low = np.array([-np.pi if i in hinge_q else -1.0 for i in c.scalar_q])
    high = -low
    for k, i in enumerate(c.scalar_q.tolist()):
        if ranges is not None and i in ranges:
            low[k], high[k] = validation.vector(f"ranges[{i}]", ranges[i], 2)
            if low[k] > high[k]:
                raise InvalidArgumentError(f"ranges[{i}] is ({low[k]:g}, {high[k]:g}), an inverted range; expected "
                                           "(low, high) with low <= high")
    return low, high


def random_states(model: Model, n: int, rng=None, qd_max: float = 1.0, ranges=None) -> tuple[np.ndarray, np.ndarray]:
    """n random states (q (n, nq), qd (n, nv)): q as in scalar_ranges, quaternions uniform on SO(3), qd uniform in
    [-qd_max, qd_max]. rng: a numpy Generator or a seed (default 0)."""
    model = as_model(model)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise InvalidArgumentError(f"the number of states must be a whole number >= 1, got {n!r}")
    qd_max = validation.number("qd_max", qd_max, "rad/s | m/s")
    if qd_max < 0:
        raise InvalidArgumentError(f"qd_max is {qd_max:g}; expected a finite number >= 0 [rad/s | m/s]")
    try:
        rng = np.random.default_rng(0 if rng is None else rng)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"rng is {rng!r}; expected a numpy Generator or an integer seed >= 0") from None
    low, high = scalar_ranges(model, ranges)
    q = joints.random_positions(model.coords, int(n), rng, low, high)
    return q, rng.uniform(-qd_max, qd_max, (int(n), model.nv))

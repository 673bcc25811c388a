"""physai.derivatives on the compiled backend (cpp/derivatives.h) against the NumPy text (physai.derivatives with PHYSAI_BACKEND=numpy).

On random states (engine.random_states, seeded) of the double pendulum, arm7, the Panda, the iiwa, the Unitree H1 and
tests/data/mixed_joints.xml (free, ball, multi-joint and welded bodies), one state per call and a batch, on every
instruction-set variant of the batch kernel: rnea_derivatives agrees within 1e-12 relative to each matrix's largest
entry; forward_dynamics_derivatives within max(1e-12, 1e-15 cond(M)) (two backward-stable solves, NumPy's LU inverse
and the kernel's Cholesky, differ by eps cond(M); the allowance of tests/test_backend.py). Inputs the kernel declines
(data=, lists, a zero quaternion, wrong shapes) take the NumPy text.
"""

from pathlib import Path

import numpy as np
import pytest

from physai import derivatives, engine
from physai.engine import native
from physai.exceptions import InvalidStateError, ShapeError
from helpers import run as on

MIXED = str(Path(__file__).parent / "data" / "mixed_joints.xml")
MODELS = ["double_pendulum", "arm7", "franka_emika_panda", "kuka_iiwa_14", "unitree_h1", MIXED]
N = 6
RTOL = 1e-12

class Robot:
    def __init__(self, name):
        self.model = engine.from_mujoco(name)
        self.q, self.qd = engine.random_states(self.model, N, 3, qd_max=2.0)
        rng = np.random.default_rng(4)
        self.qdd = rng.uniform(-3.0, 3.0, (N, self.model.nv))
        self.tau = rng.uniform(-5.0, 5.0, (N, self.model.nv))


@pytest.fixture(scope="module", params=MODELS, ids=lambda p: Path(p).stem)
def robot(request):
    return Robot(request.param)


def errors(actual, expected) -> np.ndarray:
    """Per state (N,): max |actual - expected| / max |expected| of one matrix (nv, nv) or a batch (N, nv, nv)."""
    a, e = np.asarray(actual).reshape(-1, *np.shape(actual)[-2:]), np.asarray(expected).reshape(-1, *np.shape(expected)[-2:])
    assert a.shape == e.shape
    return np.abs(a - e).max(axis=(1, 2)) / np.maximum(np.abs(e).max(axis=(1, 2)), 1e-300)


def allowance(robot, sl) -> np.ndarray:
    """Per state: max(1, 1e-3 cond(M)), so that the bound of forward dynamics derivatives is max(1e-12, 1e-15 cond(M))."""
    M = on("numpy", engine.mass_matrix, robot.model, np.atleast_2d(robot.q[sl]))
    return np.maximum(1.0, 1e-3 * np.linalg.cond(M))


CASES = {"rnea": (derivatives.rnea_derivatives, native.RNEA_DERIVATIVES, "qdd"),
         "forward_dynamics": (derivatives.forward_dynamics_derivatives, native.FORWARD_DYNAMICS_DERIVATIVES, "tau")}


@pytest.mark.parametrize("case", list(CASES))
def test_compiled_equals_numpy(robot, case):
    f, op, last = CASES[case]
    model, x = robot.model, getattr(robot, last)
    for sl in (slice(None), 0, N - 1):                                 # a batch, then single states
        args = (robot.q[sl], robot.qd[sl], x[sl])
        assert on("native", native.derivatives, model, op, *args) is not None   # the compiled kernel takes these inputs
        compiled, reference = on("native", f, model, *args), on("numpy", f, model, *args)
        scale = allowance(robot, sl) if case == "forward_dynamics" else 1.0
        for c, r in zip(compiled, reference):
            assert np.shape(c) == np.shape(r) and c.dtype == np.float64
            assert (errors(c, r) / scale).max() <= RTOL, case


@pytest.fixture
def restore_isa():
    before = native.isa()
    yield
    assert native.set_isa(before)


@pytest.mark.parametrize("case", list(CASES))
def test_every_instruction_set_equals_numpy(robot, case, restore_isa):
    """A batch runs lanes of states side by side in the variant of native.isa() (N = 6 leaves a short last block);
    every variant this CPU has agrees with the NumPy text, and a state in a batch with the same state alone."""
    f, _, last = CASES[case]
    x = getattr(robot, last)
    reference = on("numpy", f, robot.model, robot.q, robot.qd, x)
    scale = allowance(robot, slice(None)) if case == "forward_dynamics" else np.ones(N)
    for variant in native.isas():
        assert native.set_isa(variant)
        batch = on("native", f, robot.model, robot.q, robot.qd, x)
        for b, r in zip(batch, reference):
            assert (errors(b, r) / scale).max() <= RTOL, variant
        for i in (0, N - 1):
            single = on("native", f, robot.model, robot.q[i], robot.qd[i], x[i])
            for b, s in zip(batch, single):
                assert errors(b[i], s).max() / scale[i] <= RTOL, variant


def test_shared_state_strided_inputs_and_declined_calls():
    """A single state shared by a batch, strided views, lists and data= give the same numbers (data= and lists on
    the NumPy text); a zero quaternion and a wrong shape raise the NumPy path's named errors."""
    robot = Robot(MIXED)
    model, nv = robot.model, robot.model.nv
    ref = on("numpy", derivatives.rnea_derivatives, model, robot.q, robot.qd, robot.qdd)
    shared = derivatives.rnea_derivatives(model, robot.q, robot.qd[0], robot.qdd)
    one = on("numpy", derivatives.rnea_derivatives, model, robot.q, np.broadcast_to(robot.qd[0], robot.qd.shape).copy(), robot.qdd)
    for c, r in zip(shared, one):
        assert errors(c, r).max() <= RTOL
    wide = np.zeros((N, 2 * nv))
    wide[:, ::2] = robot.qd                                            # a strided view of qd
    for c, r in zip(derivatives.rnea_derivatives(model, robot.q, wide[:, ::2], robot.qdd), ref):
        assert errors(c, r).max() <= RTOL
    for c, r in zip(derivatives.rnea_derivatives(model, robot.q[0].tolist(), robot.qd[0].tolist(), robot.qdd[0].tolist()),
                    derivatives.rnea_derivatives(model, robot.q[0], robot.qd[0], robot.qdd[0], data=engine.Data(model))):
        assert errors(c, r).max() <= RTOL
    zero = robot.q[0].copy()
    a = int(model.coords.quat_q[0])
    zero[a:a + 4] = 0.0
    for f in (derivatives.rnea_derivatives, derivatives.forward_dynamics_derivatives):
        assert native.derivatives(model, 0, zero, robot.qd[0], robot.qdd[0]) is None
        with pytest.raises(InvalidStateError):
            f(model, zero, robot.qd[0], robot.qdd[0])
        with pytest.raises(ShapeError, match="qd"):
            f(model, robot.q[0], robot.qd[0][:-1], robot.qdd[0])

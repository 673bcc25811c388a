"""The compiled backend (physai.engine._native, cpp/engine.cpp) against the NumPy reference (physai.engine.smooth, forward, api).

Every public engine function, on random states (engine.random_states, seeded) of the bundled models, the Panda, the
iiwa, the Unitree H1 and tests/data/mixed_joints.xml (free, ball, multi-joint bodies, welded bodies, tilted gravity):
native and NumPy agree within 1e-13 relative to the largest entry of each state's result; forward dynamics and aba
within max(1e-13, 1e-16 cond(M)), as two backward-stable solves (NumPy's LU, the kernel's Cholesky and ABA) can
differ by eps cond(M) (the iiwa without armature reaches cond(M) ~ 1e3-1e4). The compiled kernel runs the
same operations for a state alone and in a batch, so its result may not depend on the batch, its position in it or the
thread count beyond SAME (4 eps relative to the state's largest entry, times the allowance of forward dynamics).
Bad inputs raise the same named physai errors, with the same messages, on both backends.
"""

from pathlib import Path

import numpy as np
import pytest

from physai import engine, models
from physai.engine import native
from physai.exceptions import InvalidArgumentError, InvalidModelError, InvalidStateError, PhysaiError, ShapeError
from helpers import run

MIXED = str(Path(__file__).parent / "data" / "mixed_joints.xml")
MODELS = ["double_pendulum", "hinge_slide", "arm2", "arm7", "franka_emika_panda", "kuka_iiwa_14", "unitree_h1", MIXED]
FUNCTIONS = {   # name: the joint arrays it takes
    "rnea": "q qd qdd", "bias": "q qd", "gravity": "q", "mass_matrix": "q", "forward_dynamics": "q qd tau",
    "aba": "q qd tau", "energy": "q qd", "kinetic_energy": "q qd", "potential_energy": "q",
}
N = 12
RTOL = 1e-13
SAME = 4 * np.finfo(float).eps             # the same state on the compiled backend in another batch or on other threads



def test_the_compiled_backend_is_built():
    """uv sync builds the extension (a C++ compiler is a requirement): without it every comparison below would
    only compare the NumPy reference with itself, so its absence fails here instead of passing silently."""
    assert native.available(), "physai.engine._native is not built: run `uv sync` with a C++ compiler installed"


class Robot:
    def __init__(self, name):
        self.model = engine.from_mujoco(models.load(name))
        self.q, self.qd = engine.random_states(self.model, N, 0, qd_max=2.0)
        rng = np.random.default_rng(1)
        self.qdd = rng.uniform(-3.0, 3.0, (N, self.model.nv))
        self.tau = rng.uniform(-5.0, 5.0, (N, self.model.nv))

    def args(self, name, sl=slice(None)):
        return [getattr(self, a)[sl] for a in FUNCTIONS[name].split()]


@pytest.fixture(scope="module", params=MODELS, ids=lambda p: Path(p).stem)
def robot(request):
    return Robot(request.param)


def relative_error(actual, expected, scale=1.0) -> float:
    """max over states of max |actual - expected| / max(1e-300, max |expected|) / scale, per state (first axis of a
    batch); scale (N,) divides each state's error by its own allowance (1 for most quantities)."""
    a, e = np.atleast_1d(np.asarray(actual, float)), np.atleast_1d(np.asarray(expected, float))
    assert a.shape == e.shape
    a, e = a.reshape(len(a), -1) if a.ndim > 1 else a[:, None], e.reshape(len(e), -1) if e.ndim > 1 else e[:, None]
    return float((np.abs(a - e).max(axis=1) / np.maximum(np.abs(e).max(axis=1), 1e-300) / scale).max())


def allowance(robot, name, sl=slice(None)) -> np.ndarray:
    """Per state: 1, or for forward dynamics and aba max(1, 1e-3 cond(M)), so that the bound is max(1e-13, 1e-16 cond(M))."""
    if name not in ("forward_dynamics", "aba"):
        return np.ones(np.atleast_2d(robot.q[sl]).shape[0])
    M = np.atleast_3d(run("numpy", engine.mass_matrix, robot.model, np.atleast_2d(robot.q[sl])))
    return np.maximum(1.0, 1e-3 * np.linalg.cond(M))


def test_backend_is_native_unless_asked():
    assert engine.backend in ("native", "numpy")
    if "PHYSAI_BACKEND" not in __import__("os").environ:
        assert engine.backend == "native"
    with pytest.raises(InvalidArgumentError, match="unknown engine backend"):
        engine.set_backend("fortran")


@pytest.mark.parametrize("name", FUNCTIONS)
def test_native_equals_numpy(robot, name):
    f = getattr(engine, name)
    batched = run("native", f, robot.model, *robot.args(name))
    reference = run("numpy", f, robot.model, *robot.args(name))
    assert type(batched) is type(reference) and np.shape(batched) == np.shape(reference)
    assert relative_error(batched, reference, allowance(robot, name)) <= RTOL, name
    for i in (0, N - 1):
        single = run("native", f, robot.model, *robot.args(name, i))
        ref = run("numpy", f, robot.model, *robot.args(name, i))
        assert type(single) is type(ref) and np.shape(single) == np.shape(ref)
        assert relative_error(np.asarray(single)[None], np.asarray(ref)[None], allowance(robot, name, i)) <= RTOL, name
        # a state's native result alone, in a batch of one, or anywhere in a batch
        one = allowance(robot, name, slice(i, i + 1))
        assert relative_error(np.asarray(single)[None], np.asarray(batched)[i][None], one) <= SAME
        assert relative_error(run("native", f, robot.model, *robot.args(name, slice(i, i + 1))), np.asarray(batched)[i:i + 1], one) <= SAME


def test_threads_do_not_change_results(robot, monkeypatch):
    q, qd = engine.random_states(robot.model, 3000, 5)
    qdd = np.random.default_rng(6).uniform(-1, 1, qd.shape)
    results = []
    for threads in ("1", "2", "3"):
        monkeypatch.setenv("PHYSAI_NUM_THREADS", threads)
        results.append([engine.rnea(robot.model, q, qd, qdd), engine.mass_matrix(robot.model, q[:500]),
                        engine.aba(robot.model, q, qd, qdd), engine.energy(robot.model, q, qd)])
    scales = [None, None, allowance_of(robot.model, q, "aba"), None]
    for other in results[1:]:
        for a, b, scale in zip(results[0], other, scales):
            assert relative_error(a, b, 1.0 if scale is None else scale) <= SAME
    reference = run("numpy", engine.rnea, robot.model, q, qd, qdd)
    assert relative_error(results[0][0], reference) <= RTOL


def test_any_array_layout_or_type(robot):
    """Lists, float32, integers, transposed and strided views and shared single states give the NumPy answer."""
    model, q, qd, qdd = robot.model, robot.q, robot.qd, robot.qdd
    expected = run("numpy", engine.rnea, model, q, qd, qdd)
    assert relative_error(engine.rnea(model, q.tolist(), qd.tolist(), qdd.tolist()), expected) <= RTOL
    assert relative_error(engine.rnea(model, np.asfortranarray(q), qd.T.copy().T, qdd[::1]), expected) <= RTOL
    wide = np.zeros((N, 2 * model.nv))
    wide[:, ::2] = qd
    assert relative_error(engine.rnea(model, q, wide[:, ::2], qdd), expected) <= RTOL
    shared = run("numpy", engine.rnea, model, q[0], qd, qdd)
    assert relative_error(engine.rnea(model, q[0], qd, qdd), shared) <= RTOL
    ints = np.zeros(model.nv, dtype=int)
    assert relative_error(engine.gravity(model, q[0].astype(np.float32))[None],
                          run("numpy", engine.gravity, model, q[0].astype(np.float32))[None]) <= RTOL
    assert relative_error(engine.rnea(model, q[0], ints, ints)[None], run("numpy", engine.rnea, model, q[0], ints, ints)[None]) <= RTOL


def test_data_keeps_the_numpy_stages(robot):
    d = engine.Data(robot.model, N)
    tau = engine.rnea(robot.model, robot.q, robot.qd, robot.qdd, data=d)
    assert d.cvel is not None and d.qfrc.shape == (robot.model.nv, N)
    assert relative_error(tau, engine.rnea(robot.model, robot.q, robot.qd, robot.qdd)) <= RTOL


def _error(backend, f, *args):
    previous = engine.set_backend(backend)
    try:
        f(*args)
    except PhysaiError as e:
        return type(e), str(e)
    finally:
        engine.set_backend(previous)
    return None


BAD = {
    "wrong length": lambda m, q, v: engine.rnea(m, q[:-1], v, v),
    "wrong batch": lambda m, q, v: engine.rnea(m, np.stack([q, q]), np.stack([v, v, v]), v),
    "3-d": lambda m, q, v: engine.gravity(m, q[None, None]),
    "empty batch": lambda m, q, v: engine.gravity(m, np.zeros((0, m.nq))),
    "nan": lambda m, q, v: engine.bias(m, q, np.where(np.arange(m.nv) == 0, np.nan, v)),
    "inf in a batch": lambda m, q, v: engine.energy(m, np.stack([q, np.where(np.arange(m.nq) == 0, np.inf, q)]), v),
    "strings": lambda m, q, v: engine.mass_matrix(m, [str(x) for x in q]),
    "booleans": lambda m, q, v: engine.rnea(m, q, np.ones(m.nv, bool), v),
    "overflow": lambda m, q, v: engine.rnea(m, q, np.full(m.nv, 1e200), v),
    "overflow fd": lambda m, q, v: engine.forward_dynamics(m, q, v, np.full(m.nv, 1e308)),
    "overflow aba": lambda m, q, v: engine.aba(m, q, np.full(m.nv, 1e200), v),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_inputs_raise_the_same_errors(case):
    for name in ("double_pendulum", MIXED):
        model = engine.from_mujoco(models.load(name))
        q, v = model.qpos0, np.full(model.nv, 0.5)
        native_error, numpy_error = _error("native", BAD[case], model, q, v), _error("numpy", BAD[case], model, q, v)
        assert numpy_error is not None and native_error == numpy_error, case


def test_zero_quaternion_and_singular_mass_matrix():
    mixed = engine.from_mujoco(models.load(MIXED))
    q = mixed.qpos0.copy()
    q[mixed.coords.quat_q[0]] = 0.0
    for f in (engine.gravity, engine.mass_matrix):
        errors = {_error(b, f, mixed, q) for b in ("native", "numpy")}
        assert len(errors) == 1 and errors.pop()[0] is InvalidStateError
    from physai import dynamics
    B = dynamics.Body
    tree = dynamics.Tree([B(-1, [0, 0, 0], np.eye(3), "slide", [1, 0, 0], None, 0.0, [0, 0, 0], np.zeros((3, 3)))], armature=[0.0])
    model = engine.compile_tree(tree)
    for f in (engine.forward_dynamics, engine.aba):
        errors = {_error(b, f, model, [0.0], [0.0], [1.0]) for b in ("native", "numpy")}
        assert len(errors) == 1 and errors.pop()[0] is InvalidModelError
    with pytest.raises(ShapeError):
        engine.rnea(model, [0.0], [0.0], [[1.0], [2.0]], data=engine.Data(model, 1))


@pytest.mark.parametrize("name", ["rnea", "mass_matrix", "energy", "forward_dynamics"])
def test_map_states_over_dask_arrays(name):
    """engine.map_states over Dask arrays chunked along N equals the direct call (within SAME on the native backend)."""
    da = pytest.importorskip("dask.array")
    model = engine.from_mujoco(models.load(MIXED))
    q, qd = engine.random_states(model, 1000, 7)
    x = np.random.default_rng(8).uniform(-1, 1, qd.shape)
    f = getattr(engine, name)
    arrays = {"rnea": (q, qd, x), "mass_matrix": (q,), "energy": (q, qd), "forward_dynamics": (q, qd, x)}[name]
    lazy = engine.map_states(f, model, *(da.from_array(a, chunks=(256, 5)) for a in arrays))
    result = lazy.compute(scheduler="threads")
    direct = f(model, *arrays)
    assert result.shape == direct.shape and lazy.chunks[0] == (256, 256, 256, 232)
    assert relative_error(result, direct, allowance_of(model, q, name)) <= SAME
    # a single state shared by the whole batch, and the NumPy backend within the bound
    shared = engine.map_states(engine.rnea, model, q[0], da.from_array(qd, chunks=300), x[0]).compute()
    assert relative_error(shared, engine.rnea(model, q[0], qd, x[0])) <= SAME
    reference = run("numpy", lambda: engine.map_states(f, model, *(da.from_array(a, chunks=(256, 5)) for a in arrays)).compute())
    assert relative_error(reference, direct, allowance_of(model, q, name)) <= RTOL


def allowance_of(model, q, name):
    if name not in ("forward_dynamics", "aba"):
        return np.ones(len(q))
    return np.maximum(1.0, 1e-3 * np.linalg.cond(run("numpy", engine.mass_matrix, model, q)))


def test_map_states_refuses_what_it_cannot_map():
    da = pytest.importorskip("dask.array")
    model = engine.from_mujoco(models.load("double_pendulum"))
    with pytest.raises(InvalidArgumentError, match="public physai.engine function"):
        engine.map_states(np.sum, model, da.zeros((4, 2)))
    with pytest.raises(ShapeError, match="at least one Dask array"):
        engine.map_states(engine.gravity, model, np.zeros(2))
    with pytest.raises(ShapeError, match="the same N"):
        engine.map_states(engine.bias, model, da.zeros((4, 2)), da.zeros((5, 2)))


@pytest.mark.parametrize("integrator", ["euler", "rk4", "implicitfast", "implicit"])
@pytest.mark.parametrize("name", ["double_pendulum", "franka_emika_panda", MIXED])
def test_simulate_in_compiled_code_equals_the_python_loop(name, integrator):
    """simulate's compiled loop against the Python loop on the NumPy backend, every integrator: 200 steps of 1 ms, the
    Panda with its position servos at ctrl = 0 (tests/test_rollout.py: per-step ctrl and applied forces). The two differ by rounding, which
    the Panda's stiff servos amplify under euler; bound 1e-9 relative (1e-13 for the others)."""
    from physai import integrators

    model = engine.from_mujoco(models.load(name))
    q0, qd0 = engine.random_states(model, 1, 3)
    args = (model, q0[0], qd0[0], 1e-3, 200, integrator)
    fast = integrators.simulate(*args)
    slow = run("numpy", integrators.simulate, *args)
    bound = 1e-9 if name == "franka_emika_panda" and integrator == "euler" else 1e-13
    for a, b in ((fast.q, slow.q), (fast.qd, slow.qd), (fast.energy, slow.energy)):
        assert np.abs(a - b).max() <= bound * max(1.0, np.abs(b).max())
    assert fast.integrator == slow.integrator and fast.dt == slow.dt and np.array_equal(fast.t, slow.t)


def test_simulate_errors_are_the_same():
    from physai import integrators
    from physai.exceptions import DivergenceError

    model = engine.from_mujoco(models.load("double_pendulum"))
    errors = set()
    for backend in ("native", "numpy"):
        with pytest.raises(DivergenceError) as info:
            run(backend, integrators.simulate, model, [0.3, 0.2], [1e150, -1e150], 0.5, 50, "euler")
        errors.add(str(info.value))
    assert len(errors) == 1 and "diverged at step" in errors.pop()
    mixed = engine.from_mujoco(models.load(MIXED))
    q = mixed.qpos0.copy()
    q[mixed.coords.quat_q[0]] = 0.0
    for backend in ("native", "numpy"):
        with pytest.raises(InvalidStateError, match="zero quaternion"):
            run(backend, integrators.simulate, mixed, q, np.zeros(mixed.nv), 1e-3, 5, "rk4")


def test_physai_backend_numpy_selects_the_reference_at_import():
    import subprocess
    import sys

    code = "from physai import engine; from physai.engine import native; print(engine.backend, native.describe())"
    for env_value, expected in (("numpy", "numpy numpy (the reference"), ("", "native native (C++")):
        env = {**__import__("os").environ, "PHYSAI_BACKEND": env_value}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
        assert out.startswith(expected), out


def test_jacobians_native_equals_numpy(robot):
    """body_jacobian's compiled call against the NumPy text, every body, a point off its origin, one state and a batch."""
    from physai import jacobians

    model, point = robot.model, np.array([0.03, -0.02, 0.05])
    for b in range(model.nbody):
        batched = jacobians.body_jacobian(model, robot.q, b, point)
        reference = run("numpy", jacobians.body_jacobian, model, robot.q, b, point)
        assert batched.shape == reference.shape == (N, 6, model.nv)
        assert relative_error(batched, reference) <= RTOL
        single = jacobians.body_jacobian(model, robot.q[3], b, point)
        assert single.shape == (6, model.nv) and relative_error(single[None], batched[3:4]) <= SAME
    assert jacobians.point_jacobian(model, robot.q, model.nbody - 1, point).shape == (N, 3, model.nv)


def test_integrate_and_difference_native_equal_numpy(robot):
    """engine.integrate and engine.difference compiled against the NumPy text, a batch and one state; and each other's
    inverse (difference(q, integrate(q, v, h), h) = v) within rounding."""
    model, h = robot.model, 0.01
    v = robot.qd
    for f, x, y in ((engine.integrate, robot.q, v), (engine.difference, robot.q, engine.integrate(model, robot.q, v, h))):
        batched = f(model, x, y, h)
        reference = run("numpy", f, model, x, y, h)
        assert batched.shape == reference.shape and relative_error(batched, reference) <= RTOL
        assert relative_error(f(model, x[2], y[2], h)[None], batched[2:3]) <= SAME
    back = engine.difference(model, robot.q, engine.integrate(model, robot.q, v, h), h)
    assert np.abs(back - v).max() <= 1e-10 * max(1.0, np.abs(v).max())        # rad/s: eps |q| / h


@pytest.fixture
def restore_isa():
    before = native.isa()
    yield
    assert native.set_isa(before)


@pytest.mark.parametrize("name", ["franka_emika_panda", "unitree_h1"])
def test_every_instruction_set_equals_numpy(name, restore_isa):
    """The batch kernel's variants (avx512f, avx2, default: those this CPU runs) on 37 random states, not a multiple
    of the 8 lanes: rnea, mass_matrix and forward_dynamics each within the bounds above of the NumPy reference, and
    isa() names the variant asked for."""
    model = engine.from_mujoco(models.load(name))
    q, qd = engine.random_states(model, 37, 11, qd_max=2.0)
    rng = np.random.default_rng(12)
    qdd, tau = rng.uniform(-3.0, 3.0, qd.shape), rng.uniform(-5.0, 5.0, qd.shape)
    cases = {"rnea": (q, qd, qdd), "mass_matrix": (q,), "forward_dynamics": (q, qd, tau)}
    reference = {f: run("numpy", getattr(engine, f), model, *a) for f, a in cases.items()}
    scale = {f: allowance_of(model, q, f) for f in cases}
    variants = native.isas()
    assert variants[-1] == "default" and native.isa() in variants
    for variant in variants:
        assert native.set_isa(variant) and native.isa() == variant
        for f, args in cases.items():
            result = run("native", getattr(engine, f), model, *args)
            assert relative_error(result, reference[f], scale[f]) <= RTOL, (variant, f)
    assert not native.set_isa("sse9") and native.isa() == variants[-1]


def test_physai_isa_chooses_the_variant_at_import():
    """PHYSAI_ISA names the variant when the CPU runs it; an unknown or unsupported name gives the best one, and
    physai verify's backend line (native.describe()) says so."""
    import os
    import subprocess
    import sys

    code = "from physai.engine import native; print(native.isa()); print(native.describe())"
    best = native.isas()[0]
    for asked in (*native.isas(), "sse9"):
        out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PHYSAI_ISA": asked, "PHYSAI_BACKEND": ""},
                             capture_output=True, text=True, check=True).stdout.splitlines()
        expected = asked if asked in native.isas() else best
        assert out[0] == expected, (asked, out)
        assert out[1].startswith(f"native (C++; batches: {expected}"), out
        assert ("PHYSAI_ISA='sse9' unavailable" in out[1]) == (asked == "sse9"), out

"""The compiled backend itself (physai.engine.native): that it is built and chosen, PHYSAI_BACKEND and PHYSAI_ISA at
import, set_isa, thread counts, the inputs it converts (lists, float32, strided views) and data=, its boundary (the
compiled model from named fields, the codes read from the extension), bad inputs raising the same named errors with the
same messages on both backends without rerunning the NumPy algorithm, and engine.map_states over Dask arrays. Its
numbers against the NumPy reference, entry point by entry point and instruction set by instruction set:
tests/test_native_vs_numpy.py.

Bounds (helpers.assert_close, per state, relative to the state's largest entry): RTOL = 1e-13 against NumPy; the
compiled kernel runs the same operations for a state alone, in a batch and on any thread count, so its results agree
within SAME = 4 eps; forward dynamics and aba times max(1, 1e-3 cond(M)) (tests/test_native_vs_numpy.py).
"""

import inspect

import dask.array as da
import numpy as np
import pytest

from physai import derivatives, engine, models
from physai.engine import native
from physai.exceptions import InvalidArgumentError, InvalidModelError, InvalidStateError, PhysaiError, ShapeError
from helpers import MIXED, Robot, assert_close, run

ROBOTS = ["double_pendulum", "hinge_slide", "arm2", "arm7", "franka_emika_panda", "kuka_iiwa_14", "unitree_h1", "mixed_joints"]
N = 12
ROBOT_STATES = {"n": N, "seed": 0}
RTOL = 1e-13
SAME = 4 * np.finfo(float).eps             # the same state on the compiled backend in another batch or on other threads


def close(actual, expected, rtol, allowance=1.0):
    """Per state (the first axis), |actual - expected| <= rtol * allowance * the state's largest |expected|."""
    assert_close(actual, expected, rtol * np.asarray(allowance), floor=0.0, per_state=True)


def allowance(model, q, name) -> np.ndarray:
    """Per state of q (N, nq): 1, or for forward dynamics and aba max(1, 1e-3 cond(M))."""
    if name not in ("forward_dynamics", "aba"):
        return np.ones(len(q))
    return np.maximum(1.0, 1e-3 * np.linalg.cond(run("numpy", engine.mass_matrix, model, q)))


def test_the_compiled_backend_is_built():
    """uv sync builds the extension (a C++ compiler is a requirement): without it every comparison below would
    only compare the NumPy reference with itself, so its absence fails here instead of passing silently."""
    assert native.available(), "physai.engine._native is not built: run `uv sync` with a C++ compiler installed"


def test_backend_is_native_unless_asked():
    assert engine.backend in ("native", "numpy")
    if "PHYSAI_BACKEND" not in __import__("os").environ:
        assert engine.backend == "native"
    with pytest.raises(InvalidArgumentError, match="unknown engine backend"):
        engine.set_backend("fortran")


def test_threads_do_not_change_results(robot, monkeypatch):
    q, qd = engine.random_states(robot.model, 3000, 5)
    qdd = np.random.default_rng(6).uniform(-1, 1, qd.shape)
    results = []
    for threads in ("1", "2", "3"):
        monkeypatch.setenv("PHYSAI_NUM_THREADS", threads)
        results.append([engine.rnea(robot.model, q, qd, qdd), engine.mass_matrix(robot.model, q[:500]),
                        engine.aba(robot.model, q, qd, qdd), engine.energy(robot.model, q, qd)])
    scales = [None, None, allowance(robot.model, q, "aba"), None]
    for other in results[1:]:
        for a, b, scale in zip(results[0], other, scales):
            close(a, b, SAME, 1.0 if scale is None else scale)
    reference = run("numpy", engine.rnea, robot.model, q, qd, qdd)
    close(results[0][0], reference, RTOL)


def test_any_array_layout_or_type(robot):
    """Lists, float32, integers, transposed and strided views and shared single states give the NumPy answer."""
    model, q, qd, qdd = robot.model, robot.q, robot.qd, robot.qdd
    expected = run("numpy", engine.rnea, model, q, qd, qdd)
    close(engine.rnea(model, q.tolist(), qd.tolist(), qdd.tolist()), expected, RTOL)
    close(engine.rnea(model, np.asfortranarray(q), qd.T.copy().T, qdd[::1]), expected, RTOL)
    wide = np.zeros((N, 2 * model.nv))
    wide[:, ::2] = qd
    close(engine.rnea(model, q, wide[:, ::2], qdd), expected, RTOL)
    shared = run("numpy", engine.rnea, model, q[0], qd, qdd)
    close(engine.rnea(model, q[0], qd, qdd), shared, RTOL)
    ints = np.zeros(model.nv, dtype=int)
    close(engine.gravity(model, q[0].astype(np.float32))[None], run("numpy", engine.gravity, model, q[0].astype(np.float32))[None], RTOL)
    close(engine.rnea(model, q[0], ints, ints)[None], run("numpy", engine.rnea, model, q[0], ints, ints)[None], RTOL)


def test_data_keeps_the_numpy_stages(robot):
    d = engine.Data(robot.model, N)
    tau = engine.rnea(robot.model, robot.q, robot.qd, robot.qdd, data=d)
    assert d.cvel is not None and d.qfrc.shape == (robot.model.nv, N)
    close(tau, engine.rnea(robot.model, robot.q, robot.qd, robot.qdd), RTOL)


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
    model = engine.from_mujoco(models.load(MIXED))
    q, qd = engine.random_states(model, 1000, 7)
    x = np.random.default_rng(8).uniform(-1, 1, qd.shape)
    f = getattr(engine, name)
    arrays = {"rnea": (q, qd, x), "mass_matrix": (q,), "energy": (q, qd), "forward_dynamics": (q, qd, x)}[name]
    lazy = engine.map_states(f, model, *(da.from_array(a, chunks=(256, 5)) for a in arrays))
    result = lazy.compute(scheduler="threads")
    direct = f(model, *arrays)
    assert result.shape == direct.shape and lazy.chunks[0] == (256, 256, 256, 232)
    close(result, direct, SAME, allowance(model, q, name))
    # a single state shared by the whole batch, and the NumPy backend within the bound
    shared = engine.map_states(engine.rnea, model, q[0], da.from_array(qd, chunks=300), x[0]).compute()
    close(shared, engine.rnea(model, q[0], qd, x[0]), SAME)
    reference = run("numpy", lambda: engine.map_states(f, model, *(da.from_array(a, chunks=(256, 5)) for a in arrays)).compute())
    close(reference, direct, RTOL, allowance(model, q, name))


def test_map_states_refuses_what_it_cannot_map():
    model = engine.from_mujoco(models.load("double_pendulum"))
    with pytest.raises(InvalidArgumentError, match="public physai.engine function"):
        engine.map_states(np.sum, model, da.zeros((4, 2)))
    with pytest.raises(ShapeError, match="at least one Dask array"):
        engine.map_states(engine.gravity, model, np.zeros(2))
    with pytest.raises(ShapeError, match="the same N"):
        engine.map_states(engine.bias, model, da.zeros((4, 2)), da.zeros((5, 2)))


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


def test_set_isa_switches_between_the_variants(restore_isa):
    """isas() lists the variants this CPU runs, best first, "default" last; set_isa switches to each (isa() names it)
    and refuses another name, changing nothing."""
    variants = native.isas()
    assert variants[-1] == "default" and native.isa() in variants
    for variant in variants:
        assert native.set_isa(variant) and native.isa() == variant
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


def test_derivatives_shared_state_strided_inputs_and_named_errors():
    """physai.derivatives: a single state shared by a batch, strided views, lists and data= give the same numbers (data=
    on the NumPy text; 1e-12 relative to each matrix's largest entry); a zero quaternion and a wrong shape raise the
    NumPy path's named errors, with the same messages."""
    robot = Robot("mixed_joints", n=6, seed=3)
    model, nv = robot.model, robot.model.nv

    def agree(result, expected):
        for c, r in zip(result, expected, strict=True):
            assert_close(c, r, 1e-12, floor=0.0, per_state=c.ndim == 3)

    ref = run("numpy", derivatives.rnea_derivatives, model, robot.q, robot.qd, robot.qdd)
    agree(derivatives.rnea_derivatives(model, robot.q, robot.qd[0], robot.qdd),
          run("numpy", derivatives.rnea_derivatives, model, robot.q, np.broadcast_to(robot.qd[0], robot.qd.shape).copy(), robot.qdd))
    wide = np.zeros((robot.n, 2 * nv))
    wide[:, ::2] = robot.qd                                            # a strided view of qd
    agree(derivatives.rnea_derivatives(model, robot.q, wide[:, ::2], robot.qdd), ref)
    agree(derivatives.rnea_derivatives(model, robot.q[0].tolist(), robot.qd[0].tolist(), robot.qdd[0].tolist()),
          derivatives.rnea_derivatives(model, robot.q[0], robot.qd[0], robot.qdd[0], data=engine.Data(model)))
    zero = robot.q[0].copy()
    a = int(model.coords.quat_q[0])
    zero[a:a + 4] = 0.0
    for f in (derivatives.rnea_derivatives, derivatives.forward_dynamics_derivatives):
        for args, kind in (((zero, robot.qd[0], robot.qdd[0]), InvalidStateError),
                           ((robot.q[0], robot.qd[0][:-1], robot.qdd[0]), ShapeError)):
            errors = {_error(b, f, model, *args) for b in ("native", "numpy")}
            assert len(errors) == 1 and errors.pop()[0] is kind


def test_errors_are_named_without_the_numpy_path(monkeypatch, compiled_backend):
    """On the compiled backend a bad input, a zero quaternion, a singular mass matrix or an overflow raises the NumPy
    path's error and message (worded by validation, not computed again: the NumPy algorithms are replaced by a trap
    here); inputs of another type are converted and computed; rollout names the trajectory and the step."""
    from physai import dynamics, integrators, jacobians, joints, kinematics
    from physai.engine import batching

    mixed = engine.from_mujoco(models.load(MIXED))
    q, v = mixed.qpos0, np.full(mixed.nv, 0.5)
    zero = q.copy()
    zero[mixed.coords.quat_q[1]:mixed.coords.quat_q[1] + 4] = 0.0
    states = np.stack([q, q, zero])
    B = dynamics.Body
    tree = dynamics.Tree([B(-1, [0, 0, 0], np.eye(3), "slide", [1, 0, 0], None, 0.0, [0, 0, 0], np.zeros((3, 3)))], armature=[0.0])
    singular = engine.compile_tree(tree)
    cases = [
        (engine.rnea, mixed, q, np.where(np.arange(mixed.nv) == 2, np.nan, v), v),
        (engine.gravity, mixed, states), (engine.mass_matrix, mixed, zero), (engine.energy, mixed, states, v),
        (engine.rnea, mixed, q, np.full(mixed.nv, 1e200), v), (engine.forward_dynamics, mixed, q, v, np.full(mixed.nv, 1e308)),
        (engine.rnea, mixed, q, np.stack([v] * 5 + [np.full(mixed.nv, 1e200)] * 6), v),                      # in lanes
        (engine.forward_dynamics, singular, [0.0], [0.0], [1.0]), (engine.aba, singular, [0.0], [0.0], [1.0]),
        (derivatives.rnea_derivatives, mixed, states, v, v), (derivatives.forward_dynamics_derivatives, singular, [0.0], [0.0], [1.0]),
        (derivatives.forward_dynamics_derivatives, mixed, q, np.full(mixed.nv, 1e200), v),
        (engine.integrate, mixed, states, np.full(mixed.nv, 1e300), 1e10), (jacobians.body_jacobian, mixed, states, 3),
        (kinematics.body_poses, mixed, zero),
    ]
    with np.errstate(over="ignore", invalid="ignore"):                   # the NumPy integrate overflows on its way
        expected = [_error("numpy", f, *args) for f, *args in cases]
    assert all(e is not None for e in expected)
    converted = engine.rnea(mixed, q, v, v)

    def trap(*args, **kwargs):
        raise AssertionError("the NumPy path ran")
    for module, name in ((batching, "run"), (jacobians, "kinematics"), (kinematics, "kinematics"), (joints, "integrate"),
                         (integrators, "_python_loop")):
        monkeypatch.setattr(module, name, trap)
    for (f, *args), error in zip(cases, expected):
        assert _error("native", f, *args) == error, f.__name__
    np.testing.assert_array_equal(engine.rnea(mixed, q.tolist(), v.astype(np.float32).astype(float), v.tolist()), converted)
    with pytest.raises(InvalidStateError, match=r"^trajectory 2 of the rollout at step 1: q\[\d+:\d+\] is a zero quaternion"):
        integrators.rollout(mixed, states, np.zeros((3, mixed.nv)), 1e-3, 5, "rk4")
    with pytest.raises(InvalidModelError, match="^the simulation at step 1: the mass matrix is singular"):
        integrators.simulate(singular, [0.0], [0.0], 1e-3, 5)


def test_codes_and_arguments_come_from_the_extension():
    """The operation and integrator codes are the extension's (cpp/kernels.h, cpp/data.h), read by name; its integrators
    are physai.integrators' (whose MUJOCO_INTEGRATOR numbers are MuJoCo's, another table); each public engine function
    takes the arguments of its compiled operation (dispatch checks the names)."""
    from physai import integrators

    assert set(native.INTEGRATOR_CODES) == set(integrators.INTEGRATORS) | {integrators.DISCRETE}
    assert set(integrators.INTEGRATORS) == set(integrators.MUJOCO_INTEGRATOR)
    assert sorted(native.OPS.values()) == list(range(len(native.OPS))) and set(native.OPS) == set(native.ARGUMENTS)
    for name in ("rnea", "bias", "gravity", "mass_matrix", "forward_dynamics", "aba", "kinetic_energy", "potential_energy", "energy"):
        names = list(inspect.signature(getattr(engine, name)).parameters)[1:-1]
        assert names == [n for n, _ in native.ARGUMENTS[name]], name


def test_the_compiled_model_is_built_from_named_fields():
    """_native.Model reads native.fields(model) by name and checks each field's type and shape (the error names it), an
    unknown name and an index outside the model; _native.Actuators the same for the actuators, against their model."""
    from physai.engine import _native

    model = engine.from_mujoco(models.load("franka_emika_panda"))
    fields = native.fields(model)
    compiled = _native.Model(fields)
    assert (compiled.nq, compiled.nv, compiled.nlink, compiled.nbody) == (model.nq, model.nv, model.nlink, model.nbody)
    bad = [({"dof_armature": None}, ValueError, "the field dof_armature is missing"),
           ({"link_mass": fields["link_mass"][:-1]}, TypeError, r"field link_mass: expected a C-contiguous float64 array of shape \(9,\)"),
           ({"link_parentid": fields["link_parentid"].astype(float)}, TypeError, "field link_parentid: expected .* int64"),
           ({"link_masses": fields["link_mass"]}, ValueError, "unknown fields link_masses"),
           ({"dof_parentid": np.arange(model.nv, dtype=np.int64)}, ValueError, "field dof_parentid: an index outside"),
           ({"nq": -1}, TypeError, "field nq: expected a whole number")]
    for change, kind, message in bad:
        wrong = {**fields, **change}
        wrong = {k: x for k, x in wrong.items() if x is not None}
        with pytest.raises(kind, match=message):
            _native.Model(wrong)
    acts = _native.Actuators(compiled, native.actuator_fields(model.actuators))
    assert acts.nu == model.nu
    other = engine.from_mujoco(models.load("double_pendulum"))
    with pytest.raises(TypeError, match="Actuators field moment: expected .* shape"):
        _native.Actuators(native.compiled(other), native.actuator_fields(model.actuators))
    for dof in (-2, model.nv):                                          # joint_dof: a dof of the model, or -1
        bad = {**native.actuator_fields(model.actuators), "joint_dof": np.full(model.nu, dof, dtype=np.int64)}
        with pytest.raises(ValueError, match=r"Actuators field joint_dof: expected a dof in \[0, nv\) or -1"):
            _native.Actuators(compiled, bad)


def test_the_compiled_model_holds_nothing_of_nv_squared_size():
    """A pile of 64 free spheres (nv 384): every field of the compiled model (native.fields) holds fewer than nv^2 / 4
    entries (M's pattern is its sparse layout, M_colind, not an nv x nv table), and the compiled model is built from them."""
    import mujoco

    from scenes import sphere_pile
    m = mujoco.MjModel.from_xml_string(sphere_pile(64))
    model = engine.from_mujoco(m)
    sizes = {name: np.size(x) for name, x in native.fields(model).items()}
    assert model.nv == 384 and max(sizes.values()) < model.nv ** 2 / 4, max(sizes.items(), key=lambda item: item[1])
    assert native.compiled(model).nv == model.nv

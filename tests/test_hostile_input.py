"""Hostile input (issue N, items 2 and 5): every case gives the right answer or a named physai error, never a silent
wrong number or a traceback; the command line answers with exit status 2 and one line on stderr."""

import mujoco
import numpy as np
import pytest

from physai import collision, constraints, conventions, engine, identification, integrators, jacobians, models
from physai.cli import main
from physai.energy_drift import EnergyMonitor, check_energy_drift
from physai.exceptions import InvalidArgumentError, InvalidInertiaError, InvalidModelError, InvalidStateError, ShapeError

from helpers import constraint_scene, load, run

BACKENDS = ["native", "numpy"]


@pytest.fixture(scope="module")
def pendulum():
    return engine.from_mujoco("double_pendulum")


@pytest.fixture(scope="module")
def tree():
    """A random tree with a free root and ball joints: quaternions in q."""
    return engine.from_mujoco(load("random_free", constraints=False))


# ---------------------------------------------------------------- silent wrong answers

@pytest.mark.parametrize("backend", BACKENDS)
def test_a_quaternion_of_any_finite_size_is_normalized_exactly(tree, backend):
    """|q| = 1e200 squared overflows and 1e-200 squared underflows; either used to read as the identity (or give a
    zero quaternion from integrate). A batch mixes them with unit ones (the compiled kernel's lanes)."""
    q, qd = engine.random_states(tree, 8, 3)
    quats = tree.coords.quats()[0]
    hostile = q.copy()
    hostile[1::3, quats] *= 1e200
    hostile[2::3, quats] *= 1e-200
    for f, arrays, extra in [(engine.mass_matrix, (), ()), (engine.bias, (qd,), ()), (engine.potential_energy, (), ()),
                             (engine.forward_dynamics, (qd, np.ones_like(qd)), ()), (engine.integrate, (qd,), (0.01,))]:
        expected = run(backend, f, tree, q, *arrays, *extra)
        bound = 1e-13 * max(1.0, np.abs(expected).max())
        for states in (slice(None), 1, 2):                       # the batch, and one state alone
            got = run(backend, f, tree, hostile[states], *(a[states] for a in arrays), *extra)
            assert np.abs(got - expected[states]).max() <= bound, (f.__name__, states)


@pytest.mark.parametrize("backend", BACKENDS)
def test_difference_normalizes_quaternions_as_mj_differentiatePos(tree, backend):
    """engine.difference reads q0 and q1's quaternions normalized, as MuJoCo's mj_differentiatePos does: quaternions
    of norm 3, 1e200 and 1e-200 give MuJoCo's velocity of the normalized pair (1e-12 of its scale)."""
    m = load("random_free", constraints=False)
    q0, _ = engine.random_states(tree, 6, 4)
    q1, _ = engine.random_states(tree, 6, 5)
    quats = tree.coords.quats()[0]
    expected = np.empty((6, m.nv))
    for k in range(6):
        mujoco.mj_differentiatePos(m, expected[k], 0.01, q0[k], q1[k])
    bound = 1e-12 * np.abs(expected).max()
    for scale in (3.0, 1e200, 1e-200):
        a, b = q0.copy(), q1.copy()
        a[:, quats] *= scale
        b[1::2, quats] /= scale
        assert np.abs(run(backend, engine.difference, tree, a, b, 0.01) - expected).max() <= bound, scale
        assert np.abs(run(backend, engine.difference, tree, a[2], b[2], 0.01) - expected[2]).max() <= bound, scale


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("which", ["q0", "q1"])
def test_difference_refuses_a_zero_quaternion_by_name(tree, backend, which):
    q, _ = engine.random_states(tree, 3, 6)
    bad = q.copy()
    bad[1, 3:7] = 0.0
    args = (bad, q) if which == "q0" else (q, bad)
    with pytest.raises(InvalidStateError, match=rf"^{which}\[3:7\] is a zero quaternion \(state 1\)"):
        run(backend, engine.difference, tree, *args, 0.01)


@pytest.mark.parametrize("backend", BACKENDS)
def test_body_jacobians_keep_their_digits_far_from_the_origin(backend):
    """The H1's base moved 1e12 m and 1e15 m away: a body Jacobian depends only on the offsets from its tree's centre,
    so it equals the one at the origin within 1e-12 of its scale (the NumPy text lost 9e-5 at 1e12 m)."""
    model = engine.from_mujoco(models.load("unitree_h1"))
    q = engine.random_states(model, 3, 7)[0]
    expected = run(backend, jacobians.body_jacobian, model, q, "left_ankle_link", [0.05, 0.0, -0.03])
    for far in (1e12, 1e15):
        moved = q.copy()
        moved[:, 0] += far
        got = run(backend, jacobians.body_jacobian, model, moved, "left_ankle_link", [0.05, 0.0, -0.03])
        assert np.abs(got - expected).max() <= 1e-12 * np.abs(expected).max(), far


@pytest.mark.parametrize("backend", BACKENDS)
def test_constraint_rows_read_quaternions_of_any_size_exactly(backend):
    """The constraint kinematics (weld orientations, ball joint limits) normalize q's quaternions too."""
    m, d = constraint_scene(0, "pyramidal", 3)
    model, contacts, active = engine.from_mujoco(m), collision.from_mujoco(m, d), d.eq_active.astype(bool)
    expected = run(backend, constraints.rows, model, d.qpos, d.qvel, contacts, active)
    for scale in (1e200, 1e-200):
        q = d.qpos.copy()
        q[model.coords.quats()[0]] *= scale
        got = run(backend, constraints.rows, model, q, d.qvel, contacts, active)
        for name in ("pos", "J"):
            ref = getattr(expected, name)
            assert np.abs(getattr(got, name) - ref).max() <= 1e-13 * max(1.0, np.abs(ref).max()), (name, scale)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("batch", [None, 3])
@pytest.mark.parametrize("warm, error, message", [
    (lambda nv, n: np.full(nv, np.nan), InvalidStateError, r"qacc_warmstart\[0\] is nan; qacc_warmstart must be finite"),
    (lambda nv, n: np.full((n or 1, nv), np.inf), InvalidStateError, r"qacc_warmstart\[0(, 0)?\] is inf"),
    (lambda nv, n: np.zeros(nv + 1), ShapeError, "qacc_warmstart has .* entries, the model needs"),
    (lambda nv, n: np.zeros(((n or 1) + 1, nv)), ShapeError, "qacc_warmstart has [24] states"),
    (lambda nv, n: ["a"] * nv, ShapeError, "qacc_warmstart must be"),
])
def test_forward_dynamics_names_a_bad_warm_start(backend, batch, warm, error, message):
    """constraints.forward_dynamics checks qacc_warmstart (one start or one per state) as it checks q: a named error,
    never a start silently ignored (a NaN start would lose the cost comparison and go unnoticed)."""
    m, d = constraint_scene(0, "pyramidal", 3)
    model, contacts = engine.from_mujoco(m), collision.from_mujoco(m, d)
    tau = d.qfrc_passive + d.qfrc_actuator
    q, qd, tau = (x if batch is None else np.tile(x, (batch, 1)) for x in (d.qpos, d.qvel, tau))
    with pytest.raises(error, match=message):
        run(backend, constraints.forward_dynamics, model, q, qd, tau, contacts, qacc_warmstart=warm(model.nv, batch))


@pytest.mark.parametrize("backend", BACKENDS)
def test_forward_dynamics_takes_a_warm_start_of_any_layout(backend):
    """A warm start in unaligned or strided memory gives the result of the same numbers in a fresh array."""
    m, d = constraint_scene(0, "pyramidal", 3)
    model, contacts = engine.from_mujoco(m), collision.from_mujoco(m, d)
    q, qd, tau = (np.tile(x, (3, 1)) for x in (d.qpos, d.qvel, d.qfrc_passive + d.qfrc_actuator))
    warm = np.tile(d.qacc, (3, 1)) + np.arange(3)[:, None]
    unaligned = np.frombuffer(np.zeros(warm.nbytes + 1, np.uint8).data, np.float64, warm.size, 1).reshape(warm.shape)
    unaligned[:] = warm
    want = run(backend, constraints.forward_dynamics, model, q, qd, tau, contacts, qacc_warmstart=warm).qacc
    for start in (unaligned, np.asfortranarray(warm), list(warm)):
        got = run(backend, constraints.forward_dynamics, model, q, qd, tau, contacts, qacc_warmstart=start).qacc
        assert np.array_equal(got, want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_model_without_mass_has_no_centre_of_mass(backend):
    from physai import centroidal
    model = engine.from_mujoco(mujoco.MjModel.from_xml_string("<mujoco><worldbody/></mujoco>"))   # MuJoCo refuses
    for f in (centroidal.com, centroidal.com_jacobian, centroidal.momentum_matrix):             # massless moving bodies
        with pytest.raises(InvalidModelError, match="no mass: its centre of mass is undefined"):
            run(backend, f, model, np.zeros(0))


@pytest.mark.parametrize("call, error, message", [
    (lambda s: s.se3_exp(np.zeros(7)), ShapeError, r"xi has shape \(7,\); expected \(6,\)"),
    (lambda s: s.so3_log(np.zeros(3)), ShapeError, r"R has shape \(3,\); expected \(3, 3\)"),
    (lambda s: s.se3_log(np.eye(3)), ShapeError, r"T has shape \(3, 3\); expected \(4, 4\)"),
    (lambda s: s.so3_exp([np.nan, 0, 0]), InvalidArgumentError, "w has entries that are not finite"),
    (lambda s: s.se3_exp("abc"), InvalidArgumentError, "xi must be real numbers"),
])
def test_se3_tools_name_bad_input(call, error, message):
    from physai import spatial
    with pytest.raises(error, match=message):
        call(spatial)


def test_task_space_names_bad_tasks():
    from physai import jacobians, task_space
    model = engine.from_mujoco("franka_emika_panda")
    q, qd = engine.random_states(model, 3, 1)
    J, Jd = jacobians.frame_jacobian(model, q, "hand"), jacobians.frame_jacobian_dot(model, q, qd, "hand")
    for bad, error, message in ((J[0][:0], ShapeError, r"with m >= 1 task rows"),
                                ("abc", InvalidArgumentError, "J must be an array of real numbers"),
                                (J[0] + 0j, InvalidArgumentError, "J must be an array of real numbers, got ndarray of complex128")):
        with pytest.raises(error, match=message):
            task_space.inertia(model, q[0], bad)
    with pytest.raises(ShapeError, match="qd has 3 states and q one"):
        task_space.bias(model, q[0], qd, J[0], Jd[0])


def test_range_violations_refuse_a_zero_ball_quaternion():
    from physai.acceptance import range_violations
    model = engine.from_mujoco(mujoco.MjModel.from_xml_string(
        '<mujoco><worldbody><body><joint type="ball" limited="true" range="0 0.5"/><geom size="0.1" mass="1"/></body>'
        '</worldbody></mujoco>'))
    with pytest.raises(InvalidStateError, match=r"q\[0:4\] is a zero quaternion"):
        range_violations(model, np.zeros(4))


@pytest.mark.parametrize("field, value, message", [
    ("body_mass", -1.0, "mass -1.0 kg, expected a finite number >= 0"),
    ("body_inertia", [0.01, 0.01, 0.5], "break the triangle rule"),
])
def test_from_mujoco_refuses_a_negative_mass_or_a_non_physical_inertia(field, value, message):
    m = models.load("double_pendulum")
    getattr(m, field)[1] = value
    with pytest.raises(InvalidInertiaError, match=message):
        engine.from_mujoco(m)


@pytest.mark.parametrize("f", [conventions.velocity_map, lambda model, q: conventions.v_to_pinocchio(model, q, np.zeros(model.nv))])
def test_conventions_refuse_a_zero_quaternion(tree, f):
    q = engine.random_states(tree, 1)[0][0]
    q[3:7] = 0.0
    with pytest.raises(InvalidStateError, match=r"q\[3:7\] is a zero quaternion"):
        f(tree, q)


URDF = ('<robot name="r"><link name="a"/><link name="b"><inertial><mass value="{mass}"/>'
        '<inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>'
        '<joint name="j" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/></joint></robot>')


@pytest.mark.parametrize("call, error, message", [
    (lambda p: identification.base_parameters(p, n=5, tol=np.nan), InvalidArgumentError, "tol is nan; expected a finite number > 0"),
    (lambda p: engine.from_urdf(URDF.format(mass="1_000")), InvalidModelError, "<mass value='1_000'> is not a finite number"),
    (lambda p: engine.from_urdf(URDF.format(mass="1"), floating_base="yes"), InvalidArgumentError,
     "floating_base must be True or False, got 'yes'"),
    (lambda p: integrators.simulate(p, [0, 0], [0, 0], 0.01, 3, energy="yes"), InvalidArgumentError,
     "energy must be True or False, got 'yes'"),
    (lambda p: integrators.rollout(p, [[0, 0]], [[0, 0]], 0.01, 3, energy="yes"), InvalidArgumentError,
     "energy must be True or False"),
    (lambda p: EnergyMonitor(5.0, 1.0).update("1.0"), ShapeError, "energy must be one number .J., got strings"),
])
def test_values_of_the_wrong_kind_are_refused(pendulum, call, error, message):
    with pytest.raises(error, match=message):
        call(pendulum)


# ---------------------------------------------------------------- named errors instead of tracebacks

JOINTLESS = '<mujoco><worldbody><body pos="0 0 1"><geom size="0.1" mass="1"/></body></worldbody></mujoco>'


@pytest.mark.parametrize("argv, message", [
    (["verify", "{jointless}"], "has no joints (nv = 0), so it has no dynamics to compare"),
    (["check", "{jointless}"], "has no joints (nv = 0)"),
    (["lesson", "11", "break-it", "--dt", "1e300"], "takes 0 steps; expected 1 to 1e+08"),
    (["lesson", "11", "break-it", "--dt", "nan"], "timestep is nan; expected a finite number > 0"),
])
def test_cli_answers_hostile_input_with_one_line_and_exit_2(capsys, tmp_path, argv, message):
    path = tmp_path / "jointless.xml"
    path.write_text(JOINTLESS)
    assert main([a.format(jointless=path) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"physai {argv[0]}: error: " in err and message in err, err


def _jointless():
    return engine.from_mujoco(mujoco.MjModel.from_xml_string(JOINTLESS))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kwargs, message", [
    (dict(rng="x"), "rng is 'x'; expected a numpy Generator or an integer seed"),
    (dict(qd_max=np.nan), "qd_max is nan; expected a finite number"),
    (dict(qd_max=-1.0), "qd_max is -1; expected a finite number >= 0"),
    (dict(ranges={0: (1.0, -1.0)}), r"ranges\[0\] is \(1, -1\), an inverted range"),
])
def test_random_states_refuses_bad_options(pendulum, backend, kwargs, message):
    with pytest.raises(InvalidArgumentError, match=message):
        run(backend, engine.random_states, pendulum, 2, **kwargs)


@pytest.mark.parametrize("call, error, message", [
    (lambda p: identification.is_physical(np.ones(9)), ShapeError, "pi10 has 9 entries"),
    (lambda p: identification.is_physical(np.nan), ShapeError, r"pi10 must have shape \(10,\)"),
    (lambda p: identification.pseudo_inertia([1.0, 0.0, 0.0]), ShapeError, "pi10 has 3 entries"),
    (lambda p: identification.from_pseudo_inertia(np.eye(3)), ShapeError, r"J must have shape \(4, 4\)"),
    (lambda p: identification.base_parameters(p, n=5, tol=-1), InvalidArgumentError, "tol is -1; expected a finite number > 0"),
    (lambda p: identification.base_parameters(p, states=42), InvalidArgumentError, r"states is 42; expected a tuple \(q"),
    (lambda p: identification.base_parameters(p, n=5).of([1.0, 2.0]), ShapeError, "pi has 2 entries, the model needs 20"),
    (lambda p: identification.base_parameters(_jointless()), InvalidArgumentError, r"the model has no joints \(nv = 0\)"),
    (lambda p: check_energy_drift(np.ones((3, 2)), 1.0, 5.0), ShapeError, r"energies has shape \(3, 2\); expected a series"),
])
def test_identification_and_energy_drift_name_their_errors(pendulum, call, error, message):
    with pytest.raises(error, match=message):
        call(pendulum)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("f, q", [(integrators.simulate, [0.0, 0.0]), (integrators.rollout, [[0.0, 0.0]])])
def test_steps_whose_outputs_cannot_fit_in_memory_are_refused(pendulum, backend, f, q):
    with pytest.raises(InvalidArgumentError, match=r"steps=1000000000000000000: the outputs of 1 run\(s\) would take "
                                                   r"4\.8e\+10 GB"):
        run(backend, f, pendulum, q, np.zeros_like(q), 0.01, 10**18)

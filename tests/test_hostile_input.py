"""Hostile input (issue N, items 2 and 5): every case gives the right answer or a named physai error, never a silent
wrong number or a traceback; the command line answers with exit status 2 and one line on stderr."""

import warnings

import mujoco
import numpy as np
import pytest

from physai import collision, constraints, conventions, engine, identification, integrators, jacobians, models
from physai.cli import main
from physai.energy_drift import EnergyMonitor, check_energy_drift
from physai.exceptions import (DivergenceError, InvalidArgumentError, InvalidInertiaError, InvalidModelError, InvalidStateError,
                               ShapeError)

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


# ---------------------------------------------------------------- issue V: model data, contact sets, results (items 5, 6, 8, 11, 12)

def _scene(edit=None, seed: int = 1) -> mujoco.MjModel:
    """The random constraint scene of seed 1 (a free root on a plane, joints with limits and friction loss, a connect, a
    weld and a joint equality), edited by edit(m)."""
    from helpers import constraint_scene_xml
    m = mujoco.MjModel.from_xml_string(constraint_scene_xml(seed))
    if edit is not None:
        edit(m)
    return m


def _set(field: str, index, value):
    return lambda m: getattr(m, field).__setitem__(index, value)


def _option(name: str, value):
    return lambda m: setattr(m.opt, name, value)


NAN_DATA = [  # model data MuJoCo turns into NaN accelerations: physai gave finite ones
    (_option("impratio", np.nan), InvalidModelError, "opt.impratio is nan: expected a finite number >= 0"),
    (_option("timestep", np.nan), InvalidModelError, "opt.timestep is nan: expected a finite number > 0"),
    (_set("dof_frictionloss", 3, np.nan), InvalidModelError,
     r"dof_frictionloss\[3\] \(joint 'joint 0'\) is nan: expected a finite value >= 0"),
    (_set("eq_data", (0, 0), np.nan), InvalidModelError, r"eq_data\[0, 0\] \(equality 'equality0'\) is nan"),
]
BAD_DATA = NAN_DATA + [  # tracebacks (LinAlgError), "the mass matrix is singular", or a crash of the compiled simulation
    (_set("jnt_solimp", (1, 0), np.nan), InvalidModelError, r"jnt_solimp\[1, 0\] \(joint 'j1'\) is nan: expected a finite value"),
    (_option("impratio", np.inf), InvalidModelError, "opt.impratio is inf: expected a finite number >= 0"),
    (_set("body_inertia", (1, 0), np.inf), InvalidInertiaError, "body 'b0': inertia has entries that are not finite"),
    (_set("body_iquat", (1, 0), np.nan), InvalidInertiaError, "body 'b0': inertia has entries that are not finite"),
    (_set("geom_size", (1, 0), 1e300), InvalidModelError, r"geom_size\[1, 0\] is 1e\+300: expected a value in \[0, 1e\+10\]"),
    (_set("geom_friction", (1, 0), 1e300), InvalidModelError, r"geom_friction\[1, 0\] is 1e\+300: expected a value in"),
    (_option("iterations", -5), InvalidModelError, r"opt.iterations is -5: expected a whole number in 0..2147483647"),
    (_set("geom_condim", slice(None), 8), InvalidModelError, r"geom_condim\[0\] is 8: expected a contact dimension 1, 3, 4 or 6"),
    (_set("geom_condim", slice(None), 7), InvalidModelError, r"geom_condim\[0\] is 7"),
    (_set("geom_condim", slice(None), 100000), InvalidModelError, r"geom_condim\[0\] is 100000"),
    (_set("geom_condim", slice(None), 0), InvalidModelError, r"geom_condim\[0\] is 0"),
    (_set("geom_condim", slice(None), -3), InvalidModelError, r"geom_condim\[0\] is -3"),
    (_set("geom_margin", 1, 1e300), InvalidModelError, r"geom_margin\[1\] is 1e\+300: expected a value in \[-1e\+10, 1e\+10\]"),
    (_set("geom_rbound", 1, -1.0), InvalidModelError, r"geom_rbound\[1\] is -1.0: expected a value in \[0, 1e\+10\]"),
    (_set("body_gravcomp", 1, 1e11), InvalidModelError, r"body_gravcomp\[0\] \(body 'b0'\) is 100000000000.0: expected a value in"),
    (_option("noslip_iterations", -1), InvalidModelError, r"opt.noslip_iterations is -1: expected a whole number in 0.."),
    (_option("noslip_tolerance", -1.0), InvalidModelError, r"opt.noslip_tolerance is -1.0: expected a finite number >= 0"),
    (_option("noslip_tolerance", np.nan), InvalidModelError, r"opt.noslip_tolerance is nan: expected a finite number >= 0"),
    (_option("density", np.nan), InvalidModelError, r"fluid_density is nan: expected a finite value"),
    (_option("viscosity", np.inf), InvalidModelError, r"fluid_viscosity is inf: expected a finite value"),
]


@pytest.mark.parametrize("edit, error, message", NAN_DATA)
def test_mujoco_turns_the_refused_nan_model_data_into_nan(edit, error, message):
    """The NaN model data physai refuses (test_non_finite_or_out_of_range_model_data_is_refused_at_load) gives MuJoCo
    non-finite accelerations: no finite answer exists to reproduce."""
    m = _scene(edit)
    d = mujoco.MjData(m)
    d.qpos[2] = 0.05
    mujoco.mj_forward(m, d)
    assert not np.isfinite(d.qacc).all()


@pytest.mark.parametrize("edit, error, message", BAD_DATA)
def test_non_finite_or_out_of_range_model_data_is_refused_at_load(edit, error, message):
    with pytest.raises(error, match=message):
        engine.from_mujoco(_scene(edit))


#: the calls that take an MjModel and compute contacts: f(m, q, qd)
CONTACT_CALLS = {
    "simulate": lambda m, q, qd: integrators.simulate(m, q, qd, 0.002, 5, constraints=True),
    "step": lambda m, q, qd: integrators.step(m, q, qd, 0.002, constraints=True),
    "rollout": lambda m, q, qd: integrators.rollout(m, q[None], qd[None], 0.002, 5, constraints=True),
    "detect": lambda m, q, qd: collision.detect(m, q),
    "forward_dynamics": lambda m, q, qd: constraints.forward_dynamics(m, q, qd, np.zeros(m.nv)),
}
PAIR = ('<mujoco><worldbody><geom name="floor" type="plane" size="1 1 .1"/><body pos="0 0 .1"><freejoint/>'
        '<geom name="ball" size=".1"/></body></worldbody><contact><pair geom1="floor" geom2="ball"/></contact></mujoco>')


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("call", list(CONTACT_CALLS))
@pytest.mark.parametrize("edit, message", [(_set("geom_condim", slice(None), 8), r"geom_condim\[0\] is 8"),
                                           (_set("geom_condim", slice(None), 0), r"geom_condim\[0\] is 0"),
                                           (_set("pair_dim", slice(None), 9), r"pair_dim\[0\] is 9")])
def test_a_contact_dimension_other_than_1_3_4_6_is_refused_on_every_path(backend, call, edit, message):
    """condim 8 made the compiled constrained simulation write past its rows (free(): invalid pointer), 100000 hang it,
    0 raise a bare C++ length error; pair_dim 9 the same: refused by name wherever the MjModel enters."""
    m = mujoco.MjModel.from_xml_string(PAIR) if "pair" in message else _scene()
    edit(m)
    with pytest.raises(InvalidModelError, match=message):
        run(backend, CONTACT_CALLS[call], m, m.qpos0.copy(), np.zeros(m.nv))


def test_the_compiled_model_refuses_a_contact_dimension_outside_1_3_4_6():
    """The compiled model checks the contact dimensions it sizes its rows by (cand_dim) when it reads them."""
    from physai.engine import _native, native
    from physai.engine.constraint import invweight0

    model = engine.from_mujoco(_scene())
    fields = native.constraint_fields(model, *invweight0(model))
    for dim in (8, 0, -1, 100000):
        with pytest.raises(ValueError, match="cand_dim: a contact dimension other than 1, 3, 4 or 6"):
            _native.Model(native.fields(model)).add_constraints({**fields, "cand_dim": fields["cand_dim"] * 0 + dim})


def test_per_dof_friction_of_a_free_joint_is_read_dof_by_dof():
    """A free joint's six dofs each keep their own frictionloss (physai read the first dof's for all six)."""
    m, d = constraint_scene(1, "pyramidal", 3)
    m.dof_frictionloss[:6] = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5]
    model = engine.from_mujoco(m)
    np.testing.assert_array_equal(model.dof_frictionloss, m.dof_frictionloss)
    np.testing.assert_array_equal(model.dof_solref, m.dof_solref)
    np.testing.assert_array_equal(model.dof_solimp, m.dof_solimp)
    mujoco.mj_forward(m, d)
    tau = d.qfrc_passive + d.qfrc_actuator + d.qfrc_applied
    for backend in BACKENDS:
        qacc = run(backend, constraints.forward_dynamics, model, d.qpos, d.qvel, tau, collision.from_mujoco(m, d)).qacc
        assert np.abs(qacc - d.qacc).max() <= 1e-12 * max(1.0, np.abs(d.qacc).max())


@pytest.mark.parametrize("backend", BACKENDS)
def test_constraint_dynamics_name_an_overflow(backend):
    """qd[3] = 1e300: every entry of qacc and tau was NaN without a word (engine.forward_dynamics names it); named on
    both backends without numpy's RuntimeWarnings on the way (the NumPy text printed 17)."""
    m, d = constraint_scene(1, "pyramidal", 3)
    model = engine.from_mujoco(m)
    qd = d.qvel.copy()
    qd[3] = 1e300
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(InvalidStateError, match=r"^qacc is not finite at state 0, index \(\d+,\) although the inputs are"):
            run(backend, constraints.forward_dynamics, model, d.qpos, qd, np.zeros(m.nv))
        with pytest.raises(InvalidStateError, match=r"^tau is not finite at state 1, index \(\d+,\) although the inputs are"):
            run(backend, constraints.inverse_dynamics, model, np.stack([d.qpos] * 2), np.stack([d.qvel, qd]),
                np.zeros((2, m.nv)))
        with pytest.raises(InvalidStateError, match="forward dynamics is not finite at state 0"):
            run(backend, engine.forward_dynamics, model, d.qpos, qd, np.zeros(m.nv))


@pytest.mark.parametrize("backend", BACKENDS)
def test_step_refuses_a_nan_warm_start_and_a_return_warmstart_that_is_not_a_bool(backend):
    m, d = constraint_scene(1, "pyramidal", 3)
    model = engine.from_mujoco(m)
    warm = np.zeros(m.nv)
    warm[2] = np.nan
    for q, qd, w in ((d.qpos, d.qvel, warm), (np.stack([d.qpos] * 3), np.stack([d.qvel] * 3), np.stack([warm * 0, warm * 0, warm]))):
        with pytest.raises(InvalidStateError, match=r"qacc_warmstart\[.*2\] is nan"):
            run(backend, integrators.step, model, q, qd, 0.002, constraints=True, qacc_warmstart=w)
    with pytest.raises(InvalidArgumentError, match="return_warmstart must be True or False, got 'no'"):
        run(backend, integrators.step, model, d.qpos, d.qvel, 0.002, constraints=True, return_warmstart="no")


@pytest.mark.parametrize("backend", BACKENDS)
def test_iteration_limits_beyond_mujocos_int_are_refused(backend):
    m, d = constraint_scene(1, "pyramidal", 3)
    for iterations in (2**63, 2**31):
        with pytest.raises(InvalidArgumentError, match=r"iterations must be a whole number in 1..2147483647"):
            run(backend, constraints.forward_dynamics, m, d.qpos, d.qvel, np.zeros(m.nv), iterations=iterations)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("change, error, message", [
    (lambda c: dict(frame=np.zeros_like(c.frame)), InvalidArgumentError, "contact 0's frame is not orthonormal"),
    (lambda c: dict(frame=2 * c.frame), InvalidArgumentError, "contact 0's frame is not orthonormal"),
    (lambda c: dict(friction=0 * c.friction), InvalidArgumentError,
     r"contact 0 has dim 3 and friction\[0\] = 0: a contact with friction needs its first dim - 1 coefficients >= 1e-05"),
    (lambda c: dict(friction=np.where(np.arange(5) == 1, -1.0, c.friction)), InvalidArgumentError, r"friction\[1\] = -1"),
    (lambda c: dict(nbody="2"), InvalidArgumentError, "contacts.nbody is '2': expected a whole number >= 0"),
    (lambda c: dict(nbody=2.5), InvalidArgumentError, "contacts.nbody is 2.5"),
    (lambda c: dict(nbody=True), InvalidArgumentError, "contacts.nbody is True"),
])
def test_contact_sets_refuse_frames_frictions_and_body_counts_that_cannot_be(backend, change, error, message):
    """All-zero frames gave free fall, friction 0 with dim 3 "the mass matrix is singular", nbody '2' a numpy ufunc error."""
    import dataclasses
    m, d = constraint_scene(1, "pyramidal", 3)
    model = engine.from_mujoco(m)
    contacts = collision.detect(model, d.qpos)
    assert len(contacts) and (contacts.dim == 3).all()
    with pytest.raises(error, match=message):
        run(backend, lambda: constraints.forward_dynamics(model, d.qpos, d.qvel, np.zeros(m.nv),
                                                          dataclasses.replace(contacts, **change(contacts))))


def test_an_empty_contact_set_needs_a_body_count():
    from physai.engine.contact import ContactSet
    with pytest.raises(InvalidArgumentError, match="contacts.nbody is -1: expected a whole number >= 0"):
        ContactSet.empty(-1)
    assert len(ContactSet.empty(np.int64(3))) == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_moving_body_without_mass_is_named_with_constraints(backend):
    """MuJoCo's compiler refuses a moving body without mass; one set to zero after it gave LinAlgError (invweight0)."""
    m = mujoco.MjModel.from_xml_string('<mujoco><worldbody><geom type="plane" size="1 1 .1"/><body name="light" pos="0 0 .5">'
                                       '<freejoint/><geom size=".1"/></body></worldbody></mujoco>')
    m.body_mass[1], m.body_inertia[1] = 0.0, 0.0
    model = engine.from_mujoco(m)
    for call in (lambda: constraints.forward_dynamics(model, m.qpos0, np.zeros(m.nv), np.zeros(m.nv)),
                 lambda: integrators.step(model, m.qpos0, np.zeros(m.nv), 0.002, constraints=True)):
        with pytest.raises(InvalidModelError, match=r"the mass matrix at qpos0 is singular.*bodies without mass that move: "
                                                    r"'light'"):
            run(backend, call)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_stiff_weld_that_diverges_under_rk4_is_a_divergence(backend):
    """A weld with solref="-1e9 -1" (stiffness 1e9) is unstable at dt = 2 ms, in MuJoCo too (its qacc warning); the NumPy
    RK4 reported the NaN inside a stage as "the mass matrix is singular ... moves no mass"."""
    xml = ('<mujoco><option integrator="RK4"/><worldbody><body name="a" pos="0 0 .5"><freejoint/><geom size=".1"/></body>'
           '</worldbody><equality><weld body1="a" solref="-1e9 -1"/></equality></mujoco>')
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    d.qpos[:] = m.qpos0 + 0.01
    for _ in range(10):
        mujoco.mj_step(m, d)
    assert d.warning[mujoco.mjtWarning.mjWARN_BADQACC].number > 0
    with pytest.raises(DivergenceError, match="the simulation diverged at step 3 .* with the rk4 integrator"):
        run(backend, integrators.simulate, engine.from_mujoco(m), m.qpos0 + 0.01, np.zeros(m.nv), 0.002, 10, "rk4",
            constraints=True)


def test_a_mesh_polygon_on_a_vertex_outside_its_mesh_is_named():
    m = models.load("unitree_g1")
    m.mesh_polyvert[:] = -5
    with pytest.raises(InvalidModelError, match=r"mesh_polyvert of mesh \d+ \('\w+'\) holds -5: expected indices of its"):
        engine.from_mujoco(m)


def test_a_body_whose_name_starts_with_body_colon_is_found_by_it():
    """A body named "body:x" was reachable only as "body:body:x", and the error suggested the very name that failed."""
    from physai import kinematics
    from physai.exceptions import UnknownFrameError
    m = mujoco.MjModel.from_xml_string('<mujoco><worldbody><body name="body:x" pos="1 2 3"><joint/><geom size=".1"/></body>'
                                       '<body name="y" pos="0 0 1"><joint/><geom size=".1"/><site name="s" pos=".5 0 0"/></body>'
                                       '</worldbody></mujoco>')
    model = engine.from_mujoco(m)
    d = mujoco.MjData(m)
    mujoco.mj_kinematics(m, d)
    for name in ("body:x", "body:body:x"):
        assert model.frame(name)[0] == 0
        np.testing.assert_allclose(kinematics.frame_poses(model, m.qpos0, [name])[0][0], d.xpos[1], atol=1e-15)
    assert model.frame("site:s")[0] == model.frame("y")[0] == 1
    with pytest.raises(UnknownFrameError, match=r"no site or body named 'body:z'\. Did you mean 'body:x'\?"):
        model.frame("body:z")
    with pytest.raises(UnknownFrameError) as error:
        model.frame("site:body:x")
    assert "Did you mean 'site:body:x'" not in str(error.value)


@pytest.mark.parametrize("backend", BACKENDS)
def test_errors_of_step_name_the_state_of_the_step(tree, backend):
    """step's errors said "trajectory 3 of the rollout at step 1", the words of rollout."""
    q, qd = engine.random_states(tree, 5, 1)
    qd[3] = 1e200
    with pytest.raises(DivergenceError, match=r"^state 3 of the step diverged \(t = 0.01 s\) with the rk4 integrator"):
        run(backend, integrators.step, tree, q, qd, 0.01, "rk4")
    with pytest.raises(DivergenceError, match=r"^the step diverged \(t = 0.01 s\)"):
        run(backend, integrators.step, tree, q[3], qd[3], 0.01, "rk4")
    q[2, 3:7] = 0.0
    with pytest.raises(InvalidStateError, match=r"^state 2 of the step: q\[3:7\] is a zero quaternion"):
        run(backend, integrators.step, tree, q, qd * 0, 0.01)


@pytest.mark.parametrize("command", ["check", "verify"])
def test_cli_refuses_states_that_cannot_fit_in_memory(capsys, command):
    assert main([command, "double_pendulum", "--states", "10000000000"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"physai {command}: error: --states 10000000000: the states and their results would " \
                                    "take" in err and "GB of memory; expected fewer states" in err, err


def test_a_nul_byte_in_a_labs_model_path_is_named(tmp_path, capsys):
    """It reached the file system's calls: "ValueError: embedded null byte" (physai lab, lesson open, read_lesson)."""
    from physai.lab.spec import load_lab
    from physai.lesson_page.reader import read_lesson
    from physai.exceptions import LabError
    (tmp_path / "lab.json").write_text('{"model": "robot\\u0000.xml"}')
    (tmp_path / "lesson.md").write_text('# L\n\n```lab simlab {"model": "robot\\u0000.xml"}\n```\n')
    message = r"model 'robot\\x00.xml' holds a NUL byte; expected a model name or an MJCF .xml file"
    for name in ("lab.json", "lesson.md"):
        with pytest.raises(LabError, match=message):
            load_lab(str(tmp_path / name))
    assert any("holds a NUL byte" in note for note in read_lesson(tmp_path / "lesson.md").notes)
    assert main(["lab", str(tmp_path / "lab.json"), "--no-browser", "--port", "0"]) == 2
    assert "holds a NUL byte" in capsys.readouterr().err


# ---------------------------------------------------------------- degenerate geometry (issue 35)

def _mesh_scene(vertices: str) -> str:
    return (f'<mujoco><asset><mesh name="m" vertex="{vertices}"/></asset><worldbody><body><freejoint/><geom type="sphere" '
            'size=".05"/></body><body><freejoint/><geom type="mesh" mesh="m"/></body></worldbody></mujoco>')


@pytest.mark.parametrize("vertices, message", [
    ("0 0 0  1 0 0  0 1 0  1 1 0", "coplanar"),                    # flat
    ("0 0 0  1 0 0  0 1 0", "at least 4 vertices"),
    ("0 0 0  1 0 0  2 0 0  3 0 0", "collinear"),
    ("0 0 0  0 0 0  0 0 0  0 0 0  1 0 0", "collinear"),              # duplicates of one point
    ("0 0 0  1e-9 0 0  0 1e-9 0  0 0 1e-9", "surface area is too small")])
def test_degenerate_meshes_are_named_at_load(tmp_path, vertices, message):
    """Meshes MuJoCo's compiler refuses (flat, fewer than 4 vertices, collinear or coincident points, too small): an
    MJCF file of one is an InvalidModelError with MuJoCo's reason."""
    with pytest.raises(ValueError, match=message):
        mujoco.MjModel.from_xml_string(_mesh_scene(vertices))
    path = tmp_path / "mesh.xml"
    path.write_text(_mesh_scene(vertices))
    with pytest.raises(InvalidModelError, match=f"MuJoCo cannot compile.*{message}"):
        engine.from_mujoco(str(path))


def test_a_mesh_with_repeated_points_collides_as_mujoco():
    """A mesh whose vertex list repeats points (MuJoCo compiles it: its hull is a tetrahedron) touches a sphere as in
    mj_collision, at random poses."""
    m = mujoco.MjModel.from_xml_string(_mesh_scene("0 0 0  .1 0 0  0 .1 0  0 0 .1  0 0 .1  .1 0 0  0 0 0"))
    d, model = mujoco.MjData(m), engine.from_mujoco(m)
    rng, touching = np.random.default_rng(0), 0
    for _ in range(100):
        d.qpos[:] = np.r_[0, 0, 0, 1, 0, 0, 0, rng.normal(size=3) * 0.06, rng.normal(size=4)]
        d.qpos[10:] /= np.linalg.norm(d.qpos[10:])
        mujoco.mj_kinematics(m, d)
        mujoco.mj_collision(m, d)
        ref, mine = collision.from_mujoco(m, d), collision.detect(model, d.qpos.copy())
        touching += len(ref) > 0
        assert mine.geom.tolist() == ref.geom.tolist()
        for name in ("pos", "frame", "dist"):
            assert np.abs(getattr(mine, name) - getattr(ref, name)).max(initial=0) < 1e-9
    assert touching > 20


def _terrain(edit=None) -> mujoco.MjModel:
    m = mujoco.MjModel.from_xml_string(
        '<mujoco><asset><hfield name="ground" nrow="3" ncol="4" size="1 1 .2 .1" elevation="0 1 2 3 4 5 6 7 8 9 10 11"/>'
        '</asset><worldbody><geom type="hfield" hfield="ground"/><body pos="0 0 .3"><freejoint/><geom name="ball" '
        'size=".1"/></body></worldbody></mujoco>')
    if edit is not None:
        edit(m)
    return m


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_a_heightfield_of_non_finite_elevations_is_refused_at_load(value):
    """MuJoCo compiles a heightfield whose elevations hold NaN or infinity (and collides it as no terrain at all):
    physai names it when loading."""
    m = _terrain(_set("hfield_data", 7, value))
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    with pytest.raises(InvalidModelError, match=rf"heightfield 0 has elevation {value} at row 1, column 3; elevations "
                                                r"must be finite \(the model's heightfields: \['ground'\]\)"):
        engine.from_mujoco(m)


@pytest.mark.parametrize("field, value", [((0, 0), 0.0), ((0, 1), -1.0), ((0, 2), np.nan), ((0, 3), np.inf)])
def test_a_heightfield_of_sizes_that_are_not_positive_and_finite_is_refused_at_load(field, value):
    m = _terrain(_set("hfield_size", field, value))
    with pytest.raises(InvalidModelError, match=r"Hfields: .*\(the model's heightfields: \['ground'\]\)"):
        engine.from_mujoco(m)


def test_a_mesh_polygon_normal_that_is_not_unit_is_refused_at_load():
    """A mesh's polygon normals are unit (MuJoCo's compiler makes them so); one set to twice its length is named."""
    m = mujoco.MjModel.from_xml_string(_mesh_scene("0 0 0  .1 0 0  0 .1 0  0 0 .1"))
    m.mesh_polynormal[0] *= 2.0
    with pytest.raises(InvalidModelError, match=r"polygon 0's normal mesh_polynormal\[0\] has length 2: expected a unit"):
        engine.from_mujoco(m)


def test_a_mesh_graph_naming_a_vertex_outside_the_mesh_is_refused_at_load():
    vertices = " ".join(f"{x:.3f}" for x in np.random.default_rng(0).normal(size=(12, 3)).ravel())
    m = mujoco.MjModel.from_xml_string(_mesh_scene(vertices))
    hull = m.mesh_graph[m.mesh_graphadr[0]]
    m.mesh_graph[m.mesh_graphadr[0] + 2 + hull] = 99            # the first hull vertex's id in the mesh
    with pytest.raises(InvalidModelError, match=r"mesh_graph of mesh 0 \('m'\) holds 99: expected indices of its \d+ "
                                                "vertices"):
        engine.from_mujoco(m)


FLUID = ('<mujoco><option density="1.2"/><worldbody><body><freejoint/><geom name="s" size=".1" fluidshape="ellipsoid"/>'
         '<site name="a"/></body><body pos=".5 0 0"><joint type="hinge"/><geom name="w" size=".05" contype="0" '
         'conaffinity="0"/><site name="b" pos="0 0 .2"/></body></worldbody><tendon><spatial name="t"><site site="a"/>'
         '<geom geom="w"/><site site="b"/></spatial></tendon></mujoco>')


@pytest.mark.parametrize("field, index, value, message", [
    ("geom_fluid", (0, 3), np.nan, r"fluid_coef\[0, 3\] is nan: expected a finite value"),
    ("geom_size", (1, 0), 0.0, r"tendon 't' wraps around geom 1 \('w', sphere\) of radius 0.0: expected a finite radius > 0"),
    ("wrap_objid", 1, 7, r"tendon 't': path element 1 names a geom 7; the model has 2"),
    ("tendon_num", 0, 9, r"tendon 't': its path elements tendon_adr = 0, tendon_num = 9 lie outside the 3 wrap entries"),
])
def test_fluid_coefficients_and_tendon_paths_that_cannot_be_are_refused_at_load(field, index, value, message):
    """A fluid coefficient of a geom in the ellipsoid model that is not finite, a wrap around a geom (not colliding,
    so no other check sees its size) of radius 0, a wrap around a geom the model lacks, a tendon's path running past
    the wrap arrays: named at load. The model as compiled loads."""
    m = mujoco.MjModel.from_xml_string(FLUID)
    engine.from_mujoco(m)
    getattr(m, field)[index] = value
    with pytest.raises(InvalidModelError, match=message):
        engine.from_mujoco(m)


MUSCLE = ('<mujoco><worldbody><body><joint name="j" type="hinge" axis="0 1 0"/><geom type="capsule" size=".05" '
          'fromto="0 0 0 .3 0 0"/></body></worldbody><actuator><muscle name="mu" joint="j" lengthrange="-1 1"/>'
          '</actuator></mujoco>')


@pytest.mark.parametrize("field, index, value, message", [
    ("actuator_gainprm", 3, 0.0, "positive scale, vmax, fpmax, fvmax required in muscle"),
    ("actuator_gainprm", 6, -1.0, "positive scale, vmax, fpmax, fvmax required in muscle"),
    ("actuator_gainprm", 7, -1.0, "positive scale, vmax, fpmax, fvmax required in muscle"),
    ("actuator_gainprm", 8, -1.0, "positive scale, vmax, fpmax, fvmax required in muscle"),
    ("actuator_biasprm", 8, 0.0, "positive scale, vmax, fpmax, fvmax required in muscle"),
    ("actuator_gainprm", 4, 1.5, "lmin<1<lmax required in muscle"),
    ("actuator_lengthrange", 1, -1.0, r"lengthrange = \[-1, -1\]: expected lengthrange\[0\] < lengthrange\[1\]"),
    ("actuator_acc0", None, 0.0, r"acc0 = 0: expected acc0 > 0"),
])
def test_a_muscle_of_impossible_parameters_is_refused_at_load(field, index, value, message):
    """Muscle parameters MuJoCo's compiler refuses (its words), an empty lengthrange (the optimal length would be 0)
    and an automatic peak force (force < 0: scale / acc0) over acc0 = 0, set into a compiled model: named at load.
    The model as compiled loads."""
    m = mujoco.MjModel.from_xml_string(MUSCLE)
    engine.from_mujoco(m)
    getattr(m, field)[(0,) if index is None else (0, index)] = value
    with pytest.raises(InvalidModelError, match=rf"actuator 'mu': its muscle (gain|bias) .*{message}"):
        engine.from_mujoco(m)


@pytest.mark.parametrize("kind, size, index", [("sphere", ".1", 0), ("capsule", ".1 .2", 1), ("box", ".1 .2 .3", 2),
                                              ("ellipsoid", ".1 .2 .3", 0), ("cylinder", ".1 .2", 1)])
@pytest.mark.parametrize("value", [0.0, -0.1, np.nan])
def test_a_colliding_geom_without_size_is_refused_at_load(kind, size, index, value):
    """MuJoCo's compiler refuses a geom size that is not positive; set into a compiled model, physai names it when
    loading (its collision would divide by it)."""
    xml = '<mujoco><worldbody><body><freejoint/><geom name="g" type="{}" size="{}"/></body></worldbody></mujoco>'
    with pytest.raises(ValueError, match="must be positive"):
        mujoco.MjModel.from_xml_string(xml.format(kind, size.replace(".1", "0", 1)))
    m = mujoco.MjModel.from_xml_string(xml.format(kind, size))
    m.geom_size[0, index] = value
    with pytest.raises(InvalidModelError, match=f"geom 0 \\('g', {kind}\\) has size .*; a colliding {kind} needs its first"):
        engine.from_mujoco(m)


def test_gjk_and_epa_end_on_poses_that_are_not_finite():
    """NaN and infinite poses and sizes for every convex kind and a heightfield: GJK and EPA end within their iteration
    limits, with no contact or a finite one."""
    from physai.engine import convex, gjk
    from physai.engine.geoms import BOX, CAPSULE, CYLINDER, ELLIPSOID, HField, MESH, SPHERE
    from scenes import convex_points
    rng = np.random.default_rng(0)
    mesh = engine.from_mujoco(mujoco.MjModel.from_xml_string(_mesh_scene(" ".join(
        f"{x:.4f}" for x in convex_points("hull", rng).ravel())))).geoms.meshes.mesh(0)
    shapes = {SPHERE: np.full(3, 0.1), CAPSULE: np.full(3, 0.1), ELLIPSOID: np.full(3, 0.1), CYLINDER: np.full(3, 0.1),
              BOX: np.full(3, 0.1), MESH: mesh}
    terrain = HField(np.array([1.0, 1.0, 0.2, 0.1]), rng.uniform(0, 1, (4, 5)))
    for bad in (np.nan, np.inf, -np.inf):
        for pos, mat in ((np.full(3, bad), np.eye(3)), (np.zeros(3), np.full((3, 3), bad))):
            for kind1, shape1 in shapes.items():
                for kind2, shape2 in shapes.items():
                    obj1 = convex.Shape(kind1, np.zeros(3), np.eye(3), shape1, 0.0)
                    obj2 = convex.Shape(kind2, pos, mat, shape2, 0.01)
                    with np.errstate(all="ignore"):
                        status = gjk.ccd(obj1, obj2, 1e-6, 35)
                    assert status.gjk_iterations <= 35 and status.epa_iterations <= 35
                    with np.errstate(all="ignore"):
                        found = convex.convex(kind1, kind2, np.zeros(3), np.eye(3), shape1, pos, mat, shape2, 0.0, 1e-6, 35)
                    assert all(np.isfinite(c[0]) for c in found)
                with np.errstate(all="ignore"):
                    found = convex.hfield_convex(kind1, 1e-6, 35, np.zeros(3), np.eye(3), terrain, pos, mat, shape1, 0.0)
                assert all(np.isfinite(c[0]) for c in found) and (found == [] or kind1 == SPHERE)    # a sphere has no axes


@pytest.mark.parametrize("backend", BACKENDS)
def test_convex_pairs_far_out_end_on_both_backends(backend):
    """Geoms at 1e300 and 1.7e308 m (finite states whose GJK arithmetic overflows): detection ends, on both backends,
    with finite contacts or none, for a heightfield's prisms and a GJK pair alike, without numpy's RuntimeWarnings (the
    bounding-sphere filter's |dif|^2 overflowed to inf with one: apart, rightly)."""
    from scenes import convex_points
    rng = np.random.default_rng(0)
    points = " ".join(f"{x:.4f}" for x in convex_points("hull", rng).ravel())
    m = mujoco.MjModel.from_xml_string(
        f'<mujoco><asset><hfield name="h" nrow="3" ncol="3" size="1 1 .2 .1" elevation="0 1 0 1 0 1 0 1 0"/><mesh name="m" '
        f'vertex="{points}"/></asset><worldbody><geom type="hfield" hfield="h"/><body><freejoint/><geom type="ellipsoid" '
        'size=".1 .2 .1"/></body><body><freejoint/><geom type="mesh" mesh="m"/></body></worldbody></mujoco>')
    model = engine.from_mujoco(m)
    for big in (1e300, 1.7e308, -1e300):
        q = m.qpos0.copy()
        q[[0, 7]], q[8] = big, 0.01
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            found = run(backend, collision.detect, model, q)
        assert np.isfinite(found.dist).all() and np.isfinite(found.pos).all()

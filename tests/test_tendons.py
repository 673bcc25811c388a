"""Tendons (physai.engine.tendon, physai.tendons) against MuJoCo 4, computed in the test.

Random models (tendon_xml): a tree of hinges, slides and a ball with sites, sphere and cylinder geoms that tendons wrap
around; a fixed tendon with armature, spatial tendons through sites, around the sphere (with a side site outside it)
and the cylinder (without one), behind a pulley; springs with a dead band [lower, upper], dampers, length limits that
the random states reach, friction loss, an equality between two tendons with a polynomial (polycoef), and an actuator on
the fixed tendon. Compared at random states after mj_forward:

    ten_length, ten_J, ten_velocity                  1e-12 relative (physai.tendons, one state and N)
    qfrc_passive, qfrc_smooth, M (tendon armature)   1e-12
    efc_* rows (tendon equality, friction, limits)   1e-12
    actuator_length, actuator_moment                 1e-12 (a fixed tendon's actuator)
    simulate(constraints=True) vs mj_step            1e-10 in q over 100 steps, both backends

Each comparison runs on both backends (the compiled one: cpp/tendon.h, passive.h, constraint.h), and the compiled
lengths and Jacobians equal the NumPy text's within 1e-12; dm_control's tendon models (ball_in_cup, fish, manipulator,
stacker) run compiled as mj_step.

Known gap: a side site inside the wrapped geom (MuJoCo's wrap_inside): lengths agree to 1e-12, Jacobians only to 1e-6
(MuJoCo 4 solves the touching point differently from the 3.x Newton iteration physai follows).
"""

import mujoco
import numpy as np
import pytest

from physai import constraints, engine, forces, integrators, inverse, joints, tendons
from physai.engine.model import WRAP_PULLEY, BodySpec, JointSpec, SiteSpec
from physai.exceptions import InvalidModelError, UnsupportedModelError

from helpers import assert_close, run

TENDONS = engine.native.Kernel("tendons")                               # cpp/tendon.h's tendons, called directly

BACKENDS = ["numpy", "native"]
ROWS = {"type": "efc_type", "id": "efc_id", "pos": "efc_pos", "margin": "efc_margin", "diagA": "efc_diagA", "R": "efc_R",
        "D": "efc_D", "vel": "efc_vel", "aref": "efc_aref"}


def tendon_xml(seed: int, inside: bool = False) -> str:
    """A random model with every kind of tendon (see the module docstring); inside: the sphere's side site inside it."""
    rng = np.random.default_rng(seed)
    u = lambda lo, hi, n=3: " ".join(f"{v:.5g}" for v in rng.uniform(lo, hi, n))     # noqa: E731

    def axis():
        a = rng.normal(size=3)
        return " ".join(f"{v:.5g}" for v in a / np.linalg.norm(a))

    side = u(-0.02, 0.02) if inside else f"0.5 {u(-0.1, 0.1, 1)} 0.3"
    return f"""
<mujoco>
  <option gravity="0.3 -0.4 -9.7" timestep="0.002"/>
  <worldbody>
    <site name="anchor" pos="{u(-0.1, 0.1, 2)} 1"/>
    <body name="a" pos="0 0 0.5">
      <joint name="h1" axis="{axis()}" damping="0.1"/>
      <geom type="capsule" size="0.05" fromto="0 0 0 0.5 0 0" contype="0" conaffinity="0"/>
      <site name="s1" pos="{u(0.1, 0.3)}"/>
      <geom name="ball" type="sphere" size="{rng.uniform(0.06, 0.1):.4g}" pos="0.5 0 0" contype="0" conaffinity="0"/>
      <site name="side" pos="{side}"/>
      <body name="b" pos="0.5 0 0">
        <joint name="h2" axis="{axis()}" armature="0.01"/>
        <joint name="s2" type="slide" axis="{axis()}" stiffness="3"/>
        <geom type="capsule" size="0.04" fromto="0 0 0 0.4 0 0" contype="0" conaffinity="0"/>
        <site name="s2" pos="{u(0.2, 0.3, 1)} {u(-0.05, 0.05, 2)}"/>
        <geom name="drum" type="cylinder" size="0.06 0.1" pos="0.4 0 0" zaxis="{axis()}" contype="0" conaffinity="0"/>
        <body name="c" pos="0.4 0 0">
          <joint name="b3" type="ball" damping="0.05"/>
          <geom type="sphere" size="0.05" pos="0.2 0 0" contype="0" conaffinity="0"/>
          <site name="s3" pos="{u(0.15, 0.25, 1)} {u(-0.1, 0.1, 2)}"/>
        </body>
      </body>
    </body>
  </worldbody>
  <tendon>
    <fixed name="fixed" armature="0.02" frictionloss="0.05" stiffness="4" springlength="-0.1 0.1" damping="0.2">
      <joint joint="h1" coef="{rng.uniform(0.5, 1.5):.4g}"/><joint joint="s2" coef="{rng.uniform(-1, -0.2):.4g}"/>
      <joint joint="h2" coef="0.3"/>
    </fixed>
    <spatial name="wrapped" stiffness="20" springlength="0.9 1.1" damping="0.3" limited="true" range="0.8 1.2"
             frictionloss="0.02">
      <site site="anchor"/><site site="s1"/><geom geom="ball" sidesite="side"/><site site="s2"/><geom geom="drum"/>
      <site site="s3"/>
    </spatial>
    <spatial name="pulley" damping="0.1" limited="true" range="0 0.6" margin="0.01">
      <site site="anchor"/><site site="s1"/><pulley divisor="2"/><site site="s1"/><site site="s3"/>
    </spatial>
  </tendon>
  <equality><tendon tendon1="pulley" tendon2="fixed" polycoef="0.01 0.3 -0.2 0.1 0" solref="0.05 1"/></equality>
  <actuator><general name="pull" tendon="fixed" gear="1.5" gainprm="2" biasprm="0.1 -0.4 -0.2" biastype="affine"/></actuator>
</mujoco>"""


def random_states(m, n: int, seed: int):
    """n random (qpos, qvel) of the model: joints within about a radian or 0.3 m, unit quaternions."""
    rng = np.random.default_rng(seed)
    for _ in range(n):
        q = rng.normal(scale=0.6, size=m.nq)
        q[3:7] /= np.linalg.norm(q[3:7])                              # b3's quaternion (h1, h2, s2 come first)
        yield q, rng.normal(size=m.nv)


def forward(m, q, qd, ctrl=None):
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = q, qd
    if ctrl is not None:
        d.ctrl[:] = ctrl
    mujoco.mj_forward(m, d)
    return d


def dense_J(m, d) -> np.ndarray:
    J = np.zeros((m.ntendon, m.nv))
    mujoco.mju_sparse2dense(J, d.ten_J, m.ten_J_rownnz, m.ten_J_rowadr, m.ten_J_colind)
    return J


@pytest.fixture(params=BACKENDS)
def backend(request):
    """Each test that takes it runs on the NumPy engine and on the compiled one."""
    previous = engine.set_backend(request.param)
    yield request.param
    engine.set_backend(previous)


@pytest.mark.parametrize("seed", range(4))
def test_lengths_jacobians_and_velocities_equal_mujocos(seed, backend):
    m = mujoco.MjModel.from_xml_string(tendon_xml(seed))
    model = engine.from_mujoco(m)
    Q, QD, L, J, V = [], [], [], [], []
    wrapped = 0
    for q, qd in random_states(m, 20, seed):
        d = forward(m, q, qd)
        length, jac = tendons.kinematics(model, q)
        assert_close(length, d.ten_length, 1e-12, what="ten_length")
        assert_close(jac, dense_J(m, d), 1e-12, what="ten_J")
        assert_close(tendons.velocities(model, q, qd), d.ten_velocity, 1e-12, what="ten_velocity")
        wrapped += d.ten_wrapnum[1] > 4                                # the path touched a geom
        Q.append(q), QD.append(qd), L.append(d.ten_length.copy()), J.append(dense_J(m, d)), V.append(d.ten_velocity.copy())
    assert wrapped                                                     # the wraps were exercised
    assert_close(tendons.lengths(model, np.array(Q)), np.array(L), 1e-12, what="N lengths")
    assert_close(tendons.jacobians(model, np.array(Q)), np.array(J), 1e-12, what="N Jacobians")
    assert_close(tendons.velocities(model, np.array(Q), np.array(QD)), np.array(V), 1e-12, what="N velocities")


def test_a_side_site_inside_the_geom_wraps_through_it(backend):
    """The known gap (module docstring): lengths 1e-12, Jacobians 1e-6."""
    m = mujoco.MjModel.from_xml_string(tendon_xml(7, inside=True))
    model = engine.from_mujoco(m)
    for q, qd in random_states(m, 20, 7):
        d = forward(m, q, qd)
        length, jac = tendons.kinematics(model, q)
        assert_close(length, d.ten_length, 1e-12, what="ten_length")
        assert_close(jac, dense_J(m, d), 1e-6, what="ten_J")


@pytest.mark.parametrize("seed", range(3))
def test_passive_forces_and_mass_matrix_equal_mujocos(seed, backend):
    """Tendon springs (outside their dead band and in it) and dampers in qfrc_passive, their potential energy (MuJoCo's
    energy[0]); tendon armature in M."""
    m = mujoco.MjModel.from_xml_string(tendon_xml(seed))
    m.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_ENERGY
    model = engine.from_mujoco(m)
    ctrl = np.array([0.7])
    banded = 0
    for q, qd in random_states(m, 10, seed):
        d = forward(m, q, qd, ctrl)
        assert_close(forces.passive_force(model, q, qd), d.qfrc_passive, 1e-12, what="qfrc_passive")
        run = engine.DynamicsEvaluator(model, m.opt.timestep, integrators.step_inputs(model, None, ctrl, None, None))
        M, f, potential = run.evaluate(q, qd)
        full = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, full)
        assert_close(M, full, 1e-12, what="M with tendon armature")
        assert_close(engine.mass_matrix(model, q) + tendons.armature(model, q), full, 1e-12, what="physai.tendons.armature")
        assert_close(f, d.qfrc_smooth, 1e-12, what="qfrc_smooth")
        assert_close(potential, d.energy[0], 1e-12, what="potential energy with the tendon springs")
        lo, hi = m.tendon_lengthspring[1]
        banded += lo <= d.ten_length[1] <= hi
    assert banded < 10                                                 # a spring stretched beyond its band


@pytest.mark.parametrize("seed", range(3))
def test_rows_equal_mujocos(seed, backend):
    """The tendon equality (polycoef), the tendons' friction loss and their limits: MuJoCo's efc rows."""
    m = mujoco.MjModel.from_xml_string(tendon_xml(seed))
    model = engine.from_mujoco(m)
    limits = 0
    for q, qd in random_states(m, 10, seed):
        d = forward(m, q, qd)
        r = constraints.rows(model, q, qd)
        assert r.nefc == d.nefc and (r.ne, r.nf, r.nl) == (d.ne, d.nf, d.nl)
        for ours, theirs in ROWS.items():
            assert_close(getattr(r, ours), getattr(d, theirs), 1e-12, what=ours)
        assert_close(r.J, d.efc_J.reshape(d.nefc, m.nv), 1e-12, what="efc_J")
        limits += d.nl
    assert limits                                                      # the limits were reached


def test_forward_dynamics_with_tendon_rows_equals_mujocos(backend):
    m = mujoco.MjModel.from_xml_string(tendon_xml(0))
    m.opt.tolerance = 1e-15
    model = engine.from_mujoco(m)
    for q, qd in random_states(m, 5, 3):
        d = forward(m, q, qd)
        res = constraints.forward_dynamics(model, q, qd, d.qfrc_smooth + d.qfrc_bias, qacc_warmstart=d.qacc)
        assert_close(res.qacc, d.qacc, 1e-7, what="qacc")


@pytest.mark.parametrize("integrator", [None, "euler", "implicitfast", "implicit"])
def test_inverse_dynamics_equals_mj_inverse(integrator, backend):
    """physai.inverse.inverse_dynamics with the tendons' springs, dampers (in D) and armature (in M): MuJoCo's
    qfrc_inverse, continuous or with invdiscrete, constraints off."""
    m = mujoco.MjModel.from_xml_string(tendon_xml(1))
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    if integrator is not None:
        m.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_INVDISCRETE
        m.opt.integrator = {"euler": mujoco.mjtIntegrator.mjINT_EULER, "implicit": mujoco.mjtIntegrator.mjINT_IMPLICIT,
                            "implicitfast": mujoco.mjtIntegrator.mjINT_IMPLICITFAST}[integrator]
    model = engine.from_mujoco(m)
    rng = np.random.default_rng(4)
    for q, qd in random_states(m, 5, 4):
        d = forward(m, q, qd)
        d.qacc[:] = rng.normal(size=m.nv)
        mujoco.mj_inverse(m, d)
        dt = None if integrator is None else m.opt.timestep
        tau = inverse.inverse_dynamics(model, q, qd, d.qacc, dt=dt, integrator=integrator)
        assert_close(tau, d.qfrc_inverse, 1e-12, what="qfrc_inverse")


def test_a_fixed_tendons_actuator_has_mujocos_length_and_moment():
    m = mujoco.MjModel.from_xml_string(tendon_xml(1))
    model = engine.from_mujoco(m)
    act = model.actuators
    for q, qd in random_states(m, 5, 1):
        d = forward(m, q, qd, np.array([0.3]))
        moment = np.zeros((m.nu, m.nv))
        mujoco.mju_sparse2dense(moment, d.actuator_moment, d.moment_rownnz, d.moment_rowadr, d.moment_colind)
        assert_close(act.qmoment @ q, d.actuator_length, 1e-12, what="actuator_length")
        assert_close(act.moment, moment, 1e-12, what="actuator_moment")
        assert_close(act.moment, 1.5 * tendons.jacobians(model, q)[:1], 1e-12, what="gear J")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("integrator", ["euler", "implicitfast", "implicit", "rk4"])
def test_simulate_follows_mj_step(backend, integrator, request):
    """100 steps with the constraints on (limits reached, friction, the tendon equality) under a constant control."""
    m = mujoco.MjModel.from_xml_string(tendon_xml(2))
    m.opt.integrator = getattr(mujoco.mjtIntegrator, f"mjINT_{integrator.upper()}")
    m.opt.tolerance, m.opt.iterations = 1e-15, 1000
    q0, qd0 = next(random_states(m, 1, 2))
    ctrl = np.array([0.4])
    d = forward(m, q0, qd0, ctrl)
    Q, nl = [], 0
    for _ in range(100):
        mujoco.mj_step(m, d)
        Q.append(d.qpos.copy())
        nl += d.nl
    previous = engine.set_backend(backend)
    try:
        run = integrators.simulate(engine.from_mujoco(m), q0, qd0, steps=100, ctrl=ctrl, constraints=True, energy=False)
    finally:
        engine.set_backend(previous)
    assert nl
    assert_close(run.q[1:], np.array(Q), 1e-10, what="q")


@pytest.mark.parametrize("seed", range(3))
def test_compiled_lengths_and_jacobians_equal_numpys(seed):
    """cpp/tendon.h's tendons against the NumPy text (tendon.py) at 20 states: fixed, spatial, wrapped and pulleys."""
    m = mujoco.MjModel.from_xml_string(tendon_xml(seed))
    model = engine.from_mujoco(m)
    Q = np.array([q for q, _ in random_states(m, 20, seed)])
    L, J = run("numpy", tendons.kinematics, model, Q)
    Lc, Jc = TENDONS(model, Q)                                         # the compiled kernel itself
    one = run("native", tendons.kinematics, model, Q[0])
    assert_close(Lc, L, 1e-12, what="ten_length")
    assert_close(Jc, J, 1e-12, what="ten_J")
    assert_close(one[1], J[0], 1e-12, what="ten_J of one state")


def _task_models():
    """experiments/task-models/task_models.py (its task_files, load, start, mujoco_run)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "experiments" / "task-models" / "task_models.py"
    spec = importlib.util.spec_from_file_location("task_models", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


DM_TENDONS = ["dm_control/ball_in_cup", "dm_control/fish", "dm_control/manipulator", "dm_control/stacker"]


@pytest.mark.parametrize("name", DM_TENDONS)
def test_dm_control_tendon_models_run_compiled_as_mj_step(name):
    """dm_control's models with tendon forces: the compiled lengths and Jacobians equal MuJoCo's and the NumPy text's
    (1e-12) along MuJoCo's run, and the compiled simulate(constraints=True) follows mj_step within 1e-10 over 100 steps
    (the survey's start: first keyframe, constant control)."""
    tm = _task_models()
    m = tm.load(tm.task_files()[name])
    model = engine.from_mujoco(m)
    assert model.has_tendon_forces
    q0, qd0, ctrl = tm.start(m)
    Q = tm.mujoco_run(m, q0, qd0, ctrl)
    d = mujoco.MjData(m)
    L, J = [], []
    for q in Q[::10]:
        d.qpos[:] = q
        mujoco.mj_forward(m, d)
        L.append(d.ten_length.copy()), J.append(dense_J(m, d))
    numpy_L, numpy_J = run("numpy", tendons.kinematics, model, Q[::10])
    Lc, Jc = TENDONS(model, Q[::10])                                   # the compiled kernel itself
    assert engine.native.runs(model)                                   # simulate's loop compiled (cpp/simulate.h)
    steps = run("native", integrators.simulate, model, q0, qd0, steps=100, ctrl=ctrl, constraints=True, energy=False)
    assert_close(Lc, np.array(L), 1e-12, what="ten_length vs MuJoCo")
    assert_close(Jc, np.array(J), 1e-12, what="ten_J vs MuJoCo")
    assert_close(Lc, numpy_L, 1e-12, what="ten_length vs NumPy")
    assert_close(Jc, numpy_J, 1e-12, what="ten_J vs NumPy")
    assert_close(steps.q[1:], Q, 1e-10, what="q")


# ---- bad input ----

BASE = """<mujoco><worldbody><site name="top" pos="0 0 1"/>
  <body name="a"><joint name="h" axis="0 1 0"/><joint name="ball" type="ball"/><geom name="g" type="{kind}" size="0.1 0.1 0.1"/>
  <site name="s" pos="0.3 0 0"/></body></worldbody>
  <tendon>{tendon}</tendon></mujoco>"""


def test_a_tendon_around_a_missing_geom_is_refused_as_mujoco_refuses_it():
    xml = BASE.format(kind="sphere", tendon='<spatial><site site="top"/><geom geom="nothing"/><site site="s"/></spatial>')
    with pytest.raises(ValueError, match="nothing"):
        mujoco.MjModel.from_xml_string(xml)                           # MuJoCo's compiler refuses it
    m = mujoco.MjModel.from_xml_string(BASE.format(kind="sphere", tendon='<spatial name="t"><site site="top"/>'
                                                   '<geom geom="g"/><site site="s"/></spatial>'))
    fields = engine.loaders.tendons_from_mujoco(m)
    fields["wrap_objid"][1] = 5                                       # a geom the model does not have
    with pytest.raises(InvalidModelError, match="tendon 't': path element 1 names a geom 5; the model has 1"):
        engine.model.build(*_specs(m), tendons=fields)


def _specs(m):
    """The body list, gravity and the other build arguments of an MjModel, as from_mujoco passes them."""
    model = engine.from_mujoco(m)
    bodies = [BodySpec(-1, np.zeros(3), np.eye(3), [JointSpec(joints.HINGE, axis=np.array([0.0, 1, 0])),
                                                     JointSpec(joints.BALL)], 1.0, np.zeros(3), np.eye(3) * 0.01, "a")]
    sites = [SiteSpec(-1, np.array([0.0, 0, 1]), np.eye(3), "top"), SiteSpec(0, np.array([0.3, 0, 0]), np.eye(3), "s")]
    return bodies, model.gravity, None, (), None, (), sites, model.geoms


@pytest.mark.parametrize("change, message", [
    (lambda f: f["wrap_objid"].__setitem__(0, 9), "path element 0 names a site 9; the model has 2"),
    (lambda f: f["wrap_prm"].__setitem__(1, 4), "side site of its wrap around .* is 4.0"),
    (lambda f: f["wrap_type"].__setitem__(0, 7), "path element 0 has type 7"),
])
def test_a_spatial_tendons_bad_path_is_named(change, message):
    m = mujoco.MjModel.from_xml_string(BASE.format(kind="sphere", tendon='<spatial name="t"><site site="top"/>'
                                                   '<geom geom="g"/><site site="s"/></spatial>'))
    fields = engine.loaders.tendons_from_mujoco(m)
    change(fields)
    with pytest.raises(InvalidModelError, match=message):
        engine.model.build(*_specs(m), tendons=fields)


def test_wrapping_a_box_or_a_ball_joint_in_a_fixed_tendon_is_named():
    m = mujoco.MjModel.from_xml_string(BASE.format(kind="sphere", tendon='<spatial name="t"><site site="top"/>'
                                                   '<geom geom="g"/><site site="s"/></spatial>'))
    fields = engine.loaders.tendons_from_mujoco(m)
    bodies, gravity, *rest = _specs(m)
    boxed = rest[-1].__class__(**{**vars(rest[-1]), "geom_type": np.array([6])})
    with pytest.raises(InvalidModelError, match="wraps around .* of geom type 6: expected a sphere or cylinder"):
        engine.model.build(bodies, gravity, *rest[:-1], boxed, tendons=fields)
    fixed = {**fields, "wrap_type": np.array([1]), "wrap_objid": np.array([1]), "wrap_prm": np.array([1.0]),
             "tendon_num": np.array([1])}
    with pytest.raises(InvalidModelError, match="joint 1, a ball joint: a fixed tendon's joints are hinges and slides"):
        engine.model.build(*_specs(m), tendons=fixed)


def test_a_pulley_needs_a_positive_divisor_and_spatial_armature_is_refused():
    m = mujoco.MjModel.from_xml_string(BASE.format(kind="sphere", tendon='<spatial name="t"><site site="top"/>'
                                                   '<site site="s"/><pulley divisor="2"/><site site="top"/><site site="s"/>'
                                                   '</spatial>'))
    fields = engine.loaders.tendons_from_mujoco(m)
    assert fields["wrap_type"][2] == WRAP_PULLEY
    fields["wrap_prm"][2] = 0.0
    with pytest.raises(InvalidModelError, match="a pulley's divisor is 0.0: expected a value > 0"):
        engine.model.build(*_specs(m), tendons=fields)
    m.tendon_armature[0] = 0.1
    with pytest.raises(UnsupportedModelError, match="tendon 't' is spatial and has armature"):
        engine.from_mujoco(m)


def test_rollout_runs_each_state_as_simulate_and_energy_is_mujocos():
    """rollout of two starts equals simulate of each (the NumPy loop on either backend); the energy of each state is
    MuJoCo's (tendon springs included)."""
    m = mujoco.MjModel.from_xml_string(tendon_xml(3))
    m.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_ENERGY
    model = engine.from_mujoco(m)
    (q0, qd0), (q1, qd1) = random_states(m, 2, 3)
    ctrl = np.array([0.2])
    runs = integrators.rollout(model, np.array([q0, q1]), np.array([qd0, qd1]), steps=10, ctrl=ctrl, energy=True,
                               constraints=True)
    d = forward(m, q1, qd1, ctrl)
    for k in range(10):
        mujoco.mj_step(m, d)
        assert_close(runs.energy[1, k], d.energy.sum(), 1e-10, what=f"energy at step {k}")
    one = integrators.simulate(model, q0, qd0, steps=10, ctrl=ctrl, energy=False, constraints=True)
    assert_close(runs.q[0], one.q, 1e-13, what="rollout vs simulate")


SPRUNG = """<mujoco><option gravity="0.3 -0.4 -9.7"/><worldbody>
  <body><joint name="a" axis="0 1 0" damping="0.1"/><geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.05"/>
    <body pos="0.5 0 0"><joint name="b" axis="0.3 1 0"/><joint name="c" type="slide" axis="1 0 0.2"/>
      <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.04"/>
      <body pos="0.4 0 0"><joint name="d" type="ball"/><geom size="0.05" pos="0.1 0 0"/></body></body></body></worldbody>
  <tendon><fixed name="one" stiffness="30" springlength="-0.05 0.05" damping="0.6"><joint joint="a" coef="1"/>
    <joint joint="b" coef="-0.7"/><joint joint="c" coef="0.4"/></fixed>
    <fixed name="two" stiffness="12" damping="0.3"><joint joint="c" coef="2"/><joint joint="a" coef="0.5"/></fixed>
    <fixed name="free"><joint joint="b" coef="1"/></fixed></tendon>
  <actuator><motor tendon="free" gear="2"/></actuator></mujoco>"""


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("integrator", ["euler", "implicitfast", "implicit", "rk4"])
def test_fixed_tendon_springs_and_dampers_run_compiled_as_mj_step(backend, integrator):
    """Fixed tendons' springs (with a dead band) and dampers (in implicit's D): the compiled engine runs them
    (cpp/passive.h tendon_passive_force, native.runs), 100 steps within 1e-8 of mj_step, energies (but RK4's) 1e-10."""
    m = mujoco.MjModel.from_xml_string(SPRUNG)
    m.opt.integrator = getattr(mujoco.mjtIntegrator, f"mjINT_{integrator.upper()}")
    m.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_ENERGY
    model = engine.from_mujoco(m)
    assert model.has_tendon_forces and engine.native.runs(model)
    q0 = np.array([0.4, -0.3, 0.1, 0.9, 0.1, 0.3, -0.2])
    q0[3:] /= np.linalg.norm(q0[3:])
    qd0, ctrl = np.array([1.0, -0.5, 0.3, 0.2, -0.4, 0.6]), np.array([0.3])
    d = forward(m, q0, qd0, ctrl)
    Q, E = [], []
    for _ in range(100):
        mujoco.mj_step(m, d)
        Q.append(d.qpos.copy()), E.append(d.energy.sum())
    previous = engine.set_backend(backend)
    try:
        run = integrators.simulate(model, q0, qd0, steps=100, ctrl=ctrl, energy=True)
    finally:
        engine.set_backend(previous)
    assert_close(run.q[1:], np.array(Q), 1e-8, what="q")
    if integrator != "rk4":                                            # MuJoCo's RK4 energy is its last stage's
        assert_close(run.energy[:100], np.array(E), 1e-10, what="energy")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_fixed_tendon_equality_runs_compiled_as_mujoco(backend):
    """An equality between fixed tendons (polycoef) and one on a single tendon: the compiled engine's rows (cpp/
    constraint.h scalar_object) equal MuJoCo's efc rows, and 100 constrained steps follow mj_step within 1e-8."""
    xml = SPRUNG.replace("</tendon>", "</tendon><equality><tendon tendon1=\"two\" tendon2=\"one\" "
                         "polycoef=\"0.01 0.4 -0.3 0.2 0\"/><tendon tendon1=\"free\" solref=\"0.05 1\"/></equality>")
    m = mujoco.MjModel.from_xml_string(xml)
    m.opt.tolerance, m.opt.iterations = 1e-15, 1000
    model = engine.from_mujoco(m)
    assert engine.native.runs(model)
    previous = engine.set_backend(backend)
    try:
        for q, qd in random_states(m, 5, 6):
            d = forward(m, q, qd)
            r = constraints.rows(model, q, qd)
            assert r.nefc == d.nefc == 2
            for ours, theirs in ROWS.items():
                assert_close(getattr(r, ours), getattr(d, theirs), 1e-12, what=ours)
            assert_close(r.J, d.efc_J.reshape(d.nefc, m.nv), 1e-12, what="efc_J")
        q0, qd0 = next(random_states(m, 1, 8))
        run = integrators.simulate(model, q0, qd0, steps=100, ctrl=np.array([0.3]), constraints=True, energy=False)
    finally:
        engine.set_backend(previous)
    d = forward(m, q0, qd0, np.array([0.3]))
    Q = []
    for _ in range(100):
        mujoco.mj_step(m, d)
        Q.append(d.qpos.copy())
    assert_close(run.q[1:], np.array(Q), 1e-8, what="q")

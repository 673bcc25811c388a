"""Actuators with activation dynamics (MuJoCo's dyntype integrator, filter, filterexact, muscle; act, act_dot, actearly,
actlimited) and muscle gains and biases (physai.engine.actuation), against MuJoCo computed live: the forces and rates
at random states of random models, and simulate with the activations as state against mj_step for every integrator;
the transmissions whose arms depend on the configuration (mj_transmission) likewise."""

import dataclasses

import mujoco
import numpy as np
import pytest

from helpers import assert_close, run
from physai import acceptance, derivatives, engine, forces, integrators, inverse
from physai.engine import native
from physai.exceptions import InvalidArgumentError, InvalidModelError, InvalidStateError, ShapeError, UnsupportedModelError

INTEGRATORS = ("Euler", "implicit", "implicitfast", "RK4")


def _actuator(rng, k: int, target: str, muscles: bool = True) -> str:
    """One random actuator on `target` (joint="..." or tendon="..."), its kind chosen by k (every kind in turn; without
    muscles: the kinds without a muscle's dynamics, gain or bias)."""
    u = lambda lo, hi: f"{rng.uniform(lo, hi):.4g}"                       # noqa: E731
    limits = f'ctrllimited="true" ctrlrange="{u(-1, -0.3)} {u(0.3, 1)}"' if rng.random() < 0.6 else ""
    force = f'forcelimited="true" forcerange="{u(-3, -1)} {u(1, 3)}"' if rng.random() < 0.4 else ""
    act = f'actlimited="true" actrange="{u(-0.8, -0.2)} {u(0.2, 0.8)}"' if rng.random() < 0.5 else ""
    early = f'actearly="{str(rng.random() < 0.5).lower()}"'
    affine = (f'gaintype="affine" gainprm="{u(0.5, 2)} {u(-1, 1)} {u(-0.5, 0.5)}" '
              f'biastype="affine" biasprm="{u(-0.5, 0.5)} {u(-2, 0)} {u(-0.5, 0)}"')
    kinds = [
        f'<general {target} dyntype="filter" dynprm="{u(0.01, 0.1)}" gainprm="{u(0.5, 2)}" {limits} {force} {act} {early}/>',
        f'<general {target} dyntype="filterexact" dynprm="{u(0.01, 0.1)}" {affine} {limits} {act} {early}/>',
        f'<general {target} dyntype="integrator" gainprm="{u(0.5, 2)}" {limits} {force} {act} {early}/>',
        f'<muscle {target} lengthrange="{u(-0.6, -0.3)} {u(0.3, 0.6)}" force="{u(1, 5)}" timeconst="{u(0.01, 0.02)} '
        f'{u(0.03, 0.06)}" tausmooth="{u(0, 0.3) if rng.random() < 0.5 else 0}"/>',
        f'<general {target} dyntype="muscle" dynprm="{u(0.01, 0.02)} {u(0.03, 0.06)}" gaintype="muscle" '
        f'biastype="affine" biasprm="0 {u(-1, 0)} 0" lengthrange="{u(-0.6, -0.3)} {u(0.3, 0.6)}" '
        f'gainprm="0.75 1.05 {u(1, 3)} 200 0.5 1.6 {u(1, 2)} 1.3 1.2" {act} {early}/>',
        f'<general {target} gaintype="muscle" biastype="muscle" lengthrange="{u(-0.6, -0.3)} {u(0.3, 0.6)}" '
        f'gainprm="0.75 1.05 -1 {u(50, 200)} 0.5 1.6 1.5 1.3 1.2" biasprm="0.75 1.05 -1 {u(50, 200)} 0.5 1.6 1.5 1.3 1.2" '
        f'{limits}/>',
        f'<general {target} {affine} {limits} {force}/>',
    ]
    kinds = kinds if muscles else kinds[:3] + kinds[-1:]
    return kinds[k % len(kinds)]


def actuated_xml(seed: int, integrator: str = "Euler", nbody: int = 5, muscles: bool = True) -> str:
    """A random chain of hinges and slides with every kind of actuator (_actuator; muscles or not) on its joints and on a
    fixed tendon, joint actuatorfrcrange on one joint, tilted gravity and damping."""
    rng = np.random.default_rng(seed)
    f = lambda x: " ".join(f"{v:.4g}" for v in np.ravel(x))              # noqa: E731
    body = ""
    for b in reversed(range(nbody)):
        axis = rng.normal(size=3)
        kind = "slide" if b % 3 == 1 else "hinge"
        frc = 'actuatorfrclimited="true" actuatorfrcrange="-2 2"' if b == 2 else ""
        body = (f'<body pos="{f(rng.uniform(-0.3, 0.3, 3))}"><joint name="j{b}" type="{kind}" axis="{f(axis)}" '
                f'damping="{rng.uniform(0, 0.2):.3g}" {frc}/><geom type="sphere" size="0.05" '
                f'mass="{rng.uniform(0.3, 1.5):.3g}"/>{body}</body>')
    tendon = f'<tendon><fixed name="t"><joint joint="j0" coef="0.7"/><joint joint="j{nbody - 1}" coef="-0.4"/></fixed></tendon>'
    acts = [_actuator(rng, k, f'joint="j{k % nbody}"', muscles) for k in range(7)]
    acts += [_actuator(rng, int(rng.integers(0, 7)), 'tendon="t"', muscles) for _ in range(2)]
    return (f'<mujoco><option timestep="0.002" integrator="{integrator}" gravity="0.5 -0.3 -9.7">'
            f'<flag contact="disable"/></option><worldbody>{body}</worldbody>{tendon}'
            f'<actuator>{"".join(acts)}</actuator></mujoco>')


def random_state(m: mujoco.MjModel, rng) -> tuple:
    """(qpos, qvel, act, ctrl): random, the controls partly outside ctrlrange, the activations partly outside actrange."""
    return (rng.normal(size=m.nq) * 0.3, rng.normal(size=m.nv), rng.uniform(-1, 1, m.na), rng.uniform(-1.5, 1.5, m.nu))


@pytest.mark.parametrize("seed", range(6))
def test_forces_and_rates_equal_mujoco(seed):
    """actuator_force, act_dot and qfrc_actuator at random states of random models: within 1e-12 of MuJoCo's."""
    m = mujoco.MjModel.from_xml_string(actuated_xml(seed))
    d = mujoco.MjData(m)
    acts = engine.from_mujoco(m).actuators
    assert acts.na == m.na > 0
    rng = np.random.default_rng(seed)
    for _ in range(8):
        d.qpos[:], d.qvel[:], d.act[:], d.ctrl[:] = random_state(m, rng)
        mujoco.mj_forward(m, d)
        args = (acts, d.qpos, d.qvel, d.ctrl, d.act, m.opt.timestep)
        assert_close(forces.actuator_outputs(*args), d.actuator_force, 1e-12, what="actuator_force")
        assert_close(forces.actuator_force(*args), d.qfrc_actuator, 1e-12, what="qfrc_actuator")
        assert_close(forces.activation_rate(acts, d.ctrl, d.act), d.act_dot, 1e-12, what="act_dot")


def mj_run(m: mujoco.MjModel, q0, qd0, act0, ctrl, steps: int) -> tuple:
    """(qpos, act) after each of `steps` mj_step from (q0, qd0, act0) under a constant ctrl."""
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:], d.act[:], d.ctrl[:] = q0, qd0, act0, ctrl
    Q, A = [], []
    for _ in range(steps):
        mujoco.mj_step(m, d)
        Q.append(d.qpos.copy())
        A.append(d.act.copy())
    return np.array(Q), np.array(A)


@pytest.mark.parametrize("backend", ("native", "numpy"))
@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_simulate_carries_the_activations_as_mj_step(integrator, backend):
    """100 steps of simulate with the activations as state follow mj_step within 1e-8 in q and act, for each
    integrator, on both engines (cpp/actuation.h, cpp/forward.h carry act as engine/actuation.py and forward.py do)."""
    for seed in range(2):
        m = mujoco.MjModel.from_xml_string(actuated_xml(seed, integrator))
        q0, qd0, act0, ctrl = random_state(m, np.random.default_rng(seed))
        Q, A = mj_run(m, q0, qd0, act0, ctrl, 100)
        tr = run(backend, integrators.simulate, engine.from_mujoco(m), q0, qd0, steps=100, ctrl=ctrl, act=act0)
        assert_close(tr.q[1:], Q, 1e-8, what=f"q, seed {seed}")
        assert_close(tr.act[1:], A, 1e-8, what=f"act, seed {seed}")
        assert_close(tr.act[0], act0, 0.0)


@pytest.mark.parametrize("muscles", (True, False))
@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_compiled_rollout_equals_the_numpy_engine(integrator, muscles):
    """rollout of 3 trajectories with their own activations (and a step's fast path from zero activations) on the
    compiled backend equals the NumPy engine's within 1e-12: side by side in the lanes without muscles, one by one
    with them."""
    m = mujoco.MjModel.from_xml_string(actuated_xml(4, integrator, muscles=muscles))
    model = engine.from_mujoco(m)
    rng = np.random.default_rng(4)
    q0, qd0, act0, ctrl = random_state(m, rng)
    Q0, QD0, A0 = np.tile(q0, (3, 1)), qd0 + rng.normal(size=(3, m.nv)), rng.uniform(-1, 1, (3, m.na))
    native, numpy = (run(b, integrators.rollout, model, Q0, QD0, steps=30, ctrl=ctrl, act=A0) for b in ("native", "numpy"))
    assert_close(native.q, numpy.q, 1e-12, what="q")
    assert_close(native.act, numpy.act, 1e-12, what="act")
    native, numpy = (run(b, integrators.step_result, model, Q0, QD0, ctrl=ctrl) for b in ("native", "numpy"))
    assert_close(native.act, numpy.act, 1e-12, what="act of a step")
    assert_close(native.q, numpy.q, 1e-12, what="q of a step")


def test_filter_actuators_with_joint_limits_follow_mj_step():
    """Quadruped's kind of actuator (mjDYN_FILTER, position servos with a time constant) on limited joints, with the
    constraints acting: simulate follows mj_step within 1e-8 over 100 steps."""
    xml = actuated_xml(3, "Euler").replace('damping=', 'limited="true" range="-0.2 0.2" damping=')
    xml = xml.replace('<flag contact="disable"/>', '<flag contact="disable"/>').replace("<actuator>", (
        '<actuator><position joint="j0" kp="5" timeconst="0.03"/><position joint="j1" kp="3" kv="0.2" timeconst="0.05"/>'))
    m = mujoco.MjModel.from_xml_string(xml)
    m.opt.tolerance = 1e-15
    q0, qd0, act0, ctrl = random_state(m, np.random.default_rng(3))
    Q, A = mj_run(m, q0 * 0.3, qd0, act0, ctrl, 100)
    tr = integrators.simulate(engine.from_mujoco(m), q0 * 0.3, qd0, steps=100, ctrl=ctrl, act=act0, constraints=True)
    assert_close(tr.q[1:], Q, 1e-8, what="q")
    assert_close(tr.act[1:], A, 1e-8, what="act")


def test_step_and_rollout_carry_the_activations():
    """step returns (q, qd, act) for a model with activations, and a loop of steps is simulate; rollout from N
    activations is simulate from each."""
    m = mujoco.MjModel.from_xml_string(actuated_xml(1, "implicitfast"))
    model = engine.from_mujoco(m)
    rng = np.random.default_rng(1)
    q0, qd0, act0, ctrl = random_state(m, rng)
    tr = integrators.simulate(model, q0, qd0, steps=5, ctrl=ctrl, act=act0)
    q, qd, act = q0, qd0, act0
    for _ in range(5):
        q, qd, act = integrators.step(model, q, qd, ctrl=ctrl, act=act)
    assert_close(q, tr.q[-1], 1e-14)
    assert_close(act, tr.act[-1], 1e-14)
    acts = rng.uniform(-1, 1, (3, m.na))
    roll = integrators.rollout(model, np.tile(q0, (3, 1)), np.tile(qd0, (3, 1)), steps=5, ctrl=ctrl, act=acts)
    for n in range(3):
        alone = integrators.simulate(model, q0, qd0, steps=5, ctrl=ctrl, act=acts[n])
        assert_close(roll.act[n], alone.act, 1e-14)
        assert_close(roll.q[n], alone.q, 1e-14)
    r = integrators.step_result(model, np.tile(q0, (3, 1)), np.tile(qd0, (3, 1)), ctrl=ctrl, act=acts)
    assert r.act.shape == (3, m.na)


def test_models_without_activations_keep_their_call_forms():
    """na = 0: step returns (q, qd), and Trajectory.act and StepResult.act have no columns."""
    m = mujoco.MjModel.from_xml_string(actuated_xml(0).replace("<actuator>", "<actuator><motor joint='j0'/>").split(
        "<actuator>")[0] + "<actuator><motor joint='j0'/></actuator></mujoco>")
    model = engine.from_mujoco(m)
    assert len(integrators.step(model, np.zeros(m.nq), np.zeros(m.nv), ctrl=[0.3])) == 2
    assert integrators.simulate(model, np.zeros(m.nq), np.zeros(m.nv), steps=3).act.shape == (4, 0)
    assert integrators.step_result(model, np.zeros(m.nq), np.zeros(m.nv)).act.shape == (0,)


def test_act_of_the_wrong_shape_is_named():
    m = mujoco.MjModel.from_xml_string(actuated_xml(2))
    model = engine.from_mujoco(m)
    q, qd = np.zeros(m.nq), np.zeros(m.nv)
    with pytest.raises(ShapeError, match=f"act has shape \\(3,\\).*na = {m.na}"):
        integrators.simulate(model, q, qd, steps=2, act=np.zeros(3))
    with pytest.raises(ShapeError, match=f"na = {m.na}"):
        integrators.step(model, q, qd, act=np.zeros((2, m.na)))
    with pytest.raises(ShapeError, match=f"na = {m.na}"):
        integrators.rollout(model, np.zeros((2, m.nq)), np.zeros((2, m.nv)), steps=2, act=np.zeros((3, m.na)))
    with pytest.raises(ShapeError, match=f"na = {m.na}"):
        forces.actuator_force(model.actuators, q, qd, np.zeros(m.nu), act=np.zeros(m.na + 1), dt=m.opt.timestep)
    with pytest.raises(InvalidStateError, match="act\\[0\\] is nan; act must be finite"):
        integrators.simulate(model, q, qd, steps=2, act=np.full(m.na, np.nan))
    with pytest.raises(ShapeError, match="na = 0"):
        integrators.simulate(engine.from_mujoco("double_pendulum"), np.zeros(2), np.zeros(2), steps=2, act=np.zeros(1))
    early = np.flatnonzero(model.actuators.actearly & model.actuators.stateful)[0]
    with pytest.raises(InvalidArgumentError, match=f"actuator '{model.actuators.names[early]}' has actearly.*dt"):
        forces.actuator_force(model.actuators, q, qd, np.zeros(m.nu))


def test_a_state_with_activations_that_are_not_finite_is_reported():
    """step_result(..., on_divergence="report"): the state whose act row is NaN is not stepped (its act NaN, named);
    the others are."""
    model = engine.from_mujoco(mujoco.MjModel.from_xml_string(actuated_xml(2)))
    A = np.zeros((3, model.actuators.na))
    A[1] = np.nan
    r = integrators.step_result(model, np.zeros((3, model.nq)), np.zeros((3, model.nv)), act=A, on_divergence="report")
    assert r.status.failed == [1] and "its act is not finite" in r.status.messages[1]
    assert np.isnan(r.act[1]).all() and np.isfinite(r.act[[0, 2]]).all()


def test_a_muscle_with_impossible_parameters_is_refused_as_mujoco_refuses_it():
    """MuJoCo's compiler refuses a muscle with range[0] >= range[1] or lmin, lmax not around 1; an MjModel edited after
    compiling gets the same refusal from physai (InvalidModelError), not a number from a guarded division."""
    xml = '<muscle joint="j0" lengthrange="-0.5 0.5"/>'
    for bad in ('range="1.2 0.5"', 'lmin="1.5"'):
        with pytest.raises(ValueError, match="required in muscle"):
            mujoco.MjModel.from_xml_string(actuated_xml(0).split("<actuator>")[0] +
                                           f"<actuator>{xml[:-2]} {bad}/></actuator></mujoco>")
    m = mujoco.MjModel.from_xml_string(actuated_xml(0).split("<actuator>")[0] + f"<actuator>{xml}</actuator></mujoco>")
    m.actuator_gainprm[0, :2] = (1.2, 0.5)
    with pytest.raises(InvalidModelError, match="range\\[0\\]<range\\[1\\] required in muscle"):
        engine.from_mujoco(m)
    m.actuator_gainprm[0, :2], m.actuator_biasprm[0, 4] = (0.75, 1.05), 1.5
    with pytest.raises(InvalidModelError, match="lmin<1<lmax required in muscle"):
        engine.from_mujoco(m)


def test_step_derivatives_take_zero_activations_by_default():
    """step_derivatives of a model with activations (muscles among them) without act: the derivatives at act = 0."""
    model = engine.from_mujoco(mujoco.MjModel.from_xml_string(actuated_xml(0)))
    q, qd = np.zeros(model.nq), np.zeros(model.nv)
    A, B = derivatives.step_derivatives(model, q, qd)
    A0, B0 = derivatives.step_derivatives(model, q, qd, act=np.zeros(model.actuators.na))
    assert model.actuators.na > 0
    assert_close(A, A0, 1e-12)
    assert_close(B, B0, 1e-12)


def test_physai_check_balances_a_model_with_activations():
    """physai check's terms (acceptance.term_differences): the actuator term of a model with actearly actuators equals
    MuJoCo's qfrc_actuator (its force uses the next activation, after MuJoCo's timestep)."""
    m = mujoco.MjModel.from_xml_string(actuated_xml(1))
    differences = acceptance.term_differences(m, acceptance.mujoco_states(m, 10), engine.from_mujoco(m))
    assert differences["actuator"] < 1e-12, differences


# ---- transmissions whose moment arms depend on the configuration (mj_transmission) ----


def transmission_xml(seed: int, integrator: str = "Euler", contact: bool = False, cone: str = "pyramidal",
                     adhesion: bool = True) -> str:
    """A random tree: a free body carrying a hinge-slide chain and a ball-jointed arm, sites at random poses on them
    (and one on the world), a spatial tendon through three sites; an actuator of each transmission with random gears:
    ball and free joints (joint and jointinparent), sites without and with a refsite (on a relative, across the tree,
    on the world), a slider-crank, the spatial tendon, and (contact) a box on a floor, with friction cones `cone`, and
    (adhesion) adhesion actuators on the world and (last) on the box."""
    rng = np.random.default_rng(seed)
    f = lambda x: " ".join(f"{v:.4g}" for v in np.ravel(x))              # noqa: E731
    u = lambda n: f(rng.uniform(-1, 1, n))                                # noqa: E731
    quat = lambda: f(rng.normal(size=4))                                  # noqa: E731
    site = lambda name: f'<site name="{name}" pos="{f(rng.uniform(-0.1, 0.1, 3))}" quat="{quat()}"/>'   # noqa: E731
    geom = lambda: f'<geom type="sphere" size="0.05" mass="{rng.uniform(0.3, 1.5):.3g}"/>'               # noqa: E731
    chain = (f'<body pos="{u(3)}"><joint name="h1" type="hinge" axis="{u(3)}"/>{geom()}{site("s1")}'
             f'<body pos="{u(3)}"><joint name="sl" type="slide" axis="{u(3)}"/>{geom()}{site("s2")}'
             f'<body pos="{u(3)}" quat="{quat()}"><joint name="h2" type="hinge" axis="{u(3)}"/>{geom()}{site("s3")}'
             '</body></body></body>')
    arm = (f'<body pos="{u(3)}" quat="{quat()}"><joint name="ball" type="ball"/>{geom()}{site("s4")}'
           f'<body pos="{u(3)}"><joint name="h3" type="hinge" axis="{u(3)}"/>{geom()}{site("s5")}</body></body>')
    floor = '<geom type="plane" size="5 5 0.1"/>' if contact else ""
    pad = ('<body name="pad" pos="0 0 0.045"><joint type="slide" axis="0 0 1"/><joint type="hinge" axis="1 0 0"/>'
           '<geom type="box" size="0.2 0.15 0.05" mass="1"/></body>') if contact else ""
    world = (f'<worldbody>{floor}{site("s0")}<body pos="0 0 1" quat="{quat()}"><freejoint name="free"/>{geom()}'
             f'{site("sf")}{chain}{arm}</body>{pad}</worldbody>')
    tendon = '<tendon><spatial name="sp"><site site="s1"/><site site="s3"/><site site="s5"/></spatial></tendon>'
    gear = lambda: f(rng.uniform(-2, 2, 6))                               # noqa: E731
    acts = [f'<motor joint="ball" gear="{gear()}"/>', f'<motor jointinparent="ball" gear="{gear()}"/>',
            f'<motor joint="free" gear="{gear()}"/>', f'<motor jointinparent="free" gear="{gear()}"/>',
            f'<general site="s3" gear="{gear()}" gainprm="{rng.uniform(0.5, 2):.3g}"/>',
            f'<position site="s5" refsite="s4" gear="{gear()}" kp="{rng.uniform(1, 3):.3g}" kv="0.2"/>',
            f'<velocity site="s2" refsite="s5" gear="{gear()}" kv="{rng.uniform(0.5, 2):.3g}"/>',
            f'<position site="s3" refsite="s0" gear="{gear()}" kp="2"/>',
            f'<general cranksite="s2" slidersite="s4" cranklength="{rng.uniform(0.3, 1.5):.3g}" gear="{gear()}" '
            'biastype="affine" biasprm="0 -1 -0.1"/>',
            f'<position tendon="sp" gear="{gear()}" kp="3" kv="0.1"/>']
    acts += ['<adhesion body="world" ctrlrange="0 1" gain="2"/><adhesion body="pad" ctrlrange="0 1" gain="5"/>'] \
        if contact and adhesion else []
    flag = "" if contact else '<flag contact="disable"/>'
    return (f'<mujoco><option timestep="0.002" integrator="{integrator}" gravity="0.5 -0.3 -9.7" cone="{cone}">{flag}'
            '</option>'
            f'<default><joint armature="0.02" damping="0.2"/></default>{world}{tendon}'
            f'<actuator>{"".join(acts)}</actuator></mujoco>')


@pytest.mark.parametrize("seed", range(4))
def test_transmissions_equal_mujoco(seed):
    """actuator_length, actuator_moment, actuator_velocity, actuator_force and qfrc_actuator of every transmission
    (ball and free joints, jointinparent, sites with and without refsite, slider-crank, spatial tendon, adhesion on a
    body in contact and on the world, pyramidal and elliptic cones) at random poses (quaternions not normalized, the
    ball's half the time beyond a half turn), gears and controls: within 1e-12 of MuJoCo's."""
    m = mujoco.MjModel.from_xml_string(transmission_xml(seed, contact=seed % 2 == 1, cone=("pyramidal", "elliptic")[seed // 2]))
    d, model = mujoco.MjData(m), engine.from_mujoco(m)
    assert model.actuators.posed_each.sum() == m.nu - 1                 # all but the free joint's own-frame motor
    rng = np.random.default_rng(seed)
    touching, ball = 0, m.jnt_qposadr[m.joint("ball").id]
    for k in range(6):
        d.qpos[:], d.qvel[:], d.ctrl[:] = m.qpos0 + rng.normal(size=m.nq) * 0.5, rng.normal(size=m.nv), rng.uniform(-1, 1, m.nu)
        d.qpos[ball] -= 2 * (k % 2)                    # w < 0: a rotation vector beyond pi wrapped
        mujoco.mj_forward(m, d)
        touching += d.ncon > 0
        acts = forces.actuators_at(model, d.qpos)
        moment = np.zeros((m.nu, m.nv))
        mujoco.mju_sparse2dense(moment, d.actuator_moment, d.moment_rownnz, d.moment_rowadr, d.moment_colind)
        assert_close(acts.length, d.actuator_length, 1e-12, what="actuator_length")
        assert_close(acts.moment, moment, 1e-12, what="actuator_moment")
        assert_close(acts.moment @ d.qvel, d.actuator_velocity, 1e-12, what="actuator_velocity")
        assert_close(forces.actuator_outputs(acts, d.qpos, d.qvel, d.ctrl), d.actuator_force, 1e-12, what="actuator_force")
        assert_close(forces.actuator_force(acts, d.qpos, d.qvel, d.ctrl), d.qfrc_actuator, 1e-12, what="qfrc_actuator")
    assert touching or seed % 2 == 0


@pytest.mark.parametrize("backend", ("native", "numpy"))
@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_simulate_with_every_transmission_follows_mj_step(integrator, backend):
    """100 steps of simulate(constraints=True) on a model with an actuator of each transmission (the adhesive box held
    on its floor) follow mj_step within 1e-10 in q; the compiled backend declines the model for its adhesion
    (native.runs: a body's arms come from the contacts) and the NumPy engine runs it."""
    m = mujoco.MjModel.from_xml_string(transmission_xml(1, integrator, contact=True))
    model = engine.from_mujoco(m)
    assert not native.runs(model)
    rng = np.random.default_rng(1)
    q0, qd0, ctrl = m.qpos0.copy(), rng.normal(size=m.nv) * 0.3, rng.uniform(-0.3, 0.3, m.nu)
    ctrl[-1] = 0.8
    Q = mj_run(m, q0, qd0, np.zeros(0), ctrl, 100)[0]
    tr = run(backend, integrators.simulate, model, q0, qd0, steps=100, ctrl=ctrl, constraints=True)
    assert_close(tr.q[1:], Q, 1e-10, what="q")
    assert tr.ncon.min() > 0                           # the adhesive box touched its floor throughout


@pytest.mark.parametrize("backend", ("native", "numpy"))
@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_compiled_transmissions_follow_mj_step(integrator, backend):
    """Every transmission but adhesion (ball and free joints, jointinparent, sites with and without refsite, a
    slider-crank, a spatial tendon) runs compiled (native.runs; cpp/actuation.h's transmission at each evaluation):
    100 steps of simulate(constraints=True), the box on its floor, follow mj_step within 1e-10 in q on both backends."""
    m = mujoco.MjModel.from_xml_string(transmission_xml(1, integrator, contact=True, adhesion=False))
    model = engine.from_mujoco(m)
    assert native.runs(model) and model.actuators.posed_each.sum() == m.nu - 1
    rng = np.random.default_rng(1)
    q0, qd0, ctrl = m.qpos0.copy(), rng.normal(size=m.nv) * 0.3, rng.uniform(-0.3, 0.3, m.nu)
    Q = mj_run(m, q0, qd0, np.zeros(0), ctrl, 100)[0]
    tr = run(backend, integrators.simulate, model, q0, qd0, steps=100, ctrl=ctrl, constraints=True)
    assert_close(tr.q[1:], Q, 1e-10, what="q")
    assert tr.ncon.min() > 0                           # the box touched its floor throughout


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_compiled_transmissions_equal_the_numpy_engine(integrator):
    """rollout of 3 trajectories from perturbed states (the ball beyond a half turn in one), and a step, of a model with
    every transmission but adhesion: the compiled backend (one trajectory at a time: Actuators::lanes) equals the
    NumPy engine within 1e-12, and so does smooth_force (qfrc_smooth, which MuJoCo's equals within 1e-12) with its arms
    of the state."""
    m = mujoco.MjModel.from_xml_string(transmission_xml(2, integrator))
    model = engine.from_mujoco(m)
    rng = np.random.default_rng(2)
    Q0, QD0, ctrl = m.qpos0 + rng.normal(size=(3, m.nq)) * 0.3, rng.normal(size=(3, m.nv)) * 0.5, rng.uniform(-1, 1, m.nu)
    Q0[0, m.jnt_qposadr[m.joint("ball").id]] -= 2
    native_run, numpy_run = (run(b, integrators.rollout, model, Q0, QD0, steps=30, ctrl=ctrl) for b in ("native", "numpy"))
    assert_close(native_run.q, numpy_run.q, 1e-12, what="q")
    native_step, numpy_step = (run(b, integrators.step_result, model, Q0, QD0, ctrl=ctrl) for b in ("native", "numpy"))
    assert_close(native_step.q, numpy_step.q, 1e-12, what="q of a step")
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:], d.ctrl[:] = Q0[0], QD0[0], ctrl
    mujoco.mj_forward(m, d)
    for backend in ("native", "numpy"):
        f = run(backend, integrators.smooth_force, model, d.qpos, d.qvel, ctrl=ctrl)
        assert_close(f, d.qfrc_smooth, 1e-12, what=f"qfrc_smooth, {backend}")


def test_the_kept_simulation_workspace_follows_the_actuators():
    """The compiled engine's kept workspace of a short simulation is made again for actuators of the same nu whose arms
    depend on the configuration, or with activations, where the last ones' did not or had none: one model stepped 10
    times with constant arms, its own arms of the configuration, then a filter on the first actuator, each equal to the
    NumPy engine's within 1e-12."""
    m = mujoco.MjModel.from_xml_string(transmission_xml(1))
    model = engine.from_mujoco(m)
    constant = dataclasses.replace(model.actuators, posed_each=np.zeros(m.nu, bool))
    filtered = dataclasses.replace(constant, dyntype=np.eye(1, m.nu, dtype=np.int64)[0] * 2, dynprm=np.full((m.nu, 3), 0.05))
    rng = np.random.default_rng(1)
    q0, qd0, ctrl = m.qpos0.copy(), rng.normal(size=m.nv) * 0.3, rng.uniform(-0.3, 0.3, m.nu)
    for acts in (constant, model.actuators, filtered):
        native_run, numpy_run = (run(b, integrators.simulate, model, q0, qd0, steps=10, ctrl=ctrl, actuators=acts)
                                 for b in ("native", "numpy"))
        assert_close(native_run.q, numpy_run.q, 1e-12, what="q")
        assert_close(native_run.act, numpy_run.act, 1e-12, what="act")


def test_configuration_dependent_arms_need_a_state():
    """Actuators whose moment arms depend on the configuration are refused by name where no state poses them (the
    forces of bare Actuators, inverse dynamics), and where their targets are not in the model."""
    model = engine.from_mujoco(mujoco.MjModel.from_xml_string(transmission_xml(0)))
    q, qd = model.qpos0.copy(), np.zeros(model.nv)
    for call in (lambda: forces.actuator_force(model.actuators, q, qd, np.zeros(model.nu)),
                 lambda: forces.actuator_velocity_derivative(model.actuators, q, qd, np.zeros(model.nu))):
        with pytest.raises(UnsupportedModelError, match="actuator 'actuator0': its moment arms depend on the configuration"):
            call()
    with pytest.raises(UnsupportedModelError, match="inverse_dynamics models actuators with constant moment arms"):
        inverse.inverse_dynamics(model, q, qd, qd)
    for field, value, what in (("trnid", [[9, -1]], "a ball or free joint"), ("trnid", [[0, 7]], "a ball or free joint"),
                               ("trntype", [4], "a site and a refsite"), ("trntype", [2], "a crank site and a slider site")):
        acts = model.actuators
        trn = {"trntype": acts.trntype.copy(), "trnid": acts.trnid.copy()}
        trn[field][0] = value[0]
        if field == "trntype":
            trn["trnid"][0] = (len(model.site_name), -1)
        bad = dataclasses.replace(acts, **trn)
        with pytest.raises(InvalidModelError, match=f"actuator 'actuator0': its transmission's targets .* {what}"):
            integrators.simulate(model, q, qd, steps=1, actuators=bad)
    m = mujoco.MjModel.from_xml_string(transmission_xml(0))
    m.actuator_trnid[4, 0] = m.nsite                   # a site transmission edited to a site the model lacks
    with pytest.raises(InvalidModelError, match="actuator 'actuator4': its transmission's targets .* a site and a refsite"):
        engine.from_mujoco(m)


def test_physai_check_balances_a_model_with_every_transmission():
    """physai check's actuator term (acceptance.term_differences) on a model with every transmission, the adhesive box
    in contact: equal to MuJoCo's qfrc_actuator within 1e-12."""
    m = mujoco.MjModel.from_xml_string(transmission_xml(3, contact=True))
    differences = acceptance.term_differences(m, acceptance.mujoco_states(m, 6), engine.from_mujoco(m))
    assert differences["actuator"] < 1e-12, differences


@pytest.mark.parametrize("backend", ("native", "numpy"))
def test_free_joint_motors_run_compiled_as_mj_step(backend):
    """A motor on a free joint in its own frame has constant arms (its 6-gear, length 0), a jointinparent one arms of
    the configuration: the compiled engine runs both (native.runs), and 100 steps follow mj_step within 1e-10."""
    for inparent in (False, True):
        parent = '<motor jointinparent="free" gear="0 0 1 0.1 0 0"/>' if inparent else ""
        xml = (transmission_xml(0).split("<actuator>")[0] +
               f'<actuator><motor joint="free" gear="0.3 -0.2 1.5 0.1 0.2 -0.1"/>{parent}</actuator></mujoco>')
        m = mujoco.MjModel.from_xml_string(xml)
        model = engine.from_mujoco(m)
        assert native.runs(model) and model.actuators.posed_each.any() == inparent
        q0, qd0, ctrl = m.qpos0.copy(), np.full(m.nv, 0.2), np.linspace(0.5, 1.0, m.nu)
        Q = mj_run(m, q0, qd0, np.zeros(0), ctrl, 100)[0]
        tr = run(backend, integrators.simulate, model, q0, qd0, steps=100, ctrl=ctrl)
        assert_close(tr.q[1:], Q, 1e-10, what=f"q, jointinparent {inparent}")

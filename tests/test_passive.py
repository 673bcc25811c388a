"""physai.engine.passive against MuJoCo's engine_passive.c, computed live: gravity compensation (gravcomp and
actuatorgravcomp) and fluid forces (the inertia-box and the ellipsoid models, with density, viscosity and wind) on
random trees; qfrc_passive, qfrc_gravcomp and qfrc_fluid within 1e-12 relative, a step of the compiled and the NumPy
engines, the inertia boxes' velocity derivative in implicit steps, and Gymnasium's and dm_control's swimmers (from the
installed packages) over 100 steps of mj_step."""

import importlib.util
from pathlib import Path

import mujoco
import numpy as np
import pytest

from helpers import TENDON_XML, assert_close, run
from physai import collision, derivatives, engine, forces, integrators
from physai.exceptions import UnsupportedModelError

RTOL = 1e-12
BACKENDS = ("native", "numpy")
SWIMMERS = ("gymnasium", "dm_control")


def swimmer(source: str) -> mujoco.MjModel:
    """Gymnasium 1.4's Swimmer (envs/mujoco/assets/swimmer.xml) or dm_control 1.0's 6-body suite swimmer, from the
    installed packages (the dev group's)."""
    if source == "gymnasium":
        root = Path(importlib.util.find_spec("gymnasium").submodule_search_locations[0])
        return mujoco.MjModel.from_xml_path(str(root / "envs" / "mujoco" / "assets" / "swimmer.xml"))
    from dm_control.suite import swimmer as dm_swimmer
    xml, assets = dm_swimmer.get_model_and_assets(6)
    return mujoco.MjModel.from_xml_string(xml, assets)


def fluid_tree_xml(seed: int, ellipsoid: bool, nbody: int = 6, integrator: str = "Euler") -> str:
    """An MJCF tree of random joints (a free root, hinges, slides, balls, a body without joints) and random geoms,
    most bodies with gravcomp in [0, 1.5], every odd body's joint with actuatorgravcomp and a motor on each hinge, in a
    fluid of random density, viscosity and wind; ellipsoid: every even body's geoms use the ellipsoid model with random
    coefficients (the other bodies their inertia box)."""
    rng = np.random.default_rng(seed)
    f = lambda x: " ".join(f"{v:.6g}" for v in np.ravel(x))  # noqa: E731

    def unit(n):
        x = rng.normal(size=n)
        return x / np.linalg.norm(x)

    def inertial():
        x = rng.uniform(0.01, 0.1, 3)                  # principal moments (x+y, y+z, z+x) respect the triangle rule
        return (f'<inertial pos="{f(rng.uniform(-0.1, 0.1, 3))}" quat="{f(unit(4))}" mass="{rng.uniform(0.3, 2):.4g}" '
                f'diaginertia="{f([x[0] + x[1], x[1] + x[2], x[2] + x[0]])}"/>')

    def joint(kind, b):
        act = ' actuatorgravcomp="true"' if b % 2 else ""
        return (f'<joint name="j{b}{kind}" type="{kind}" axis="{f(unit(3))}" pos="{f(rng.uniform(-0.05, 0.05, 3))}" '
                f'damping="{rng.uniform(0, 0.3):.3g}"{act}/>')

    def geom(b):
        kind = str(rng.choice(["sphere", "capsule", "ellipsoid", "box", "cylinder"]))
        size = {"sphere": 1, "capsule": 2, "cylinder": 2}.get(kind, 3)
        shape = f' fluidshape="ellipsoid" fluidcoef="{f(rng.uniform(0.1, 1.5, 5))}"' if ellipsoid and b % 2 == 0 else ""
        return (f'<geom type="{kind}" size="{f(rng.uniform(0.03, 0.2, size))}" pos="{f(rng.uniform(-0.1, 0.1, 3))}" '
                f'quat="{f(unit(4))}"{shape}/>')

    def gravcomp():
        return f' gravcomp="{rng.uniform(0, 1.5):.4g}"' if rng.uniform() < 0.7 else ""

    parents, bodies, motors = [-1], [f'<body pos="0.1 -0.2 0.8"{gravcomp()}><freejoint/>{inertial()}{geom(0)}{geom(0)}'], ""
    for b in range(1, nbody):
        parents.append(int(rng.integers(0, b)))
        kind = str(rng.choice(["hinge", "slide", "ball", "hinge"]))
        joints = "" if b == 3 else joint(kind, b)
        motors += f'<motor joint="j{b}hinge"/>' if joints and kind == "hinge" else ""
        bodies.append(f'<body pos="{f(rng.uniform(-0.3, 0.3, 3))}" quat="{f(unit(4))}"{gravcomp()}>{joints}{inertial()}{geom(b)}')
    children = {b: [c for c in range(nbody) if parents[c] == b] for b in range(nbody)}

    def emit(b):
        return bodies[b] + "".join(emit(c) for c in children[b]) + "</body>"

    return (f'<mujoco><option gravity="0.4 -0.7 -9.6" density="{rng.uniform(500, 1500):.6g}" '
            f'viscosity="{rng.uniform(0.001, 0.1):.6g}" wind="{f(rng.uniform(-1, 1, 3))}" integrator="{integrator}">'
            f'<flag contact="disable"/></option><worldbody>{emit(0)}</worldbody><actuator>{motors}</actuator></mujoco>')


def random_state(m: mujoco.MjModel, d: mujoco.MjData, seed: int, speed: float = 2.0) -> None:
    """d at a random state (q near qpos0 with random quaternions, qd normal of deviation `speed`) and random ctrl,
    after mj_forward."""
    rng = np.random.default_rng(seed)
    d.qpos[:] = m.qpos0 + 0.3 * rng.normal(size=m.nq)
    for j in range(m.njnt):
        if m.jnt_type[j] in (mujoco.mjtJoint.mjJNT_FREE, mujoco.mjtJoint.mjJNT_BALL):
            a = m.jnt_qposadr[j] + (3 if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE else 0)
            d.qpos[a:a + 4] = rng.normal(size=4)
            d.qpos[a:a + 4] /= np.linalg.norm(d.qpos[a:a + 4])
    d.qvel[:] = speed * rng.normal(size=m.nv)
    d.ctrl[:] = rng.uniform(-1, 1, m.nu)
    mujoco.mj_forward(m, d)


def ctrl_of(m: mujoco.MjModel, d: mujoco.MjData):
    """d.ctrl (a copy), or None for a model without actuators."""
    return d.ctrl.copy() if m.nu else None


CASES = [(seed, ellipsoid) for seed in range(4) for ellipsoid in (False, True)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("seed, ellipsoid", CASES)
def test_passive_forces_match_mujoco(seed, ellipsoid, backend):
    m = mujoco.MjModel.from_xml_string(fluid_tree_xml(seed, ellipsoid))
    d = mujoco.MjData(m)
    model = engine.from_mujoco(m)
    assert model.fluid_ellipsoid.any() == ellipsoid and (model.body_gravcomp > 0).any()
    for k in range(4):
        random_state(m, d, 10 * seed + k)
        gravcomp, fluid = run(backend, forces.body_passive_forces, model, d.qpos, d.qvel)
        assert_close(gravcomp, d.qfrc_gravcomp, RTOL, what="qfrc_gravcomp")
        assert_close(fluid, d.qfrc_fluid, RTOL, what="qfrc_fluid")
        assert_close(run(backend, forces.passive_force, model, d.qpos, d.qvel), d.qfrc_passive, RTOL, what="qfrc_passive")
        smooth = run(backend, integrators.smooth_force, model, d.qpos, d.qvel, ctrl=ctrl_of(m, d))   # actuatorgravcomp's
        assert_close(smooth, d.qfrc_smooth, RTOL, what="qfrc_smooth")


@pytest.mark.parametrize("source", ["fluid", "tendon"])
def test_passive_forces_of_n_states_in_one_call(source):
    """passive_force and body_passive_forces of N states: each row MuJoCo's qfrc_passive, qfrc_gravcomp, qfrc_fluid
    at that state (gravity compensation and fluid on a random tree; tendon springs and dampers on TENDON_XML)."""
    m = mujoco.MjModel.from_xml_string(fluid_tree_xml(1, True) if source == "fluid" else TENDON_XML)
    d, model = mujoco.MjData(m), engine.from_mujoco(m)
    states = []
    for k in range(4):
        random_state(m, d, 40 + k)
        states.append((d.qpos.copy(), d.qvel.copy(), d.qfrc_passive.copy(), d.qfrc_gravcomp.copy(), d.qfrc_fluid.copy()))
    q, qd, passive, gravcomp, fluid = (np.array(x) for x in zip(*states))
    assert_close(forces.passive_force(model, q, qd), passive, RTOL, per_state=True, what="qfrc_passive")
    batched = forces.body_passive_forces(model, q, qd)
    assert_close(batched[0], gravcomp, RTOL, per_state=True, what="qfrc_gravcomp")
    assert_close(batched[1], fluid, RTOL, per_state=True, what="qfrc_fluid")
    assert forces.passive_force(model, q[0], qd).shape == (4, model.nv)          # a single q shared by the batch


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("seed, ellipsoid", CASES)
def test_step_matches_mj_step(seed, ellipsoid, backend):
    """One Euler step of simulate (the compiled loop on the native backend) from random states: the velocity change
    equals mj_step's within 1e-11 of its size."""
    m = mujoco.MjModel.from_xml_string(fluid_tree_xml(seed, ellipsoid))
    d = mujoco.MjData(m)
    model = engine.from_mujoco(m)
    for k in range(3):
        random_state(m, d, 10 * seed + k)
        q, qd, ctrl = d.qpos.copy(), d.qvel.copy(), ctrl_of(m, d)
        mujoco.mj_step(m, d)
        traj = run(backend, integrators.simulate, model, q, qd, steps=1, ctrl=ctrl, energy=False)
        assert_close(traj.qd[1] - qd, d.qvel - qd, 1e-11, floor=0.0, what="qd change")


@pytest.mark.parametrize("ellipsoid", (False, True))
def test_rollout_lanes_match_mj_step(ellipsoid):
    """Six states side by side in the compiled batch kernel's lanes, 5 Euler steps each: q within 1e-12 of mj_step."""
    m = mujoco.MjModel.from_xml_string(fluid_tree_xml(3, ellipsoid))
    d = mujoco.MjData(m)
    model = engine.from_mujoco(m)
    q0, qd0, expected = [], [], []
    for k in range(6):
        random_state(m, d, 100 + k, speed=0.3)                       # slow: the random fluids are stiff
        q0.append(d.qpos.copy()), qd0.append(d.qvel.copy())
        d.ctrl[:] = 0.5
        for _ in range(5):
            mujoco.mj_step(m, d)
        expected.append(d.qpos.copy())
    ctrl = np.full(m.nu, 0.5) if m.nu else None
    traj = run("native", integrators.rollout, model, np.array(q0), np.array(qd0), steps=5, ctrl=ctrl)
    assert_close(traj.q[:, -1], np.array(expected), RTOL, what="q after 5 steps")


def mj_step_error(m: mujoco.MjModel, backend: str, steps: int = 100) -> tuple[float, float]:
    """(max |q - mj_step's q|, how far mj_step's q moved) over `steps` steps of simulate with constraints from the first
    keyframe (or qpos0) at rest, under a constant control in ctrlrange, with the model's own integrator. physai's
    collision check still refuses pairs of a model whose contacts are off (dm_control's ellipsoids: issue Q), so the
    pairs it cannot collide are left out."""
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0) if m.nkey else mujoco.mj_resetData(m, d)
    d.ctrl[:] = ctrl = np.linspace(-0.8, 0.9, m.nu)
    expected = [d.qpos.copy()]
    for _ in range(steps):
        mujoco.mj_step(m, d)
        expected.append(d.qpos.copy())
    expected = np.array(expected)
    model = collision.ignoring_unsupported(engine.from_mujoco(m))
    traj = run(backend, integrators.simulate, model, expected[0], np.zeros(m.nv), steps=steps, ctrl=ctrl, energy=False,
               constraints=True)
    return np.abs(traj.q - expected).max(), np.abs(expected[-1] - expected[0]).max()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("source", SWIMMERS)
def test_swimmer_follows_mj_step(source, backend):
    """Gymnasium's Swimmer (RK4, inertia-box fluid, limits) and dm_control's 6-body swimmer (Euler, limits) under a
    constant control in ctrlrange follow mj_step within 1e-8 in q over 100 steps, with their own integrators."""
    error, moved = mj_step_error(swimmer(source), backend)
    assert error < 1e-8 and moved > 1e-3                              # and it swam


@pytest.mark.parametrize("backend", BACKENDS)
def test_fish_with_its_tendon_springs_follows_mj_step(backend):
    """dm_control's Fish (a free body in an inertia-box fluid, its fins' tendon springs: physai.engine.tendon, run by
    the NumPy engine on either backend) follows mj_step within 1e-8 over 100 steps."""
    from dm_control.suite import fish
    m = mujoco.MjModel.from_xml_string(*fish.get_model_and_assets())
    assert m.opt.density > 0 and m.tendon_stiffness.any()
    error, moved = mj_step_error(m, backend)
    assert error < 1e-8 and moved > 1e-3


def test_implicit_with_ellipsoid_fluid_is_refused():
    model = engine.from_mujoco(mujoco.MjModel.from_xml_string(fluid_tree_xml(0, True, integrator="implicitfast")))
    q, qd = model.qpos0, np.zeros(model.nv)
    for call in (lambda: integrators.simulate(model, q, qd, steps=1),
                 lambda: integrators.simulate(model, q, qd, steps=1, integrator="implicit"),
                 lambda: integrators.velocity_derivative(model, q, qd, "implicitfast")):
        with pytest.raises(UnsupportedModelError, match="ellipsoid model"):
            call()
    integrators.simulate(model, q, qd, steps=1, integrator="rk4")        # explicit integrators run


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("integrator", ("implicit", "implicitfast"))
@pytest.mark.parametrize("seed", range(2))
def test_implicit_with_inertia_boxes_follows_mj_step(seed, integrator, backend):
    """The inertia boxes' velocity derivative in the implicit integrators' D (MuJoCo's mjd_passive_vel): 20 steps from a
    random state within 1e-10 of mj_step in q."""
    m = mujoco.MjModel.from_xml_string(fluid_tree_xml(seed, False, integrator=integrator))
    d = mujoco.MjData(m)
    random_state(m, d, seed, speed=0.3)                                # slow: the random fluids are stiff
    q, qd, ctrl = d.qpos.copy(), d.qvel.copy(), ctrl_of(m, d)
    expected = [q]
    for _ in range(20):
        mujoco.mj_step(m, d)
        expected.append(d.qpos.copy())
    traj = run(backend, integrators.simulate, engine.from_mujoco(m), q, qd, steps=20, ctrl=ctrl, energy=False)
    assert_close(traj.q, np.array(expected), 1e-10, what=f"{integrator} q")


@pytest.mark.parametrize("integrator", integrators.INTEGRATORS)
@pytest.mark.parametrize("ellipsoid", [False, True])
def test_step_derivatives_in_a_fluid(integrator, ellipsoid):
    """step_derivatives of random trees in a fluid (inertia boxes, and the ellipsoid model beside them where the
    integrator is explicit; gravity compensation too), the fluid forces differenced inside the analytic step
    (derivatives._HardForces): against MuJoCo's centred differences within 1e-8 (test_derivatives.against_mujoco). Under
    an implicit integrator the ellipsoid model is refused by name (its velocity derivative is not modelled)."""
    from test_derivatives import against_mujoco
    mjcf = {"euler": "Euler", "rk4": "RK4"}.get(integrator, integrator)
    for seed in range(2):
        m = mujoco.MjModel.from_xml_string(fluid_tree_xml(seed, ellipsoid, integrator=mjcf))
        m.opt.timestep = 0.005
        if ellipsoid and integrator in ("implicit", "implicitfast"):
            model = engine.from_mujoco(m)
            with pytest.raises(UnsupportedModelError, match="ellipsoid model"):
                derivatives.step_derivatives(model, model.qpos0, np.zeros(model.nv), ctrl=np.zeros(model.nu))
            return
        d = mujoco.MjData(m)
        random_state(m, d, seed, speed=0.3)                            # slow: the random fluids are stiff
        against_mujoco(m, [(d.qpos.copy(), d.qvel.copy(), np.zeros(0), d.ctrl.copy())], integrator)


FREE_IN_FLUID = """<mujoco><option timestep="0.005" integrator="implicitfast" density="1000" viscosity="0.05"
  wind="0.3 -0.2 0.1"/><worldbody>
  <body pos="0 0 1"><freejoint/><geom type="box" size=".1 .2 .3" pos=".05 -.03 .02" mass="2"/></body>
  <body pos="1 0 1"><freejoint/><geom type="capsule" size=".05 .2" mass="1"/></body>
  </worldbody></mujoco>"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_implicitfast_solves_a_free_body_in_a_fluid_with_its_damping(backend):
    """implicitfast solves a standalone free body's rows in its own block M - h D + h dc/dqd (MuJoCo's mjd_freeMhat),
    D with the fluid's velocity derivative (the NumPy engine was 0.04 off in q without it): 100 steps of two free bodies
    in a fluid from a spinning start within 1e-10 of mj_step in q."""
    m = mujoco.MjModel.from_xml_string(FREE_IN_FLUID)
    d = mujoco.MjData(m)
    d.qvel[:] = np.random.default_rng(4).normal(0, 2, m.nv)
    q, qd, expected = d.qpos.copy(), d.qvel.copy(), [d.qpos.copy()]
    for _ in range(100):
        mujoco.mj_step(m, d)
        expected.append(d.qpos.copy())
    traj = run(backend, integrators.simulate, engine.from_mujoco(m), q, qd, steps=100, energy=False)
    assert_close(traj.q, np.array(expected), 1e-10, what="q")


@pytest.mark.parametrize("flags", [mujoco.mjtDisableBit.mjDSBL_GRAVITY,
                                   mujoco.mjtDisableBit.mjDSBL_SPRING | mujoco.mjtDisableBit.mjDSBL_DAMPER,
                                   mujoco.mjtDisableBit.mjDSBL_ACTUATION])
def test_disable_flags_as_mujoco(flags):
    """Gravity off: no gravity compensation; springs and dampers off: no passive force at all; actuation off: the
    actuatorgravcomp share is lost (qfrc_smooth as MuJoCo's)."""
    m = mujoco.MjModel.from_xml_string(fluid_tree_xml(2, True))
    m.opt.disableflags |= flags
    d = mujoco.MjData(m)
    random_state(m, d, 5)
    model = engine.from_mujoco(m)
    assert_close(forces.passive_force(model, d.qpos, d.qvel), d.qfrc_passive, RTOL, what="qfrc_passive")
    assert_close(integrators.smooth_force(model, d.qpos, d.qvel, ctrl=ctrl_of(m, d)), d.qfrc_smooth, RTOL, what="qfrc_smooth")


def test_what_stays_refused_is_named():
    base = '<mujoco><worldbody><body>{}<inertial pos="0 0 0" mass="1" diaginertia="1 1 1"/></body></worldbody>{}</mujoco>'
    limited = base.format('<joint name="h" actuatorgravcomp="true" actuatorfrcrange="-1 1"/>', '<actuator><motor joint="h"/></actuator>')
    limited = limited.replace("<body>", '<body gravcomp="1">')
    with pytest.raises(UnsupportedModelError, match="actuatorgravcomp"):
        engine.from_mujoco(mujoco.MjModel.from_xml_string(limited))
    tendon = base.format('<joint name="h"/>', '<tendon><fixed stiffness="1 0.5"><joint joint="h" coef="1"/></fixed></tendon>')
    with pytest.raises(UnsupportedModelError, match="polynomial tendon stiffness"):
        engine.from_mujoco(mujoco.MjModel.from_xml_string(tendon))

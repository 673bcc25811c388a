"""A tendon's actuatorfrcrange (MuJoCo's tendon_actfrclimited, tendon_actfrcrange) against MuJoCo 4.0, computed in the
test.

mj_fwdActuation sums the forces of the actuators on a force-limited tendon before their limits; a total T outside
[low, high] scales each by low / T or high / T (then each actuator's forcerange clamps it). MuJoCo 4.0 (changelog item
47) drops the actuators of a tendon whose total of their final forces (actuator_force: scaled, then clamped) is at
(within 1e-12) or beyond its limits from the implicit actuator derivatives (implicit, implicitfast and the discrete
step's metric).

Random models (tendon_frc_xml): a fixed tendon over hinges and a slide in two trees, with a position servo, a velocity
servo and a motor on it; optionally a spatial tendon through sites around a sphere with a position servo (with its own
forcerange) and a motor; an unlimited fixed tendon's velocity servo and a joint servo beside them. Random states and
controls, the tendons' totals saturated at some steps and not at others:

    simulate vs mj_step, every integrator                 1e-12 in q over 100 steps, both backends
    simulate(constraints=True) with tendon limits         1e-12 (tolerance 1e-15 on both sides)
    rollout of 6 starts vs mj_step of each                1e-12 (the compiled lanes, a fixed tendon alone)
    step_derivatives vs mjd_transitionFD (centred)        1e-8 (its finite-difference error; ~2e-10 seen); with a
    tendon limit row (constraints=True, Richardson)       5e-8 (9.4e-9 seen)
    the actuators' qDeriv (implicitfast) vs MuJoCo's      1e-12
    inverse_dynamics (dt, implicit[fast]) vs mj_inverse   1e-12 with invdiscrete, and its replay onto mj_step 2e-11
    compiled step_derivatives vs the NumPy text           1e-12 (cpp/step_derivative.h's limited_arm)

The review's model (own_range_xml: a velocity servo with its own forcerange on the force-limited tendon, whose clamp
moves the final total across the range's edge either way) under the same bounds: simulate, qDeriv at 300 states
(among them scaled totals landing within 1e-12 of a limit but not on it), step_derivatives, inverse_dynamics.
"""

import mujoco
import numpy as np
import pytest

from physai import derivatives, engine, forces, integrators, inverse
from physai.exceptions import InvalidModelError, ShapeError
from physai.engine import actuation

from helpers import assert_close, run

BACKENDS = ["numpy", "native"]
INTEGRATORS = {"euler": "Euler", "rk4": "RK4", "implicit": "implicit", "implicitfast": "implicitfast",
               "discrete": "discrete"}


def tendon_frc_xml(seed: int, integrator: str = "implicit", spatial: bool = True, limits: bool = False) -> str:
    """A random model of the module docstring; limits: the fixed tendon's length limited (a constraint row)."""
    rng = np.random.default_rng(seed)
    u = lambda lo, hi, n=3: " ".join(f"{v:.5g}" for v in rng.uniform(lo, hi, n))     # noqa: E731

    def axis():
        a = rng.normal(size=3)
        return " ".join(f"{v:.5g}" for v in a / np.linalg.norm(a))

    r1, r2 = rng.uniform(0.3, 1.5), rng.uniform(0.3, 1.5)
    limit = 'limited="true" range="-0.3 0.3"' if limits else ""
    tendon = f"""<spatial name="spatial" actuatorfrcrange="-{r2:.4g} {r2:.4g}">
    <site site="anchor"/><site site="s1"/><geom geom="ball"/><site site="s2"/></spatial>""" if spatial else ""
    actuators = f"""<position tendon="spatial" kp="{rng.uniform(1, 5):.4g}" kv="{rng.uniform(0.5, 3):.4g}"
    forcerange="-{r2 * 0.8:.4g} {r2 * 0.8:.4g}"/><motor tendon="spatial"/>""" if spatial else ""
    return f"""<mujoco><option integrator="{INTEGRATORS[integrator]}" timestep="0.005" gravity="0.2 -0.3 -9.8"/>
<worldbody><site name="anchor" pos="{u(-0.1, 0.1, 2)} 1"/>
  <body name="a" pos="0 0 0.5"><joint name="h1" axis="{axis()}" damping="0.1"/>
    <geom type="capsule" size="0.05" fromto="0 0 0 0.5 0 0" mass="1" contype="0" conaffinity="0"/>
    <site name="s1" pos="{u(0.1, 0.3)}"/>
    <geom name="ball" type="sphere" size="0.08" pos="0.5 0 0" mass="0.2" contype="0" conaffinity="0"/>
    <body name="b" pos="0.5 0 0"><joint name="h2" axis="{axis()}" armature="0.01"/>
      <joint name="s2" type="slide" axis="{axis()}" stiffness="3" armature="0.02"/>
      <geom type="capsule" size="0.04" fromto="0 0 0 0.4 0 0" mass="0.5" contype="0" conaffinity="0"/>
      <site name="s2" pos="{u(0.2, 0.3, 1)} {u(-0.05, 0.05, 2)}"/></body></body>
  <body name="c" pos="0 1 0.5"><joint name="h3" axis="{axis()}" damping="0.05"/>
    <geom type="capsule" size="0.05" fromto="0 0 0 0.4 0 0" mass="0.7" contype="0" conaffinity="0"/></body>
</worldbody>
<tendon>
  <fixed name="fixed" actuatorfrcrange="-{r1:.4g} {r1 * 1.3:.4g}" {limit}>
    <joint joint="h1" coef="{rng.uniform(0.5, 1.5):.4g}"/><joint joint="s2" coef="{rng.uniform(-1, -0.2):.4g}"/>
    <joint joint="h3" coef="0.4"/></fixed>
  {tendon}
  <fixed name="free"><joint joint="h2" coef="1"/></fixed>
</tendon>
<actuator>
  <position tendon="fixed" kp="{rng.uniform(1, 5):.4g}" kv="{rng.uniform(0.5, 3):.4g}"/>
  <velocity tendon="fixed" kv="{rng.uniform(1, 4):.4g}" gear="{rng.uniform(0.5, 2):.4g}"/>
  <motor tendon="fixed" gear="1.5"/>
  {actuators}
  <velocity tendon="free" kv="2"/>
  <position joint="h3" kp="3" kv="1"/>
</actuator></mujoco>"""


def start(m, seed: int):
    """(q0, qd0, ctrl) drawn from default_rng(seed)."""
    rng = np.random.default_rng(seed)
    return rng.normal(scale=0.4, size=m.nq), rng.normal(size=m.nv), rng.uniform(-2, 2, m.nu)


def limited_groups(m):
    """[(actuators on the tendon, its tendon)] of the force-limited tendons."""
    return [(np.flatnonzero((m.actuator_trntype == mujoco.mjtTrn.mjTRN_TENDON) & (m.actuator_trnid[:, 0] == t)), t)
            for t in np.flatnonzero(m.tendon_actfrclimited)]


def saturated(m, d) -> list:
    """Whether each force-limited tendon's total of MuJoCo's actuator_force sits at its limits (within 1e-9)."""
    return [bool(np.min(np.abs(d.actuator_force[a].sum() - m.tendon_actfrcrange[t])) < 1e-9)
            for a, t in limited_groups(m)]


def mujoco_run(m, q0, qd0, ctrl, steps: int = 100):
    """(qpos after each step (steps, nq), the steps at which each limited tendon is saturated)."""
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:], d.ctrl[:] = q0, qd0, ctrl
    Q, count = [], np.zeros(len(limited_groups(m)), int)
    for _ in range(steps):
        mujoco.mj_step(m, d)
        Q.append(d.qpos.copy())
        count += saturated(m, d)
    return np.array(Q), count


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("integrator", list(INTEGRATORS))
def test_simulate_follows_mj_step(backend, integrator):
    """Three random models per integrator, 100 steps from a random state under a constant control, within 1e-12 in q
    (4.4e-16 seen); the fixed tendon is saturated at some step of each run, both tendons in one run, and some step
    of some run is not saturated."""
    counts = []
    for seed in range(3):
        m = mujoco.MjModel.from_xml_string(tendon_frc_xml(seed, integrator))
        q0, qd0, ctrl = start(m, seed)
        Q, count = mujoco_run(m, q0, qd0, ctrl)
        counts.append(count)
        out = run(backend, integrators.simulate, engine.from_mujoco(m), q0, qd0, steps=100, ctrl=ctrl, energy=False)
        assert_close(out.q[1:], Q, 1e-12, what=f"q, seed {seed}")
    counts = np.array(counts)
    assert (counts[:, 0] > 0).all() and (counts[:, 1] > 0).any() and (counts < 100).any(), counts


def test_without_the_dropped_derivative_the_implicit_step_differs():
    """The test above can fail: the NumPy engine with saturated tendons' actuators kept in the implicit damping is 1e-2
    or more off mj_step over the 100 steps (3e-2 seen)."""
    m = mujoco.MjModel.from_xml_string(tendon_frc_xml(0, "implicit"))
    q0, qd0, ctrl = start(m, 0)
    Q, _ = mujoco_run(m, q0, qd0, ctrl)
    keep = actuation.tendon_saturated
    actuation.tendon_saturated = lambda acts, raw: np.zeros(acts.nu, bool)
    try:
        out = run("numpy", integrators.simulate, engine.from_mujoco(m), q0, qd0, steps=100, ctrl=ctrl, energy=False)
    finally:
        actuation.tendon_saturated = keep
    assert np.abs(out.q[1:] - Q).max() > 1e-2


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("integrator", ["implicitfast", "discrete"])
def test_simulate_with_constraints_follows_mj_step(backend, integrator):
    """The fixed tendon's length limited too (its limit rows reached), the solver to tolerance 1e-15 on both sides:
    100 steps within 1e-12 in q."""
    m = mujoco.MjModel.from_xml_string(tendon_frc_xml(1, integrator, limits=True))
    m.opt.tolerance, m.opt.iterations = 1e-15, 1000
    q0, qd0, ctrl = start(m, 1)
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:], d.ctrl[:] = q0, qd0, ctrl
    Q, rows, count = [], 0, 0
    for _ in range(100):
        mujoco.mj_step(m, d)
        Q.append(d.qpos.copy())
        rows, count = rows + d.nl, count + saturated(m, d)[0]
    out = run(backend, integrators.simulate, engine.from_mujoco(m), q0, qd0, steps=100, ctrl=ctrl, energy=False,
              constraints=True)
    assert rows and count
    assert_close(out.q[1:], np.array(Q), 1e-12, what="q")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("integrator", ["euler", "implicit", "implicitfast", "rk4"])
def test_rollout_follows_mj_step(backend, integrator):
    """rollout of 6 random starts (each its own ctrl) of the model with a fixed tendon alone (the compiled lanes) equals
    mj_step of each within 1e-12 over 50 steps; some trajectory saturates."""
    m = mujoco.MjModel.from_xml_string(tendon_frc_xml(2, integrator, spatial=False))
    starts = [start(m, 10 + k) for k in range(6)]
    q0, qd0, ctrl = (np.array(x) for x in zip(*starts))
    out = run(backend, integrators.rollout, engine.from_mujoco(m), q0, qd0, steps=50, ctrl=ctrl[:, None, :],
              energy=False)
    count = 0
    for k in range(6):
        Q, c = mujoco_run(m, q0[k], qd0[k], ctrl[k], 50)
        count += c.sum()
        assert_close(out.q[k, 1:], Q, 1e-12, what=f"q of trajectory {k}")
    assert count


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("spatial", [True, False])
@pytest.mark.parametrize("integrator", ["euler", "implicit", "implicitfast", "discrete"])
def test_step_derivatives_against_transition_fd(integrator, spatial, backend):
    """step_derivatives at random states (the fixed tendon saturated at 2 of 3, with the spatial one: its actuators'
    forces differenced; without: the fixed tendon's scaling differentiated) equal mjd_transitionFD (centred, eps
    1e-6) within 1e-8 (2e-10 seen)."""
    count = 0
    for seed in range(3):
        m = mujoco.MjModel.from_xml_string(tendon_frc_xml(seed, integrator, spatial))
        q, qd, ctrl = start(m, seed)
        d = mujoco.MjData(m)
        d.qpos[:], d.qvel[:], d.ctrl[:] = q, qd, ctrl
        n = 2 * m.nv
        A_mj, B_mj = np.zeros((n, n)), np.zeros((n, m.nu))
        mujoco.mjd_transitionFD(m, d, 1e-6, True, A_mj, B_mj, None, None)
        mujoco.mj_forward(m, d)
        count += saturated(m, d)[0]
        A, B = run(backend, derivatives.step_derivatives, engine.from_mujoco(m), q, qd, m.opt.timestep, integrator, ctrl)
        assert_close(A, A_mj, 1e-8, what=f"A, seed {seed}")
        assert_close(B, B_mj, 1e-8, what=f"B, seed {seed}")
    assert count >= 2


def test_the_actuators_damping_equals_qDeriv():
    """forces.actuator_velocity_derivative (the fixed tendon alone: constant arms) less the joints' damping equals
    MuJoCo's qDeriv of an implicitfast step within 1e-12, at 20 random states, saturated and not."""
    m = mujoco.MjModel.from_xml_string(tendon_frc_xml(4, "implicitfast", spatial=False))
    acts, d, seen = forces.actuators_from_mujoco(m), mujoco.MjData(m), set()
    for k in range(20):
        q, qd, ctrl = start(m, 100 + k)
        d.qpos[:], d.qvel[:], d.ctrl[:] = q, qd, ctrl
        mujoco.mj_step(m, d)
        D = np.zeros((m.nv, m.nv))
        mujoco.mju_sparse2dense(D, d.qDeriv, m.D_rownnz, m.D_rowadr, m.D_colind)
        mask = np.zeros((m.nv, m.nv), bool)                      # qDeriv's pattern: a dof's ancestors and descendants
        for i in range(m.nv):
            mask[i, m.D_colind[m.D_rowadr[i]:m.D_rowadr[i] + m.D_rownnz[i]]] = True
        ours = forces.actuator_velocity_derivative(acts, q, qd, ctrl) - np.diag(m.dof_damping)
        assert_close(np.where(mask, ours, 0.0), D, 1e-12, what=f"state {k}")
        seen.add(saturated(m, d)[0])
    assert seen == {True, False}


@pytest.mark.parametrize("integrator", ["implicit", "implicitfast"])
def test_discrete_inverse_equals_mj_inverse_and_replays(integrator):
    """inverse_dynamics with dt and the integrator (the fixed tendon alone) equals mj_inverse with invdiscrete (after
    mj_forward, which computes the actuator forces MuJoCo's qDeriv reads) within 1e-12 at 10 random states, saturated
    and not; applied beside the actuators, mj_step then gives the acceleration within 2e-11."""
    m = mujoco.MjModel.from_xml_string(tendon_frc_xml(4, integrator, spatial=False))
    model, d, h, seen = engine.from_mujoco(m), mujoco.MjData(m), m.opt.timestep, set()
    rng = np.random.default_rng(7)
    for k in range(10):
        q, qd, ctrl = start(m, 200 + k)
        if k % 2:                                      # small enough to leave the tendon's total inside its range
            qd, ctrl = 0.05 * qd, 0.05 * ctrl
        a = rng.normal(scale=3.0, size=m.nv)
        ours = inverse.inverse_dynamics(model, q, qd, a, h, integrator, model.actuators, ctrl)
        d.ctrl[:], d.qpos[:], d.qvel[:], d.qfrc_applied[:] = ctrl, q, qd, 0.0
        mujoco.mj_forward(m, d)
        force = d.qfrc_actuator.copy()
        seen.add(saturated(m, d)[0])
        m.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_INVDISCRETE
        d.qacc[:] = a
        mujoco.mj_inverse(m, d)
        m.opt.enableflags &= ~int(mujoco.mjtEnableBit.mjENBL_INVDISCRETE)
        assert_close(ours, d.qfrc_inverse, 1e-12, what=f"state {k}")
        d.qfrc_applied[:] = ours - force
        mujoco.mj_step(m, d)
        assert np.abs((d.qvel - qd) / h - a).max() <= 2e-11, k
    assert seen == {True, False}


@pytest.mark.parametrize("integrator", ["euler", "implicit", "implicitfast", "discrete", "rk4"])
def test_compiled_step_derivatives_equal_the_numpy_text(integrator):
    """The compiled step_derivatives (cpp/step_derivative.h: the fixed tendon's scaling, its saturated actuators out of
    D and the discrete metric) of 8 states, most saturated, equal the NumPy text's within 1e-12 of each matrix's largest
    entry; one state alone is the compiled kernel's (derivatives._compiled_one_state)."""
    m = mujoco.MjModel.from_xml_string(tendon_frc_xml(3, integrator, spatial=False))
    model = engine.from_mujoco(m)
    Q, QD, U = (np.array(x) for x in zip(*(start(m, 300 + k) for k in range(8))))
    h = m.opt.timestep
    assert run("native", derivatives._compiled_one_state, model, Q[0], QD[0], h, integrator, U[0], None, True) is not None
    out = {b: run(b, derivatives.step_derivatives, model, Q, QD, h, integrator, U) for b in BACKENDS}
    for k in (0, 1):
        assert_close(out["native"][k], out["numpy"][k], 1e-12, per_state=True, what="AB"[k])
    d, count = mujoco.MjData(m), 0
    for k in range(8):
        d.qpos[:], d.qvel[:], d.ctrl[:] = Q[k], QD[k], U[k]
        mujoco.mj_forward(m, d)
        count += saturated(m, d)[0]
    assert count >= 4


def test_bad_tendon_limits_are_named():
    """Actuators.tendon_frcid must be whole numbers >= -1, one per actuator, and a used tendon_frcrange low <= high
    (ShapeError, InvalidModelError); the compiled copy checks tendon_frcid too (ValueError naming the field)."""
    m = mujoco.MjModel.from_xml_string(tendon_frc_xml(0, spatial=False))
    acts = forces.actuators_from_mujoco(m)
    assert acts.tendon_frcid.tolist() == [0, 0, 0, -1, -1]
    assert_close(acts.tendon_frcrange[:3], np.repeat(m.tendon_actfrcrange[:1], 3, 0), 0.0)
    fields = {name: getattr(acts, name) for name in acts.__dataclass_fields__}
    with pytest.raises(ShapeError, match="tendon_frcid must be whole numbers, one per actuator"):
        forces.Actuators(**{**fields, "tendon_frcid": acts.tendon_frcid.astype(float)})
    with pytest.raises(InvalidModelError, match=r"actuator 0: tendon_frcid 0 with tendon_frcrange \[1, -1\]"):
        forces.Actuators(**{**fields, "tendon_frcrange": np.tile([1.0, -1.0], (m.nu, 1))})
    with pytest.raises(InvalidModelError, match="tendon_frcid -2"):
        forces.Actuators(**{**fields, "tendon_frcid": np.full(m.nu, -2)})
    from physai.engine import _native, native

    model = engine.from_mujoco(m)
    bad = {**native.actuator_fields(model.actuators), "tendon_frcid": np.full(m.nu, -2, dtype=np.int64)}
    with pytest.raises(ValueError, match="Actuators field tendon_frcid: expected a tendon >= 0 or -1"):
        _native.Actuators(_native.Model(native.fields(model)), bad)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("integrator", ["implicitfast", "discrete"])
def test_constrained_step_derivatives_against_transition_fd(integrator, backend):
    """step_derivatives(constraints=True) with the fixed tendon at its length limit (one limit row) and its actuators'
    total saturated equal mjd_transitionFD Richardson-extrapolated from eps 2e-6 and 1e-6 (solver tolerance 1e-15)
    within 5e-8 (9.4e-9 seen; the same model without actuatorfrcrange: 6.5e-9)."""
    m = mujoco.MjModel.from_xml_string(tendon_frc_xml(1, integrator, spatial=False, limits=True))
    m.opt.tolerance, m.opt.iterations = 1e-15, 1000
    _, qd, ctrl = start(m, 1)
    q = np.zeros(m.nq)
    q[0] = 0.5                                         # h1 turned: the fixed tendon beyond its range
    d, n, out = mujoco.MjData(m), 2 * m.nv, []
    for eps in (2e-6, 1e-6):
        d.qpos[:], d.qvel[:], d.ctrl[:] = q, qd, ctrl
        A, B = np.zeros((n, n)), np.zeros((n, m.nu))
        mujoco.mjd_transitionFD(m, d, eps, True, A, B, None, None)
        out.append((A, B))
    mujoco.mj_forward(m, d)
    assert d.nl == 1 and saturated(m, d) == [True]
    A, B = run(backend, derivatives.step_derivatives, engine.from_mujoco(m), q, qd, m.opt.timestep, integrator, ctrl,
               constraints=True)
    assert_close(A, (4 * out[1][0] - out[0][0]) / 3, 5e-8, what="A")
    assert_close(B, (4 * out[1][1] - out[0][1]) / 3, 5e-8, what="B")


def own_range_xml(integrator: str = "implicit") -> str:
    """The review's model: a fixed tendon with actuatorfrcrange [-0.8, 0.96] over three hinges (two trees) and a slide
    stays unlimited, a position servo on it and a velocity servo with its own forcerange [-0.4, 0.3], a joint servo on
    a hinge with actuatorfrcrange. The velocity servo's clamp moves the tendon's scaled total back inside its range, or
    its total inside out of it."""
    return f"""<mujoco><option integrator="{INTEGRATORS[integrator]}" timestep="0.004" gravity="0.1 -0.2 -9.8"/>
<worldbody>
  <body pos="0 0 0.5"><joint name="h1" axis="0.3 1 0.1" damping="0.1"/>
    <geom type="capsule" size="0.05" fromto="0 0 0 0.5 0 0" mass="1" contype="0" conaffinity="0"/>
    <body pos="0.5 0 0"><joint name="h2" axis="0 1 0.2" actuatorfrcrange="-0.9 0.7" armature="0.01"/>
      <joint name="s2" type="slide" axis="1 0.2 0" stiffness="3" armature="0.02"/>
      <geom type="capsule" size="0.04" fromto="0 0 0 0.4 0 0" mass="0.5" contype="0" conaffinity="0"/></body></body>
  <body pos="0 1 0.5"><joint name="h3" axis="1 0.2 0.3" damping="0.05"/>
    <geom type="capsule" size="0.05" fromto="0 0 0 0.4 0 0" mass="0.7" contype="0" conaffinity="0"/></body>
</worldbody>
<tendon><fixed name="fx" actuatorfrcrange="-0.8 0.96"><joint joint="h1" coef="1.1"/><joint joint="h2" coef="-0.7"/>
  <joint joint="h3" coef="0.4"/></fixed></tendon>
<actuator>
  <position tendon="fx" kp="3" kv="1.2" gear="1.4"/>
  <velocity tendon="fx" kv="2.5" gear="-0.8" forcerange="-0.4 0.3"/>
  <position joint="h2" kp="2" kv="0.8"/>
</actuator></mujoco>"""


def totals(m, d, acts, q, qd, ctrl):
    """(the fixed tendon's total before the limits (physai's raw_forces), MuJoCo's total of actuator_force) at (q, qd,
    ctrl), after mj_forward."""
    d.qpos[:], d.qvel[:], d.ctrl[:] = q, qd, ctrl
    mujoco.mj_forward(m, d)
    raw = actuation.raw_forces(acts, q, qd, actuation.clamped_ctrl(acts, ctrl))
    return raw[:2].sum(), d.actuator_force[0] + d.actuator_force[1]


def decided_apart(m, q, qd, ctrl) -> tuple[bool, bool]:
    """(the tendon's total before the limits beyond its range while the final one is inside, the reverse) at a state."""
    lo, hi = m.tendon_actfrcrange[0]
    raw, final = totals(m, mujoco.MjData(m), forces.actuators_from_mujoco(m), q, qd, ctrl)
    out = lambda t: t <= lo + 1e-12 or t >= hi - 1e-12      # noqa: E731
    return out(raw) and not out(final), out(final) and not out(raw)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("integrator", list(INTEGRATORS))
def test_own_forcerange_simulate_follows_mj_step(backend, integrator):
    """The review's model (own_range_xml), 100 steps from three random states under a constant control within 1e-12
    in q of mj_step; at some step of the runs the tendon's total before the limits and its final total disagree about
    saturation, both ways (the rule decided on the totals before the limits: 1.8e-1 off under implicitfast)."""
    m = mujoco.MjModel.from_xml_string(own_range_xml(integrator))
    apart = np.zeros(2, int)
    for seed in range(3):
        q0, qd0, ctrl = start(m, seed)
        Q, _ = mujoco_run(m, q0, qd0, ctrl)
        out = run(backend, integrators.simulate, engine.from_mujoco(m), q0, qd0, steps=100, ctrl=ctrl, energy=False)
        assert_close(out.q[1:], Q, 1e-12, what=f"q, seed {seed}")
        apart += np.sum([decided_apart(m, q, qd, ctrl) for q, qd in zip(out.q[:-1], out.qd[:-1])], axis=0)
    assert (apart > 0).all(), apart


def test_own_forcerange_damping_equals_qDeriv():
    """forces.actuator_velocity_derivative less the joints' damping equals MuJoCo's qDeriv (implicitfast, on its
    pattern) within 1e-12 at 300 random states of the review's model: among them states whose total before the limits
    is beyond the range and final total inside (the velocity servo clamped: kept), the reverse (dropped), and states
    whose scaled final total lands within 1e-12 of a limit but not on it (rounding: dropped, as MuJoCo)."""
    m = mujoco.MjModel.from_xml_string(own_range_xml("implicitfast"))
    acts, d = forces.actuators_from_mujoco(m), mujoco.MjData(m)
    lo, hi = m.tendon_actfrcrange[0]
    mask = np.zeros((m.nv, m.nv), bool)                          # qDeriv's pattern
    for i in range(m.nv):
        mask[i, m.D_colind[m.D_rowadr[i]:m.D_rowadr[i] + m.D_rownnz[i]]] = True
    near, apart = 0, np.zeros(2, int)
    for k in range(300):
        q, qd, ctrl = start(m, 400 + k)
        _, final = totals(m, d, acts, q, qd, ctrl)
        near += 0 < min(abs(final - lo), abs(final - hi)) < 1e-12
        apart += decided_apart(m, q, qd, ctrl)
        d.qpos[:], d.qvel[:], d.ctrl[:] = q, qd, ctrl
        mujoco.mj_step(m, d)
        D = np.zeros((m.nv, m.nv))
        mujoco.mju_sparse2dense(D, d.qDeriv, m.D_rownnz, m.D_rowadr, m.D_colind)
        ours = forces.actuator_velocity_derivative(acts, q, qd, ctrl) - np.diag(m.dof_damping)
        assert_close(np.where(mask, ours, 0.0), D, 1e-12, what=f"state {k}")
    assert near and (apart > 0).all(), (near, apart)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("integrator", ["euler", "implicit", "implicitfast", "discrete"])
def test_own_forcerange_step_derivatives_against_transition_fd(integrator, backend):
    """step_derivatives of the review's model at 4 random states (among them one whose total before the limits is
    beyond the range and final total inside, and the reverse) equal mjd_transitionFD (centred, eps 1e-6) within 1e-8
    (the rule decided on the totals before the limits: 8e-2 off)."""
    m = mujoco.MjModel.from_xml_string(own_range_xml(integrator))
    model, d, apart = engine.from_mujoco(m), mujoco.MjData(m), np.zeros(2, int)
    for seed in range(4):
        q, qd, ctrl = start(m, seed)
        apart += decided_apart(m, q, qd, ctrl)
        d.qpos[:], d.qvel[:], d.ctrl[:] = q, qd, ctrl
        n = 2 * m.nv
        A_mj, B_mj = np.zeros((n, n)), np.zeros((n, m.nu))
        mujoco.mjd_transitionFD(m, d, 1e-6, True, A_mj, B_mj, None, None)
        A, B = run(backend, derivatives.step_derivatives, model, q, qd, m.opt.timestep, integrator, ctrl)
        assert_close(A, A_mj, 1e-8, what=f"A, seed {seed}")
        assert_close(B, B_mj, 1e-8, what=f"B, seed {seed}")
    assert (apart > 0).all(), apart


@pytest.mark.parametrize("integrator", ["implicit", "implicitfast"])
def test_own_forcerange_inverse_equals_mj_inverse(integrator):
    """inverse_dynamics with dt and the integrator of the review's model equals mj_inverse with invdiscrete within
    1e-12 at 10 random states (among them both disagreements of the totals; the rule decided on the totals before the
    limits: 2.7e-2 off)."""
    m = mujoco.MjModel.from_xml_string(own_range_xml(integrator))
    model, d, h, apart = engine.from_mujoco(m), mujoco.MjData(m), m.opt.timestep, np.zeros(2, int)
    rng = np.random.default_rng(8)
    for k in range(10):
        q, qd, ctrl = start(m, k)
        apart += decided_apart(m, q, qd, ctrl)
        a = rng.normal(scale=3.0, size=m.nv)
        ours = inverse.inverse_dynamics(model, q, qd, a, h, integrator, model.actuators, ctrl)
        d.ctrl[:], d.qpos[:], d.qvel[:], d.qfrc_applied[:] = ctrl, q, qd, 0.0
        mujoco.mj_forward(m, d)
        m.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_INVDISCRETE
        d.qacc[:] = a
        mujoco.mj_inverse(m, d)
        m.opt.enableflags &= ~int(mujoco.mjtEnableBit.mjENBL_INVDISCRETE)
        assert_close(ours, d.qfrc_inverse, 1e-12, what=f"state {k}")
    assert (apart > 0).all(), apart

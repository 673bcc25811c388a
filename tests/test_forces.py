"""physai.forces against MuJoCo, computed live: qfrc_passive, qfrc_actuator and actuator_force, the implicit
integrator's qDeriv, xfrc_applied through mj_applyFT and qfrc_smooth, qfrc_constraint = J^T f, and the whole
balance M qacc + c = actuator + passive + applied (+ constraint) on the Panda.

Tolerance 1e-12 times the largest magnitude of the compared quantity (at least 1): the Panda's servo forces
reach hundreds of N m.
"""

import dataclasses

import mujoco
import numpy as np
import pytest

from physai import dynamics as dyn
from physai import forces as frc
from physai import models
from physai.exceptions import InvalidModelError, InvalidStateError, ShapeError, UnsupportedModelError
from helpers import assert_close

import mj

TOL = 1e-12


# A small tree with every supported actuator kind: motor, position and velocity servos, a general actuator with
# affine gain and bias on a fixed tendon, one with a velocity-dependent gain; springs with a springref, dampers,
# a slide joint with a ref, ctrl and force limits.
ACTUATED = """
<mujoco>
  <option><flag contact="disable"/></option>
  <worldbody>
    <body name="a" pos="0 0 0.5">
      <joint name="j1" type="hinge" axis="0 1 0" damping="0.3" stiffness="2" springref="0.4"/>
      <geom size="0.1" mass="1"/>
      <body name="b" pos="0.3 0 0">
        <joint name="j2" type="slide" axis="1 0 0" ref="0.1" damping="0.5" stiffness="7"/>
        <geom size="0.1" mass="0.5"/>
        <body name="c" pos="0 0 0.2">
          <joint name="j3" type="hinge" axis="1 0 0"/>
          <geom size="0.05" mass="0.3"/>
        </body>
      </body>
    </body>
  </worldbody>
  <tendon>
    <fixed name="t"><joint joint="j1" coef="0.7"/><joint joint="j3" coef="-0.4"/></fixed>
  </tendon>
  <actuator>
    <motor name="motor" joint="j1" gear="2.5" ctrlrange="-1 1"/>
    <position name="servo" joint="j2" kp="30" kv="3" gear="1.5" ctrlrange="-0.2 0.3" forcerange="-4 5"/>
    <velocity name="spin" joint="j3" kv="2" ctrlrange="-1 2"/>
    <general name="tendon" tendon="t" gear="1.3" gaintype="affine" gainprm="5 0.4 0.7"
             biastype="affine" biasprm="0.1 -2 -0.5" forcerange="-3 3"/>
    <general name="viscous" joint="j1" gaintype="affine" gainprm="2 0 0.3" ctrlrange="-0.5 0.5"/>
  </actuator>
</mujoco>
"""


def actuated_model():
    return mujoco.MjModel.from_xml_string(ACTUATED)


def wide_controls(m, rng):
    """Controls spread over twice each ctrlrange, so about half of them are clamped; N(0, 2) where unlimited."""
    lo, hi = m.actuator_ctrlrange.T
    return np.where(m.actuator_ctrllimited, rng.uniform(lo - 0.5 * (hi - lo), hi + 0.5 * (hi - lo)),
                    rng.normal(0, 2, m.nu))


@pytest.fixture(scope="module", params=["inline", "arm2", "franka_emika_panda"])
def actuated(request):
    m = actuated_model() if request.param == "inline" else models.load(request.param)
    return m, dyn.tree_from_mujoco(m), frc.actuators_from_mujoco(m)


# ---- passive forces ----


def test_arm2_passive_force_is_the_lessons_output():
    tree = dyn.tree_from_mujoco(models.load("arm2"))
    assert_close(frc.passive_force(tree, [0.3, -0.8], [1.5, -2.0]), [-0.03, 0.04], TOL)


@pytest.mark.parametrize("name", ["inline", "arm2", "hinge_slide", "franka_emika_panda"])
def test_passive_force_matches_qfrc_passive(name):
    m = actuated_model() if name == "inline" else models.load(name)
    d, tree = mujoco.MjData(m), dyn.tree_from_mujoco(m)
    for q, qd, _ in mj.random_states(m, 20, seed=1):
        d.qpos[:], d.qvel[:] = q, qd
        mujoco.mj_forward(m, d)
        assert_close(frc.passive_force(tree, q, qd), d.qfrc_passive, TOL)


# ---- actuators ----


def test_actuators_read_from_mujoco():
    act = frc.actuators_from_mujoco(actuated_model())
    assert act.names == ("motor", "servo", "spin", "tendon", "viscous")
    assert (act.nu, act.nv) == (5, 3)
    expected_moment = [[2.5, 0, 0], [0, 1.5, 0], [0, 0, 1], [1.3 * 0.7, 0, -1.3 * 0.4], [1, 0, 0]]
    assert_close(act.moment, expected_moment, TOL)
    assert_close(act.gain, [[1, 0, 0], [30, 0, 0], [2, 0, 0], [5, 0.4, 0.7], [2, 0, 0.3]], TOL)
    assert_close(act.bias, [[0, 0, 0], [0, -30, -3], [0, 0, -2], [0.1, -2, -0.5], [0, 0, 0]], TOL)
    assert act.ctrllimited.tolist() == [True, True, True, False, True]
    assert act.forcelimited.tolist() == [False, True, False, True, False]


def test_actuator_force_matches_qfrc_actuator_with_clamping(actuated):
    m, tree, act = actuated
    d, rng = mujoco.MjData(m), np.random.default_rng(2)
    clamped_ctrl = clamped_force = 0
    for q, qd, _ in mj.random_states(m, 50, seed=2, qd_max=3.0):
        d.qpos[:], d.qvel[:], d.ctrl[:] = q, qd, wide_controls(m, rng)
        mujoco.mj_forward(m, d)
        assert_close(frc.actuator_outputs(act, q, qd, d.ctrl), d.actuator_force, TOL)
        assert_close(frc.actuator_force(act, q, qd, d.ctrl), d.qfrc_actuator, TOL)
        lo, hi = m.actuator_ctrlrange.T
        clamped_ctrl += np.sum(m.actuator_ctrllimited & ((d.ctrl < lo) | (d.ctrl > hi)))
        flo, fhi = m.actuator_forcerange.T
        clamped_force += np.sum(m.actuator_forcelimited & ((d.actuator_force <= flo) | (d.actuator_force >= fhi)))
    assert clamped_ctrl > 0                       # the clamps were exercised
    if m.actuator_forcelimited.any():
        assert clamped_force > 0


def test_clampctrl_disabled_leaves_ctrl_alone():
    m = actuated_model()
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CLAMPCTRL
    d, act = mujoco.MjData(m), frc.actuators_from_mujoco(m)
    d.qpos[:], d.ctrl[:] = [0.2, 0.3, -0.1], [3.0, -2.0, 5.0, 1.0, 4.0]
    mujoco.mj_forward(m, d)
    assert_close(frc.actuator_force(act, d.qpos, d.qvel, d.ctrl), d.qfrc_actuator, TOL)


def test_actuator_velocity_derivative_matches_implicitfast_qDeriv(actuated):
    """implicitfast's qDeriv = d(qfrc_actuator + qfrc_passive)/d qvel, on MuJoCo's dof sparsity pattern."""
    m, tree, act = actuated
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    d, rng = mujoco.MjData(m), np.random.default_rng(3)
    for q, qd, _ in mj.random_states(m, 30, seed=3, qd_max=3.0):
        ctrl = wide_controls(m, rng)
        d.qpos[:], d.qvel[:], d.ctrl[:] = q, qd, ctrl
        mujoco.mj_step(m, d)                      # qDeriv is formed at the state before the step
        D, mask = mj.dense_qDeriv(m, d)
        ours = frc.actuator_velocity_derivative(act, q, qd, ctrl) - np.diag(tree.damping)
        assert_close(np.where(mask, ours, 0.0), D, TOL)


def test_actuator_velocity_derivative_is_the_derivative(actuated):
    """Against a central difference of actuator_force in qd, at states where no force limit is reached."""
    m, _, act = actuated
    unlimited = dataclasses.replace(act, forcelimited=np.zeros(act.nu, dtype=bool))
    rng, h, checked = np.random.default_rng(4), 1e-6, 0
    for q, qd, _ in mj.random_states(m, 30, seed=4, qd_max=3.0):
        ctrl = wide_controls(m, rng)
        raw = frc.actuator_outputs(unlimited, q, qd, ctrl)
        if np.any(act.forcelimited & (np.abs(raw[:, None] - act.forcerange).min(axis=1) < 1e-2)):
            continue                              # too close to a force limit for a finite difference
        fd = np.stack([(frc.actuator_force(act, q, qd + h * e, ctrl) - frc.actuator_force(act, q, qd - h * e, ctrl)) / (2 * h)
                       for e in np.eye(m.nv)], axis=1)
        # rounding of the difference, eps |force| / h, is ~1e-10 of the scale (3.9e-10 seen); truncation is 0
        # for the affine actuators: bound 1e-8 (was 1e-7)
        assert_close(frc.actuator_velocity_derivative(act, q, qd, ctrl), fd, 1e-8)
        checked += 1
    assert checked >= 5


# Joint actuatorfrcrange on a hinge and a slide, with joint actuators (one through jointinparent) and a fixed tendon's
# actuator on both joints and a third
SATURATING = """<mujoco><option integrator="implicitfast"><flag contact="disable"/></option><worldbody>
  <body><joint name="j0" axis="0 1 0" damping="0.2" actuatorfrcrange="-4 4"/><geom size=".1" pos=".2 0 0" mass="1"/>
    <body pos=".4 0 0"><joint name="j1" type="slide" axis="1 0 0" actuatorfrcrange="-6 6"/><geom size=".1" mass=".5"/></body>
  </body>
  <body pos="0 1 0"><joint name="j2" axis="0 1 0"/><geom size=".1" pos=".2 0 0" mass="1"/></body></worldbody>
  <tendon><fixed name="t"><joint joint="j0" coef="1"/><joint joint="j1" coef="-0.5"/><joint joint="j2" coef="0.7"/></fixed></tendon>
  <actuator><velocity joint="j0" kv="3"/><motor joint="j0" gear="2" ctrlrange="-2 2"/><velocity tendon="t" kv="7"/>
    <position jointinparent="j1" kp="2" kv="11"/><damper joint="j1" kv="2" ctrlrange="0 1"/></actuator>
</mujoco>"""


def test_joint_actuators_saturated_at_their_joints_range_leave_qDeriv():
    """MuJoCo 4.0: a joint actuator whose joint's total is at or beyond its actuatorfrcrange adds no implicit damping
    (the tendon's actuator on the same joints still does): implicitfast's qDeriv at states where j0, j1, both or
    neither saturate, and at a total exactly at the limit."""
    m = mujoco.MjModel.from_xml_string(SATURATING)
    d, act, rng = mujoco.MjData(m), frc.actuators_from_mujoco(m), np.random.default_rng(6)
    lo, hi = m.jnt_actfrcrange[:2].T
    saturated = set()
    states = [(q, qd, wide_controls(m, rng)) for q, qd, _ in mj.random_states(m, 40, seed=6, qd_max=1.0)]
    for q, qd, ctrl in states + [(np.zeros(3), np.zeros(3), np.array([0.0, 2.0, 0.0, 0.0, 0.0]))]:   # j0's total: 4
        d.qpos[:], d.qvel[:], d.ctrl[:] = q, qd, ctrl
        mujoco.mj_step(m, d)                      # qDeriv is formed at the state before the step
        D, mask = mj.dense_qDeriv(m, d)
        ours = frc.actuator_velocity_derivative(act, q, qd, ctrl) - np.diag(m.dof_damping)
        assert_close(np.where(mask, ours, 0.0), D, TOL)
        saturated.add(tuple((d.qfrc_actuator[:2] <= lo) | (d.qfrc_actuator[:2] >= hi)))
    assert saturated == {(False, False), (True, False), (False, True), (True, True)}
    assert d.qfrc_actuator[0] == hi[0]


def test_joint_dof_is_checked_and_defaults_to_single_entry_rows():
    """Actuators.joint_dof: a joint transmission's dof, -1 for a fixed tendon (read from MuJoCo's trntype; by default
    each single-entry row of moment is a joint's)."""
    assert frc.actuators_from_mujoco(mujoco.MjModel.from_xml_string(SATURATING)).joint_dof.tolist() == [0, 0, -1, 1, 1]
    assert frc.actuators_from_mujoco(actuated_model()).joint_dof.tolist() == [0, 1, 2, -1, 0]
    assert frc.Actuators(**_actuator_fields(joint_dof=None)).joint_dof.tolist() == [0, 1, 2, -1, 0]
    with pytest.raises(InvalidModelError, match=r"joint_dof\[1\] is 3: expected a dof in \[0, 3\) or -1"):
        frc.Actuators(**_actuator_fields(joint_dof=[0, 3, 2, -1, 0]))
    with pytest.raises(ShapeError, match="joint_dof must be whole numbers, one per actuator"):
        frc.Actuators(**_actuator_fields(joint_dof=[0.0, 1.0, 2.0, -1.0, 0.0]))


def test_velocity_derivative_of_servos_is_minus_kv_gear_squared():
    act = frc.actuators_from_mujoco(actuated_model())
    dfdv = frc.actuator_velocity_derivative(act, np.zeros(3), np.zeros(3), np.zeros(5))
    tendon = 1.3 * np.array([0.7, 0, -0.4])
    assert_close(dfdv, np.diag([0.0, -3 * 1.5**2, -2.0]) - 0.5 * np.outer(tendon, tendon), TOL)


# ---- applied forces ----


def test_applied_force_matches_mj_applyFT_and_qfrc_smooth():
    m = mj.without_constraints(models.load("franka_emika_panda"))
    d, tree, rng = mujoco.MjData(m), dyn.tree_from_mujoco(m), np.random.default_rng(5)
    for q, qd, _ in mj.random_states(m, 20, seed=5):
        d.qpos[:], d.qvel[:] = q, qd
        d.qfrc_applied[:] = rng.normal(0, 2, m.nv)
        d.xfrc_applied[1:] = rng.normal(0, 5, (m.nbody - 1, 6))
        mujoco.mj_forward(m, d)
        ref = d.qfrc_applied.copy()
        for b in range(1, m.nbody):
            mujoco.mj_applyFT(m, d, d.xfrc_applied[b, :3], d.xfrc_applied[b, 3:], d.xipos[b], b, ref)
        ours = frc.applied_force(tree, q, d.qfrc_applied, d.xfrc_applied[1:])   # physai's body b is MuJoCo's b + 1
        assert_close(ours, ref, TOL)
        xfrc_part = d.qfrc_smooth - (d.qfrc_passive - d.qfrc_bias + d.qfrc_applied + d.qfrc_actuator)
        assert_close(frc.applied_force(tree, q, xfrc_applied=d.xfrc_applied[1:]), xfrc_part, TOL)
    assert_close(frc.applied_force(tree, q), np.zeros(m.nv), TOL)


def test_constraint_force_matches_qfrc_constraint():
    """qfrc_constraint = efc_J^T efc_force with the Panda's finger equality and its joint limits active."""
    m = models.load("franka_emika_panda")
    m.opt.jacobian = mujoco.mjtJacobian.mjJAC_DENSE
    d = mujoco.MjData(m)
    seen = 0
    for q, qd, _ in mj.random_states(m, 20, seed=6):
        d.qpos[:], d.qvel[:] = q * 1.1, qd       # some joints beyond their limits
        mujoco.mj_forward(m, d)
        J = d.efc_J[:d.nefc * m.nv].reshape(d.nefc, m.nv)
        assert_close(frc.constraint_force(J, d.efc_force[:d.nefc]), d.qfrc_constraint, TOL)
        seen += d.nefc
    assert seen > 20


def test_full_balance_on_the_panda():
    """M qacc + c = actuator + passive + applied with random states, controls and body wrenches; constraints off."""
    m = mj.without_constraints(models.load("franka_emika_panda"))
    d, tree, act = mujoco.MjData(m), dyn.tree_from_mujoco(m), frc.actuators_from_mujoco(m)
    rng = np.random.default_rng(7)
    for q, qd, _ in mj.random_states(m, 50, seed=7, qd_max=2.0):
        d.qpos[:], d.qvel[:], d.ctrl[:] = q, qd, wide_controls(m, rng)
        d.qfrc_applied[:] = rng.normal(0, 2, m.nv)
        d.xfrc_applied[1:] = rng.normal(0, 5, (m.nbody - 1, 6))
        mujoco.mj_forward(m, d)
        rhs = (frc.actuator_force(act, q, qd, d.ctrl) + frc.passive_force(tree, q, qd)
               + frc.applied_force(tree, q, d.qfrc_applied, d.xfrc_applied[1:]))
        M, c = dyn.mass_matrix(tree, q), dyn.bias(tree, q, qd)
        assert_close(M @ d.qacc + c, rhs, 1e-12)                  # 5.5e-14 seen
        assert_close(np.linalg.solve(M, rhs - c), d.qacc, 3e-12)  # 1.7e-13 seen: a solve, M's conditioning


# ---- bad input ----


def test_ctrl_of_wrong_length_names_ctrl_and_nu():
    m = actuated_model()
    act = frc.actuators_from_mujoco(m)
    with pytest.raises(ShapeError, match=r"ctrl has 4 entries, the model has nu = 5 actuators"):
        frc.actuator_force(act, np.zeros(3), np.zeros(3), np.zeros(4))
    with pytest.raises(ShapeError, match=r"ctrl has shape \(5, 1\).*nu = 5"):
        frc.actuator_velocity_derivative(act, np.zeros(3), np.zeros(3), np.zeros((5, 1)))
    with pytest.raises(InvalidStateError, match=r"ctrl\[2\] is nan"):
        frc.actuator_force(act, np.zeros(3), np.zeros(3), [0, 0, np.nan, 0, 0])
    with pytest.raises(ShapeError, match="qd"):
        frc.actuator_force(act, np.zeros(3), np.zeros(2), np.zeros(5))


def test_bad_applied_and_constraint_shapes():
    m = models.load("arm2")
    tree, d = dyn.tree_from_mujoco(m), mujoco.MjData(m)
    with pytest.raises(ShapeError, match=r"xfrc_applied must have shape \(2, 6\).*row 0 is the world\); pass d.xfrc_applied\[1:\]"):
        frc.applied_force(tree, [0, 0], xfrc_applied=d.xfrc_applied)    # MuJoCo's array still has the world row
    with pytest.raises(ShapeError, match=r"xfrc_applied must have shape \(2, 6\)") as info:
        frc.applied_force(tree, [0, 0], xfrc_applied=np.zeros((4, 6)))
    assert "d.xfrc_applied[1:]" not in str(info.value)
    with pytest.raises(ShapeError, match="qfrc_applied"):
        frc.applied_force(tree, [0, 0], qfrc_applied=np.zeros(3))
    with pytest.raises(ShapeError, match="f has 2 entries"):
        frc.constraint_force(np.zeros((3, 2)), np.zeros(2))
    with pytest.raises(ShapeError, match=r"jacobian must be an \(m, nv\) array, got list"):
        frc.constraint_force([[1.0, 0.0], [1.0]], np.zeros(2))                  # ragged
    with pytest.raises(InvalidStateError, match=r"jacobian\[1, 0\] is nan"):
        frc.constraint_force([[1.0, 0.0], [np.nan, 1.0]], np.ones(2))
    with pytest.raises(InvalidStateError, match=r"f\[0\] is inf"):
        frc.constraint_force(np.eye(2), [np.inf, 0.0])


def _actuator_fields(**change):
    """The inline model's actuators as keyword arguments of Actuators, with some replaced."""
    act = frc.actuators_from_mujoco(actuated_model())
    fields = {f.name: getattr(act, f.name) for f in dataclasses.fields(act)}
    return {**fields, **change}


@pytest.mark.parametrize("change, error, message", [
    (dict(ctrllimited=[True, False]), ShapeError, r"ctrllimited must have one entry per actuator, shape \(5,\), got shape \(2,\)"),
    (dict(forcelimited=np.ones((5, 1))), ShapeError, r"forcelimited must have one entry per actuator"),
    (dict(moment=[[1.0, 0.0, 0.0]] * 4 + [[1.0]]), ShapeError, r"moment must be an \(nu, nv\) array, got list"),
    (dict(moment=np.zeros(5)), ShapeError, r"moment must be an \(nu, nv\) array, got shape \(5,\)"),
    (dict(moment=np.where(np.eye(5, 3) > 0, np.nan, 0.0)), InvalidStateError, r"moment\[0, 0\] is nan"),
    (dict(gain=np.full((5, 3), np.inf)), InvalidStateError, r"gain\[0, 0\] is inf"),
    (dict(ctrlrange=[[-1, 1], [0.3, -0.2], [-1, 2], [0, 0], [-0.5, 0.5]]), InvalidModelError,
     r"actuator 'servo': ctrlrange is \[0.3, -0.2\], low > high"),
    (dict(forcerange=[[0, 0], [5, -4], [0, 0], [-3, 3], [0, 0]]), InvalidModelError,
     r"actuator 'servo': forcerange is \[5, -4\], low > high"),
])
def test_bad_actuator_arrays_are_named(change, error, message):
    with pytest.raises(error, match=message):
        frc.Actuators(**_actuator_fields(**change))


def test_unused_reversed_range_is_allowed():
    """A range is read only where its limited flag is set (MuJoCo leaves an unlimited range at 0 0 or anything)."""
    act = frc.Actuators(**_actuator_fields(ctrlrange=[[-1, 1], [-0.2, 0.3], [-1, 2], [1, -1], [-0.5, 0.5]]))
    assert not act.ctrllimited[3]


SITES = """<worldbody><site name="anchor" pos="0 0 1"/>
  <body><joint name="j" axis="0 1 0" range="-1 1"/><geom size="0.1" mass="1"/><site name="s" pos="0.2 0 0"/></body></worldbody>"""


@pytest.mark.parametrize("actuator, fragment, why", [
    ('<general name="own" joint="j" dyntype="user"/>', "", "activation dynamics mjDYN_USER"),
    ('<general name="callback" joint="j" gaintype="user"/>', "", "gain type mjGAIN_USER"),
    ('<general name="biased" joint="j" biastype="user"/>', "", "bias type mjBIAS_USER"),
    ('<adhesion name="stick" body="pad" gain="1" ctrlrange="0 1"/>',
     '<worldbody><body name="pad"><joint axis="0 0 1" type="slide"/><geom size="0.1" gap="0.01"/></body></worldbody>',
     "body 'pad' has geoms with a gap"),
])
def test_unsupported_actuators_are_named(actuator, fragment, why):
    m = mujoco.MjModel.from_xml_string(f"<mujoco>{SITES}{fragment}<actuator>{actuator}</actuator></mujoco>")
    name = actuator.split('name="')[1].split('"')[0]
    with pytest.raises(UnsupportedModelError, match=f"actuator '{name}'.*{why}"):
        frc.actuators_from_mujoco(m)


def test_joint_actuator_force_range_clamps_the_total():
    """A joint's actuatorfrcrange clamps the sum of its actuators' forces (the G1 has it): as MuJoCo's qfrc_actuator."""
    m = mujoco.MjModel.from_xml_string("""<mujoco><worldbody><body><joint name="j" axis="0 1 0" actuatorfrcrange="-1 1"/>
      <geom size="0.1" mass="1"/></body></worldbody><actuator><motor joint="j"/><motor joint="j" gear="2"/></actuator></mujoco>""")
    act, d = frc.actuators_from_mujoco(m), mujoco.MjData(m)
    for ctrl in ([0.2, 0.1], [0.7, 0.4], [-3.0, 0.5]):                  # inside, above and below the range
        d.ctrl[:] = ctrl
        mujoco.mj_forward(m, d)
        ours = frc.actuator_force(act, d.qpos, d.qvel, ctrl)
        assert abs(ours[0] - d.qfrc_actuator[0]) <= 1e-15
    assert abs(d.qfrc_actuator[0]) == 1.0                              # the last one was clamped

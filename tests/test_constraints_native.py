"""The compiled constraint kernels (cpp/constraint.h, cpp/solver.h, cpp/inverse.h) against the NumPy reference
(physai.engine.constraint, solver and inverse), which tests/test_constraints.py holds to MuJoCo: the rows, inverse
dynamics and forward dynamics of one state and of batches whose states have their own contacts, on the random scenes
of tests/test_constraints.py (pyramidal and elliptic cones, condim 1, 3, 4, 6) and the G1 standing in its scene.

Bounds (helpers.assert_close, relative to max(1, the largest entry)): rows 1e-13 (the same sums in another order; the
row types and ids equal); inverse dynamics 1e-12 of the scale of its terms; forward dynamics with both solvers at
tolerance 1e-15: qacc 1e-10 and efc_force 1e-8 (two runs of Newton's method whose factorizations round differently
stop within the tolerance of the same optimum). A state alone and inside a batch (any number of threads, any instruction
set: a batch's smooth stages run in lanes) run the same operations: 1e-13. The rows a compiled result computes when
first read are those constraints.rows gives: 1e-13.
"""

import dataclasses
import warnings

import mujoco
import numpy as np
import pytest

from physai import collision, constraints, engine, models
from physai import integrators as integ
from physai.engine import constraint, forward, native, solver
from physai.exceptions import InvalidStateError, StiffRowWarning
from helpers import assert_close, constraint_scene, run
from test_integrators import two_arms_and_a_box

CASES = [(seed, cone, condim) for seed in range(2)
         for cone, condim in [("pyramidal", 1), ("pyramidal", 3), ("elliptic", 3), ("elliptic", 4), ("pyramidal", 6),
                              ("elliptic", 6)]]
ROW_FIELDS = ("J", "pos", "margin", "frictionloss", "diagA", "R", "D", "K", "B", "imp", "impP", "vel", "aref", "contact_mu")
ROWS_RTOL, SAME = 1e-13, 1e-13


def scene(seed: int, cone: str, condim: int, tolerance: float = 1e-15):
    return constraint_scene(seed, cone, condim, tolerance)


def g1_scene(cone: str = "pyramidal"):
    """The G1 in its scene at its keyframe with random velocities, the solver at tolerance 1e-15, the given cone."""
    m = models.load("unitree_g1", "scene")
    m.opt.tolerance, m.opt.iterations, m.opt.ls_iterations = 1e-15, 1000, 100
    m.opt.cone = mujoco.mjtCone.mjCONE_ELLIPTIC if cone == "elliptic" else mujoco.mjtCone.mjCONE_PYRAMIDAL
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    d.qvel[:] = 0.3 * np.random.default_rng(1).normal(size=m.nv)
    mujoco.mj_forward(m, d)
    return m, d


def both(f, *args, **kwargs):
    """(compiled, NumPy) results of f."""
    return run("native", f, *args, **kwargs), run("numpy", f, *args, **kwargs)


def assert_rows_close(ours, ref, rtol: float, what: str) -> None:
    assert (ours.ne, ours.nf, ours.nl, ours.nefc) == (ref.ne, ref.nf, ref.nl, ref.nefc), what
    assert np.array_equal(ours.type, ref.type) and np.array_equal(ours.id, ref.id), f"{what}: row types or ids"
    assert np.array_equal(ours.contact_dim, ref.contact_dim) and np.array_equal(ours.contact_row, ref.contact_row), what
    for name in ROW_FIELDS:
        assert_close(getattr(ours, name), getattr(ref, name), rtol, what=f"{what} {name}")


def inputs(m, d):
    return engine.from_mujoco(m), collision.from_mujoco(m, d), d.eq_active.astype(bool)


@pytest.mark.parametrize("seed, cone, condim", CASES)
def test_rows_and_inverse_equal_the_numpy_reference(seed, cone, condim):
    m, d = scene(seed, cone, condim)
    model, contacts, active = inputs(m, d)
    ours, ref = both(constraints.rows, model, d.qpos, d.qvel, contacts, active)
    assert ours.nefc and ours.nefc == d.nefc
    assert_rows_close(ours, ref, ROWS_RTOL, "rows")
    ours, ref = both(constraints.inverse_dynamics, model, d.qpos, d.qvel, d.qacc, contacts, eq_active=active)
    scale = max(np.abs(ref.tau).max(), np.abs(ref.qfrc_constraint).max())
    assert_close(ours.tau, ref.tau, 1e-12, scale, what="tau")
    assert_close(ours.qfrc_constraint, ref.qfrc_constraint, 1e-12, scale, what="qfrc_constraint")
    assert_close(ours.efc_force, ref.efc_force, 1e-12, what="efc_force")


@pytest.mark.parametrize("equalities", [True, False])
@pytest.mark.parametrize("seed, cone, condim", CASES)
def test_forward_equals_the_numpy_reference(seed, cone, condim, equalities):
    """With the equalities off, rows whose columns lie on one chain of the tree take the kernels' tree path."""
    m, d = scene(seed, cone, condim)
    if not equalities:
        d.eq_active[:] = 0
        mujoco.mj_forward(m, d)
    model, contacts, active = inputs(m, d)
    tau = d.qfrc_passive + d.qfrc_actuator + d.qfrc_applied
    ours, ref = both(constraints.forward_dynamics, model, d.qpos, d.qvel, tau, contacts, eq_active=active)
    assert_close(ours.qacc, ref.qacc, 1e-10, what="qacc")
    assert_close(ours.efc_force, ref.efc_force, 1e-8, what="efc_force")
    assert_close(ours.qfrc_constraint, ref.qfrc_constraint, 1e-8, what="qfrc_constraint")


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_g1_standing_equals_the_numpy_reference_and_mujoco(cone):
    """The G1's rows all lie on chains of its tree (contacts with the floor, friction loss): the kernels' tree path,
    with and without cone Hessians; forward dynamics also against mj_forward (1e-7, as tests/test_constraints.py)."""
    m, d = g1_scene(cone)
    model, contacts, active = inputs(m, d)
    assert_rows_close(run("native", constraints.rows, model, d.qpos, d.qvel, contacts, active),
                      run("numpy", constraints.rows, model, d.qpos, d.qvel, contacts, active), ROWS_RTOL, "G1 rows")
    ours, ref = both(constraints.forward_dynamics, model, d.qpos, d.qvel, d.qfrc_passive + d.qfrc_actuator, contacts)
    assert_close(ours.qacc, ref.qacc, 1e-10, what="G1 qacc")
    assert_close(ours.qacc, d.qacc, 1e-7, what="G1 qacc against mj_forward")
    if cone == "pyramidal":        # on the cone both stop at rounding level, after their own number of iterations
        assert ours.iterations == d.solver_niter[0]
    ours, ref = both(constraints.inverse_dynamics, model, d.qpos, d.qvel, d.qacc, contacts)
    assert_close(ours.tau, ref.tau, 1e-12, max(np.abs(ref.tau).max(), np.abs(ref.qfrc_constraint).max()), what="G1 tau")


@pytest.mark.parametrize("case", ["seed 0 pyramidal 3", "seed 1 elliptic 4", "seed 0 elliptic 6", "G1 pyramidal",
                                  "G1 elliptic"])
def test_forward_with_its_rows_holds_update_at_its_solution(case):
    """solver.compiled_forward(rows=True), the solve step_derivatives(constraints=True) holds in one call: its qacc that
    of the call without rows (the same solve), its rows the rows kernel's (the same code: SAME), each row's state,
    force and cone Hessian constraint.update's at jar = J qacc - aref of those rows (the states equal; the forces within
    8 eps D (|J| |qacc| + |aref|) each, NumPy's jar summed in another order; the Hessians, smooth in jar away from the
    cone's edges, within 1e-10 of their largest entry), qfrc_constraint J^T efc_force (1e-12); a second call on the same
    model gives one state's states and cones again. The elliptic G1 slides on its cone: the Hessians are compared."""
    if case.startswith("G1"):
        m, d = g1_scene(case.split()[1])
    else:
        _, seed, cone, condim = case.split()
        m, d = scene(int(seed), cone, int(condim))
    model, contacts, active = inputs(m, d)
    arrays, tau = constraint.contact_arrays(contacts), d.qfrc_passive + d.qfrc_actuator + d.qfrc_applied
    plain = solver.compiled_forward(model, d.qpos, d.qvel, tau, arrays, active, None, 1e-15, 1000)
    qacc, qfrc, (force,), its, _, _, (r,), (state,), (cones,) = solver.compiled_forward(
        model, d.qpos, d.qvel, tau, arrays, active, None, 1e-15, 1000, rows=True)
    assert_close(qacc, plain[0], SAME, what="qacc")
    assert its[0] == plain[3][0]
    assert_rows_close(r, constraint.compiled_rows(model, d.qpos, d.qvel, arrays, active)[0], SAME, "rows")
    force_ref, state_ref, _, cones_ref = constraint.update(r, r.J @ qacc - r.aref, cone_hessian=True)
    assert r.nefc and np.array_equal(state, state_ref)
    bound = 8 * np.finfo(float).eps * r.D * (np.abs(r.J) @ np.abs(qacc) + np.abs(r.aref))
    assert (np.abs(force - force_ref) <= bound + 1e-14 * np.abs(force_ref)).all()
    assert cones.keys() == cones_ref.keys() and (bool(cones) or case != "G1 elliptic")
    for first, H in cones.items():
        assert_close(H, cones_ref[first], 1e-10, what=f"cone Hessian at row {first}")
    assert_close(qfrc, r.J.T @ force, 1e-12, what="qfrc_constraint")
    again = solver.compiled_forward(model, d.qpos, d.qvel, tau, arrays, active, None, 1e-15, 1000, rows=True)
    assert len(again[7][0]) == r.nefc and again[8][0].keys() == cones.keys()    # the kept buffers emptied between calls


@pytest.mark.compiled
@pytest.mark.parametrize("applied", [False, True])
def test_forward_with_its_front_makes_the_smooth_force_as_the_evaluator(applied):
    """solver.compiled_forward(front=...), evaluate and the solve in one call (step_derivatives(constraints=True)'s
    front): on the G1 in its scene (29 servos, controls off their keyframe, some clamped by ctrlrange; applied forces
    or none), its f and M are MuJoCo's qfrc_smooth and mj_fullM (1e-12 of their scale), the compiled evaluator's
    (DynamicsEvaluator.evaluate: 1e-15), and its solve, rows and states those of the call given the evaluator's tau."""
    m, d = g1_scene()
    rng = np.random.default_rng(2)
    d.ctrl[:] = d.ctrl + rng.uniform(-1.0, 1.0, m.nu) * (m.actuator_ctrlrange[:, 1] - m.actuator_ctrlrange[:, 0])
    if applied:
        d.qfrc_applied[:] = rng.normal(size=m.nv)
    mujoco.mj_forward(m, d)
    model, contacts, _ = inputs(m, d)
    x = integ.step_inputs(model, None, d.ctrl.copy(), d.qfrc_applied.copy() if applied else None, None)
    front = (native.compiled_actuators(model, x.actuators), d.ctrl[None].copy(),
             d.qfrc_applied[None].copy() if applied else None)
    arrays = constraint.contact_arrays(contacts)
    *out, f, M = solver.compiled_forward(model, d.qpos, d.qvel, None, arrays, None, None, 1e-15, 1000, rows=True,
                                         front=front)
    full = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, full)
    assert_close(f, d.qfrc_smooth, 1e-12, np.abs(d.qfrc_bias).max(), what="f against MuJoCo's qfrc_smooth")
    assert_close(M, full, 1e-12, np.abs(full).max(), what="M against mj_fullM")
    run_ = forward.DynamicsEvaluator(model, m.opt.timestep, x)
    M_ref, f_ref, _ = run_.evaluate(d.qpos, d.qvel, energy=False)
    assert_close(f, f_ref, 1e-15, np.abs(f_ref).max(), what="f against the evaluator's")
    assert_close(M, M_ref, 1e-15, np.abs(M_ref).max(), what="M against the evaluator's")
    ref = solver.compiled_forward(model, d.qpos, d.qvel, run_.tau, arrays, None, None, 1e-15, 1000, rows=True)
    assert_close(out[0], ref[0], SAME, what="qacc")
    assert_rows_close(out[6][0], ref[6][0], SAME, "rows")
    assert np.array_equal(out[7][0], ref[7][0])


#: a hinged arm with gravity compensation, a fixed tendon's spring, damper and armature, a motor on it and a servo on a
#: slide: the front's smooth force beyond the joints' (body forces, tendon forces, tendon armature in M)
FRONT_EXTRAS = """<mujoco><worldbody><geom type="plane" size="2 2 .1"/>
  <body pos="0 0 1" gravcomp=".5"><joint name="a" type="hinge" axis="0 1 0" damping=".1"/>
    <geom type="capsule" fromto="0 0 0 .4 0 0" size=".05"/>
    <body pos=".4 0 0"><joint name="b" type="slide" axis="1 0 0" range="-.1 .1" limited="true" stiffness="3"/>
      <geom size=".06" mass="1"/></body></body></worldbody>
  <tendon><fixed name="t" stiffness="20" damping=".5" armature=".2" springlength=".05"><joint joint="a" coef="1"/>
    <joint joint="b" coef="-.5"/></fixed></tendon>
  <actuator><motor tendon="t" ctrlrange="-1 1" ctrllimited="true"/><position joint="b" kp="30" forcerange="-2 2"/>
  </actuator></mujoco>"""


@pytest.mark.compiled
def test_forward_front_makes_body_and_tendon_forces_as_mujoco():
    """The front's smooth force (cpp/forward.h's smooth_force, evaluate's) on FRONT_EXTRAS at random states: f is MuJoCo's
    qfrc_smooth and M mj_fullM (tendon armature in) within 1e-12 of their scale; the motor's control clamped."""
    m = mujoco.MjModel.from_xml_string(FRONT_EXTRAS)
    model, d, rng = engine.from_mujoco(m), mujoco.MjData(m), np.random.default_rng(4)
    for _ in range(5):
        d.qpos[:], d.qvel[:], d.ctrl[:] = rng.uniform(-0.1, 0.1, m.nq), rng.normal(size=m.nv), rng.uniform(-2, 2, m.nu)
        mujoco.mj_forward(m, d)
        front = (native.compiled_actuators(model, model.actuators), d.ctrl[None].copy(), None)
        *_, f, M = solver.compiled_forward(model, d.qpos, d.qvel, None, constraint.contact_arrays(
            collision.from_mujoco(m, d)), None, None, 1e-15, 100, front=front)
        full = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, full)
        assert_close(f, d.qfrc_smooth, 1e-12, np.abs(d.qfrc_bias).max() + np.abs(d.qfrc_passive).max(), what="f")
        assert_close(M, full, 1e-12, np.abs(full).max(), what="M")


@pytest.mark.compiled
def test_forward_front_refuses_what_it_does_not_model():
    """The front takes actuators without activations (and a tau of None only with a front): ValueError otherwise."""
    m, d = g1_scene()
    model, contacts, _ = inputs(m, d)
    arrays = constraint.contact_arrays(contacts)
    with pytest.raises(ValueError, match="front"):
        solver.compiled_forward(model, d.qpos, d.qvel, None, arrays, None, None, 1e-15, 1000)
    spec = mujoco.MjSpec()
    body = spec.worldbody.add_body(pos=[0, 0, 1])
    body.add_geom(type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[0.1, 0, 0])
    body.add_joint(name="hinge", type=mujoco.mjtJoint.mjJNT_HINGE)
    spec.add_actuator(target="hinge", trntype=mujoco.mjtTrn.mjTRN_JOINT, dyntype=mujoco.mjtDyn.mjDYN_FILTER,
                      dynprm=[0.1] + [0] * 9, gainprm=[1] + [0] * 9)
    filtered = engine.from_mujoco(spec.compile())
    with pytest.raises(ValueError, match="activations"):
        solver.compiled_forward(filtered, np.zeros(1), np.zeros(1), None, None, None, None, 1e-15, 100,
                                front=(native.compiled_actuators(filtered, filtered.actuators), np.zeros((1, 1)), None))


@pytest.mark.parametrize("case", ["seed 0 pyramidal 3", "seed 1 elliptic 4"])
def test_forward_with_the_solvers_own_forces_returns_its_rows(case):
    """solver.compiled_forward(rows=True, own_force=True), the rows forward_dynamics' StiffRowWarning reads: qacc,
    qfrc_constraint, efc_force, iterations and improvement those of the call without rows (the same solve: SAME), its
    rows the rows kernel's (SAME), one state and a batch of two; under PGS stopped after 20 iterations, whose forces are
    not update's at its qacc (rows=True's: more than 1e-6 of their largest apart), the solver's own."""
    _, seed, cone, condim = case.split()
    m, d = scene(int(seed), cone, int(condim))
    m.opt.solver, m.opt.iterations = mujoco.mjtSolver.mjSOL_PGS, 20
    model, contacts, active = inputs(m, d)
    arrays, tau = constraint.contact_arrays(contacts), d.qfrc_passive + d.qfrc_actuator + d.qfrc_applied
    for q, qd, t in ((d.qpos, d.qvel, tau), tuple(np.stack([x, x]) for x in (d.qpos, d.qvel, tau))):
        plain = solver.compiled_forward(model, q, qd, t, arrays, active, None, 1e-15, 20)
        own = solver.compiled_forward(model, q, qd, t, arrays, active, None, 1e-15, 20, rows=True, own_force=True)
        update = solver.compiled_forward(model, q, qd, t, arrays, active, None, 1e-15, 20, rows=True)
        assert len(own) == 7 and len(own[2]) == len(own[6]) == len(np.atleast_2d(q))
        for k, name in enumerate(("qacc", "qfrc_constraint", "efc_force", "iterations", "improvement")):
            assert_close(np.concatenate(own[k]) if k == 2 else own[k], np.concatenate(plain[k]) if k == 2 else plain[k],
                         SAME, what=name)
        for r, ref in zip(own[6], constraint.compiled_rows(model, q, qd, arrays, active) if q.ndim == 2 else
                          [constraint.compiled_rows(model, q, qd, arrays, active)[0]]):
            assert_rows_close(r, ref, SAME, "rows")
        gap = np.abs(update[2][0] - plain[2][0]).max()
        assert gap > 1e-6 * np.abs(plain[2][0]).max(), "update's forces at PGS's qacc should differ from PGS's"


@pytest.mark.parametrize("touching", ["every state", "one state"])
def test_the_floor_warning_names_the_states_floor_rows_finds_one_by_one(touching):
    """forward_dynamics' StiffRowWarning on the compiled backend (the near states' rows concatenated, constraint.at_floor,
    each contact's rows offset into the whole) names what constraint.floor_rows finds state by state: the states with
    rows whose R is at its floor, the first of them and its count. A friction per geom from 0.2 to 2 (a pyramid edge's
    floor is 2 mu^2 MINVAL, read through the owner contact's mu) and per state a random subset of the contacts; every
    state touching the floor bodies (the solve's own rows) or one of six (the near state's rows made again)."""
    rng = np.random.default_rng(3)
    m = mujoco.MjModel.from_xml_string(two_arms_and_a_box("pyramidal", "Newton", .099).replace("discrete", "Euler"))
    m.geom_friction[:, 0] = rng.uniform(.2, 2, m.ngeom)
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    model = engine.from_mujoco(m)
    full = collision.detect(model, d.qpos)

    def subset(keep):
        return dataclasses.replace(full, **{f.name: getattr(full, f.name)[keep] for f in dataclasses.fields(full)
                                            if isinstance(getattr(full, f.name), np.ndarray)})
    floor = np.isin(full.body1, model.kept("floor_bodies")) | np.isin(full.body2, model.kept("floor_bodies"))
    sets = [subset((rng.random(len(full.dist)) < .6) | (floor if touching == "every state" or k == 4 else False))
            for k in range(6)]
    if touching == "one state":
        sets = [s if k == 4 else subset(~floor & (rng.random(len(full.dist)) < .6)) for k, s in enumerate(sets)]
    Q, QD = np.tile(d.qpos, (6, 1)), rng.normal(size=(6, m.nv))
    per = [constraint.floor_rows(r) for r in constraint.compiled_rows(model, Q, QD, constraint.contact_arrays(sets), None)]
    hit = [k for k, f in enumerate(per) if len(f)]
    assert hit and (touching == "every state" or hit == [4])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        run("native", constraints.forward_dynamics, model, Q, QD, rng.normal(size=(6, m.nv)), sets)
    said = [str(w.message) for w in seen if issubclass(w.category, StiffRowWarning)]
    assert len(said) == 1 and said[0].startswith(f"{len(per[hit[0]])} constraint rows of state {hit[0]} "
                                                 f"({len(hit)} of 6 states have such rows) "), said


def trajectory(steps: int = 40, every: int = 4):
    """States of a random scene falling onto the ground (mj_step), each with its own contacts: (model, q, qd, tau,
    qacc, contact sets)."""
    m, d = scene(1, "elliptic", 4, tolerance=1e-10)
    d.qpos[2] = 0.3
    out = []
    for k in range(steps):
        mujoco.mj_step(m, d)
        if k % every == 0:
            mujoco.mj_forward(m, d)
            out.append((d.qpos.copy(), d.qvel.copy(), d.qfrc_passive + d.qfrc_actuator, d.qacc.copy(),
                        collision.from_mujoco(m, d)))
    q, qd, tau, qacc, sets = (list(x) for x in zip(*out))
    assert len({len(s) for s in sets}) > 1, "the states should differ in their number of contacts"
    return engine.from_mujoco(m), np.array(q), np.array(qd), np.array(tau), np.array(qacc), sets


@pytest.mark.parametrize("threads", ["1", "2"])
def test_a_batch_equals_its_states_one_by_one(monkeypatch, restore_isa, threads):
    """A batch's smooth stages run in the lanes of each instruction set (blocks of states side by side), a state's alone
    in the scalar kernels: the same numbers within SAME. 22 states: on one thread, blocks of 16 and the rest (a lane
    block and a leftover state), on two, pieces of 8."""
    monkeypatch.setenv("PHYSAI_NUM_THREADS", threads)
    model, q, qd, tau, qacc, sets = trajectory(steps=88)
    alone = [(run("native", constraints.forward_dynamics, model, q[k], qd[k], tau[k], sets[k]),
              run("native", constraints.inverse_dynamics, model, q[k], qd[k], qacc[k], sets[k]),
              run("native", constraints.rows, model, q[k], qd[k], sets[k])) for k in range(len(sets))]
    for isa in native.isas():
        assert native.set_isa(isa)
        fwd = run("native", constraints.forward_dynamics, model, q, qd, tau, sets)
        inv = run("native", constraints.inverse_dynamics, model, q, qd, qacc, sets)
        rows = fwd.rows
        assert len(rows) == len(sets) and len(fwd.efc_force) == len(sets)
        for k, (one, one_inv, one_rows) in enumerate(alone):
            what = f"{isa}, state {k}"
            assert_close(fwd.qacc[k], one.qacc, SAME, what=f"qacc, {what}")
            assert_close(fwd.efc_force[k], one.efc_force, SAME, what=f"efc_force, {what}")
            assert fwd.iterations[k] == one.iterations, f"{what}: iterations"
            assert_close(inv.tau[k], one_inv.tau, SAME, max(1.0, np.abs(one_inv.qfrc_constraint).max()), what=f"tau, {what}")
            assert_rows_close(rows[k], one_rows, SAME, f"rows, {what}")


@pytest.mark.parametrize("threads", ["1", "2"])
@pytest.mark.parametrize("bad", [6, 18])
def test_a_batch_names_its_state_with_a_zero_quaternion(monkeypatch, restore_isa, threads, bad):
    """A zero quaternion inside a block of lanes (in the first block of 16 states or the second) stops the block; the
    state is named as the scalar kernels name it, in every instruction set, forward and inverse."""
    monkeypatch.setenv("PHYSAI_NUM_THREADS", threads)
    model, q, qd, tau, qacc, sets = trajectory(steps=88)
    q[bad, 3:7] = 0.0
    for isa in native.isas():
        assert native.set_isa(isa)
        with pytest.raises(InvalidStateError, match=rf"^q\[3:7\] is a zero quaternion \(state {bad}\)"):
            run("native", constraints.forward_dynamics, model, q, qd, tau, sets)
        with pytest.raises(InvalidStateError, match=rf"^q\[3:7\] is a zero quaternion \(state {bad}\)"):
            run("native", constraints.inverse_dynamics, model, q, qd, qacc, sets)


def test_a_batch_equals_the_numpy_reference():
    model, q, qd, tau, qacc, sets = trajectory()
    ours, ref = both(constraints.inverse_dynamics, model, q, qd, qacc, sets)
    scale = np.maximum(np.abs(ref.tau).max(axis=1), np.abs(ref.qfrc_constraint).max(axis=1))
    assert_close(ours.tau, ref.tau, 1e-12, scale[:, None], what="tau")
    for k in range(len(sets)):
        assert_rows_close(ours.rows[k], ref.rows[k], ROWS_RTOL, f"rows, state {k}")


def test_rows_read_later_are_the_rows_of_the_inputs_at_the_call():
    m, d = scene(0, "pyramidal", 3)
    model, contacts, active = inputs(m, d)
    q, qd = d.qpos.copy(), d.qvel.copy()
    res = run("native", constraints.forward_dynamics, model, q, qd, d.qfrc_passive, contacts, eq_active=active)
    expected = run("native", constraints.rows, model, d.qpos, d.qvel, contacts, active)
    q[:] = 0.0                                                  # the caller's arrays change after the call
    assert_rows_close(res.rows, expected, SAME, "rows")
    assert res.rows is res.rows                                 # computed once

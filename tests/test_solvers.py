"""MuJoCo's PGS and CG solvers (mj_solPGS, mj_solCG: physai.engine.solver.solve_pgs, solve_cg) against MuJoCo 4
computed in the test (CG's bounds at its test): forward
dynamics (qacc, efc_force) of the random constraint scenes (tests/helpers.constraint_scene: pyramidal and elliptic
cones, condim 1, 3, 4, 6) and of the G1 standing, and a 100-step trajectory of a Gymnasium-like humanoid
(tests/data/humanoid_pgs.xml: RK4, PGS with 50 iterations) against mj_step, on both backends (the NumPy solve_pgs
and its C++ twin in cpp/solver.h).

Bounds: PGS is deterministic given its visitation order (MuJoCo's PCG32 with a fixed seed, which physai replays), so
at the same options and warm start physai runs the same sweeps as MuJoCo and stops at the same iteration: qacc and
efc_force within 1e-12 of MuJoCo's (relative to max(1, max |MuJoCo|); 1e-14 seen), whether it stops by the tolerance
or by the iteration limit. A trajectory of 100 steps stays within 1e-8 in q (contacts that switch amplify rounding).
"""

import warnings

import mujoco
import numpy as np
import pytest

from physai import collision, constraints, derivatives, engine, integrators, models
from physai.engine import native
from physai.exceptions import ConvergenceWarning

from helpers import DATA, assert_close, constraint_scene as scene, run

PGS = mujoco.mjtSolver.mjSOL_PGS
CASES = [(seed, cone, condim) for seed in range(2)
         for cone, condim in [("pyramidal", 1), ("pyramidal", 3), ("elliptic", 3), ("elliptic", 4), ("pyramidal", 4),
                              ("elliptic", 6), ("pyramidal", 6)]]


def pgs_forward_both(m, d, backend: str, seed: int = 0, model=None):
    """(physai's ForwardResult, MuJoCo's d) at d's state with m's options and solver PGS, both warm-started from
    MuJoCo's qacc perturbed (the warm start's forces are kept or dropped by the dual cost, as MuJoCo does); model:
    physai's model of m to reuse (default: a new one)."""
    m.opt.solver = PGS
    mujoco.mj_forward(m, d)
    d.qacc_warmstart[:] = d.qacc + 0.01 * np.random.default_rng(seed).normal(size=m.nv)
    warm = d.qacc_warmstart.copy()
    mujoco.mj_forward(m, d)
    tau = d.qfrc_passive + d.qfrc_actuator + d.qfrc_applied
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = run(backend, constraints.forward_dynamics, model or engine.from_mujoco(m), d.qpos, d.qvel, tau,
                  collision.from_mujoco(m, d), eq_active=d.eq_active.astype(bool), qacc_warmstart=warm)
    return res, d


def assert_pgs_equal(res, d, what: str = "", bound: float = 1e-12) -> None:
    assert_close(res.qacc, d.qacc, bound, what=f"qacc {what}")
    assert_close(res.efc_force, d.efc_force, bound, what=f"efc_force {what}")


@pytest.mark.parametrize("backend", ["numpy", "native"])
@pytest.mark.parametrize("seed, cone, condim", CASES)
def test_pgs_forward_equals_mj_forward(seed, cone, condim, backend):
    """At MuJoCo's defaults (tolerance 1e-8, 100 iterations), at a loose tolerance and at the iteration limit (20 sweeps
    at tolerance 1e-15): the same sweeps, the same forces and accelerations within 1e-12."""
    m, d = scene(seed, cone, condim)
    for tolerance, iterations in [(1e-8, 100), (1e-3, 100), (1e-15, 20)]:
        m.opt.tolerance, m.opt.iterations = tolerance, iterations
        res, d = pgs_forward_both(m, d, backend, seed)
        assert res.iterations == d.solver_niter[0], (tolerance, res.iterations, d.solver_niter[0])
        assert_pgs_equal(res, d, f"tolerance {tolerance}, {iterations} iterations")


@pytest.mark.parametrize("backend", ["native"])
@pytest.mark.parametrize("seed, condim", [(seed, condim) for seed in range(2) for condim in (1, 3, 4, 6)])
def test_pgs_kept_visiting_orders_past_their_limits(seed, condim, backend):
    """The compiled PGS keeps its visiting orders for up to 64 blocks and 128 sweeps (cpp/solver.h's pgs_order_at) and
    draws them beyond: at tolerance 0 and 200 sweeps the pyramidal scenes (35 to 162 rows: under and over 64 blocks)
    take MuJoCo's 200 sweeps and forces within 1e-12, in two solves of the same problem on one model (the second reads
    the kept orders).
    (Elliptic scenes at tolerance 0 stop by a rounding-level improvement at a sweep near MuJoCo's, on both backends
    alike: their orders are checked by the test above.)"""
    m, d = scene(seed, "pyramidal", condim)
    m.opt.tolerance, m.opt.iterations = 0.0, 200
    model = engine.from_mujoco(m)
    for again in range(2):
        res, d = pgs_forward_both(m, d, backend, seed, model)
        assert res.iterations == d.solver_niter[0] == 200, (again, res.iterations, d.solver_niter[0])
        assert_pgs_equal(res, d, f"tolerance 0, 200 iterations, solve {again}")


@pytest.mark.parametrize("seed, cone, condim", CASES[::2])
def test_pgs_to_convergence_is_as_close_as_mujocos(seed, cone, condim):
    """Run to convergence (tolerance 1e-15, 1000 sweeps) the last sweeps' improvements are rounding, so the sweep each
    stops at may differ (52 and 45 seen): physai's qacc is no further from the exact solution (Newton's at 1e-15) than
    MuJoCo's PGS result is (plus 1e-8 of the scale). Where it stops hangs on the last bits of the invweight0 constants:
    on scene 0 (elliptic, condim 3) physai's error was 1.7e-5, 3.6e-6 and 2.5e-6 (scale 2749) with its own, MuJoCo's
    and its own times 1 +- 1e-15, and MuJoCo's constants made scene 1 (elliptic, condim 4) 4.0e-6 from 3.4e-6 allowed
    at 1e-9 of the scale."""
    m, d = scene(seed, cone, condim)
    m.opt.tolerance, m.opt.iterations, m.opt.ls_iterations = 1e-15, 1000, 100
    mujoco.mj_forward(m, d)
    exact = d.qacc.copy()
    res, d = pgs_forward_both(m, d, "numpy", seed)
    assert res.iterations < 1000 and d.solver_niter[0] < 1000
    scale = max(1.0, np.abs(exact).max())
    assert np.abs(res.qacc - exact).max() <= np.abs(d.qacc - exact).max() + 1e-8 * scale


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_pgs_g1_along_its_steps(backend):
    """The G1 standing with solver PGS under position control from its keyframe: every 20th of 100 mj_step states."""
    m = models.load("unitree_g1", "scene")
    m.opt.solver = PGS
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    rng = np.random.default_rng(3)
    for k in range(100):
        d.ctrl[:] = d.qpos[7:7 + m.nu] + 0.05 * rng.normal(size=m.nu)
        mujoco.mj_step(m, d)
        if k % 20 == 0:
            res, _ = pgs_forward_both(m, d, backend, k)
            assert d.nefc and res.rows.nefc == d.nefc
            assert_pgs_equal(res, d, f"step {k}")


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_humanoid_with_pgs_follows_mj_step(backend):
    """tests/data/humanoid_pgs.xml (Gymnasium's Humanoid's features: RK4, PGS, 50 iterations, condim 1 limbs on a
    condim 3 floor, joint limits) from qpos0 under a constant control: 100 steps of simulate(constraints=True) within
    1e-8 of mj_step in q, with contacts on the way."""
    m = mujoco.MjModel.from_xml_path(str(DATA / "humanoid_pgs.xml"))
    d = mujoco.MjData(m)
    ctrl = 0.3 * np.sin(np.arange(m.nu))
    d.ctrl[:] = ctrl
    Q, ncon = [], 0
    for _ in range(100):
        mujoco.mj_step(m, d)
        Q.append(d.qpos.copy())
        ncon = max(ncon, d.ncon)
    traj = run(backend, integrators.simulate, engine.from_mujoco(m), m.qpos0, np.zeros(m.nv), steps=100, ctrl=ctrl,
               energy=False, constraints=True)
    assert ncon > 0
    assert np.abs(traj.q[1:] - np.array(Q)).max() < 1e-8


def test_humanoid_with_cg_follows_mj_step_compiled():
    """tests/data/humanoid_pgs.xml with solver CG at tolerances 1e-8 and 1e-15 on the compiled backend (cpp/solver.h's
    solve_cg; the NumPy text takes a minute for these 400 RK4 stages, and test_cg_forward_equals_mj_forward checks it
    state by state): 100 steps of simulate(constraints=True) within 1e-8 of mj_step in q (9.6e-13 seen), with contacts."""
    assert native.compiled_solver(engine.from_mujoco(mujoco.MjModel.from_xml_path(str(DATA / "humanoid_pgs.xml"))))
    for tolerance in (1e-8, 1e-15):
        m = mujoco.MjModel.from_xml_path(str(DATA / "humanoid_pgs.xml"))
        m.opt.solver, m.opt.tolerance = mujoco.mjtSolver.mjSOL_CG, tolerance
        d = mujoco.MjData(m)
        d.ctrl[:] = ctrl = 0.3 * np.sin(np.arange(m.nu))
        Q, ncon = [], 0
        for _ in range(100):
            mujoco.mj_step(m, d)
            Q.append(d.qpos.copy())
            ncon = max(ncon, d.ncon)
        traj = run("native", integrators.simulate, engine.from_mujoco(m), m.qpos0, np.zeros(m.nv), steps=100, ctrl=ctrl,
                   energy=False, constraints=True)
        assert ncon > 0
        assert np.abs(traj.q[1:] - np.array(Q)).max() < 1e-8, tolerance


@pytest.mark.parametrize("backend", ["numpy", "native"])
@pytest.mark.parametrize("solver", ["NEWTON", "PGS", "CG"])
@pytest.mark.parametrize("seed, cone, condim", CASES)
def test_noslip_forward_equals_mj_forward(seed, cone, condim, solver, backend):
    """MuJoCo's noslip sweeps (mj_solNoSlip, 20 at most, tolerance 1e-6) after each solver, cold-started: the same
    iterations in all (the solver's plus the sweeps', MuJoCo's solver_niter) and qacc and efc_force within 1e-9 of
    mj_forward's (8.3e-11 seen: PGS, elliptic condim 6; most 1e-14; before mju_QCQP's Cholesky rank test for five
    tangential forces, 1.9e-6), on both engines (cpp/solver.h's noslip)."""
    m, d = scene(seed, cone, condim)
    m.opt.solver, m.opt.noslip_iterations = getattr(mujoco.mjtSolver, f"mjSOL_{solver}"), 20
    d.qacc_warmstart[:] = 0
    mujoco.mj_forward(m, d)
    model = engine.from_mujoco(m)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = run(backend, constraints.forward_dynamics, model, d.qpos, d.qvel, d.qfrc_passive + d.qfrc_actuator,
                  collision.from_mujoco(m, d), eq_active=d.eq_active.astype(bool), qacc_warmstart=np.zeros(m.nv))
    assert res.iterations == d.solver_niter[0]
    assert_close(res.qacc, d.qacc, 1e-9, what="qacc")
    assert_close(res.efc_force, d.efc_force, 1e-9, what="efc_force")


@pytest.mark.parametrize("backend", ["numpy", "native"])
@pytest.mark.parametrize("cone", ["elliptic", "pyramidal"])
def test_folded_chain_with_noslip_follows_mj_step(cone, backend):
    """The folded chain falling on its plane with 10 noslip sweeps after Newton: 100 steps of simulate(constraints=True)
    within 1e-10 of mj_step in q."""
    m, d = folded_chain(cone)
    m.opt.noslip_iterations = 10
    assert drift_from_mj_step(m, d, backend) < 1e-10


def cg_stop_is_clear(d, improvement: float, tolerance: float, factor: float = 2.0) -> bool:
    """Whether CG's stopping iteration is decided clear of the tolerance, so that rounding cannot move it: MuJoCo's last
    stopping quantity (the smaller of its improvement and gradient) below tolerance / factor, its one before above
    tolerance * factor, and physai's last improvement not within a factor of the tolerance. (CG's line searches stop
    at a slope tolerance, and their rounding, which the directions carry on, moves late improvements by more than
    rounding: 7.2e-9 against MuJoCo's 3.1e-9 at tolerance 1e-8 under OpenBLAS's Prescott kernels.)"""
    stops = [min(d.solver[i].improvement, d.solver[i].gradient) for i in range(d.solver_niter[0])]
    earlier_clear = len(stops) < 2 or stops[-2] > factor * tolerance
    return stops[-1] < tolerance / factor and earlier_clear and not tolerance / factor <= improvement <= factor * tolerance


@pytest.mark.parametrize("backend", ["numpy", "native"])
@pytest.mark.parametrize("seed, cone, condim", CASES[::2])
def test_cg_forward_equals_mj_forward(seed, cone, condim, backend):
    """MuJoCo's CG (mj_solCG: Hager-Zhang directions, the primal line search), warm-started near the solution. At
    tolerances 1e-3 to 1e-8 physai stops at MuJoCo's iteration wherever that decision is clear of the tolerance
    (cg_stop_is_clear), and its qacc is always no further from MuJoCo's than MuJoCo's own is from the exact solution
    (Newton's at tolerance 1e-15; a quarter of it at most seen); at tolerance 1e-15 (1000 iterations) both converge and
    qacc and efc_force agree within 1e-9 (3.3e-10 seen)."""
    m, d = scene(seed, cone, condim)
    m.opt.tolerance, m.opt.iterations = 1e-15, 1000
    mujoco.mj_forward(m, d)
    exact = d.qacc.copy()
    m.opt.solver = mujoco.mjtSolver.mjSOL_CG
    for tolerance, iterations in [(1e-3, 100), (1e-4, 100), (1e-6, 100), (1e-8, 100), (1e-15, 1000)]:
        m.opt.tolerance, m.opt.iterations = tolerance, iterations
        mujoco.mj_forward(m, d)
        d.qacc_warmstart[:] = d.qacc + 0.01 * np.random.default_rng(seed).normal(size=m.nv)
        warm = d.qacc_warmstart.copy()
        mujoco.mj_forward(m, d)
        res = run(backend, constraints.forward_dynamics, engine.from_mujoco(m), d.qpos, d.qvel,
                  d.qfrc_passive + d.qfrc_actuator, collision.from_mujoco(m, d), eq_active=d.eq_active.astype(bool),
                  qacc_warmstart=warm)
        if tolerance > 1e-15 and cg_stop_is_clear(d, res.improvement, tolerance):   # 1e-15: rounding decides
            assert res.iterations == d.solver_niter[0], (tolerance, res.iterations, d.solver_niter[0])
        own = np.abs(d.qacc - exact).max() / max(1.0, np.abs(d.qacc).max())
        assert_close(res.qacc, d.qacc, max(own, 1e-9), what=f"qacc, tolerance {tolerance}")
        if tolerance == 1e-15:
            assert_close(res.efc_force, d.efc_force, 1e-9, what="efc_force")


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_pgs_at_its_iteration_limit_warns_with_the_improvement(backend):
    """Two sweeps do not reach the tolerance: ConvergenceWarning with the last improvement, as MuJoCo leaves
    solver_niter = iterations."""
    m, d = scene(0, "pyramidal", 3)
    m.opt.iterations = 2
    res, d = pgs_forward_both(m, d, backend)
    assert d.solver_niter[0] == 2
    model = engine.from_mujoco(m)
    with pytest.warns(ConvergenceWarning, match="stopped after 2 iterations.*last improvement"):
        run(backend, constraints.forward_dynamics, model, d.qpos, d.qvel, d.qfrc_passive, collision.from_mujoco(m, d),
            eq_active=d.eq_active.astype(bool))


def folded_chain(cone: str = "elliptic"):
    """(m, d): a box on a free joint with a chain of 8 hinged capsules (limits at +-150 degrees), folded against its
    limits 0.5 m under the box's start and thrown onto a plane, mj_forward done: M's trace here (22.7 kg m^2) is about
    half of nv stat.meaninertia at the straight qpos0 (41.9), so the two scales stop the solvers apart."""
    links = "".join(f'<body pos="{0.3 if i else 0} 0 0"><joint type="hinge" axis="0 1 0" limited="true" range="-150 150"/>'
                    f'<geom type="capsule" fromto="0 0 0 .3 0 0" size=".03" mass="{1 if i < 2 else 0.3}"/>' for i in range(8))
    m = mujoco.MjModel.from_xml_string(
        f'<mujoco><option cone="{cone}"/><worldbody><geom type="plane" size="5 5 .1" pos="0 0 -.4"/><body pos="0 0 .5">'
        f'<freejoint/><geom type="box" size=".1 .1 .1" mass="3"/>{links}{"</body>" * 8}</body></worldbody></mujoco>')
    d = mujoco.MjData(m)
    d.qpos[2], d.qpos[7:] = 0.1, np.deg2rad(148) * np.array([1, -1] * 4)
    d.qvel[:] = np.random.default_rng(0).normal(size=m.nv)
    mujoco.mj_forward(m, d)
    return m, d


def drift_from_mj_step(m, d, backend: str) -> float:
    """max |q - mj_step's q| over 100 steps of simulate(constraints=True) from d's state (d is stepped)."""
    q0, qd0 = d.qpos.copy(), d.qvel.copy()
    Q = []
    for _ in range(100):
        mujoco.mj_step(m, d)
        Q.append(d.qpos.copy())
    traj = run(backend, integrators.simulate, engine.from_mujoco(m), q0, qd0, steps=100, energy=False, constraints=True)
    return float(np.abs(traj.q[1:] - np.array(Q)).max())


@pytest.mark.parametrize("backend", ["numpy", "native"])
@pytest.mark.parametrize("solver", ["NEWTON", "CG"])
def test_newton_and_cg_stop_by_the_trace_of_the_current_mass_matrix(solver, backend):
    """MuJoCo 4.0 scales the solvers' improvement, gradient and line search tolerance by 1 / trace(M) at the current
    state, not by 1 / (nv stat.meaninertia) at qpos0 (changelog, c8362756d): on the folded chain, where the two differ
    by 1.85 times, physai stops Newton and CG (cold, elliptic cones) at MuJoCo's iteration at each of 45 tolerances
    from 1e-12 to 0.1 (the old scale stopped Newton one iteration early at two of them), qacc within 1e-11."""
    m, d = folded_chain()
    M = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, M)
    assert m.stat.meaninertia * m.nv > 1.5 * np.trace(M)
    m.opt.solver = getattr(mujoco.mjtSolver, f"mjSOL_{solver}")
    model = engine.from_mujoco(m)
    for tolerance in np.logspace(-12, -1, 45):
        m.opt.tolerance = tolerance
        d.qacc_warmstart[:] = 0
        mujoco.mj_forward(m, d)
        res = run(backend, constraints.forward_dynamics, model, d.qpos, d.qvel, d.qfrc_passive,
                  collision.from_mujoco(m, d), qacc_warmstart=np.zeros(m.nv), tolerance=tolerance)
        assert res.iterations == d.solver_niter[0], (tolerance, res.iterations, d.solver_niter[0])
        assert_close(res.qacc, d.qacc, 1e-11, what=f"qacc, tolerance {tolerance:.3g}")


@pytest.mark.parametrize("backend", ["numpy", "native"])
@pytest.mark.parametrize("cone, tolerance", [("elliptic", 1e-4), ("pyramidal", 1e-3)])
def test_folded_chain_at_a_loose_tolerance_follows_mj_step(cone, tolerance, backend):
    """The folded chain falling on its plane under Newton at a loose tolerance, warm-started from step to step: 100 steps
    of simulate(constraints=True) within 1e-10 of mj_step in q (1.7e-14 seen; the old meaninertia scale stopped some
    solves an iteration apart and drifted 1.8e-6 (elliptic), 5.1e-6 (pyramidal))."""
    m, d = folded_chain(cone)
    m.opt.tolerance = tolerance
    assert drift_from_mj_step(m, d, backend) < 1e-10


@pytest.mark.parametrize("backend", ["native", "numpy"])
@pytest.mark.parametrize("solver", ["Newton", "PGS", "CG"])
def test_a_model_without_dofs_solves_to_mujocos_empty_answer(solver, backend):
    """Every body welded to the world (nv = 0): each solver gives mj_forward's and mj_inverse's empty qacc and
    qfrc_inverse, without a warning (the solvers' tolerance scale has no trace to divide by)."""
    m = mujoco.MjModel.from_xml_string(f'<mujoco><option solver="{solver}"/><worldbody><geom type="plane" size="1 1 .1"/>'
                                       '<body><geom type="sphere" size=".1" pos="0 0 .05"/></body></worldbody></mujoco>')
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    mujoco.mj_inverse(m, d)
    model, empty = engine.from_mujoco(m), np.zeros(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        forward = run(backend, constraints.forward_dynamics, model, empty, empty, empty)
        inverse = run(backend, constraints.inverse_dynamics, model, empty, empty, empty)
    assert forward.qacc.shape == d.qacc.shape == (0,) and inverse.tau.shape == d.qfrc_inverse.shape == (0,)
    assert forward.efc_force.shape == d.efc_force.shape


#: every body welded to the world (nv = 0), with a contact (an explicit pair: MuJoCo's ncon 1, no rows), an equality
#: between two of them (connect or weld) or neither
WELDED = {"pair": '<mujoco><worldbody><geom name="floor" type="plane" size="1 1 .1"/><body pos="0 0 .05"><geom '
                  'name="ball" size=".1"/></body></worldbody><contact><pair geom1="floor" geom2="ball"/></contact></mujoco>',
          "no contact": '<mujoco><worldbody><body pos="0 0 1"><geom size=".1"/></body></worldbody></mujoco>'}
#: two welded bodies tied by an equality (its rows' Jacobian is empty: MuJoCo keeps none)
WELDED.update({kind: f'<mujoco><worldbody><body name="a" pos="0 0 1"><geom size=".1"/></body><body name="b" pos=".3 0 1">'
                     f'<geom size=".1"/></body></worldbody><equality><{kind} body1="a" body2="b" {anchor}/></equality></mujoco>'
               for kind, anchor in (("connect", 'anchor="0 0 0"'), ("weld", ""))})


@pytest.mark.parametrize("backend", ["native", "numpy"])
@pytest.mark.parametrize("scene_name", sorted(WELDED))
def test_every_constrained_call_on_a_model_without_dofs_gives_mujocos_shapes(scene_name, backend):
    """nv = 0: the rows of one state and of forward dynamics' batch of two (J (nefc, 0), on the compiled backend too: its
    rows were counted from J's numbers, none with nv 0, and J came back (0,); the NumPy rows of an equality raised a bare
    ValueError), forward and inverse dynamics (their rows),
    the contacts, a step, a simulation, a rollout and step_derivatives(constraints=True) under each integrator (NumPy's implicit
    raised ShapeError) give mj_forward's nefc and
    ncon and arrays of nv = 0 columns, and no error."""
    m = mujoco.MjModel.from_xml_string(WELDED[scene_name])
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    model, q, Q = engine.from_mujoco(m), np.zeros(0), np.zeros((2, 0))
    assert m.nv == 0 and d.efc_J.size == 0
    on = lambda f, *args, **kwargs: run(backend, f, *args, **kwargs)          # noqa: E731
    batch = on(constraints.forward_dynamics, model, Q, Q, Q)
    assert batch.qacc.shape == (2, 0) and len(batch.rows) == len(batch.efc_force) == 2
    for r in [on(constraints.rows, model, q, q)] + list(batch.rows):
        assert r.J.shape == (d.nefc, 0) and r.aref.shape == (d.nefc,) and len(r.contact_dim) == d.ncon
    for result in (on(constraints.forward_dynamics, model, q, q, q), on(constraints.inverse_dynamics, model, q, q, q)):
        assert result.qfrc_constraint.shape == (0,) and result.efc_force.shape == (d.nefc,)
        assert result.rows.J.shape == (d.nefc, 0)
    assert len(on(collision.detect, model, q).dist) == d.ncon
    assert [x.shape for x in on(integrators.step, model, q, q, constraints=True)] == [(0,), (0,)]
    assert on(integrators.simulate, model, q, q, steps=3, constraints=True).q.shape == (4, 0)
    assert on(integrators.rollout, model, Q, Q, steps=3, constraints=True).q.shape == (2, 4, 0)
    for integrator in ("euler", "implicit", "implicitfast", "rk4", "discrete"):
        A, B = on(derivatives.step_derivatives, model, q, q, integrator=integrator, constraints=True)
        assert A.shape == (0, 0) and B.shape == (0, 0), integrator


@pytest.mark.parametrize("backend", ["native", "numpy"])
@pytest.mark.parametrize("solver", ["Newton", "PGS", "CG"])
@pytest.mark.parametrize("noslip", [0, 5])
def test_a_state_without_rows_runs_no_solver_as_mujoco(solver, noslip, backend):
    """A sphere in the air above a plane on a hinged arm (no contact, no limit: nefc = 0): mj_forward's qacc (= its
    qacc_smooth) within 1e-12, its solver_niter (no iteration, noslip's neither) and no force, from a warm start."""
    m = mujoco.MjModel.from_xml_string(
        f'<mujoco><option solver="{solver}" noslip_iterations="{noslip}"/><worldbody><geom type="plane" size="1 1 .1"/>'
        '<body pos="0 0 1"><joint type="hinge" axis="0 1 0" damping=".1"/><geom type="capsule" fromto="0 0 0 .3 0 0" '
        'size=".03"/><body pos=".3 0 0"><joint type="ball"/><geom type="sphere" size=".1" pos=".1 0 0"/></body></body>'
        '</worldbody></mujoco>')
    d = mujoco.MjData(m)
    d.qvel[:] = np.random.default_rng(0).normal(size=m.nv)
    d.qacc_warmstart[:] = 1.0
    warm = d.qacc_warmstart.copy()
    mujoco.mj_forward(m, d)
    assert d.nefc == 0
    tau = d.qfrc_passive + d.qfrc_actuator + d.qfrc_applied
    res = run(backend, constraints.forward_dynamics, engine.from_mujoco(m), d.qpos, d.qvel, tau,
              collision.from_mujoco(m, d), qacc_warmstart=warm)
    assert_close(res.qacc, d.qacc, 1e-12, what="qacc without rows")
    assert res.iterations == d.solver_niter[0] == 0 and res.efc_force.shape == d.efc_force.shape == (0,)


def islands_scene(scene: str, solver: str, noslip: int = 0):
    """(m, d): three tilted free bodies apart on a plane (elliptic cones; each touching it: one island each) or two
    hinged arms against their limits (two trees, one island each), under `solver` with `noslip` sweeps, moving."""
    if scene == "bodies":
        bodies = "".join(f'<body pos="{x} {y} .12" euler="{10 * k} {20 * k} 0"><freejoint/>'
                         f'<geom type="{g}" size=".1 .08 .06" mass="{1 + k}"/></body>'
                         for k, (x, y, g) in enumerate([(0, 0, "box"), (.6, .1, "sphere"), (-.5, .4, "capsule")]))
        world, speed = f'<geom type="plane" size="5 5 .1"/>{bodies}', 2.0
    else:
        arm = lambda x: (f'<body pos="{x} 0 .6"><joint type="hinge" axis="0 1 0" limited="true" range="-30 30"/>'  # noqa: E731
                         '<geom type="capsule" fromto="0 0 0 .3 0 0" size=".03"/><body pos=".3 0 0"><joint type="hinge" '
                         'axis="0 1 0" limited="true" range="-20 20"/><geom type="capsule" fromto="0 0 0 .3 0 0" size=".03"/>'
                         '</body></body>')
        world, speed = arm(0) + arm(1), 4.0
    cone = "elliptic" if scene == "bodies" else "pyramidal"
    m = mujoco.MjModel.from_xml_string(f'<mujoco><option solver="{solver}" cone="{cone}" noslip_iterations="{noslip}"/>'
                                       f'<worldbody>{world}</worldbody></mujoco>')
    d = mujoco.MjData(m)
    d.qvel[:] = speed * np.random.default_rng(0).normal(size=m.nv)
    return m, d


ISLAND_CASES = [("bodies", "Newton", 0), ("bodies", "PGS", 0), ("bodies", "CG", 0), ("bodies", "Newton", 10),
                ("arms", "Newton", 0), ("arms", "PGS", 0), ("arms", "CG", 0)]


@pytest.mark.parametrize("backend", ["numpy", "native"])
@pytest.mark.parametrize("tolerance", [1e-15, 1e-8])
@pytest.mark.parametrize("scene, solver, noslip", ISLAND_CASES)
def test_islands_solved_apart_follow_mj_step(scene, solver, noslip, tolerance, backend):
    """MuJoCo 4 solves each constraint island by itself (its own iterations, scale 1 / trace(M_island) and stopping
    test; mj_island, mj_fwdConstraint): 100 steps of simulate(constraints=True) within 1e-10 of mj_step in q, with
    islands (on by default) and with mjDSBL_ISLAND (one problem): 1.8e-15 seen. Solved as one problem, the islands
    drifted at tolerance 1e-8 by 2.3e-8 (bodies, Newton), 5.8e-8 (PGS), 1.5e-6 (CG), 4.1e-7 (Newton and noslip), 3.5e-8
    (arms, PGS), 4.5e-8 (arms, CG); the arms under Newton converge in one step either way."""
    for flags in (0, mujoco.mjtDisableBit.mjDSBL_ISLAND):
        m, d = islands_scene(scene, solver, noslip)
        m.opt.tolerance, m.opt.disableflags = tolerance, m.opt.disableflags | flags
        assert drift_from_mj_step(m, d, backend) < 1e-10, flags


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_a_contact_row_no_dof_moves_follows_mj_step(backend):
    """A sphere on a slide along x resting on a plane, condim 1 (Gymnasium's Pusher has such contacts): the contact's
    one row has a zero Jacobian; its island is the sphere's tree all the same (MuJoCo's treeIterInit takes a contact's
    trees from its geoms' bodies); 100 steps of simulate within 1e-12 of mj_step (the compiled engine once crashed
    here, putting that row into an island 0 that did not exist)."""
    m = mujoco.MjModel.from_xml_string("""<mujoco><default><geom condim="1"/></default><worldbody>
      <geom type="plane" size="1 1 0.1"/><body pos="0 0 0.049"><joint type="slide" axis="1 0 0"/>
      <geom type="sphere" size="0.05"/></body></worldbody></mujoco>""")
    d = mujoco.MjData(m)
    d.qvel[0] = 0.1
    mujoco.mj_forward(m, d)
    assert d.ncon == 1 and d.nefc == 1 and not d.efc_J[:m.nv].any()
    assert drift_from_mj_step(m, d, backend) < 1e-12


def weight_on_a_slider(cone: str):
    """(m, d): a damped box on a slide along x, moving, under a ball on a slide along z that weighs on it: the contact's
    normal row has no entry on the box's slide and its friction rows none on the ball's, yet it joins the two trees."""
    m = mujoco.MjModel.from_xml_string(f"""<mujoco><option cone="{cone}"/><worldbody>
      <body pos="0 0 0.1"><joint type="slide" axis="1 0 0" damping="0.2"/><geom type="box" size="0.3 0.3 0.1"/></body>
      <body pos="0 0 0.3"><joint type="slide" axis="0 0 1"/><geom type="sphere" size="0.1" mass="3"/></body>
    </worldbody></mujoco>""")
    d = mujoco.MjData(m)
    d.qvel[0] = 0.5
    return m, d


@pytest.mark.parametrize("backend", ["numpy", "native"])
@pytest.mark.parametrize("cone", ["elliptic", "pyramidal"])
def test_a_contact_joins_its_bodies_trees_whatever_its_jacobian(cone, backend):
    """MuJoCo 4 puts a contact's rows in the island of its geoms' bodies' trees, not of its Jacobian's nonzero columns
    (engine_island.c treeIterInit): along 100 steps of mj_step physai's partition gives MuJoCo's efc_island and
    dof_island (one island of both slides while the ball bounces on the box), and simulate follows mj_step within 1e-12
    in q. Taking the trees from the first row's Jacobian left the box's slide out of the island and its friction
    unsolved: 1.1e-6 off in q."""
    from physai.engine import island
    m, d = weight_on_a_slider(cone)
    model, joined = engine.from_mujoco(m), 0
    for _ in range(100):
        mujoco.mj_step(m, d)
        mujoco.mj_forward(m, d)
        rows = constraints.rows(model, d.qpos, d.qvel, collision.from_mujoco(m, d))
        efc_island, dof_island = np.full(rows.nefc, -1), np.full(m.nv, -1)
        for k, part in enumerate(island.partition(model, rows)):
            efc_island[part.rows], dof_island[part.dofs] = k, k
        np.testing.assert_array_equal(efc_island, d.efc_island[:d.nefc])
        np.testing.assert_array_equal(dof_island, d.dof_island)
        joined += int(d.nisland == 1 and (d.dof_island == 0).all())
    assert joined >= 10, joined
    assert drift_from_mj_step(*weight_on_a_slider(cone), backend) < 1e-12


@pytest.mark.parametrize("scene", ["bodies", "arms"])
def test_island_partition_is_mujocos(scene):
    """physai.engine.island.partition gives MuJoCo's islands (mj_island) along 100 steps of mj_step: the island of every
    row (d.efc_island) and of every dof (d.dof_island, -1: in none), in MuJoCo's numbering (two islands seen)."""
    from physai.engine import island
    m, d = islands_scene(scene, "Newton")
    model, seen = engine.from_mujoco(m), set()
    for _ in range(100):
        mujoco.mj_step(m, d)
        mujoco.mj_forward(m, d)
        rows = constraints.rows(model, d.qpos, d.qvel, collision.from_mujoco(m, d), eq_active=d.eq_active.astype(bool))
        efc_island, dof_island = np.full(rows.nefc, -1), np.full(m.nv, -1)
        for k, part in enumerate(island.partition(model, rows)):
            efc_island[part.rows], dof_island[part.dofs] = k, k
        assert rows.nefc == d.nefc
        np.testing.assert_array_equal(efc_island, d.efc_island[:d.nefc])
        np.testing.assert_array_equal(dof_island, d.dof_island)
        seen.add(int(d.nisland))
    assert max(seen) >= 2, seen


@pytest.mark.parametrize("backend", ["numpy", "native"])
@pytest.mark.parametrize("solver", ["Newton", "PGS", "CG"])
def test_island_statistics_are_the_largest_islands(solver, backend):
    """forward_dynamics with islands, warm-started as mj_forward is, along 60 steps of the three bodies: qacc and
    efc_force within 1e-12 of MuJoCo's, iterations the largest of MuJoCo's per-island solver_niter (two islands seen)."""
    m, d = islands_scene("bodies", solver)
    model, seen = engine.from_mujoco(m), set()
    for _ in range(60):
        mujoco.mj_step(m, d)
        warm = d.qacc_warmstart.copy()
        mujoco.mj_forward(m, d)
        tau = d.qfrc_passive + d.qfrc_actuator + d.qfrc_applied
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            res = run(backend, constraints.forward_dynamics, model, d.qpos, d.qvel, tau, collision.from_mujoco(m, d),
                      qacc_warmstart=warm)
        assert_close(res.qacc, d.qacc, 1e-12, what="qacc")
        assert_close(res.efc_force, d.efc_force, 1e-12, what="efc_force")
        assert res.iterations == max(d.solver_niter[:max(1, d.nisland)]), (res.iterations, d.solver_niter[:3])
        seen.add(int(d.nisland))
    assert max(seen) >= 2, seen

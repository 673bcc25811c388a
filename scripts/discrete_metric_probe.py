"""MuJoCo 4's discrete step measured as a map, beside physai's: a black-box probe (MuJoCo's discrete source is not public).

Under integrator="discrete" mj_forward's qacc is the step map a = (v+ - v) / h, affine in qfrc_applied when the solve is
exact: a(f_app) = M^^-1 (rhs + f_app). Differencing qacc against unit qfrc_applied on each dof gives MuJoCo's effective
inverse metric; its inverse and M^ a0 are compared entry by entry with physai's M + h B + h^2 K and f - h K qd
(engine.forward.discrete_metric_terms). The affinity check (the differences at forces of 1 and 100) shows where MuJoCo
solves iteratively to opt.tolerance (the metric's tendon and actuator terms, even without rows). --solver PGS probes the
PGS step (its metric the factored part alone: physai's discrete_metric_terms follows the model's solver). With rows and
noslip, MuJoCo's efc_AR - R (its noslip Delassus matrix) is compared with J X^-1 J^T for physai's noslip_metric X, M^ and
the factored part.

    uv run python scripts/discrete_metric_probe.py MODEL.xml [--seed 0] [--tolerance 1e-15] [--solver PGS] [--noslip 5]
"""

import argparse

import mujoco
import numpy as np

from physai import engine
from physai.engine import forward
from physai.engine.data import StepInputs


def qacc(m: mujoco.MjModel, q, qd, ctrl, applied) -> np.ndarray:
    """MuJoCo's discrete step map (nv,) at (q, qd, ctrl) with qfrc_applied."""
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:], d.ctrl[:], d.qfrc_applied[:] = q, qd, ctrl, applied
    mujoco.mj_forward(m, d)
    return d.qacc.copy()


def inverse_metric(m, q, qd, ctrl, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """(MuJoCo's M^^-1 (nv, nv) from forces of `scale` on each dof, a0 (nv,))."""
    a0 = qacc(m, q, qd, ctrl, np.zeros(m.nv))
    return np.stack([(qacc(m, q, qd, ctrl, scale * e) - a0) / scale for e in np.eye(m.nv)], axis=1), a0


def physai_metric(m, q, qd, ctrl) -> tuple[np.ndarray, np.ndarray]:
    """(physai's M + h B + h^2 K, f - h K qd) at (q, qd, ctrl): the free bodies' implicitfast blocks aside."""
    model = engine.from_mujoco(m)
    run = forward.DynamicsEvaluator(model, m.opt.timestep, StepInputs(model.actuators, ctrl if m.nu else None, None, None))
    M, f, _ = run.evaluate(q, qd, energy=False)
    metric = run.discrete_step_metric(q, qd, M)
    return metric.M_hat, f - m.opt.timestep * metric.K @ qd


def delassus_check(m: mujoco.MjModel, q, qd, ctrl) -> None:
    """Print |MuJoCo's efc_AR - diag(R) - J X^-1 J^T| for X physai's noslip_metric, M^ and M^'s factored part, when
    mj_forward at (q, qd, ctrl) has rows and computes efc_AR (PGS or noslip)."""
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:], d.ctrl[:] = q, qd, ctrl
    mujoco.mj_forward(m, d)
    if not d.nefc or not (m.opt.noslip_iterations or m.opt.solver == mujoco.mjtSolver.mjSOL_PGS):
        return
    J, AR = np.zeros((d.nefc, m.nv)), np.zeros((d.nefc, d.nefc))
    if mujoco.mj_isSparse(m):
        mujoco.mju_sparse2dense(J, d.efc_J, d.efc_J_rownnz, d.efc_J_rowadr, d.efc_J_colind)
        mujoco.mju_sparse2dense(AR, d.efc_AR, d.efc_AR_rownnz, d.efc_AR_rowadr, d.efc_AR_colind)
    else:
        J, AR = d.efc_J.reshape(d.nefc, m.nv), d.efc_AR.reshape(d.nefc, d.nefc)
    model = engine.from_mujoco(m)
    run = forward.DynamicsEvaluator(model, m.opt.timestep, StepInputs(model.actuators, ctrl if m.nu else None, None, None))
    M, _, _ = run.evaluate(q, qd, energy=False)
    h = m.opt.timestep
    M_hat = run.discrete_step_metric(q, qd, M).M_hat
    factored = M + h * -forward.passive_velocity_derivative(model, q, qd, tendon_dampers=False) + h * h * np.diag(
        forward.discrete_stiffness(model))
    X = forward.noslip_metric(model, q, qd, h, M, M_hat)
    A = AR - np.diag(d.efc_R)
    for name, metric in (("noslip_metric", M_hat if X is None else X), ("M^", M_hat), ("factored part", factored)):
        print(f"|efc_AR - R - J X^-1 J^T| with X {name}: {np.abs(A - J @ np.linalg.solve(metric, J.T)).max():.3g}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tolerance", type=float, default=None, help="opt.tolerance (default: the model's)")
    parser.add_argument("--ctrl", type=float, default=None, help="every ctrl (default: uniform in [-1, 1] by the seed)")
    parser.add_argument("--solver", choices=("Newton", "CG", "PGS"), default=None, help="opt.solver (default: the model's)")
    parser.add_argument("--noslip", type=int, default=None, help="opt.noslip_iterations (default: the model's)")
    args = parser.parse_args()
    m = mujoco.MjModel.from_xml_path(args.model)
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_DISCRETE
    if args.solver is not None:
        m.opt.solver = getattr(mujoco.mjtSolver, f"mjSOL_{args.solver.upper()}")
    if args.noslip is not None:
        m.opt.noslip_iterations = args.noslip
    if args.tolerance is not None:
        m.opt.tolerance = args.tolerance
    q, qd = (x[0] for x in engine.random_states(engine.from_mujoco(m), 1, args.seed, qd_max=2.0))
    ctrl = np.random.default_rng(args.seed).uniform(-1, 1, m.nu) if args.ctrl is None else np.full(m.nu, args.ctrl)
    Minv, a0 = inverse_metric(m, q, qd, ctrl, 1.0)
    Minv_big, _ = inverse_metric(m, q, qd, ctrl, 100.0)
    M_mj = np.linalg.inv(Minv)
    M_pa, rhs_pa = physai_metric(m, q, qd, ctrl)
    np.set_printoptions(precision=3, linewidth=200)
    print(f"tolerance {m.opt.tolerance:g}, h {m.opt.timestep:g}, nv {m.nv}")
    print(f"affine in qfrc_applied: |M^-1(forces 1) - M^-1(forces 100)| = {np.abs(Minv - Minv_big).max():.3g} "
          f"(of {np.abs(Minv).max():.3g})")
    print(f"|M^ MuJoCo - physai| = {np.abs(M_mj - M_pa).max():.3g}; |M^ a0 - rhs physai| = "
          f"{np.abs(M_mj @ a0 - rhs_pa).max():.3g} (a standalone free body's block differs by its h dc/dqd)")
    print("M^ MuJoCo - physai:\n", M_mj - M_pa)
    delassus_check(m, q, qd, ctrl)


if __name__ == "__main__":
    main()

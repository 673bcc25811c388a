"""MuJoCo 4's discrete step measured as a map, beside physai's: a black-box probe (MuJoCo's discrete source is not public).

Under integrator="discrete" mj_forward's qacc is the step map a = (v+ - v) / h, affine in qfrc_applied when the solve is
exact: a(f_app) = M^^-1 (rhs + f_app). Differencing qacc against unit qfrc_applied on each dof gives MuJoCo's effective
inverse metric; its inverse and M^ a0 are compared entry by entry with physai's M + h B + h^2 K and f - h K qd
(engine.forward.discrete_metric_parts). The affinity check (the differences at forces of 1 and 100) shows where MuJoCo
solves iteratively to opt.tolerance (the metric's tendon and actuator terms, even without rows).

    uv run python scripts/discrete_metric_probe.py MODEL.xml [--seed 0] [--tolerance 1e-15]
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
    M, f, _ = run.evaluate(q, qd)
    B, K, _ = run.discrete_metric(q, qd)
    h = m.opt.timestep
    return M + h * B + h * h * K, f - h * K @ qd


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tolerance", type=float, default=None, help="opt.tolerance (default: the model's)")
    parser.add_argument("--ctrl", type=float, default=None, help="every ctrl (default: uniform in [-1, 1] by the seed)")
    args = parser.parse_args()
    m = mujoco.MjModel.from_xml_path(args.model)
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_DISCRETE
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


if __name__ == "__main__":
    main()

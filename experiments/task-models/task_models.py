"""The models people train on: each MJCF file of Gymnasium's MuJoCo tasks and dm_control's suite that MuJoCo
compiles, run by physai beside mj_step (issue 36's survey).

For each model: physai.engine.from_mujoco, then 100 steps of integrators.simulate(..., constraints=True) from its
first keyframe (or qpos0) under a constant control 0.3 of the way through each actuator's ctrlrange (0.3 where the
control is unlimited), with the model's own integrator, timestep and options, and the solver's tolerance 1e-15
(iterations 1000) on both sides. The outcome is either "matches", with the largest |q - mj_step's q| over the run
printed as the bound it stays under, or "refused", with the UnsupportedModelError's message (the missing feature).
A run that leaves mj_step's is a "mismatch"; its line says whether mj_step's own run leaves itself as far when its
starting velocity moves by PERTURBATION (a chaotic run, which no code but MuJoCo's own, bit for bit, can follow).

    uv run python experiments/task-models/task_models.py        (prints the table and writes output.txt beside this file)

The files come from the installed gymnasium and dm_control packages (the project's dev group). The table is the same
on every machine: errors are printed as one of two fixed bounds, TIGHT or MATCH (their digits depend on the CPU);
tests/test_task_models.py runs the same survey and holds the refusals to its EXPECTED_REFUSED.
"""

from pathlib import Path

import dm_control
import gymnasium
import mujoco
import numpy as np

from physai import engine, integrators
from physai.exceptions import UnsupportedModelError

HERE = Path(__file__).resolve().parent
STEPS = 100
TOLERANCE = 1e-15                    # the solver's, both sides (MuJoCo's iterations raised to 1000 with it)
CTRL_FRACTION = 0.3                  # the constant control: this far through each ctrlrange
MATCH = 1e-8                         # [rad or m] issue 36: q within this of mj_step's over the run
#: Printed bounds on max |dq|: the smallest of these above 10 times the value.
TIGHT = 1e-10                        # [rad or m] a match far inside MATCH, with room for other BLAS and SIMD kernels
PERTURBATION = 1e-15                 # [rad/s or m/s] added to every entry of qvel0 to test mj_step's own sensitivity


def task_files() -> dict[str, Path]:
    """The MJCF files of Gymnasium's MuJoCo tasks and dm_control's suite that MuJoCo compiles as models (shared
    include files do not), by name "gymnasium/ant", "dm_control/cheetah", ..."""
    folders = {"gymnasium": Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets",
               "dm_control": Path(dm_control.__file__).parent / "suite"}
    files = {}
    for package, folder in folders.items():
        for path in sorted(folder.glob("*.xml")):
            try:
                mujoco.MjModel.from_xml_path(str(path))
            except ValueError:                      # not a model on its own (an include file)
                continue
            files[f"{package}/{path.stem}"] = path
    return files


def load(path: Path) -> mujoco.MjModel:
    """The model at `path` with the solver's tolerance TOLERANCE (and at least 1000 iterations)."""
    m = mujoco.MjModel.from_xml_path(str(path))
    m.opt.tolerance, m.opt.iterations = TOLERANCE, max(1000, int(m.opt.iterations))
    return m


def start(m: mujoco.MjModel):
    """(q0 (nq,), qd0 (nv,), ctrl (nu,)): the first keyframe's state (or qpos0, at rest) and the constant control."""
    d = mujoco.MjData(m)
    if m.nkey:
        mujoco.mj_resetDataKeyframe(m, d, 0)
    lo, hi = m.actuator_ctrlrange.T
    ctrl = np.where(m.actuator_ctrllimited.astype(bool), lo + CTRL_FRACTION * (hi - lo), CTRL_FRACTION)
    return d.qpos.copy(), d.qvel.copy(), ctrl


def mujoco_run(m: mujoco.MjModel, q0, qd0, ctrl, steps: int = STEPS) -> np.ndarray:
    """q after each of `steps` mj_steps under the constant ctrl, (steps, nq)."""
    d = mujoco.MjData(m)
    if m.nkey:
        mujoco.mj_resetDataKeyframe(m, d, 0)
    d.qpos[:], d.qvel[:], d.ctrl[:] = q0, qd0, ctrl
    Q = np.empty((steps, m.nq))
    for k in range(steps):
        mujoco.mj_step(m, d)
        Q[k] = d.qpos
    return Q


def mujoco_sensitivity(m: mujoco.MjModel, q0, qd0, ctrl, Q: np.ndarray) -> float:
    """max |Q - Q'| [rad or m], Q (steps, nq) mj_step's run from (q0, qd0) (mujoco_run) and Q' its run from
    qd0 + PERTURBATION: how far mj_step's own run leaves itself when its starting velocity moves by a few ulps."""
    return float(np.abs(mujoco_run(m, q0, qd0 + PERTURBATION, ctrl, len(Q)) - Q).max())


def survey(path: Path, steps: int = STEPS) -> tuple[int, int, str, float | str]:
    """(nq, nv, outcome, detail) for the model at `path` on the current engine backend over `steps` steps: ("matches",
    max |dq| over the run) or ("refused", the UnsupportedModelError's message). A run that differs from mj_step by MATCH or more
    is ("mismatch", (max |dq|, mujoco_sensitivity)); any other exception propagates."""
    m = load(path)
    q0, qd0, ctrl = start(m)
    try:
        model = engine.from_mujoco(m)
        run = integrators.simulate(model, q0, qd0, steps=steps, ctrl=ctrl if m.nu else None, constraints=True,
                                   energy=False, act=m.key_act[0] if m.nkey and m.na else None)
    except UnsupportedModelError as error:
        return m.nq, m.nv, "refused", str(error)
    Q = mujoco_run(m, q0, qd0, ctrl, steps)
    dq = float(np.abs(run.q[1:] - Q).max()) if m.nq else 0.0
    if dq < MATCH:
        return m.nq, m.nv, "matches", dq
    return m.nq, m.nv, "mismatch", (dq, mujoco_sensitivity(m, q0, qd0, ctrl, Q))


def printed_bound(dq: float) -> str:
    """max |dq| as a bound that holds on every machine: '< 1e-10' (TIGHT) when 10 times it is below, else MATCH's."""
    return f"< {TIGHT if 10 * dq < TIGHT else MATCH:.0e}".replace("e-0", "e-")


def feature(refusal: str) -> str:
    """The part of a refusal that names the missing feature (without its examples and the way around it)."""
    return refusal.split(", e.g.")[0].split("; physai")[0]


def mismatch(detail: tuple[float, float]) -> str:
    """A mismatch's text: not within MATCH, and whether mj_step's own run, its qvel0 moved by PERTURBATION, is."""
    own = "neither is" if detail[1] >= MATCH else "but"
    exponent = round(np.log10(PERTURBATION))          # printed as a power of ten: an input, not a residual
    return (f"not within {MATCH:.0e}".replace("e-0", "e-") + f"; {own} mj_step's own run from qvel0 + 10^{exponent}"
            + ("" if detail[1] >= MATCH else " is"))


def row(name: str, nq: int, nv: int, outcome: str, detail) -> str:
    """One line of the table."""
    text = {"matches": printed_bound, "refused": feature, "mismatch": mismatch}[outcome](detail)
    return f"{name:<36} {nq:>3} {nv:>3}  {outcome:<8}  {text}"


def main() -> list[str]:
    lines = [f"{'model':<36} {'nq':>3} {'nv':>3}  outcome   max |q - mj_step's q| over {STEPS} steps, or the refusal"]
    counts = {}
    for name, path in task_files().items():
        nq, nv, outcome, detail = survey(path)
        counts[outcome] = counts.get(outcome, 0) + 1
        lines.append(row(name, nq, nv, outcome, detail))
    lines.append(", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items())) + f" of {len(lines) - 1}")
    return lines


if __name__ == "__main__":
    text = "\n".join(main()) + "\n"
    print(text, end="")
    (HERE / "output.txt").write_text(text, encoding="utf-8", newline="\n")

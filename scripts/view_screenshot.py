"""Make the screenshot of `physai view` for the docs: the G1 on its floor under half its standing controls, sinking,
its contacts recorded, shown at one moment with the contact forces drawn and the plot of their sum.

    uv run python scripts/view_screenshot.py [--out docs/view_g1.png] [--seconds 0.6] [--frame 0.4]

Runs physai (integrators.simulate, recording.record), saves the run, then renders it with
`physai view - RUN.npz --frame T --out PNG` (Debian's headless Chromium through Playwright).
"""

import argparse
import dataclasses
import tempfile
from pathlib import Path

import mujoco

from physai import engine, integrators, models, recording
from physai.cli import main as physai

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "view_g1.png")
    parser.add_argument("--seconds", type=float, default=0.6, help="simulated time [s]")
    parser.add_argument("--frame", default="0.4", help="the moment shown [s]")
    args = parser.parse_args()
    m = models.load("unitree_g1", "scene")
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    model = engine.from_mujoco(m)                                # every geom pair collided, meshes too
    steps = round(args.seconds / m.opt.timestep)
    run = integrators.simulate(model, d.qpos, d.qvel, steps=steps, ctrl=0.5 * d.ctrl)
    run = recording.record(model, run, ctrl=0.5 * d.ctrl)              # contacts, their forces, actuator forces
    run = dataclasses.replace(run, model=str(models.model_path("unitree_g1", "scene")))
    with tempfile.TemporaryDirectory() as folder:
        run.save(Path(folder) / "g1.npz")
        return physai(["view", "-", str(Path(folder) / "g1.npz"), "--frame", args.frame, "--out", str(args.out),
                       "--size", "1280x720", "--plot", "contact force, sum of |f| [N]"])


if __name__ == "__main__":
    raise SystemExit(main())

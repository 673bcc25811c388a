"""Scale: a pile of free spheres in a box, physai.integrators.simulate beside mj_step, time and peak memory per step.

    uv run python benchmarks/bench_scale.py                    # 400 and 800 spheres, 10 steps
    uv run python benchmarks/bench_scale.py --spheres 400 --steps 20

The pile: N spheres (radius 5 cm, each on a free joint: nv = 6 N) stacked in a square lattice of layers inside four
walls on a floor (planes), neighbours overlapping by 1% of the radius, so that every sphere touches its neighbours from
the first step (as in a settled pile) and the pile collapses under gravity; MuJoCo's defaults otherwise (Euler, Newton,
pyramidal cones, islands). Both engines run the same steps from rest; physai's states are checked against mj_step's
(every q within 1e-8) or the script stops.

Each engine runs in its own subprocess (python -c, this file's worker), so that its peak memory is its own: memory is
the growth of the process's peak resident set (resource.getrusage ru_maxrss) from after the MjModel (and physai's
Model) are built to after the run, which counts MjData (made after the baseline) and every workspace physai allocates
in its run; tracemalloc would miss both engines' C and C++ allocations. Time: milliseconds per step, wall clock, one
run (no best of several: the runs are long); one physai step (the compiled backend's first call) is run before and not
timed (its memory counted). Ratios: physai / MuJoCo (below 1: physai is cheaper).
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

CHECK = 1e-8                         # [m or 1] physai's q within this of mj_step's at every step
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from scenes import sphere_pile as pile_xml  # noqa: E402  (the tests' pile: the scene the scale test runs)


def worker(engine_name: str, spheres: int, steps: int, out: str) -> None:
    """One engine's run in this process: ms per step, peak-memory growth (MiB), q after every step, ncon, nefc."""
    import resource
    import time

    import mujoco

    from physai import engine, integrators
    m = mujoco.MjModel.from_xml_string(pile_xml(spheres))
    model = engine.from_mujoco(m) if engine_name == "physai" else None
    q0, qd0 = m.qpos0.copy(), np.zeros(m.nv)
    Q = np.empty((steps, m.nq))
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if model is not None:                              # the first call (the backend's setup) untimed
        integrators.simulate(model, q0, qd0, m.opt.timestep, 1, "euler", constraints=True, energy=False)
    t = time.perf_counter()
    if model is None:
        d = mujoco.MjData(m)
        for k in range(steps):
            mujoco.mj_step(m, d)
            Q[k] = d.qpos
        ncon, nefc = d.ncon, d.nefc
    else:
        run = integrators.simulate(model, q0, qd0, m.opt.timestep, steps, "euler", constraints=True, energy=False)
        Q[:], ncon, nefc = run.q[1:], int(run.ncon[-1]), -1
    seconds = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    np.save(out, Q)
    print(json.dumps({"ms": seconds / steps * 1e3, "mib": (peak - base) / 1024, "ncon": int(ncon), "nefc": int(nefc)}))


def run(engine_name: str, spheres: int, steps: int, folder: str) -> tuple[dict, np.ndarray]:
    out = os.path.join(folder, f"{engine_name}.npy")
    code = (f"import sys; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r}); import bench_scale; "
            f"bench_scale.worker({engine_name!r}, {spheres}, {steps}, {out!r})")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1]), np.load(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spheres", type=int, nargs="+", default=[400, 800])
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    import mujoco

    from physai.engine import native
    print(f"{platform.machine()}, {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.2f}; mujoco "
          f"{mujoco.__version__}; physai backend: {native.describe()}; {args.steps} steps from rest")
    print("ms per step; MiB: growth of peak RSS (ru_maxrss) over the run, MjData included; ratio = physai / MuJoCo")
    print(f"{'spheres':>7} {'nv':>5} {'ncon':>5} {'nefc':>5} {'physai ms':>10} {'mj_step ms':>10} {'ratio':>6} "
          f"{'physai MiB':>10} {'mj MiB':>7} {'ratio':>6} {'max|dq|':>8}")
    for spheres in args.spheres:
        with tempfile.TemporaryDirectory() as folder:
            mine, Q = run("physai", spheres, args.steps, folder)
            theirs, reference = run("mujoco", spheres, args.steps, folder)
        error = float(np.abs(Q - reference).max())
        print(f"{spheres:>7} {6 * spheres:>5} {theirs['ncon']:>5} {theirs['nefc']:>5} {mine['ms']:>10.1f} "
              f"{theirs['ms']:>10.1f} {mine['ms'] / theirs['ms']:>6.2f} {mine['mib']:>10.1f} {theirs['mib']:>7.1f} "
              f"{mine['mib'] / max(theirs['mib'], 1e-3):>6.2f} {error:>8.1e}", flush=True)
        if error > CHECK:
            raise SystemExit(f"{spheres} spheres: physai's run differs from mj_step's by {error:.1e} > {CHECK}")


if __name__ == "__main__":
    main()

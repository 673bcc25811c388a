"""Cold start: a fresh Python process until its first Panda rnea, with and without physai's compiled-model cache.

    uv run python benchmarks/bench_startup.py            # 5 processes per row, best and median wall time

Each row starts new Python processes (sys.executable) one after another and reports the wall time from the
process's start to its exit, and, printed by the process itself, the time for `from physai import engine`, the load
(engine.from_mujoco, which compiles the MJCF or reads the cached .mjb) and the first rnea (which builds the compiled
backend's copy of the model). "no cache" runs with PHYSAI_CACHE_DIR=off (MuJoCo compiles the meshes every time);
"cached" with a fresh cache folder filled by one process before the timed ones. MuJoCo's own row compiles the same
file with mujoco.MjModel.from_xml_path, for scale.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

CHILD = """
import time
t0 = time.perf_counter()
from physai import engine
t1 = time.perf_counter()
import numpy as np
m = engine.from_mujoco("franka_emika_panda")
t2 = time.perf_counter()
engine.rnea(m, m.qpos0, np.zeros(m.nv), np.zeros(m.nv))
t3 = time.perf_counter()
print({"import": t1 - t0, "load": t2 - t1, "rnea": t3 - t2})
"""
MUJOCO = """
import time
t0 = time.perf_counter()
import mujoco
t1 = time.perf_counter()
from physai import models
path = str(models.model_path("franka_emika_panda"))
t2 = time.perf_counter()
mujoco.MjModel.from_xml_path(path)
t3 = time.perf_counter()
print({"import": t1 - t0, "load": t3 - t2, "rnea": 0.0})
"""


def run(code: str, env: dict) -> tuple[float, dict]:
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    wall = time.perf_counter() - start
    return wall, json.loads(out.strip().splitlines()[-1].replace("'", '"'))


def row(label: str, code: str, env: dict, n: int) -> None:
    runs = [run(code, env) for _ in range(n)]
    walls = [w for w, _ in runs]
    parts = {k: min(r[k] for _, r in runs) for k in ("import", "load", "rnea")}
    print(f"{label:<24} {min(walls):>8.3f} {statistics.median(walls):>8.3f}   {parts['import']:>7.3f} {parts['load']:>7.3f} "
          f"{parts['rnea']:>7.4f}")


def main(n: int = 5) -> None:
    base = dict(os.environ)
    print(f"fresh processes until the first Panda rnea; python {sys.version.split()[0]}; {n} processes per row; seconds")
    print(f"{'':<24} {'best':>8} {'median':>8}   {'import':>7} {'load':>7} {'rnea':>7}")
    row("physai, no cache", CHILD, {**base, "PHYSAI_CACHE_DIR": "off"}, n)
    with tempfile.TemporaryDirectory() as cache:
        env = {**base, "PHYSAI_CACHE_DIR": cache}
        run(CHILD, env)                                       # fills the cache
        row("physai, cached", CHILD, env, n)
    row("MuJoCo compile alone", MUJOCO, {**base, "PHYSAI_CACHE_DIR": "off"}, n)


if __name__ == "__main__":
    main()

"""Playback of `physai view`: 10 s of the G1 at 500 Hz (5,000 states, 5,001 with the first) in headless Chromium.

    uv run python benchmarks/bench_view.py                 # 10 s of the G1, its contacts recorded; 4 s of playing
    uv run python benchmarks/bench_view.py --seconds 2 --play 2 --no-contacts

The run: physai's integrators.simulate of the G1 on its floor (Menagerie's scene.xml) from its keyframe, under the
keyframe's controls, with contacts and constraints, then recording.record_contacts (each state's contacts and forces,
drawn as arrows); deterministic. It is served by physai.lab.viewer.make_server and opened in Debian's headless
Chromium through Playwright (physai.lab.chromium, as the tests). Printed:

- the load: the wall time from page.goto to the page's viewer.ready, and the page's own stages (performance.now()
  since navigation: view.json and run.bin (the run) fetched, view.bin (the compiled model) fetched, the first frame
  drawn);
- the playing at 1x, measured in the page over --play seconds: animation frames per second (requestAnimationFrame
  callbacks), frames drawn per second (viewer.frames: each a state posed, its contacts and plot updated, the scene
  rendered), and simulated seconds shown per wall second (1.00 is real time); beside them the browser's CPU time per
  frame drawn (its processes' user and system time from /proc, Linux only: WebGL is rendered in software here, and
  on this shared machine the frames per second follow the load much more than the CPU time does), and the triangles
  drawn playing (the meshes simplified under a software renderer) and paused (as compiled), and the share of the
  canvas' pixels the simplification changes (the same moments drawn both ways).

The targets (issue S): plays at real time (1.00 simulated s per wall s, each animation frame drawn) and loads in under
3 s. There is no peer to compare with: the requirement is printed beside the measurement. No test asserts timings.
"""

import argparse
import dataclasses
import os
import time

import mujoco

from physai import engine, extras, integrators, models, recording
from physai.lab.chromium import chromium_executable
from physai.lab.npm import ensure_node_modules
from physai.lab.server import serving
from physai.lab.viewer import make_server

#: in the page: play at 1x from t = 0 for `seconds` of wall time, counting animation frames and frames drawn
MEASURE = """async (seconds) => {
  viewer.seek(0);
  document.getElementById('speed').value = '1';
  viewer.play();
  const f0 = viewer.frames, s0 = viewer.time(), w0 = performance.now();
  let raf = 0;
  await new Promise((resolve) => {
    const tick = (now) => { raf++; if (now - w0 < 1000 * seconds) requestAnimationFrame(tick); else resolve(); };
    requestAnimationFrame(tick);
  });
  const wall = (performance.now() - w0) / 1000, simulated = viewer.time() - s0, drawn = viewer.frames - f0;
  const triangles = viewer.triangles(), detail = viewer.detail();
  viewer.pause();
  return {wall, raf: raf / wall, drawn: drawn / wall, frames: drawn, speed: simulated / wall, triangles, detail,
          paused: viewer.triangles()};
}"""


def browser_cpu() -> float:
    """The CPU time [s] (user and system) of this process's descendants: the browser's processes (Linux /proc), whose
    GPU process renders WebGL in software here; unlike frames per second, it hardly changes with the machine's load."""
    tick, parents, cpu = os.sysconf("SC_CLK_TCK"), {}, {}
    for pid in (int(d) for d in os.listdir("/proc") if d.isdigit()):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[pid], cpu[pid] = int(fields[1]), (int(fields[11]) + int(fields[12])) / tick
    me, total = os.getpid(), 0.0
    for pid, seconds in cpu.items():
        up = parents[pid]
        while up not in (me, 0, 1) and up in parents:
            up = parents[up]
        total += seconds if up == me else 0.0
    return total


def picture_change(page, level: int, times) -> list[float]:
    """At each of `times` [s], the share of the viewer's canvas pixels [%] whose color (any channel) differs by more
    than 16 of 255 between the meshes as compiled and their simplification `level` (what was drawn while playing);
    [] if none was drawn."""
    import io

    import numpy as np
    from PIL import Image

    def picture(t, k):
        page.evaluate(f"viewer.seek({t}, {k})")
        return np.asarray(Image.open(io.BytesIO(page.locator("#canvas").screenshot())).convert("RGB"), dtype=int)

    return [] if level < 0 else [100 * float((np.abs(picture(t, level) - picture(t, -1)).max(axis=2) > 16).mean())
                                 for t in times]


def g1_run(seconds: float, contacts: bool) -> tuple[integrators.Trajectory, float]:
    """(the G1's run of `seconds` from its keyframe, the wall time physai took to make it [s])."""
    m = models.load("unitree_g1", "scene")
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    model = engine.from_mujoco(m)
    start = time.perf_counter()
    run = integrators.simulate(model, d.qpos, d.qvel, steps=round(seconds / m.opt.timestep), ctrl=d.ctrl)
    if contacts:
        run = recording.record_contacts(model, run, ctrl=d.ctrl)
    made = time.perf_counter() - start
    return dataclasses.replace(run, model=str(models.model_path("unitree_g1", "scene"))), made


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="simulated time of the run [s] (10)")
    parser.add_argument("--play", type=float, default=4.0, help="wall time the page plays while measured [s] (4)")
    parser.add_argument("--no-contacts", action="store_true", help="without recording the contacts")
    parser.add_argument("--size", default="1280x800", help="the page's size in pixels (1280x800)")
    args = parser.parse_args()
    sync_api = extras.require("playwright.sync_api", "lab", "benchmarks/bench_view.py")
    ensure_node_modules()
    run, made = g1_run(args.seconds, not args.no_contacts)
    width, height = (int(x) for x in args.size.split("x"))
    ncontacts = 0 if run.contacts is None else int(run.contacts.start[-1])
    with serving(make_server(run.model, run, 0)) as server, sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(chromium_executable()))
        page = browser.new_page(viewport={"width": width, "height": height})
        start = time.perf_counter()
        page.goto(server.url)
        page.evaluate("window.viewer.ready")
        load = time.perf_counter() - start
        stages = page.evaluate("viewer.timings")
        page.evaluate("viewer.simplify()")              # the simplified meshes, else fetched when first played
        cpu = browser_cpu()
        measured = page.evaluate(MEASURE, args.play)
        cpu = browser_cpu() - cpu
        differ = picture_change(page, measured["detail"]["level"], (0.0, args.seconds / 3, 0.75 * args.seconds))
        version = browser.version
        browser.close()
    print(f"physai view, playback: the G1 (unitree_g1 scene.xml), {args.seconds:g} s at {1 / run.dt:g} Hz = "
          f"{len(run.t)} states, {ncontacts} contacts recorded; made by physai in {made:.1f} s "
          f"({engine.backend}); view.json {len(server.view_json) / 1e3:.0f} kB, run.bin {len(server.run_bin) / 1e6:.1f} MB, "
          f"view.bin {len(server.view_bin) / 1e6:.1f} MB, "
          f"view.lod.bin {len(server.view_lod_bin) / 1e6:.1f} MB")
    print(f"headless Chromium {version} (Debian), {width}x{height}; load average {os.getloadavg()[0]:.2f} "
          f"on {os.cpu_count()} CPUs")
    print(f"load: page.goto -> viewer.ready {load:.2f} s   (target < 3 s)   in the page [s since navigation]: "
          f"the run {stages['json'] / 1e3:.2f}, view.bin (the model) {stages['model'] / 1e3:.2f}, "
          f"first frame {stages['ready'] / 1e3:.2f}")
    print(f"playing at 1x for {measured['wall']:.1f} s: {measured['raf']:.1f} animation frames/s, "
          f"{measured['drawn']:.1f} frames drawn/s, {measured['speed']:.3f} simulated s per wall s   "
          f"(target: real time, 1.00 s/s, every animation frame drawn)")
    print(f"the browser's CPU time while playing: {1e3 * cpu / max(1, measured['frames']):.0f} ms per frame drawn "
          f"(its processes, WebGL in software included; {cpu:.1f} s over {measured['frames']} frames)")
    detail = measured["detail"]
    print(f"triangles drawn: {measured['triangles']} playing (meshes simplified in cubes of {1e3 * detail['cell']:.1f} mm, "
          f"a pixel at the camera's target {1e3 * detail['pixel']:.1f} mm), {measured['paused']} paused (as compiled)")
    if differ:
        print("pixels of the canvas changed by the simplification (> 16 of 255, paused at t = 0, 1/3 and 3/4 of the run): "
              + ", ".join(f"{x:.2f} %" for x in differ))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

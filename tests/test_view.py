"""physai view (physai.lab.viewer, physai.commands.view): the server by the lab server's rules (127.0.0.1 only, the Host
check, the page's and the model's files only, the security headers), a run of another model or a bad file refused by
name, and in Debian's headless Chromium: the page replays the run, scrubbing to a state puts every body where physai's
kinematics.body_poses says, the contact arrows are the state's contacts, and the plot's cursor reads the run."""

import dataclasses
import json
import subprocess
import sys

import numpy as np
import pytest

from physai import engine, integrators, kinematics, models, recording
from physai.cli import main
from physai.exceptions import TrajectoryFileError
from physai.lab.server import serving
from physai.lab.viewer import make_server
from lab.client import request   # tests/lab/: test support
from test_lab import browser     # noqa: F401 (the headless Chromium fixture)


def falling_box(folder, height: float = 0.3):
    """A box dropped from `height` on a floor, 80 steps, its contacts recorded: (its MJCF file in `folder`, model,
    trajectory)."""
    xml = folder / "box.xml"
    xml.write_text("""<mujoco><option timestep="0.004"/><worldbody><light pos="0 0 3"/>
      <geom name="floor" type="plane" size="2 2 0.1"/>
      <body name="box" pos="0 0 0.3" euler="10 20 0"><freejoint/><geom type="box" size="0.1 0.08 0.05" mass="1"/></body>
      </worldbody></mujoco>""")
    model = engine.from_mujoco(models.load(xml))
    q0 = np.r_[0, 0, height, np.array([0.98, 0.08, 0.17, 0.0]) / np.linalg.norm([0.98, 0.08, 0.17, 0.0])]
    run = integrators.simulate(model, q0, np.zeros(6), steps=80)
    return xml, model, dataclasses.replace(recording.record_contacts(model, run), model=str(xml))


def test_the_server_answers_127_0_0_1_only_with_the_labs_rules(tmp_path):
    xml, _, run = falling_box(tmp_path)
    (tmp_path / "secret.txt").write_text("not a model file")
    ghost = falling_box(tmp_path, 0.5)[2]
    with serving(make_server(xml, run, ghost=ghost)) as server:
        assert server.server_address[0] == "127.0.0.1"
        status, headers, body = request(server, "/")
        assert status == 200 and b"view.js" in body and "frame-ancestors 'none'" in headers["Content-Security-Policy"]
        status, _, body = request(server, "/view.json")
        replay = json.loads(body)["run"]
        assert status == 200 and np.array_equal(np.array(replay["q"]), run.q)
        assert replay["contacts"]["start"] == run.contacts.start.tolist()
        assert np.array_equal(np.array(replay["ghost"]["q"]), ghost.q)
        assert request(server, "/model/box.xml")[0] == 200
        assert request(server, "/model/secret.txt")[0] == 404           # only the model's files
        assert request(server, "/view.json", host="evil.example")[0] == 403
        assert request(server, "/view.json", host=None)[0] == 403
        assert request(server, "/model/../secret.txt")[0] == 400
        assert request(server, "/lab.js")[0] == 200                       # the lab's modules the page imports


def test_a_run_of_another_model_or_a_bad_file_is_refused_by_name(tmp_path, capsys):
    xml, _, run = falling_box(tmp_path)
    other = integrators.simulate(engine.from_mujoco(models.load("arm2")), [0.1, 0.2], [0.0, 0.0], steps=3)
    with pytest.raises(TrajectoryFileError, match="another model"):
        make_server(xml, other)
    with pytest.raises(TrajectoryFileError, match="the ghost.*another model"):
        make_server(xml, run, ghost=other)
    with pytest.raises(TrajectoryFileError, match="NaN"):
        make_server(xml, dataclasses.replace(run, qd=np.where(np.arange(6) == 2, np.nan, run.qd)))
    with pytest.raises(TrajectoryFileError, match=r"actuator_force has shape \(81, 2\), the model has nu = 0"):
        make_server(xml, dataclasses.replace(run, actuator_force=np.zeros((81, 2))))
    other.save(tmp_path / "arm2.npz")
    (tmp_path / "text.npz").write_text("hello")
    assert main(["view", str(xml), str(tmp_path / "arm2.npz"), "--no-browser", "--port", "0"]) == 2
    assert "another model" in capsys.readouterr().err
    assert main(["view", str(xml), str(tmp_path / "text.npz"), "--no-browser", "--port", "0"]) == 2
    assert "not a readable NumPy" in capsys.readouterr().err


def test_scrubbing_puts_each_body_where_physai_says(tmp_path, browser):  # noqa: F811 (the fixture)
    """The page at three times: bodies() equals kinematics.body_poses of the state shown (1e-6 m), contacts() the
    number of recorded contacts, cursor() the plotted base height, ghostBodies() the second run's; the slider moves
    the bodies alike; no error."""
    xml, model, run = falling_box(tmp_path)
    ghost = falling_box(tmp_path, 0.5)[2]
    with serving(make_server(xml, run, ghost=ghost)) as server:
        page = browser.new_page()
        problems = []
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.goto(server.url)
        page.wait_for_function("window.viewer && window.viewer.duration !== undefined", timeout=120000)
        frames = page.evaluate("viewer.frames")
        for k in (0, 40, 80):
            shown = page.evaluate(f"viewer.seek({run.t[k]})")
            assert shown == k
            drawn = np.array(page.evaluate("viewer.bodies()"))
            positions, _ = kinematics.body_poses(model, run.q[k])
            assert np.abs(drawn - positions).max() < 1e-6
            ghost_drawn = np.array(page.evaluate("viewer.ghostBodies()"))
            assert np.abs(ghost_drawn - kinematics.body_poses(model, ghost.q[k])[0]).max() < 1e-6
            assert page.evaluate("viewer.contacts()") == run.contacts.start[k + 1] - run.contacts.start[k]
            page.evaluate("viewer.select('base height [m]')")
            assert abs(page.evaluate("viewer.cursor()") - run.q[k, 2]) < 1e-12
        page.eval_on_selector("#slider", "(s) => { s.value = 60; s.dispatchEvent(new Event('input')); }")  # the slider
        assert page.evaluate("viewer.time()") == run.t[60]
        assert np.abs(np.array(page.evaluate("viewer.bodies()")) - kinematics.body_poses(model, run.q[60])[0]).max() < 1e-6
        assert page.evaluate("viewer.frames") > frames and problems == [] and page.evaluate("viewer.errors") == []
        assert run.contacts.start[-1] > run.contacts.start[-2]           # the box has landed at the last state: arrows counted
        page.close()


def test_out_renders_one_moment_to_a_png(tmp_path, browser, capsys):  # noqa: F811 (the fixture: Chromium is here)
    """physai view --frame T --out pic.png (in its own process: Playwright's sync API runs one per process): a PNG of
    the asked size, not blank, at the saved state at or before T; a series the run lacks (--plot) and a video format
    other than GIF are refused by name."""
    from PIL import Image
    xml, _, run = falling_box(tmp_path)
    run.save(tmp_path / "box.npz")
    out = tmp_path / "box.png"
    done = subprocess.run([sys.executable, "-m", "physai.cli", "view", "-", str(tmp_path / "box.npz"), "--frame", "0.3",
                           "--out", str(out), "--size", "400x300"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and f"t = {run.t[int(0.3 / run.dt + 1e-9)]:.4f} s" in done.stdout, done.stderr
    pixels = np.asarray(Image.open(out).convert("RGB"), dtype=float)
    assert pixels.shape == (300, 400, 3) and pixels.std() > 10
    wrong = subprocess.run([sys.executable, "-m", "physai.cli", "view", "-", str(tmp_path / "box.npz"), "--out", str(out),
                            "--plot", "no such"], capture_output=True, text=True, timeout=300)
    assert wrong.returncode == 2 and "no such series; expected one of 'energy [J]', 'base height [m]'" in wrong.stderr
    assert main(["view", "-", str(tmp_path / "box.npz"), "--out", str(tmp_path / "box.mp4")]) == 2
    assert "expected a .png file (one moment) or a .gif file (the run)" in capsys.readouterr().err


def test_out_renders_the_run_to_a_gif(tmp_path, browser, capsys):  # noqa: F811 (the fixture: Chromium is here)
    """physai view --out run.gif --fps F: an animated GIF of floor(duration F) + 1 frames of the asked size, none blank,
    the box falling between the first and the last; an fps outside (0, 100] is refused by name."""
    from PIL import Image, ImageSequence
    _, _, run = falling_box(tmp_path)
    run.save(tmp_path / "box.npz")
    out = tmp_path / "box.gif"
    done = subprocess.run([sys.executable, "-m", "physai.cli", "view", "-", str(tmp_path / "box.npz"), "--out", str(out),
                           "--fps", "10", "--size", "640x400"], capture_output=True, text=True, timeout=600)
    frames = int(np.floor((run.t[-1] - run.t[0]) * 10 + 1e-9)) + 1
    assert done.returncode == 0 and f"{frames} frames" in done.stdout, done.stderr
    with Image.open(out) as gif:
        pixels = [np.asarray(f.convert("RGB"), dtype=float) for f in ImageSequence.Iterator(gif)]
    assert len(pixels) == frames > 1 and all(p.shape == (400, 640, 3) and p.std() > 10 for p in pixels)
    assert np.abs(pixels[0] - pixels[-1]).max() > 50
    assert main(["view", "-", str(tmp_path / "box.npz"), "--out", str(out), "--fps", "0"]) == 2
    assert "--fps 0.0: expected frames per second in (0, 100]" in capsys.readouterr().err


def actuated_box(folder):
    """The box of falling_box carrying an arm on a hinge (a position servo) and a slider on it (a motor), named sites on
    the world, the box and the arm, dropped on the floor for 80 steps under a changing ctrl, its contacts and actuator
    forces recorded (recording.record): (its MJCF file, model, trajectory)."""
    xml = folder / "actuated.xml"
    xml.write_text("""<mujoco><option timestep="0.004"/><worldbody><light pos="0 0 3"/>
      <geom name="floor" type="plane" size="2 2 0.1"/><site name="origin" pos="0.3 0 0"/>
      <body name="box" pos="0 0 0.3" euler="10 20 0"><freejoint/><geom type="box" size="0.1 0.08 0.05" mass="1"/>
        <site name="lid" pos="0 0 0.05" euler="0 0 30"/>
        <body name="arm" pos="0.1 0 0"><joint name="hinge" axis="0 1 0" damping="0.1"/>
          <geom type="capsule" fromto="0 0 0 0.15 0 0" size="0.02" mass="0.1"/><site name="tip" pos="0.15 0 0" euler="40 0 0"/>
          <body name="slider" pos="0.15 0 0"><joint name="slide" type="slide" axis="0 0 1" damping="1"/>
            <geom type="sphere" size="0.03" mass="0.05"/></body></body></body></worldbody>
      <actuator><position name="servo" joint="hinge" kp="5"/><motor name="push" joint="slide"/></actuator></mujoco>""")
    model = engine.from_mujoco(models.load(xml))
    q0 = np.r_[0, 0, 0.3, np.array([0.98, 0.08, 0.17, 0.0]) / np.linalg.norm([0.98, 0.08, 0.17, 0.0]), 0, 0]
    ctrl = np.c_[np.sin(np.arange(80) * 0.1), 0.2 * np.cos(np.arange(80) * 0.07)]
    run = integrators.simulate(model, q0, np.zeros(8), steps=80, ctrl=ctrl)
    return xml, model, dataclasses.replace(recording.record(model, run, ctrl=ctrl), model=str(xml))


def test_actuator_forces_site_frames_and_contact_normals_are_drawn(tmp_path, browser):  # noqa: F811 (the fixture)
    """The page at four times: the plot's actuator series read the recorded actuator forces (cursor(), exactly: the
    numbers travel as JSON), sites() puts each named site's frame where physai's kinematics.frame_poses says (1e-6 m),
    normals() are the recorded contact frames' first rows (1e-6), one per contact; the sites' checkbox hides them."""
    xml, model, run = actuated_box(tmp_path)
    m = models.load(xml)
    names = [m.site(i).name for i in range(m.nsite)]
    with serving(make_server(xml, run)) as server:
        page = browser.new_page()
        problems = []
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.goto(server.url)
        page.wait_for_function("window.viewer && window.viewer.duration !== undefined", timeout=120000)
        series = page.evaluate("viewer.series()")
        assert {"actuator servo force [N m]", "actuator push force [N]"} <= set(series)
        touching = 0
        for k in (0, 30, 55, 80):
            assert page.evaluate(f"viewer.seek({run.t[k]})") == k
            for a, label in enumerate(("actuator servo force [N m]", "actuator push force [N]")):
                assert page.evaluate(f"viewer.select({label!r})")
                assert page.evaluate("viewer.cursor()") == run.actuator_force[k, a]
            drawn = np.array(page.evaluate("viewer.sites()"))
            assert drawn.shape == (3, 3) and np.abs(drawn - kinematics.frame_poses(model, run.q[k], names)[0]).max() < 1e-6
            normals = np.array(page.evaluate("viewer.normals()")).reshape(-1, 3)
            expected = run.contacts.frame[run.contacts.at(k), 0]
            assert normals.shape == expected.shape and page.evaluate("viewer.contacts()") == len(expected)
            assert np.abs(normals - expected).max(initial=0) < 1e-6
            touching += len(expected)
        assert touching > 0 and np.abs(run.actuator_force).max() > 0.1
        page.click("#show-sites")                                       # hidden: no frame drawn
        assert page.evaluate("viewer.sites()") == []
        assert problems == [] and page.evaluate("viewer.errors") == []
        page.close()

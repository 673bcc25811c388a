"""physai view (physai.lab.viewer, physai.commands.view): the server by the lab server's rules (127.0.0.1 only, the Host
check, the page's and the model's files only, the security headers), a run of another model or a bad file refused by
name, and in Debian's headless Chromium: the page replays the run, scrubbing to a state puts every body where physai's
kinematics.body_poses says, the contact arrows are the state's contacts, and the plot's cursor reads the run."""

import dataclasses
import http.server
import json
import re
import subprocess
import sys
import threading
import types

import numpy as np
import pytest

import physai
from physai import engine, integrators, kinematics, models, recording, spatial
from physai.cli import main
from physai.exceptions import TrajectoryFileError
from physai.lab.server import serving
from physai.lab import viewer
from physai.lab.viewer import make_server
from lab.client import request, served_run   # tests/lab/: test support
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
    xml, model, run = falling_box(tmp_path)
    (tmp_path / "secret.txt").write_text("not a model file")
    ghost = falling_box(tmp_path, 0.5)[2]
    with serving(make_server(xml, run, ghost=ghost)) as server:
        assert server.server_address[0] == "127.0.0.1"
        status, headers, body = request(server, "/")
        assert status == 200 and b"view.js" in body and "frame-ancestors 'none'" in headers["Content-Security-Policy"]
        replay = served_run(server)                                       # view.json, its arrays from run.bin
        assert np.array_equal(replay["q"], run.q) and np.array_equal(replay["qd"], run.qd)
        assert np.array_equal(replay["contacts"]["start"], run.contacts.start)
        assert np.array_equal(replay["contacts"]["normal"], run.contacts.frame[:, 0])
        assert np.array_equal(replay["ghost"]["q"], ghost.q) and np.array_equal(replay["ghost"]["t"], ghost.t)
        for served, states in ((replay["poses"], run.q), (replay["ghost"]["poses"], ghost.q)):   # float32 body frames
            pos, rot = kinematics.body_poses(model, states)
            assert served["xpos"].dtype == np.float32 and np.abs(served["xpos"] - pos).max() < 1e-6
            assert np.abs(spatial.quat_to_mat(served["xquat"]) - rot).max() < 1e-6
        assert request(server, "/model/box.xml")[0] == 404              # the page reads no model file: none served
        assert request(server, "/model/secret.txt")[0] == 404
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
    assert main(["view", "-", str(tmp_path / "box.npz"), "--out", str(tmp_path / "box.avi")]) == 2
    assert "expected a .png file (one moment), or a .gif, .mp4 or .webm file (the run)" in capsys.readouterr().err


@pytest.mark.parametrize("suffix", [".mp4", ".webm"])
def test_out_renders_the_run_to_a_video(tmp_path, browser, suffix):  # noqa: F811 (the fixture: Chromium is here)
    """physai view --out run.mp4 | run.webm --fps F: a video of floor(duration F) + 1 frames at F frames/s (read back
    by the same ffmpeg), of the asked size, none blank, the box falling between the first and the last."""
    import imageio_ffmpeg
    _, _, run = falling_box(tmp_path)
    run.save(tmp_path / "box.npz")
    out = tmp_path / f"box{suffix}"
    done = subprocess.run([sys.executable, "-m", "physai.cli", "view", "-", str(tmp_path / "box.npz"), "--out", str(out),
                           "--fps", "10", "--size", "640x400"], capture_output=True, text=True, timeout=600)
    frames = int(np.floor((run.t[-1] - run.t[0]) * 10 + 1e-9)) + 1
    assert done.returncode == 0 and f"{frames} frames" in done.stdout, done.stderr
    reader = imageio_ffmpeg.read_frames(str(out))
    meta = next(reader)
    pixels = [np.frombuffer(f, np.uint8).reshape(400, 640, 3).astype(float) for f in reader]
    assert meta["size"] == (640, 400) and abs(meta["fps"] - 10) < 1e-6
    assert len(pixels) == frames > 1 and all(p.std() > 10 for p in pixels)
    assert np.abs(pixels[0] - pixels[-1]).max() > 50


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
    numbers travel as float64 in run.bin), sites() puts each named site's frame where physai's kinematics.frame_poses
    says (1e-6 m), normals() are the recorded contact frames' first rows (1e-6), one per contact; the sites' checkbox
    hides them."""
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


# ---- physai.view, inline in a notebook ----

def test_physai_view_is_the_viewers_view_imported_on_first_use():
    """`import physai` loads neither the viewer nor MuJoCo; physai.view is physai.lab.viewer.view once asked for."""
    code = ("import sys, physai; before = 'physai.lab.viewer' in sys.modules or 'mujoco' in sys.modules; "
            "import physai.lab.viewer as v; print(before, physai.view is v.view, 'view' in dir(physai))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.stdout.split() == ["False", "True", "True"], done.stderr
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        physai.nope  # noqa: B018 (the attribute access is the test)


def iframe_src(html: str) -> str:
    match = re.fullmatch(r'<iframe src="([^"]+)" width="100%" height="\d+" [^>]*></iframe>', html)
    assert match, html
    return match.group(1)


@pytest.fixture
def stopping():
    """Servers to shut down after the test (physai.view serves in a thread of its own)."""
    servers = []
    yield servers.append
    for server in servers:
        server.shutdown()
        server.server_close()


def test_in_a_notebook_view_shows_an_iframe_and_opens_no_browser(tmp_path, monkeypatch, stopping):
    """Under an IPython kernel (a stand-in for IPython in sys.modules), physai.view opens no browser tab and returns a
    server whose _repr_html_ is an iframe of its URL, which serves the page and lets a local notebook frame it; the
    Host check holds. Outside a notebook the page refuses to be framed, the repr is a link, and a browser is opened."""
    xml, _, run = falling_box(tmp_path)
    opened = []
    monkeypatch.setattr(viewer.webbrowser, "open", opened.append)
    kernel = types.SimpleNamespace(config={"IPKernelApp": {}})
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: kernel))
    assert viewer.in_notebook()
    server = physai.view(xml, run)
    stopping(server)
    assert opened == [] and iframe_src(server._repr_html_()) == server.url
    status, headers, body = request(server, "/")
    assert status == 200 and b"view.js" in body and "X-Frame-Options" not in headers
    assert "frame-ancestors 'self' http://127.0.0.1:* http://localhost:*" in headers["Content-Security-Policy"]
    assert request(server, "/view.json", host="evil.example")[0] == 403
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: None))   # a terminal IPython
    assert not viewer.in_notebook()
    plain = physai.view(xml, run)
    stopping(plain)
    assert opened == [plain.url] and plain._repr_html_().startswith("<a href=")
    _, headers, _ = request(plain, "/")
    assert "frame-ancestors 'none'" in headers["Content-Security-Policy"] and headers["X-Frame-Options"] == "DENY"


def notebook_page(html: str) -> http.server.ThreadingHTTPServer:
    """A stand-in for a notebook's page (Jupyter on localhost:PORT) holding `html`, on a port of its own."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the base class's name)
            body = f"<!doctype html><html><body><p>a notebook</p>{html}</body></html>".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server


def test_the_inline_viewer_runs_framed_by_a_notebook_and_asks_nothing_off_this_machine(tmp_path, browser):  # noqa: F811
    """A page on http://localhost:OTHER (as Jupyter's) holding _repr_html_'s iframe: the framed viewer loads, its bodies
    are physai's (1e-6 m), and every request the browser makes goes to the viewer's or the notebook's server on this
    machine (no internet needed). A server made for a browser tab (not embeddable) is refused the frame."""
    xml, model, run = falling_box(tmp_path)
    with serving(make_server(xml, run, embeddable=True)) as server, serving(make_server(xml, run)) as tab:
        notebook = notebook_page(server._repr_html_() + tab._repr_html_().replace("<a href", "<iframe src")
                                 .replace("</a>", "</iframe>"))
        try:
            page = browser.new_page()
            urls, problems = [], []
            page.on("request", lambda r: urls.append(r.url))
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.goto(f"http://localhost:{notebook.server_address[1]}/")
            framed = next(f for f in page.frames if f.url == server.url)
            framed.wait_for_function("window.viewer && window.viewer.duration !== undefined", timeout=120000)
            assert framed.evaluate(f"viewer.seek({run.t[50]})") == 50
            drawn = np.array(framed.evaluate("viewer.bodies()"))
            assert np.abs(drawn - kinematics.body_poses(model, run.q[50])[0]).max() < 1e-6
            refused = next((f for f in page.frames if f.url == tab.url), None)
            assert refused is None or not refused.evaluate("'viewer' in window")
            local = (f"http://localhost:{notebook.server_address[1]}/", server.url)
            assert len(urls) > 10 and [u for u in urls if not u.startswith(local + (tab.url,))] == []
            assert problems == [] and framed.evaluate("viewer.errors") == []
            page.close()
        finally:
            notebook.shutdown()
            notebook.server_close()


def vertex_normals(vert, face):
    """Each vertex's normal as three.js computes it: its faces' area-weighted normals summed, then normalized."""
    normal = np.zeros_like(vert)
    for c in range(3):
        np.add.at(normal, face[:, c], viewer.face_normals(vert, face))
    return normal / np.maximum(np.linalg.norm(normal, axis=1, keepdims=True), 1e-300)


def facing_share(vert, face, normal):
    """The share of the faces whose normal points the way the sum of their corners' normals does."""
    return (np.einsum("ij,ij->i", viewer.face_normals(vert, face), normal[face].sum(axis=1)) > 0).mean()


def test_simplified_meshes_stay_within_their_cubes_and_keep_their_normals():
    """view.lod.bin (viewer.simplified_model) for the G1: levels each of at most 2/3 of the finer one's triangles; and
    viewer.clustered_meshes on the G1's meshes (what the page draws while playing in software): every vertex of a
    simplified mesh lies within sqrt(3) cell of a vertex of the compiled mesh and every compiled vertex within sqrt(3)
    cell of a simplified one; faces index their own mesh, fewer of them; as large a share of them faces the way its
    corners' normals point as of the compiled mesh's (less 0.05: creases); unit normals (zero where the compiled
    mesh's vertex normals sum to zero, as three.js's would)."""
    m = models.load("unitree_g1", "scene")
    blob = viewer.simplified_model(m)                                  # view.lod.bin: header, then the levels
    size = int(np.frombuffer(blob, "<u4", 1)[0])
    header = json.loads(blob[4:4 + size])
    faces = [m.mesh_facenum.sum()] + [np.frombuffer(blob, "<i4", a["length"], 4 + size + a["offset"]).sum()
                                      for k in range(len(header["cells"])) if (a := header["arrays"][f"lod{k}_mesh_facenum"])]
    assert len(faces) > 2 and (size + 4) % 8 == 0 and all(b <= 2 / 3 * a for a, b in zip(faces, faces[1:]))
    cell = m.stat.meansize / 20
    lod = viewer.clustered_meshes(m, cell)
    assert lod["lod_mesh_facenum"].sum() < m.mesh_facenum.sum() / 3
    length = np.linalg.norm(lod["lod_mesh_normal"], axis=1)              # zero where the compiled faces' cancel
    assert np.all((np.abs(length - 1) < 1e-6) | (length == 0)) and (length == 0).mean() < 1e-3
    for i in range(0, m.nmesh, 7):
        full = m.mesh_vert[m.mesh_vertadr[i]:m.mesh_vertadr[i] + m.mesh_vertnum[i]].astype(float)
        a, n = lod["lod_mesh_vertadr"][i], lod["lod_mesh_vertnum"][i]
        vert, normal = lod["lod_mesh_vert"][a:a + n].astype(float), lod["lod_mesh_normal"][a:a + n]
        face = lod["lod_mesh_face"][lod["lod_mesh_faceadr"][i]:lod["lod_mesh_faceadr"][i] + lod["lod_mesh_facenum"][i]]
        compiled = m.mesh_face[m.mesh_faceadr[i]:m.mesh_faceadr[i] + m.mesh_facenum[i]]
        distance = np.sqrt(np.maximum((full ** 2).sum(1)[:, None] + (vert ** 2).sum(1)[None] - 2 * full @ vert.T, 0))
        assert distance.min(axis=0).max() <= np.sqrt(3) * cell and distance.min(axis=1).max() <= np.sqrt(3) * cell
        assert 0 < len(face) < m.mesh_facenum[i] and face.min() >= 0 and face.max() < n
        assert facing_share(vert, face, normal) > facing_share(full, compiled, vertex_normals(full, compiled)) - 0.05


def fine_ball(radius: float = 0.1, n: int = 96) -> str:
    """An OBJ file's text: a sphere of `radius` [m] in n longitudes and n / 2 latitudes (about n^2 triangles, fine
    enough for the viewer's simplified meshes to have fewer)."""
    theta, phi = np.meshgrid(np.linspace(0, np.pi, n // 2 + 1)[1:-1], np.linspace(0, 2 * np.pi, n + 1)[:-1], indexing="ij")
    rings = radius * np.stack([np.sin(theta) * np.cos(phi), np.sin(theta) * np.sin(phi), np.cos(theta)], -1).reshape(-1, 3)
    vert = np.r_[[[0, 0, radius]], rings, [[0, 0, -radius]]]
    ring = lambda i, j: 2 + i * n + j % n                                 # noqa: E731 (1-based OBJ index)
    faces = [(1, ring(0, j + 1), ring(0, j)) for j in range(n)]
    faces += [f for i in range(n // 2 - 2) for j in range(n)
              for f in ((ring(i, j), ring(i, j + 1), ring(i + 1, j)), (ring(i, j + 1), ring(i + 1, j + 1), ring(i + 1, j)))]
    faces += [(len(vert), ring(n // 2 - 2, j), ring(n // 2 - 2, j + 1)) for j in range(n)]
    return "".join(f"v {x} {y} {z}\n" for x, y, z in vert) + "".join(f"f {a} {b} {c}\n" for a, b, c in faces)


def test_no_model_file_is_served_and_the_page_draws_the_compiled_model(tmp_path, browser):  # noqa: F811 (the fixture)
    """A model folder with meshes (one the MJCF reads, one it does not): the server serves none of the folder's files;
    view.bin holds the compiled model's arrays (its mesh as MuJoCo compiled it), from which the page draws its bodies where physai puts them
    (1e-6 m); rendering in software, the page fetches the simplified meshes and draws them while playing, not paused."""
    (tmp_path / "meshes").mkdir()
    (tmp_path / "meshes" / "ball.obj").write_text(fine_ball())
    (tmp_path / "meshes" / "unused.obj").write_text("v 0 0 0\nv 0.1 0 0\nv 0 0.1 0\nv 0 0 0.1\nf 1 3 2\nf 1 2 4\nf 1 4 3\n"
                                                   "f 2 3 4\n")
    (tmp_path / "part.xml").write_text('<mujoco><asset><mesh name="m" file="ball.obj"/></asset></mujoco>')
    xml = tmp_path / "model.xml"
    xml.write_text("""<mujoco><compiler meshdir="meshes"/><include file="part.xml"/><worldbody>
      <body name="b" pos="0 0 1"><freejoint/><geom type="mesh" mesh="m"/></body></worldbody></mujoco>""")
    model = engine.from_mujoco(models.load(xml))
    run = integrators.simulate(model, model.qpos0, np.r_[0.3, 0, 0, 1, 2, 3], steps=20)
    with serving(make_server(xml, run)) as server:
        cfg = json.loads(request(server, "/view.json")[2])["model"]
        status, headers, blob = request(server, "/view.bin")             # the compiled model the page draws
        m = models.load(xml)
        assert status == 200 and headers["Content-Type"] == "application/octet-stream"
        for name, kind in (("mesh_vert", np.float32), ("mesh_face", np.int32), ("geom_pos", np.float64)):
            at = cfg["scene"]["arrays"][name]
            assert np.array_equal(np.frombuffer(blob, kind, at["length"], at["offset"]), getattr(m, name).ravel())
        for path in ("/model/meshes/ball.obj", "/model/meshes/unused.obj", "/model/model.xml"):
            assert request(server, path)[0] == 404                        # the meshes are in view.bin, not served
        page = browser.new_page()
        page.goto(server.url)
        page.wait_for_function("window.viewer && window.viewer.duration !== undefined", timeout=120000)
        page.evaluate("viewer.play()")
        assert page.evaluate("viewer.simplify()") is True     # WebGL in software here: the simplified meshes fetched
        shown = page.evaluate("viewer.frames")                              # frames drawn before the meshes came
        page.wait_for_function(f"viewer.frames > {shown + 2}", timeout=60000)
        assert page.evaluate("viewer.detail().level") >= 0                # playing: a simplified mesh drawn
        page.evaluate(f"viewer.seek({run.t[20]})")
        assert page.evaluate("viewer.detail().level") == -1               # paused: as compiled
        assert np.abs(np.array(page.evaluate("viewer.bodies()")) - kinematics.body_poses(model, run.q[20])[0]).max() < 1e-6
        assert page.evaluate("viewer.errors") == []
        page.close()

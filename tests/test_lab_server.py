"""physai lab's server serves only its own files, to its own page (issue N, item 6): no browser, no network.

Each test starts a LabServer on a free port of 127.0.0.1 in a thread (the `serving` context stops it) and talks to
it with http.client or raw sockets: model paths and symbolic links that leave the lab's folder, the Host check, the
security headers, idle connections, odd paths, HEAD, a lab JSON with a byte order mark, and --port.
"""

import json
import socket
import time
from pathlib import Path

import pytest

from physai.cli import main
from physai.exceptions import InvalidArgumentError, LabError
from physai.lab import lab_from_json, load_lab
from physai.lab.server import make_server
from physai.lab.server import serving as answering

from lab.client import request   # tests/lab/: test support

MODEL_XML = '<mujoco><asset><mesh name="m" file="mesh.obj"/></asset><worldbody/></mujoco>'
MESH_OBJ = "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"
SECRET = "root:x:0:0:secret\n"


def serving(lab, **options):
    """A LabServer for `lab` answering in a thread; stopped and closed on exit."""
    return answering(make_server(lab, 0, **options))


@pytest.fixture
def lab_folder(tmp_path) -> Path:
    """tmp/lab/ holding model.xml and mesh.obj; tmp/outside/ holding a secret and an MJCF file."""
    folder, outside = tmp_path / "lab", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    (folder / "model.xml").write_text(MODEL_XML, encoding="utf-8")
    (folder / "mesh.obj").write_text(MESH_OBJ, encoding="utf-8")
    (outside / "shadow.obj").write_text(SECRET, encoding="utf-8")
    (outside / "other.xml").write_text(MODEL_XML, encoding="utf-8")
    return folder


def lab_file(folder: Path, model: str) -> Path:
    path = folder / "lab.json"
    path.write_text(json.dumps({"model": model}), encoding="utf-8")
    return path


# ---- 1. only the lab's own folder ----

@pytest.mark.parametrize("model", ["../../../../../../../../etc/passwd", "../outside/other.xml", "/etc/hostname.xml",
                                   "sub/../../outside/other.xml"])
def test_model_path_outside_the_lab_folder_is_refused_at_load(lab_folder, model):
    with pytest.raises(LabError, match="leads outside the lab's folder .* expected an MJCF .xml file inside that folder"):
        load_lab(str(lab_file(lab_folder, model)))


def test_cli_refuses_a_model_outside_the_lab_folder(lab_folder, capsys):
    assert main(["lab", str(lab_file(lab_folder, "../outside/other.xml")), "--no-browser", "--port", "0"]) == 2
    assert "leads outside the lab's folder" in capsys.readouterr().err


def test_untrusted_refuses_a_lab_with_scripts_and_names_them(lab_folder, capsys, monkeypatch):
    """--untrusted: a lab with scripts exits 2 naming where they are, before any server starts; a lab without scripts
    is served (here: the server is made and its run stops at the first step after it)."""
    spec = {"model": "model.xml", "setup": "lib.vars.x = 1", "control": ["", "  "],
            "readouts": [{"label": "t", "expr": "data.time"}],
            "controls": [{"label": "go", "type": "button", "run": "data.qpos[0] = 1"}]}
    path = lab_folder / "scripted.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    assert load_lab(str(path)).scripts() == ["setup", "readouts[0].expr", "controls[0].run"]
    monkeypatch.setattr("physai.commands.lab.make_server", lambda *a, **k: pytest.fail("a server was started"))
    assert main(["lab", str(path), "--untrusted", "--no-browser", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "holds JavaScript (setup, readouts[0].expr, controls[0].run)" in err and len(err.strip().splitlines()) == 1
    started = []

    def server(lab, *args, **kwargs):
        started.append(lab)
        raise LabError("stopped here by the test")

    monkeypatch.setattr("physai.commands.lab.make_server", server)
    assert main(["lab", str(lab_file(lab_folder, "model.xml")), "--untrusted", "--no-browser", "--port", "0"]) == 2
    assert len(started) == 1 and started[0].scripts() == []
    assert all(load_lab(name).scripts() for name in ("arm2", "double_pendulum", "arm7_min_jerk"))   # the bundled: code


@pytest.mark.parametrize("depth", [40, 900, 100_000])
@pytest.mark.parametrize("kind", ["json", "lesson"])
def test_deeply_nested_lab_json_is_refused_in_one_line(tmp_path, capsys, depth, kind):
    """Lists nested 40, 900 (decodable) and 100,000 deep (past the decoder's recursion): exit 2, one line."""
    spec = '{"model": "arm2", "x": ' + "[" * depth + "]" * depth + "}"
    path = tmp_path / ("lab.json" if kind == "json" else "lesson.md")
    path.write_text(spec if kind == "json" else f"# A lesson\n```lab simlab {spec}\n```\n", encoding="utf-8")
    assert main(["lab", str(path), "--no-browser", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "nests lists and objects deeper than 32 levels" in err and len(err.strip().splitlines()) == 1


def test_symlinks_leaving_the_lab_folder_are_neither_loaded_nor_served(lab_folder):
    outside = lab_folder.parent / "outside"
    (lab_folder / "shadow.obj").symlink_to(outside / "shadow.obj")
    (lab_folder / "meshes").symlink_to(outside, target_is_directory=True)
    (lab_folder / "linked.xml").symlink_to(outside / "other.xml")
    with pytest.raises(LabError, match="leads outside the lab's folder"):          # the model file itself a link out
        load_lab(str(lab_file(lab_folder, "linked.xml")))
    lab = load_lab(str(lab_file(lab_folder, "model.xml")))
    with serving(lab) as server:
        _, _, body = request(server, "/lab.json")
        assert json.loads(body)["model"]["files"] == ["mesh.obj", "model.xml"]
        for path in ("/model/shadow.obj", "/model/meshes/shadow.obj", "/model/../outside/shadow.obj"):
            status, _, body = request(server, path)
            assert status in (400, 404) and SECRET.encode() not in body, path
        assert request(server, "/model/mesh.obj")[0] == 200
        (lab_folder / "mesh.obj").unlink()                                         # swapped for a link after loading
        (lab_folder / "mesh.obj").symlink_to(outside / "shadow.obj")
        status, _, body = request(server, "/model/mesh.obj")
        assert status == 404 and SECRET.encode() not in body


# ---- 2. only its own page: the Host header ----

@pytest.mark.parametrize("host, status", [("evil.example.com", 403), ("evil.example.com:{port}", 403), (None, 403),
                                          ("127.0.0.1.evil.example.com:{port}", 403), ("localhost:1", 403),
                                          ("127.0.0.1:{port}", 200), ("localhost:{port}", 200), ("LOCALHOST", 200)])
def test_only_loopback_host_headers_are_answered(host, status):
    with serving(load_lab("arm2")) as server:
        sent = host.format(port=server.server_address[1]) if host else None
        got, _, body = request(server, "/lab.json", host=sent)
    assert got == status
    assert (b'"spec"' in body) == (status == 200)


# ---- 3. the security headers ----

def test_every_response_carries_the_content_security_policy_and_nosniff():
    with serving(load_lab("arm2")) as server:
        answers = [request(server, "/"), request(server, "/lab.json"), request(server, "/nothing"),
                   request(server, "/", host="evil.example.com")]
    assert [status for status, _, _ in answers] == [200, 200, 404, 403]
    for _, headers, _ in answers:
        policy = dict(part.strip().split(" ", 1) for part in headers["Content-Security-Policy"].split(";"))
        assert policy["default-src"] == "'none'" and policy["connect-src"] == "'self'"
        assert policy["frame-ancestors"] == "'none'" and policy["object-src"] == "'none'"
        script = policy["script-src"].split()
        assert script[:3] == ["'self'", "'wasm-unsafe-eval'", "'unsafe-eval'"] and all(s.startswith("'sha256-") for s in script[3:])
        assert "'unsafe-inline'" not in headers["Content-Security-Policy"] and "*" not in headers["Content-Security-Policy"]
        assert headers["X-Content-Type-Options"] == "nosniff"


# ---- 4. idle connections ----

def test_idle_connections_do_not_block_a_request_and_are_closed():
    with serving(load_lab("arm2"), idle_timeout=1.0) as server:
        address = server.server_address
        idle = [socket.create_connection(address, timeout=5) for _ in range(200)]
        try:
            start = time.monotonic()
            status, _, _ = request(server, "/lab.json")
            assert status == 200 and time.monotonic() - start < 1.0        # answered before the idle ones time out
            for s in idle:                                                   # each is closed by the server: EOF
                assert s.recv(1) == b""
            assert time.monotonic() - start < 15
        finally:
            for s in idle:
                s.close()


def test_a_slow_sender_is_cut_off_at_the_request_deadline():
    """A client sending its request a byte every 0.2 s (never idle for the 1 s idle timeout) is cut off once its line
    and headers have taken the 1.5 s request timeout; a prompt request on the same server is answered meanwhile."""
    with serving(load_lab("arm2"), idle_timeout=1.0, request_timeout=1.5) as server:
        slow = socket.create_connection(server.server_address, timeout=5)
        try:
            start, cut = time.monotonic(), None
            for byte in b"GET /lab.json HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 100:
                try:
                    slow.sendall(bytes([byte]))
                except OSError:                                              # the server has closed it
                    cut = time.monotonic() - start
                    break
                slow.settimeout(0.2)
                try:
                    if slow.recv(1) == b"":
                        cut = time.monotonic() - start
                        break
                except TimeoutError:
                    pass
                if byte == ord("1"):
                    assert request(server, "/lab.json")[0] == 200
            assert cut is not None and 1.4 < cut < 5.0, cut
        finally:
            slow.close()


def test_connections_beyond_the_limit_are_answered_503():
    with serving(load_lab("arm2"), idle_timeout=2.0, max_connections=3) as server:
        idle = [socket.create_connection(server.server_address, timeout=5) for _ in range(3)]
        try:
            time.sleep(0.2)                                                  # let the server accept all three
            assert request(server, "/lab.json")[0] == 503
        finally:
            for s in idle:
                s.close()
        deadline = time.monotonic() + 5                                      # their threads end; slots come back
        while request(server, "/lab.json")[0] != 200:
            assert time.monotonic() < deadline
            time.sleep(0.05)


# ---- 5. odd paths, HEAD, a byte order mark ----

@pytest.mark.parametrize("path, status", [("/%00", 400), ("/model/a%00.xml", 400), ("/" + "a" * 256, 414),
                                          ("/model/" + "b" * 300 + ".obj", 414), ("/../etc/passwd", 400),
                                          ("/model/..%2f..%2fetc%2fpasswd", 400), ("/%2e%2e/x", 400),
                                          ("/a%5cb", 400), ("/%ff", 400), ("/" + "c/" * 1100, 414)])
def test_odd_paths_get_a_clean_answer(path, status):
    with serving(load_lab("arm2")) as server:
        got, headers, _ = request(server, path)
    assert got == status
    assert headers["Connection"] == "close"


def test_head_is_answered_as_get_without_the_body():
    with serving(load_lab("arm2")) as server:
        for path in ("/lab.json", "/", "/model/arm2.xml"):
            get_status, get_headers, get_body = request(server, path)
            head_status, head_headers, head_body = request(server, path, method="HEAD")
            assert get_status == head_status == 200 and get_body and head_body == b"", path
            assert head_headers["Content-Length"] == get_headers["Content-Length"] == str(len(get_body))
            assert head_headers["Content-Type"] == get_headers["Content-Type"]
        assert request(server, "/nothing", method="HEAD")[0] == 404


def test_lab_json_with_a_byte_order_mark_loads(lab_folder):
    path = lab_folder / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"model": "model.xml", "title": "BOM"}).encode())
    assert load_lab(str(path)).title == "BOM"
    assert lab_from_json("\ufeff" + json.dumps({"model": "arm2"})).spec["model"] == "arm2"


# ---- 6. --port ----

@pytest.mark.parametrize("port", ["65536", "-1", "http", "99999999999999999999"])
def test_cli_refuses_a_bad_port_in_one_line(port, capsys):
    assert main(["lab", "arm2", "--no-browser", "--port", port]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("physai lab: error: port") and "0 to 65535" in err


@pytest.mark.parametrize("port", [65536, -1, True, 80.0])
def test_make_server_refuses_a_bad_port(port):
    with pytest.raises(InvalidArgumentError, match="0 to 65535"):
        make_server(load_lab("arm2"), port)

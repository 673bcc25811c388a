"""Serve a lab on 127.0.0.1 with the standard library's http server, to its own page only.

    server = make_server(lab, port)    # a LabServer (ThreadingHTTPServer); server.url; server.serve_forever()
    with serving(server): ...          # answering in a thread meanwhile (scripts, tests)

Routes (GET and HEAD): /           the page (web/index.html) and its files (web/)
        /lab.json   {"spec": the lab, "model": {"file": main MJCF file, "files": every file the page writes into MuJoCo's FS},
                    "replay": the run a lab's `replay` field names (t, q, qd, dt) or null}
        /model/...  the model's files: those listed in lab.json, nothing else
        /vendor/mujoco/..., /vendor/three/...   MuJoCo's WebAssembly build and three.js, from the npm packages that
                    physai.lab.npm.ensure_node_modules() installs into physai's cache folder

What it serves, and to whom (a lab page is a local tool; a web page elsewhere must not read through it):
- only files inside their root (web/, a vendor folder, the model's folder), checked after resolving symbolic links, so a
  link that leads out is not followed; a lab's model file must lie inside the lab's own folder (LabError at load);
- only requests whose Host is 127.0.0.1 or localhost (with this server's port or none): a DNS-rebinding page, whose
  Host is its own name, gets 403;
- every response carries a Content-Security-Policy (scripts, connections, frames: this origin only; WebAssembly and the
  lab's scripts need eval, see CSP) and X-Content-Type-Options: nosniff;
- an idle connection is closed after `idle_timeout` seconds, and one whose request line and headers have not all come
  in `request_timeout` seconds (a slow sender) too; at most `max_connections` are handled at once (more get 503); odd
  paths (NUL, control characters, `.` or `..` components, over-long names) get 400 or 414.
"""

import difflib
import hashlib
import json
import mimetypes
import re
import socket
import sys
import threading
import webbrowser
from contextlib import contextmanager
from base64 import b64encode
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

from physai import models
from physai.exceptions import InvalidArgumentError, LabError, UnknownModelError
from physai.lab.npm import node_modules_dir
from physai.lab.spec import Lab

WEB_DIR = Path(__file__).resolve().parent / "web"
#: URL prefix -> the folder it serves, inside node_modules
VENDOR = {
    "/vendor/mujoco/": Path("@mujoco", "mujoco"),
    "/vendor/three/": Path("three", "build"),
    "/vendor/three-addons/": Path("three", "examples", "jsm"),
}
#: Model asset types the page loads into MuJoCo's virtual file system.
ASSET_SUFFIXES = {".xml", ".stl", ".obj", ".msh", ".png", ".skn", ".bin", ".mjb"}
MAX_MODEL_FILES = 2000
#: Seconds a connection may stay silent (before its request, or while sending it) before the server closes it.
IDLE_TIMEOUT = 10.0
#: Seconds a request's line and headers may take to arrive in all (a client sending a byte now and then is cut off).
REQUEST_TIMEOUT = 15.0
#: Connections handled at once (one thread each); more are answered 503 at once and closed.
MAX_CONNECTIONS = 256
#: The listen backlog: connections the kernel queues before the server accepts them.
LISTEN_BACKLOG = 128
#: Longest request path (percent-encoded) and longest path component (decoded, in UTF-8 bytes), as file systems allow.
MAX_PATH = 2048
MAX_NAME = 255
#: Bytes written per socket call: the idle timeout then bounds each chunk, not a whole (large) file.
WRITE_CHUNK = 1 << 16


# ---- what is served ----

def model_files(lab: Lab) -> tuple[Path, str, list[str]]:
    """(root folder, main MJCF file, files to serve) for the lab's model, paths relative to the root (resolved).

    A bundled model serves its one file; a Menagerie robot or an MJCF file in the lab's folder serves its folder's
    model files (meshes, textures, includes), except any that a symbolic link places outside that folder.
    """
    name = lab.spec["model"]
    path = lab.model_file()                        # LabError for a path outside the lab's folder
    if path is None and name in models.names():
        path = models.model_path(name).resolve()    # ModelUnavailableError when Menagerie's files are not to be had
    elif path is None:
        close = difflib.get_close_matches(name, models.names(), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise UnknownModelError(f"{lab.source}: unknown model {name!r}.{hint} Expected a model name "
                                f"({', '.join(models.names())}) or an MJCF .xml file inside the lab's folder")
    return folder_files(path, name not in models.bundled(), lab.source)


def folder_files(path: Path, whole_folder: bool, source: str) -> tuple[Path, str, list[str]]:
    """(root folder, main MJCF file, files to serve) of the MJCF file `path`: the file alone, or with whole_folder its
    folder's model files (meshes, textures, includes) except any a symbolic link places outside it; LabError naming
    `source` past MAX_MODEL_FILES."""
    root = path.parent
    files = {path.name}
    if whole_folder:
        for p in sorted(root.rglob("*")):
            if p.suffix.lower() in ASSET_SUFFIXES and p.is_file() and inside(p, root):
                files.add(p.relative_to(root).as_posix())
        if len(files) > MAX_MODEL_FILES:
            raise LabError(f"{source}: model folder {root} holds {len(files)} asset files (limit {MAX_MODEL_FILES})")
    return root, path.name, sorted(files)


def inside(path: Path, root: Path) -> Path | None:
    """`path` with its symbolic links resolved when it is `root` or lies under it (root is resolved too), else None."""
    try:
        resolved = path.resolve()
        return resolved if resolved.is_relative_to(root.resolve()) else None
    except (OSError, RuntimeError, ValueError):     # a link loop, a NUL, a name the file system refuses
        return None


def port_number(value: int | str) -> int:
    """A TCP port, 0..65535 (0: any free port), from an int or its text; InvalidArgumentError otherwise."""
    try:
        port = int(value) if isinstance(value, str) or type(value) is int else None
    except ValueError:
        port = None
    if port is None or not 0 <= port <= 65535:
        raise InvalidArgumentError(f"port {value!r} is not a port number; expected a whole number from 0 to 65535 "
                                   "(0: any free port)")
    return port


def content_security_policy(index_html: str, framed_by_self: bool = False, frames_self: bool = False,
                            inline_styles: bool = False, evaluates: bool = True, ancestors: str | None = None) -> str:
    """The page's Content-Security-Policy: its own origin only, plus what the page needs.

    - script-src: this origin's files, the inline import map of index.html (by its hash), 'wasm-unsafe-eval' (MuJoCo's
      WebAssembly) and 'unsafe-eval': the lab's scripts are compiled with `new Function`, and so are MuJoCo's embind
      bindings (without it mujoco.js fails to load). A lab file is therefore code, like a Python script: open only labs
      you trust.
    - img-src adds data: (the page's empty favicon). By default nothing may frame the page, and it frames, posts and
      embeds nothing; a lesson page frames its labs (frames_self), which then let their own origin frame them
      (framed_by_self); `ancestors` names the pages that may frame it instead (the viewer in a notebook);
      inline_styles: KaTeX's typeset math sets style attributes; a page that compiles no code
      (not evaluates: the lesson page) gets neither eval.
    """
    hashes = [f"'sha256-{b64encode(hashlib.sha256(m.encode()).digest()).decode()}'"
              for m in re.findall(r"<script[^>]*>(.*?)</script>", index_html, flags=re.S) if m.strip()]
    return "; ".join([
        "default-src 'none'",
        " ".join(["script-src 'self'", *(["'wasm-unsafe-eval' 'unsafe-eval'"] if evaluates else []), *hashes]),
        "connect-src 'self'", "style-src 'self'" + (" 'unsafe-inline'" if inline_styles else ""), "img-src 'self' data:",
        "font-src 'self'", "worker-src 'self'", "frame-src " + ("'self'" if frames_self else "'none'"),
        "frame-ancestors " + (ancestors or ("'self'" if framed_by_self else "'none'")), "object-src 'none'", "base-uri 'none'",
        "form-action 'none'",
    ])


def security_headers(csp: str, framed_by_self: bool = False) -> dict[str, str]:
    """The headers every response carries: `csp` and what keeps other pages from reading or framing it."""
    return {"Content-Security-Policy": csp, "X-Content-Type-Options": "nosniff",
            "X-Frame-Options": "SAMEORIGIN" if framed_by_self else "DENY", "Referrer-Policy": "no-referrer",
            "Cross-Origin-Resource-Policy": "same-origin", "Cache-Control": "no-store"}


class BadRequestPath(Exception):
    """A request path refused before any file is looked at: `status` (400 or 414) and why."""

    def __init__(self, status: HTTPStatus, reason: str):
        super().__init__(reason)
        self.status, self.reason = status, reason


def request_path(target: str) -> str:
    """The decoded path of a request target ("/model/a%20b.xml?x" -> "/model/a b.xml"); BadRequestPath if odd.

    Refused: no leading '/', NUL or other control characters, backslashes, '.' or '..' components (400); a target
    longer than MAX_PATH or a component longer than MAX_NAME bytes (414).
    """
    raw = target.split("#", 1)[0].split("?", 1)[0]
    if len(raw) > MAX_PATH:
        raise BadRequestPath(HTTPStatus.REQUEST_URI_TOO_LONG, f"path longer than {MAX_PATH} characters")
    if not raw.startswith("/"):
        raise BadRequestPath(HTTPStatus.BAD_REQUEST, "path must start with '/'")
    try:
        path = unquote(raw, errors="strict")
    except UnicodeDecodeError:
        raise BadRequestPath(HTTPStatus.BAD_REQUEST, "path is not UTF-8") from None
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in path) or "\\" in path:
        raise BadRequestPath(HTTPStatus.BAD_REQUEST, "control character or backslash in the path")
    parts = path.split("/")[1:]
    if any(part in (".", "..") for part in parts):
        raise BadRequestPath(HTTPStatus.BAD_REQUEST, "'.' or '..' in the path")
    if any(len(part.encode()) > MAX_NAME for part in parts):
        raise BadRequestPath(HTTPStatus.REQUEST_URI_TOO_LONG, f"a path component longer than {MAX_NAME} bytes")
    return path


# ---- the server ----

@dataclass(frozen=True)
class Reply:
    """What a route answers: `body` (bytes of type `ctype`), else the file `path` if it lies under `root`, else the
    error `status` with `reason`; `headers`: the security headers to send with it (None: the server's)."""

    body: bytes | None = None
    ctype: str = "application/octet-stream"
    path: Path | None = None
    root: Path | None = None
    status: HTTPStatus = HTTPStatus.NOT_FOUND
    reason: str | None = None
    headers: dict | None = None


def lab_replay(lab: Lab, path: Path) -> dict | None:
    """lab.json's "replay": the run the lab replays (t (S,) [s], q (S, nq), qd (S, nv), dt), None without one;
    LabError naming the field for a run whose q and qd do not fit the model compiled from `path`."""
    run = lab.trajectory
    if run is None:
        return None
    m = models.load(path)
    if run["q"].shape[1] != m.nq or run["qd"].shape[1] != m.nv:
        raise LabError(f"{lab.source}: replay {lab.spec['replay']!r}: the trajectory's q {run['q'].shape} and qd "
                       f"{run['qd'].shape} are not those of the model {lab.spec['model']!r} (nq = {m.nq}, nv = {m.nv}): "
                       f"a trajectory of another model? Expected (S, {m.nq}) and (S, {m.nv})")
    return {"t": run["t"].tolist(), "q": run["q"].tolist(), "qd": run["qd"].tolist(), "dt": run["dt"]}


class LabSite:
    """One lab's routes, from the folder it is served at: /lab.json, /model/... (its model's files only) and the page
    (web/ files). `headers`: the security headers of its responses."""

    def __init__(self, lab: Lab, framed_by_self: bool = False):
        self.lab = lab
        self.model_root, main, files = model_files(lab)
        self.model_set = set(files)
        self.lab_json = json.dumps({"spec": lab.spec, "source": lab.source, "notes": lab.notes,
                                    "model": {"name": lab.spec["model"], "file": main, "files": files},
                                    "replay": lab_replay(lab, self.model_root / main)}).encode()
        csp = content_security_policy((WEB_DIR / "index.html").read_text(encoding="utf-8"), framed_by_self=framed_by_self)
        self.headers = security_headers(csp, framed_by_self)

    def route(self, path: str) -> Reply:
        if path == "/lab.json":
            return Reply(self.lab_json, "application/json", headers=self.headers)
        if path.startswith("/model/"):
            return model_file_reply(path, self.model_root, self.model_set, self.headers)
        return Reply(path=WEB_DIR / ("index.html" if path == "/" else path.lstrip("/")), root=WEB_DIR, headers=self.headers)


def model_file_reply(path: str, root: Path, files: set[str], headers: dict | None = None) -> Reply:
    """The reply to /model/<file>: the file under `root` when it is one of `files` (the model's), else 404."""
    rel = path[len("/model/"):]
    if rel not in files:
        return Reply(reason="not a file of this model", headers=headers)
    return Reply(path=root / rel, root=root, headers=headers)


class LocalServer(ThreadingHTTPServer):
    """A server on 127.0.0.1:port for a local page, with the module docstring's refusals; `route(path)` answers.

    `vendor`: URL prefix -> the npm package folder it serves (physai.lab.npm's node_modules); `headers`: the
    security headers of responses whose route names none (errors included)."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = LISTEN_BACKLOG

    def __init__(self, port: int, headers: dict, vendor: dict[str, Path], quiet: bool = True,
                 idle_timeout: float = IDLE_TIMEOUT, max_connections: int = MAX_CONNECTIONS,
                 request_timeout: float = REQUEST_TIMEOUT):
        port = port_number(port)
        self.quiet, self.idle_timeout, self.request_timeout = quiet, idle_timeout, request_timeout
        self.slots = threading.BoundedSemaphore(max_connections)
        modules = node_modules_dir()
        self.vendor = {prefix: (modules / folder).resolve() for prefix, folder in vendor.items()}
        self.response_headers = headers
        try:
            super().__init__(("127.0.0.1", port), LocalHandler)
        except OSError as exc:
            raise LabError(f"cannot serve on 127.0.0.1:{port} ({exc.strerror or exc}); choose another --port") from None

    def route(self, path: str) -> Reply:
        """The reply for a checked request path: here, the vendor folders."""
        for prefix, folder in self.vendor.items():
            if path.startswith(prefix):
                return Reply(path=folder / path[len(prefix):], root=folder)
        return Reply()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"

    def allowed_hosts(self) -> set[str]:
        """Host header values accepted: 127.0.0.1 and localhost, with this server's port or without a port."""
        port = self.server_address[1]
        return {"127.0.0.1", "localhost", f"127.0.0.1:{port}", f"localhost:{port}"}

    def process_request(self, request, client_address):
        """A thread for the connection if fewer than max_connections are being handled; else 503 and close."""
        if not self.slots.acquire(blocking=False):
            try:
                request.settimeout(1.0)
                request.sendall(b"HTTP/1.0 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\n"
                                b"Connection: close\r\n\r\n")
            except OSError:
                pass
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release()
            raise

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()


class LabServer(LocalServer):
    """A lab's server on 127.0.0.1:port; see the module's docstring for what it serves and refuses."""

    def __init__(self, lab: Lab, port: int, quiet: bool = True, idle_timeout: float = IDLE_TIMEOUT,
                 max_connections: int = MAX_CONNECTIONS, request_timeout: float = REQUEST_TIMEOUT):
        self.lab, self.site = lab, LabSite(lab)
        super().__init__(port, self.site.headers, VENDOR, quiet, idle_timeout, max_connections, request_timeout)

    def route(self, path: str) -> Reply:
        reply = super().route(path)
        return reply if reply.path is not None else self.site.route(path)


@contextmanager
def serving(server: LocalServer):
    """`server` answering in a thread while the block runs; shut down and closed after it (scripts and tests)."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def serve_until_interrupted(server: LocalServer, open_browser: bool) -> int:
    """Serve until Ctrl-C (the commands `physai lab` and `physai lesson open`), first opening the page in a browser
    if asked; 0."""
    if open_browser:
        webbrowser.open(server.url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def make_server(lab: Lab, port: int = 0, quiet: bool = True, idle_timeout: float = IDLE_TIMEOUT,
                max_connections: int = MAX_CONNECTIONS, request_timeout: float = REQUEST_TIMEOUT) -> LabServer:
    """A server for `lab` on 127.0.0.1:port (0: any free port); call serve_forever() on it, then shutdown() and server_close().

    LabError for a model outside the lab's folder or a port in use; InvalidArgumentError for a port outside 0..65535.
    """
    return LabServer(lab, port, quiet, idle_timeout, max_connections, request_timeout)


class LocalHandler(BaseHTTPRequestHandler):
    """Answers GET and HEAD (HEAD: the same headers, no body) for the routes of the module's docstring."""

    server: LocalServer
    extensions_map = {".wasm": "application/wasm", ".js": "text/javascript", ".mjs": "text/javascript",
                      ".json": "application/json", ".map": "application/json", ".html": "text/html; charset=utf-8",
                      ".css": "text/css; charset=utf-8", ".xml": "text/xml"}

    def setup(self):
        self.timeout = self.server.idle_timeout       # StreamRequestHandler.setup applies it to the socket
        super().setup()

    def handle_one_request(self):
        """One request, its line and headers due within request_timeout: past it the connection is shut down (the
        reads then see its end), however often bytes trickle in."""
        self.deadline = threading.Timer(self.server.request_timeout, self.cut_off)
        self.deadline.daemon = True
        self.deadline.start()
        try:
            super().handle_one_request()
        finally:
            self.deadline.cancel()

    def parse_request(self):
        try:
            return super().parse_request()            # reads the headers
        finally:
            self.deadline.cancel()

    def cut_off(self) -> None:
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def do_GET(self):
        self.answer(send_body=True)

    def do_HEAD(self):
        self.answer(send_body=False)

    def answer(self, send_body: bool) -> None:
        """Check the Host and the path, then send the route's file (or an error)."""
        self.reply_headers = self.server.response_headers
        hosts = self.headers.get_all("Host") or []
        if len(hosts) != 1 or hosts[0].strip().lower() not in self.server.allowed_hosts():
            return self.send_error(HTTPStatus.FORBIDDEN, "Host must be 127.0.0.1 or localhost with this server's port")
        try:
            path = request_path(self.path)
        except BadRequestPath as exc:
            return self.send_error(exc.status, exc.reason)
        reply = self.server.route(path)
        self.reply_headers = reply.headers or self.server.response_headers
        if reply.body is not None:
            return self.send_body(reply.body, reply.ctype, send_body)
        if reply.path is not None:
            return self.send_file(reply.path, reply.root, send_body)
        return self.send_error(reply.status, reply.reason)

    def send_file(self, path: Path, root: Path, send_body: bool) -> None:
        """The file at `path` if it, its links resolved, is a file under `root`; else 404."""
        resolved = inside(path, root)
        try:
            if resolved is None or not resolved.is_file():
                return self.send_error(HTTPStatus.NOT_FOUND)
            body = resolved.read_bytes()
        except (OSError, RuntimeError, ValueError):
            return self.send_error(HTTPStatus.NOT_FOUND)
        ctype = self.extensions_map.get(resolved.suffix.lower()) or mimetypes.guess_type(resolved.name)[0] or "application/octet-stream"
        self.send_body(body, ctype, send_body)

    def send_body(self, body: bytes, ctype: str, send_body: bool) -> None:
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if send_body:
            view = memoryview(body)
            for start in range(0, len(body), WRITE_CHUNK):
                self.wfile.write(view[start:start + WRITE_CHUNK])

    def end_headers(self):
        """Every response, errors included, carries the security headers (its route's, else the server's)."""
        for name, value in getattr(self, "reply_headers", self.server.response_headers).items():
            self.send_header(name, value)
        super().end_headers()

    def log_message(self, format, *args):   # noqa: A002 (the base class's name)
        if not self.server.quiet:
            sys.stderr.write(f"{self.address_string()} {format % args}\n")

"""Serve a lab on 127.0.0.1 with the standard library's http server.

    server = make_server(lab, port)    # ThreadingHTTPServer; server.url; server.serve_forever()

Routes: /           the page (web/index.html) and its files (web/)
        /lab.json   {"spec": the lab, "model": {"file": main MJCF file, "files": every file the page writes into MuJoCo's FS}}
        /model/...  the model's files
        /vendor/mujoco/..., /vendor/three/...   MuJoCo's WebAssembly build and three.js, from the npm packages that
                    physai.lab.npm.ensure_node_modules() installs into physai's cache folder
"""

import json
import mimetypes
import sys
from functools import partial
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

from physai import models
from physai.exceptions import LabError
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


def model_files(lab: Lab) -> tuple[Path, str, list[str]]:
    """(root folder, main MJCF file, files to serve) for the lab's model, paths relative to the root."""
    name = lab.spec["model"]
    if name.lower().endswith(".xml"):
        if lab.base_dir is None:
            raise LabError(f"{lab.source}: model {name!r} is a file path, but the lab has no folder to start it from")
        path = (lab.base_dir / name).resolve()
        if not path.is_file():
            raise LabError(f"{lab.source}: model file {path} does not exist")
    else:
        path = models.model_path(name)            # UnknownModelError / ModelUnavailableError for bad names
    root = path.parent
    files = {path.name}
    bundled = not name.lower().endswith(".xml") and models.is_bundled(name)
    if not bundled:                               # a Menagerie robot or a file: its folder's meshes, textures, includes
        for p in sorted(root.rglob("*")):
            if p.is_file() and p.suffix.lower() in ASSET_SUFFIXES:
                files.add(p.relative_to(root).as_posix())
        if len(files) > MAX_MODEL_FILES:
            raise LabError(f"{lab.source}: model folder {root} holds {len(files)} asset files (limit {MAX_MODEL_FILES})")
    return root, path.name, sorted(files)


class LabServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, lab: Lab, port: int, quiet: bool = True):
        self.lab, self.quiet = lab, quiet
        modules = node_modules_dir()
        self.vendor = {prefix: modules / folder for prefix, folder in VENDOR.items()}
        self.model_root, main, files = model_files(lab)
        self.model_set = set(files)
        self.lab_json = json.dumps({"spec": lab.spec, "source": lab.source, "notes": lab.notes,
                                    "model": {"name": lab.spec["model"], "file": main, "files": files}}).encode()
        try:
            super().__init__(("127.0.0.1", port), partial(_Handler, directory=str(WEB_DIR)))
        except OSError as exc:
            raise LabError(f"cannot serve on 127.0.0.1:{port} ({exc.strerror or exc}); choose another --port") from None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"


def make_server(lab: Lab, port: int = 0, quiet: bool = True) -> LabServer:
    """A server for `lab` on 127.0.0.1:port (0: any free port); call serve_forever() on it."""
    return LabServer(lab, port, quiet)


class _Handler(SimpleHTTPRequestHandler):
    server: LabServer
    extensions_map = {**SimpleHTTPRequestHandler.extensions_map, ".wasm": "application/wasm", ".js": "text/javascript",
                      ".mjs": "text/javascript", ".json": "application/json", ".map": "application/json"}

    def do_GET(self):
        path = unquote(urlsplit(self.path).path)
        if path == "/lab.json":
            return self._send(self.server.lab_json, "application/json")
        if path.startswith("/model/"):
            rel = path[len("/model/"):]
            if rel not in self.server.model_set:
                return self.send_error(HTTPStatus.NOT_FOUND, "not a file of this lab's model")
            return self._file(self.server.model_root / rel)
        for prefix, folder in self.server.vendor.items():
            if path.startswith(prefix):
                return self._file(folder / path[len(prefix):], root=folder)
        if path == "/":
            path = "/index.html"
        return self._file(WEB_DIR / path.lstrip("/"), root=WEB_DIR)

    def _file(self, path: Path, root: Path | None = None):
        path = path.resolve()
        if root is not None and not path.is_relative_to(root.resolve()) or not path.is_file():
            return self.send_error(HTTPStatus.NOT_FOUND)
        ctype = self.extensions_map.get(path.suffix.lower()) or mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        self._send(path.read_bytes(), ctype)

    def _send(self, body: bytes, ctype: str):
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):   # noqa: A002 (the base class's name)
        if not self.server.quiet:
            sys.stderr.write(f"{self.address_string()} {format % args}\n")

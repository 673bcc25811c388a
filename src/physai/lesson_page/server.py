"""Serve a lesson as a page on 127.0.0.1, with its labs, by physai.lab.server's rules (the Host, the paths, the
timeouts and the security headers; see that module).

    server = make_server(page, port)     # a LessonServer; server.url; server.serve_forever()

Routes (GET and HEAD): /             the page (web/index.html) and its files (web/)
        /lesson.json  the page's blocks (physai.lesson_page.reader.Page.as_json)
        /lab/N/...    the lesson's lab N as `physai lab` serves it (its page, lab.json, its model's files), framed by the
                      lesson page only
        /vendor/...   KaTeX, MuJoCo's WebAssembly build and three.js from the npm packages of physai.lab.npm
"""

import json
import re
from pathlib import Path

from physai.exceptions import PhysaiError
from physai.lab.server import (IDLE_TIMEOUT, MAX_CONNECTIONS, REQUEST_TIMEOUT, VENDOR, LabSite, LocalServer, Reply,
                               content_security_policy, security_headers)
from physai.lesson_page.reader import Page

WEB_DIR = Path(__file__).resolve().parent / "web"
#: KaTeX's files, beside the lab's packages
LESSON_VENDOR = {**VENDOR, "/vendor/katex/": Path("katex", "dist")}
LAB_PATH = re.compile(r"^/lab/(\d{1,4})(/.*)$")


class LessonServer(LocalServer):
    """A lesson's server on 127.0.0.1:port: the page, its blocks and its labs (see the module docstring)."""

    def __init__(self, page: Page, port: int, quiet: bool = True, idle_timeout: float = IDLE_TIMEOUT,
                 max_connections: int = MAX_CONNECTIONS, request_timeout: float = REQUEST_TIMEOUT):
        self.page = page
        self.labs = []
        for lab in page.labs:
            try:
                self.labs.append(LabSite(lab, framed_by_self=True))
            except PhysaiError as exc:               # a lab whose model cannot be served (unknown, not available, ...)
                self.labs.append(None)
                page.notes.append(f"lab {len(self.labs) - 1} ({lab.title}) cannot run: {exc}")
        blocks = page.as_json()
        for block in blocks["blocks"]:
            if block["kind"] == "lab":
                block["available"] = self.labs[block["index"]] is not None
        self.lesson_json = json.dumps(blocks).encode()
        csp = content_security_policy((WEB_DIR / "index.html").read_text(encoding="utf-8"), frames_self=True,
                                      inline_styles=True, evaluates=False)
        super().__init__(port, security_headers(csp), LESSON_VENDOR, quiet, idle_timeout, max_connections, request_timeout)

    def route(self, path: str) -> Reply:
        reply = super().route(path)
        if reply.path is not None:
            return reply
        if path == "/lesson.json":
            return Reply(self.lesson_json, "application/json")
        lab = LAB_PATH.match(path)
        if lab:
            n = int(lab.group(1))
            site = self.labs[n] if n < len(self.labs) else None
            return site.route(lab.group(2)) if site else Reply(reason="the lesson has no such lab")
        return Reply(path=WEB_DIR / ("index.html" if path == "/" else path.lstrip("/")), root=WEB_DIR)


def make_server(page: Page, port: int = 0, quiet: bool = True, idle_timeout: float = IDLE_TIMEOUT,
                max_connections: int = MAX_CONNECTIONS, request_timeout: float = REQUEST_TIMEOUT) -> LessonServer:
    """A server for the lesson `page` on 127.0.0.1:port (0: any free port); serve_forever(), then shutdown() and
    server_close(). LabError for a port in use; InvalidArgumentError for a port outside 0..65535."""
    return LessonServer(page, port, quiet, idle_timeout, max_connections, request_timeout)

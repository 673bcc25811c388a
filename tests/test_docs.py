"""The guides run as written: every ```python block of the README and of docs/*.md, and every relative link leads to a
file of the repository (mkdocs build --strict checks the links between the docs pages and the API reference)."""

import re
import webbrowser
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDES = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "lesson_example.md")]
BLOCKS = [(page, code) for page in GUIDES for code in re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)]
LINK = re.compile(r"\]\(([^)\s]+)\)")


@pytest.mark.parametrize("page, code", BLOCKS, ids=[f"{page.name}-{i}" for i, (page, _) in enumerate(BLOCKS)])
def test_guide_example_runs(page, code, monkeypatch, tmp_path):
    """The block runs in a temporary folder (the files it writes are not left in the repository); a viewer it opens
    (physai.lab.viewer.view) serves the page and the run (the opened trajectory's
    q, its contacts and actuator forces when recorded), its page not opened in a browser, then stops."""
    from physai.lab.server import LocalServer
    from lab.client import request, served_run
    monkeypatch.setattr(webbrowser, "open", lambda url, *args, **kwargs: True)
    monkeypatch.chdir(tmp_path)
    names = {}
    exec(compile(code, str(page), "exec"), names)
    for server in (x for x in names.values() if isinstance(x, LocalServer)):
        shown, run = served_run(server), names.get("run")
        assert request(server, "/")[0] == 200
        assert run is None or np.array_equal(shown["q"], run.q)
        assert run is None or run.actuator_force is None or np.array_equal(shown["actuators"]["force"], run.actuator_force)
        assert run is None or run.contacts is None or np.array_equal(shown["contacts"]["start"], run.contacts.start)
        server.shutdown()
        server.server_close()


def test_every_guide_has_its_examples_found():
    assert {page.name for page, _ in BLOCKS} >= {"README.md", "constraints.md", "whole-body.md", "derivatives.md"}


@pytest.mark.parametrize("page", GUIDES, ids=[p.name for p in GUIDES])
def test_relative_links_lead_to_files(page):
    missing = [target for target in LINK.findall(page.read_text())
               if "://" not in target and not target.startswith("#")
               and not (page.parent / target.split("#")[0]).exists()]
    assert not missing, f"{page.name} links to files that do not exist: {missing}"

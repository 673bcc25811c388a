"""The guides run as written: every ```python block of the README and of docs/*.md, and every relative link leads to a
file of the repository (mkdocs build --strict checks the links between the docs pages and the API reference)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDES = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "lesson_example.md")]
BLOCKS = [(page, code) for page in GUIDES for code in re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)]
LINK = re.compile(r"\]\(([^)\s]+)\)")


@pytest.mark.parametrize("page, code", BLOCKS, ids=[f"{page.name}-{i}" for i, (page, _) in enumerate(BLOCKS)])
def test_guide_example_runs(page, code):
    exec(compile(code, str(page), "exec"), {})


def test_every_guide_has_its_examples_found():
    assert {page.name for page, _ in BLOCKS} >= {"README.md", "constraints.md", "whole-body.md", "derivatives.md"}


@pytest.mark.parametrize("page", GUIDES, ids=[p.name for p in GUIDES])
def test_relative_links_lead_to_files(page):
    missing = [target for target in LINK.findall(page.read_text())
               if "://" not in target and not target.startswith("#")
               and not (page.parent / target.split("#")[0]).exists()]
    assert not missing, f"{page.name} links to files that do not exist: {missing}"

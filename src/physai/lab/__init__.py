"""Labs: a lesson's interactive MuJoCo page, run in the browser from its ```lab simlab {...}``` block.

A lab is a JSON object (the lesson's block): a model, a camera, a trail, a `setup` script, buttons and
selects whose scripts are JavaScript against MuJoCo's `model` and `data`, readouts and plots.

    load_lab("arm2")                      # a bundled lab, src/physai/lab/labs/arm2.json
    load_lab("my_lab.json")               # a lab file
    load_lab("lesson.md")                 # the first lab block of a lesson file (curly quotes normalised)
    lab_from_lesson_text(text)            # the same, on text

The page itself (web/), the npm project that installs MuJoCo's WebAssembly build and three.js (package.json,
package-lock.json) and the server live beside this file; physai.lab.server serves a Lab on 127.0.0.1.
Bad input raises physai.exceptions.LabError or UnknownLabError (the CLI's exit status 2).
"""

import difflib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from physai.exceptions import LabError, UnknownLabError

LAB_DIR = Path(__file__).resolve().parent
LABS_DIR = LAB_DIR / "labs"
WEB_DIR = LAB_DIR / "web"
NODE_MODULES = LAB_DIR / "node_modules"

#: The fence that opens a lab block in a lesson: ```lab simlab {...}
BLOCK_START = re.compile(r"```[ \t]*lab[ \t]+simlab\b")
#: What a lesson's text extraction does to quotes: curly double quotes stand for JSON's straight ones.
CURLY_DOUBLE = {ord("\u201c"): '"', ord("\u201d"): '"', ord("\u201e"): '"', ord("\u201f"): '"'}
CURLY_SINGLE = {ord("\u2018"): "'", ord("\u2019"): "'"}
#: Fields holding JavaScript (a string, or a list of lines joined with newlines).
SCRIPT_FIELDS = ("setup", "control", "run", "apply", "expr")


@dataclass
class Lab:
    """A validated lab spec, where it came from, and the folder its relative model paths start from."""

    spec: dict
    source: str
    base_dir: Path | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def title(self) -> str:
        return self.spec.get("title") or self.spec["model"]


def bundled_labs() -> list[str]:
    """Names of the labs shipped with physai (`physai lab NAME`)."""
    return sorted(p.stem for p in LABS_DIR.glob("*.json"))


def load_lab(target: str) -> Lab:
    """A bundled lab by name, a lab .json file, or the first lab block of a lesson file (any other file)."""
    path = Path(target).expanduser()
    if target in bundled_labs() and not path.is_file():
        path = LABS_DIR / f"{target}.json"
        return lab_from_json(path.read_text(encoding="utf-8"), f"bundled lab {target}", path.parent)
    if not path.is_file():
        if path.suffix or "/" in target or "\\" in target:
            raise LabError(f"no such lab file: {target}")
        close = difflib.get_close_matches(target, bundled_labs(), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise UnknownLabError(f"unknown lab {target!r}.{hint} Bundled labs: {', '.join(bundled_labs())}; "
                              "or give a lab .json file or a lesson file with a ```lab simlab {...}``` block")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LabError(f"cannot read {path}: {exc}") from None
    if path.suffix.lower() == ".json":
        return lab_from_json(text, str(path), path.parent)
    return lab_from_lesson_text(text, str(path), path.parent)


def lab_from_json(text: str, source: str = "<lab>", base_dir: Path | None = None) -> Lab:
    """Parse and validate a lab given as JSON text."""
    try:
        spec = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LabError(f"{source}: malformed JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from None
    return Lab(validate(spec, source), source, base_dir)


def lab_from_lesson_text(text: str, source: str = "<lesson>", base_dir: Path | None = None) -> Lab:
    """The first ```lab simlab {...}``` block of a lesson's text, parsed and validated.

    Text extracted from a formatted lesson may have its straight quotes turned into curly ones (“ ”):
    if the block is not JSON as it stands, curly double quotes are read as straight ones, and curly single
    quotes inside the scripts as straight ones, so the block runs unchanged. A block needs no closing fence.
    """
    starts = list(BLOCK_START.finditer(text))
    if not starts:
        raise LabError(f"{source} has no lab block (a fenced block that starts with ```lab simlab {{...}})")
    start = starts[0]
    brace = text.find("{", start.end())
    if brace < 0 or text[start.end():brace].strip():
        raise LabError(f"{source}, line {_line(text, start.start())}: the lab block has no JSON object after 'lab simlab'")
    decoder = json.JSONDecoder()
    try:
        spec, _ = decoder.raw_decode(text, brace)
        normalised = False
    except json.JSONDecodeError:
        try:
            spec, _ = decoder.raw_decode(text.translate(CURLY_DOUBLE), brace)
            normalised = True
        except json.JSONDecodeError as exc:
            raise LabError(f"{source}: the lab block at line {_line(text, start.start())} is not valid JSON "
                           f"(also with curly quotes read as straight ones): {exc.msg} at line {exc.lineno}, "
                           f"column {exc.colno}") from None
    if normalised:
        spec = _straighten_scripts(spec)
    lab = Lab(validate(spec, source), source, base_dir)
    if normalised:
        lab.notes.append("curly quotes in the lab block were read as straight ones")
    if len(starts) > 1:
        lab.notes.append(f"{source} has {len(starts)} lab blocks; using the first")
    return lab


def _line(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _straighten_scripts(value, key: str | None = None):
    """Curly single quotes back to straight ones inside script fields (they are never valid JavaScript syntax)."""
    if isinstance(value, dict):
        return {k: _straighten_scripts(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_straighten_scripts(v, key) for v in value]
    if isinstance(value, str) and key in SCRIPT_FIELDS:
        return value.translate(CURLY_SINGLE)
    return value


# ---- validation ----

def validate(spec, source: str = "<lab>") -> dict:
    """Check a lab spec's fields and types; returns it with scripts given as lists of lines joined. LabError if bad."""
    where = _Where(source)
    if not isinstance(spec, dict):
        raise LabError(f"{source}: a lab is a JSON object, got {type(spec).__name__}")
    spec = dict(spec)
    where.string(spec, "model", required=True)
    for key in ("title", "note", "trail_color"):
        where.string(spec, key)
    for key in ("setup", "control"):
        where.script(spec, key)
    for key in ("height", "frame_time"):
        if key in spec and not _is_number(spec[key], positive=True):
            raise LabError(f"{source}: '{key}' must be a positive number, got {spec[key]!r}")
    if "camera" in spec:
        cam = spec["camera"]
        if not isinstance(cam, dict):
            raise LabError(f"{source}: 'camera' must be an object with azimuth, elevation, distance, target")
        for key in ("azimuth", "elevation", "distance"):
            if key in cam and not _is_number(cam[key], positive=key == "distance"):
                raise LabError(f"{source}: camera.{key} must be a {'positive ' if key == 'distance' else ''}number, got {cam[key]!r}")
        if "target" in cam and not (isinstance(cam["target"], list) and len(cam["target"]) == 3
                                    and all(_is_number(x) for x in cam["target"])):
            raise LabError(f"{source}: camera.target must be a list of 3 numbers, got {cam['target']!r}")
    if "trail" in spec:
        trail = spec["trail"]
        ok = isinstance(trail, str) or (isinstance(trail, dict) and isinstance(trail.get("body"), str)
                                        and (("pos" not in trail) or (isinstance(trail["pos"], list) and len(trail["pos"]) == 3
                                                                      and all(_is_number(x) for x in trail["pos"]))))
        if not ok:
            raise LabError(f"{source}: 'trail' must be a site or body name, or {{\"body\": name, \"pos\": [x, y, z]}}, got {trail!r}")
    spec["controls"] = [_control(c, f"controls[{i}]", where) for i, c in enumerate(where.list(spec, "controls"))]
    labels = [c["label"] for c in spec["controls"]]
    dupes = sorted({x for x in labels if labels.count(x) > 1})
    if dupes:
        raise LabError(f"{source}: control labels must be unique; repeated: {', '.join(dupes)}")
    spec["readouts"] = [_readout(r, f"readouts[{i}]", where) for i, r in enumerate(where.list(spec, "readouts"))]
    labels = [r["label"] for r in spec["readouts"]]
    dupes = sorted({x for x in labels if labels.count(x) > 1})
    if dupes:
        raise LabError(f"{source}: readout labels must be unique; repeated: {', '.join(dupes)}")
    spec["plots"] = [_plot(p, f"plots[{i}]", where) for i, p in enumerate(where.list(spec, "plots"))]
    return spec


class _Where:
    def __init__(self, source: str):
        self.source = source

    def fail(self, path: str, message: str):
        raise LabError(f"{self.source}: {path}: {message}")

    def string(self, obj: dict, key: str, path: str = "", required: bool = False) -> None:
        if key not in obj:
            if required:
                self.fail(path or key, f"missing; expected a string in '{key}'" if path else "missing (a string)")
            return
        if not isinstance(obj[key], str) or (required and not obj[key].strip()):
            self.fail(f"{path}.{key}" if path else key, f"expected a non-empty string, got {obj[key]!r}")

    def script(self, obj: dict, key: str, path: str = "", required: bool = False) -> None:
        name = f"{path}.{key}" if path else key
        if key not in obj:
            if required:
                self.fail(name, "missing (JavaScript code, a string)")
            return
        code = obj[key]
        if isinstance(code, list) and all(isinstance(x, str) for x in code):
            obj[key] = "\n".join(code)
        elif not isinstance(code, str):
            self.fail(name, f"expected JavaScript code (a string or a list of lines), got {code!r}")

    def list(self, obj: dict, key: str) -> list:
        value = obj.get(key, [])
        if not isinstance(value, list):
            self.fail(key, f"expected a list, got {type(value).__name__}")
        return value


def _control(c, path: str, where: _Where) -> dict:
    if not isinstance(c, dict):
        where.fail(path, f"a control is an object, got {c!r}")
    c = dict(c)
    where.string(c, "label", path, required=True)
    kind = c.get("type")
    if kind == "button":
        where.script(c, "run", path, required=True)
    elif kind == "select":
        where.script(c, "apply", path, required=True)
        options = c.get("options")
        if not (isinstance(options, list) and options and all(
                isinstance(o, list) and len(o) == 2 and isinstance(o[0], str) and (_is_number(o[1]) or isinstance(o[1], str))
                for o in options)):
            where.fail(path, f"a select needs 'options', a non-empty list of [label, value] pairs, got {options!r}")
        values = [o[1] for o in options]
        if "value" not in c:
            c["value"] = values[0]
        elif c["value"] not in values:
            where.fail(path, f"'value' {c['value']!r} is not one of the options' values {values}")
    else:
        where.fail(path, f"'type' must be 'button' or 'select', got {kind!r}")
    return c


def _readout(r, path: str, where: _Where) -> dict:
    if not isinstance(r, dict):
        where.fail(path, f"a readout is an object with label and expr, got {r!r}")
    r = dict(r)
    where.string(r, "label", path, required=True)
    where.script(r, "expr", path, required=True)
    if "digits" in r and not (isinstance(r["digits"], int) and not isinstance(r["digits"], bool) and 0 <= r["digits"] <= 20):
        where.fail(path, f"'digits' must be a whole number from 0 to 20, got {r['digits']!r}")
    if r.get("format", "fixed") not in ("fixed", "exp"):
        where.fail(path, f"'format' must be 'fixed' or 'exp', got {r['format']!r}")
    return r


def _plot(p, path: str, where: _Where) -> dict:
    if not isinstance(p, dict):
        where.fail(path, f"a plot is an object with traces, got {p!r}")
    p = dict(p)
    where.string(p, "ylabel", path)
    if "window" in p and not _is_number(p["window"], positive=True):
        where.fail(path, f"'window' must be a positive number of seconds, got {p['window']!r}")
    traces = p.get("traces")
    if not (isinstance(traces, list) and traces):
        where.fail(path, "a plot needs 'traces', a non-empty list of {label, expr}")
    p["traces"] = []
    for j, t in enumerate(traces):
        tpath = f"{path}.traces[{j}]"
        if not isinstance(t, dict):
            where.fail(tpath, f"a trace is an object with label and expr, got {t!r}")
        t = dict(t)
        where.string(t, "label", tpath, required=True)
        where.script(t, "expr", tpath, required=True)
        p["traces"].append(t)
    return p


def _is_number(x, positive: bool = False) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x == x and abs(x) != float("inf") and (x > 0 or not positive)

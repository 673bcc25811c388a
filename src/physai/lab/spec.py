"""The lab spec: the fields of a lab's JSON declared once (SCHEMA), the validator that walks them, and the loaders.

    load_lab("arm2")                      # a bundled lab, src/physai/lab/labs/arm2.json
    load_lab("my_lab.json")               # a lab file
    load_lab("lesson.md")                 # the first lab block of a lesson file (curly quotes normalised)
    lab_from_lesson_text(text)            # the same, on text
    validate(spec, source)                # the spec checked against SCHEMA, defaults filled in, scripts joined

Each Field of the tables below has a name, a kind (what it accepts, in words for the error messages), whether it is
required and what it means; `validate` walks them and nothing else. Fields the tables do not name are kept and
ignored. Bad input raises LabError (UnknownLabError for an unknown bundled name) saying where, what and what was expected.
"""

import difflib
import json
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from physai import trajectory_files
from physai.exceptions import LabError, PhysaiError, TrajectoryFileError, UnknownLabError

LABS_DIR = Path(__file__).resolve().parent / "labs"
#: Largest lab or lesson file read (bytes).
MAX_FILE_BYTES = 1 << 20

#: The fence that opens a lab block in a lesson: ```lab simlab {...}
BLOCK_START = re.compile(r"```[ \t]*lab[ \t]+simlab\b")
#: What a lesson's text extraction does to quotes: curly double quotes stand for JSON's straight ones.
CURLY_DOUBLE = {ord("\u201c"): '"', ord("\u201d"): '"', ord("\u201e"): '"', ord("\u201f"): '"'}
CURLY_SINGLE = {ord("\u2018"): "'", ord("\u2019"): "'"}


# ---- the kinds of value a field accepts ----

def _fail(source: str, path: str, message: str):
    raise LabError(f"{source}: {path}: {message}" if path else f"{source}: {message}")


def _shown(value) -> str:
    """The value as in the JSON, shortened for a message."""
    text = repr(value)
    return text if len(text) <= 80 else text[:76] + " ..."


def _is_number(x, positive: bool = False) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x == x and abs(x) != float("inf") and (x > 0 or not positive)


@dataclass(frozen=True)
class Value:
    """A plain JSON value: `expected` says in words what `accepts` lets through."""

    expected: str
    accepts: Callable[[object], bool]

    def parse(self, value, path: str, source: str):
        if not self.accepts(value):
            _fail(source, path, f"expected {self.expected}, got {_shown(value)}")
        return value


class Script(Value):
    """JavaScript code: a string, or a list of lines (joined with newlines)."""

    def __init__(self):
        super().__init__("JavaScript code (a string or a list of lines)", lambda v: isinstance(v, str))

    def parse(self, value, path: str, source: str):
        if isinstance(value, list) and all(isinstance(line, str) for line in value):
            return "\n".join(value)
        return super().parse(value, path, source)


@dataclass(frozen=True)
class ListOf:
    """A JSON list whose items are all `item`; `unique`: a field whose value no two items share."""

    item: "Value | Record"
    expected: str
    non_empty: bool = False
    unique: str | None = None

    def parse(self, value, path: str, source: str):
        if not isinstance(value, list) or (self.non_empty and not value):
            _fail(source, path, f"expected {self.expected}, got {_shown(value)}")
        items = [self.item.parse(x, f"{path}[{i}]", source) for i, x in enumerate(value)]
        if self.unique:
            keys = [x[self.unique] for x in items]
            repeated = sorted({k for k in keys if keys.count(k) > 1})
            if repeated:
                _fail(source, path, f"{self.unique}s must be unique; repeated: {', '.join(repeated)}")
        return items


@dataclass(frozen=True)
class Field:
    """One field of a JSON object: its name, what it accepts, what it means; `default` makes the value when absent."""

    name: str
    kind: "Value | ListOf | Record | Either"
    meaning: str
    required: bool = False
    default: Callable[[], object] | None = None


@dataclass(frozen=True)
class Record:
    """A JSON object with declared fields; `variants` adds fields by the value of `type`; `check` runs last (cross-field rules)."""

    name: str
    fields: tuple[Field, ...]
    variants: dict[str, tuple[Field, ...]] = field(default_factory=dict)
    check: Callable[[dict, str, str], None] | None = None

    @property
    def expected(self) -> str:
        required = [f.name for f in self.fields if f.required]
        if required:
            return f"{self.name} (an object with {', '.join(required)})"
        return f"{self.name} (an object with any of {', '.join(f.name for f in self.fields)})"

    def parse(self, value, path: str, source: str) -> dict:
        if not isinstance(value, dict):
            _fail(source, path, f"expected {self.expected}, got {_shown(value)}")
        obj = dict(value)
        self._walk(obj, self.fields, self.name, path, source)
        if self.variants:                 # `type` is one of them: a required choice among the fields above
            self._walk(obj, self.variants[obj["type"]], f"a {obj['type']}", path, source)
        if self.check:
            self.check(obj, path, source)
        return obj

    @staticmethod
    def _walk(obj: dict, fields: tuple[Field, ...], owner: str, path: str, source: str) -> None:
        for f in fields:
            where = f"{path}.{f.name}" if path else f.name
            if f.name in obj:
                obj[f.name] = f.kind.parse(obj[f.name], where, source)
            elif f.required:
                _fail(source, where, f"missing; {owner} needs {f.kind.expected}")
            elif f.default is not None:
                obj[f.name] = f.default()


@dataclass(frozen=True)
class Either:
    """A plain value or an object (`record`), told apart by the JSON type."""

    plain: Value
    record: Record
    expected: str

    def parse(self, value, path: str, source: str):
        if isinstance(value, dict):
            return self.record.parse(value, path, source)
        if not self.plain.accepts(value):
            _fail(source, path, f"expected {self.expected}, got {_shown(value)}")
        return value


TEXT = Value("a string", lambda v: isinstance(v, str))
NAME = Value("a non-empty string", lambda v: isinstance(v, str) and bool(v.strip()))
NUMBER = Value("a number", _is_number)
POSITIVE = Value("a positive number", lambda v: _is_number(v, positive=True))
BOOLEAN = Value("true or false", lambda v: isinstance(v, bool))
VECTOR3 = Value("a list of 3 numbers", lambda v: isinstance(v, list) and len(v) == 3 and all(_is_number(x) for x in v))
SCRIPT = Script()


def _choice(*values: str) -> Value:
    return Value(" or ".join(repr(v) for v in values), lambda v: v in values)


# ---- the schema ----

CAMERA = Record("a camera", (
    Field("azimuth", NUMBER, "degrees about z, MuJoCo's convention (default 90)"),
    Field("elevation", NUMBER, "degrees above the horizon, negative looks down (default -20)"),
    Field("distance", POSITIVE, "metres from the target (default 2.5 times the model's extent)"),
    Field("target", VECTOR3, "the point looked at, world frame [m] (default the model's centre)"),
))

TRAIL_ON_BODY = Record("a trail on a body", (
    Field("body", TEXT, "the body the trail follows", required=True),
    Field("pos", VECTOR3, "the traced point in the body's frame [m] (default its origin)"),
))


def _select_value(control: dict, path: str, source: str) -> None:
    """A select starts at `value` (default: the first option's); it must be one of the options' values."""
    if control.get("type") != "select":
        return
    values = [option[1] for option in control["options"]]
    if "value" not in control:
        control["value"] = values[0]
    elif control["value"] not in values:
        _fail(source, path, f"'value' {control['value']!r} is not one of the options' values {values}")


OPTION = Value("a [label, value] pair (a string and a number or string)",
               lambda v: isinstance(v, list) and len(v) == 2 and isinstance(v[0], str) and (_is_number(v[1]) or isinstance(v[1], str)))

#: A control's fields beyond label and type, by its type.
CONTROL_TYPES = {
    "button": (Field("run", SCRIPT, "runs on a press (model, data, lib)", required=True),),
    "select": (
        Field("apply", SCRIPT, "runs at start and on each choice, with the option's value as `value`", required=True),
        Field("options", ListOf(OPTION, "a non-empty list of [label, value] pairs", non_empty=True),
              "the choices: [text shown, value passed to apply]", required=True),
        Field("value", Value("a number or string", lambda v: _is_number(v) or isinstance(v, str)),
              "the value chosen at start (default the first option's)"),
    ),
}

CONTROL = Record("a control", (
    Field("label", NAME, "the button's text or the select's label; unique among the controls", required=True),
    Field("type", _choice(*CONTROL_TYPES), "a button runs `run`; a select runs `apply` with the chosen value", required=True),
), variants=CONTROL_TYPES, check=_select_value)

READOUT = Record("a readout", (
    Field("label", NAME, "the row's name; unique among the readouts", required=True),
    Field("expr", SCRIPT, "JavaScript expression whose number is shown", required=True),
    Field("digits", Value("a whole number from 0 to 20", lambda v: isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 20),
          "decimals shown (default 4)"),
    Field("format", _choice("fixed", "exp"), "'fixed' decimals or 'exp' exponent notation (default 'fixed')"),
))

TRACE = Record("a trace", (
    Field("label", NAME, "the legend's text", required=True),
    Field("expr", SCRIPT, "JavaScript expression plotted against simulated time", required=True),
    Field("dash", BOOLEAN, "draw dashed (default false)"),
    Field("color", TEXT, "a CSS colour (default from the palette)"),
))

PLOT = Record("a plot", (
    Field("traces", ListOf(TRACE, "a non-empty list of traces ({label, expr})", non_empty=True), "the curves", required=True),
    Field("ylabel", TEXT, "the y axis's label"),
    Field("window", POSITIVE, "seconds of simulated time shown (default 10)"),
))

LAB = Record("a lab", (
    Field("model", NAME, "a bundled model name, a Menagerie robot, or an MJCF path relative to the lab file", required=True),
    Field("replay", NAME, "a physai run (a .npz file of Trajectory.save, a path relative to the lab file, inside its "
          "folder) replayed on the page's time line instead of simulating: qpos and qvel at time t are the run's saved "
          "state at or before t"),
    Field("title", TEXT, "the page's heading (default the model's name)"),
    Field("note", TEXT, "a paragraph under the page"),
    Field("dock", BOOLEAN, "the course page docks the lab beside the lesson's text (physai's page ignores it)"),
    Field("height", POSITIVE, "the 3D view's height in pixels (at least 420 is used)"),
    Field("frame_time", POSITIVE, "simulated seconds per drawn frame (default: the wall clock's time since the last frame)"),
    Field("camera", CAMERA, "where the 3D view looks from"),
    Field("trail", Either(TEXT, TRAIL_ON_BODY, 'a site or body name, or {"body": name, "pos": [x, y, z]}'),
          "a line following a site or body (a name: a site, else a body)"),
    Field("trail_color", TEXT, "the trail's CSS colour (default #ff5a00)"),
    Field("setup", SCRIPT, "runs once after loading (model, data, lib; lib.vars keeps what later scripts share)"),
    Field("control", SCRIPT, "runs before every mj_step (e.g. writes data.ctrl)"),
    Field("controls", ListOf(CONTROL, "a list of controls", unique="label"), "buttons and selects", default=list),
    Field("readouts", ListOf(READOUT, "a list of readouts", unique="label"), "the table of live numbers", default=list),
    Field("plots", ListOf(PLOT, "a list of plots"), "scrolling plots against simulated time", default=list),
))

#: Every record of the lab JSON, by the path of the field that holds it ("" for the lab itself).
SCHEMA = {"": LAB, "camera": CAMERA, "trail": TRAIL_ON_BODY, "controls[]": CONTROL, "readouts[]": READOUT,
          "plots[]": PLOT, "plots[].traces[]": TRACE}


def schema_fields() -> list[tuple[str, Field]]:
    """(path, Field) for every field SCHEMA declares, e.g. ("plots[].traces[].dash", Field(...)); a select's fields too."""
    rows = []
    for at, record in SCHEMA.items():
        fields = record.fields + tuple(f for variant in record.variants.values() for f in variant)
        rows += [(f"{at}.{f.name}" if at else f.name, f) for f in fields]
    return rows


#: Names of the fields holding JavaScript: setup, control, run, apply, expr.
SCRIPT_FIELDS = frozenset(f.name for _, f in schema_fields() if f.kind is SCRIPT)


def validate(spec, source: str = "<lab>") -> dict:
    """The spec checked against SCHEMA: a copy with defaults filled in and scripts given as lists of lines joined; LabError if bad."""
    return LAB.parse(spec, "", source)


# ---- loading ----

@dataclass
class Lab:
    """A validated lab spec, where it came from, and the folder its relative model paths start from."""

    spec: dict
    source: str
    base_dir: Path | None = None
    notes: list[str] = field(default_factory=list)
    #: the run the `replay` field names, as trajectory_files.load reads it (None without one)
    trajectory: dict | None = None

    @property
    def title(self) -> str:
        return self.spec.get("title") or self.spec["model"]

    def scripts(self) -> list[str]:
        """Where the lab holds JavaScript (SCHEMA's script fields with code in them), e.g. ["setup",
        "readouts[0].expr"]: what `physai lab --untrusted` refuses to run."""
        found = []

        def walk(value, path: str) -> None:
            if isinstance(value, dict):
                for key, item in value.items():
                    at = f"{path}.{key}" if path else key
                    if key in SCRIPT_FIELDS and isinstance(item, str):
                        if item.strip():
                            found.append(at)
                    else:
                        walk(item, at)
            elif isinstance(value, list):
                for k, item in enumerate(value):
                    walk(item, f"{path}[{k}]")

        walk(self.spec, "")
        return found

    def model_file(self) -> Path | None:
        """The resolved MJCF file the `model` field names as a path (None for a model name); LabError if unusable.

        A path (it ends in .xml or holds a slash) is taken relative to the lab's folder and resolved, symbolic links
        followed, before it is checked: neither `..`, an absolute path nor a link may lead outside that folder, since
        the lab's server serves the model's folder to the page.
        """
        name = self.spec["model"]
        if "\0" in name:                                        # no file system takes it (os calls raise ValueError)
            raise LabError(f"{self.source}: model {name!r} holds a NUL byte; expected a model name or an MJCF .xml file "
                           "inside the lab's folder")
        if not (name.lower().endswith(".xml") or "/" in name or "\\" in name):
            return None
        if self.base_dir is None:
            raise LabError(f"{self.source}: model {name!r} is a file path, but the lab has no folder to start it from; "
                           "expected a model name")
        folder = self.base_dir.resolve()
        path = (folder / name).resolve()
        if not path.is_relative_to(folder):
            raise LabError(f"{self.source}: model {name!r} leads outside the lab's folder {folder} (to {path}); "
                           "expected an MJCF .xml file inside that folder (a relative path that does not leave it by "
                           "'..' or a symbolic link), or a model name")
        if path.suffix.lower() != ".xml":
            raise LabError(f"{self.source}: model {name!r} is not an MJCF .xml file; expected a model name or an "
                           "MJCF .xml file inside the lab's folder")
        if not path.is_file():
            raise LabError(f"{self.source}: model file {path} does not exist")
        return path


    def replay_file(self) -> Path | None:
        """The resolved trajectory file the `replay` field names (None without one); LabError unless it is a file inside
        the lab's folder (the rule of the model's path: neither `..`, an absolute path nor a symbolic link leads out)."""
        name = self.spec.get("replay")
        if name is None:
            return None
        where = f"{self.source}: replay {name!r}"
        if "\0" in name:
            raise LabError(f"{where} holds a NUL byte; expected a trajectory .npz file inside the lab's folder")
        if self.base_dir is None:
            raise LabError(f"{where} is a file path, but the lab has no folder to start it from; expected a lab file")
        folder = self.base_dir.resolve()
        path = (folder / name).resolve()
        if not path.is_relative_to(folder):
            raise LabError(f"{where} leads outside the lab's folder {folder} (to {path}); expected a trajectory file "
                           "(Trajectory.save's .npz) inside that folder")
        if not path.is_file():
            raise LabError(f"{where}: the file {path} does not exist; expected a trajectory saved by Trajectory.save")
        return path

    def load_replay(self) -> None:
        """Read the run the `replay` field names into `trajectory`; LabError naming the field for a file that is not a
        physai trajectory, holds NaN, or whose times do not rise from its first state by a positive dt."""
        path = self.replay_file()
        if path is None:
            return
        try:
            run = trajectory_files.load(path)
        except TrajectoryFileError as exc:
            raise LabError(f"{self.source}: replay {self.spec['replay']!r}: {exc}") from None
        if not (run["dt"] > 0 and np.all(np.diff(run["t"]) > 0)):
            raise LabError(f"{self.source}: replay {self.spec['replay']!r}: its times do not rise (dt = {run['dt']}); "
                           "expected a run saved by Trajectory.save")
        self.trajectory = run


def bundled_labs() -> list[str]:
    """Names of the labs shipped with physai (`physai lab NAME`)."""
    return sorted(p.stem for p in LABS_DIR.glob("*.json"))


def read_text_file(path: str | Path, what: str = "the lab file", error: type[PhysaiError] = LabError,
                   max_bytes: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of the regular file at `path` (a byte order mark dropped), reading at most max_bytes + 1 bytes.
    `error` (LabError, LessonError), naming `what` the file is, says what is wrong: a NUL byte in the path, a file that
    cannot be opened, one that is not a regular file (a device such as /dev/zero, a FIFO, a folder), one larger than
    max_bytes, or text that is not UTF-8."""
    if "\0" in str(path):
        raise error(f"the path of {what} {str(path)!r} holds a NUL byte; expected a file's path")
    path = Path(path).expanduser()
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))     # a FIFO opens without waiting for a writer
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise error(f"cannot read {what} {path}: not a regular file (a device, a FIFO or a folder); expected a "
                            "UTF-8 text file")
            with os.fdopen(fd, "rb", closefd=False) as f:
                data = f.read(max_bytes + 1)
        finally:
            os.close(fd)
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror or exc}; expected a UTF-8 text file") from None
    if len(data) > max_bytes:
        raise error(f"cannot read {what} {path}: larger than {max_bytes >> 20} MB; expected a UTF-8 text file of "
                    "at most that size")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise error(f"cannot read {what} {path}: {exc}; expected a UTF-8 text file") from None


def load_lab(target: str) -> Lab:
    """A bundled lab by name, a lab .json file, or the first lab block of a lesson file (any other file)."""
    path = Path(target).expanduser()
    if target in bundled_labs() and not path.is_file():
        path = LABS_DIR / f"{target}.json"
        return lab_from_json(path.read_text(encoding="utf-8-sig"), f"bundled lab {target}", path.parent)
    if "\0" not in target and not path.exists():
        if path.suffix or "/" in target or "\\" in target:
            raise LabError(f"no such lab file: {target}")
        close = difflib.get_close_matches(target, bundled_labs(), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise UnknownLabError(f"unknown lab {target!r}.{hint} Bundled labs: {', '.join(bundled_labs())}; "
                              "or give a lab .json file or a lesson file with a ```lab simlab {...}``` block")
    text = read_text_file(target)                            # a byte order mark, as some editors write, is dropped
    if path.suffix.lower() == ".json":
        return lab_from_json(text, str(path), path.parent)
    return lab_from_lesson_text(text, str(path), path.parent)


#: The deepest nesting of lists and objects a lab's JSON may have (a lab needs 4; Python's decoder recurses per level).
MAX_DEPTH = 32


def _shallow(decode, source: str):
    """decode()'s JSON value, LabError when it nests deeper than MAX_DEPTH (too deep for the decoder too)."""
    too_deep = LabError(f"{source}: the lab's JSON nests lists and objects deeper than {MAX_DEPTH} levels; a lab needs "
                        "a few")
    try:
        value = decode()
    except RecursionError:
        raise too_deep from None
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        for child in children:
            if isinstance(child, (dict, list)):
                if depth >= MAX_DEPTH:
                    raise too_deep
                stack.append((child, depth + 1))
    return value


def json_at(text: str, index: int, source: str) -> tuple[object, int, bool]:
    """(value, index just past it, whether curly quotes were read as straight ones) of the JSON value that starts at
    text[index]: as it stands, else with curly double quotes read as straight ones (what a lesson's text extraction
    does to quotes). json.JSONDecodeError if neither is JSON; LabError if it nests deeper than MAX_DEPTH."""
    decoder, ends = json.JSONDecoder(), []

    def decode(t: str):
        value, end = decoder.raw_decode(t, index)
        ends.append(end)
        return value

    try:
        return _shallow(lambda: decode(text), source), ends[-1], False
    except json.JSONDecodeError:
        return _shallow(lambda: decode(text.translate(CURLY_DOUBLE)), source), ends[-1], True


def lab_from_json(text: str, source: str = "<lab>", base_dir: Path | None = None) -> Lab:
    """Parse and validate a lab given as JSON text (a leading byte order mark is ignored)."""
    try:
        spec = _shallow(lambda: json.loads(text.removeprefix("\ufeff")), source)
    except json.JSONDecodeError as exc:
        raise LabError(f"{source}: malformed JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from None
    return _checked(Lab(validate(spec, source), source, base_dir))


def _checked(lab: Lab) -> Lab:
    """The lab, once a model given as a path is known to be a file inside the lab's folder, and the run it replays
    read (LabError otherwise)."""
    if lab.base_dir is not None:
        lab.model_file()
    lab.load_replay()
    return lab


def lab_from_lesson_text(text: str, source: str = "<lesson>", base_dir: Path | None = None) -> Lab:
    """The first ```lab simlab {...}``` block of a lesson's text, parsed and validated.

    Text extracted from a formatted lesson may have its straight quotes turned into curly ones (“ ”):
    if the block is not JSON as it stands, curly double quotes are read as straight ones, and curly single
    quotes inside the scripts as straight ones, so the block runs unchanged. A block needs no closing fence.
    """
    starts = list(BLOCK_START.finditer(text))
    if not starts:
        raise LabError(f"{source} has no lab block (a fenced block that starts with ```lab simlab {{...}})")
    lab, _ = lab_block_at(text, starts[0], source, base_dir)
    if len(starts) > 1:
        lab.notes.append(f"{source} has {len(starts)} lab blocks; using the first")
    return lab


def lab_block_at(text: str, start: re.Match, source: str = "<lesson>", base_dir: Path | None = None) -> tuple[Lab, int]:
    """(the lab, the index in `text` just past its JSON) of the lab block BLOCK_START matched at `start`; LabError if
    unusable. Curly quotes as lab_from_lesson_text reads them."""
    brace = text.find("{", start.end())
    if brace < 0 or text[start.end():brace].strip():
        raise LabError(f"{source}, line {_line(text, start.start())}: the lab block has no JSON object after 'lab simlab'")
    try:
        spec, end, normalised = json_at(text, brace, source)
    except json.JSONDecodeError as exc:
        raise LabError(f"{source}: the lab block at line {_line(text, start.start())} is not valid JSON "
                       f"(also with curly quotes read as straight ones): {exc.msg} at line {exc.lineno}, "
                       f"column {exc.colno}") from None
    if normalised:
        spec = _straighten_scripts(spec)
    lab = _checked(Lab(validate(spec, source), source, base_dir))
    if normalised:
        lab.notes.append("curly quotes in the lab block were read as straight ones")
    return lab, end


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

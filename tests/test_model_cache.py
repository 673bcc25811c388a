"""physai.models' cache of compiled robots (.mjb): a cached load is the same model, an edited robot is compiled again,
PHYSAI_CACHE_DIR=off and an unwritable folder only mean no cache."""

import mujoco
import numpy as np
import pytest

from physai import models

XML = """<mujoco><include file="arm.xml"/></mujoco>"""
ARM = """<mujoco><worldbody><body><joint type="hinge"/><geom type="capsule" size="0.05" fromto="0 0 0 0 0 -0.5"
mass="{mass}"/></body></worldbody></mujoco>"""


def arrays(m: mujoco.MjModel) -> dict:
    """Every numeric array of the model, by name."""
    out = {}
    for name in dir(m):
        if not name.startswith("_"):
            value = getattr(m, name)
            if isinstance(value, np.ndarray) and value.dtype.kind in "fiu":
                out[name] = value
    return out


def robot(tmp_path, mass=1.0):
    folder = tmp_path / "robot"
    folder.mkdir(exist_ok=True)
    (folder / "arm.xml").write_text(ARM.format(mass=mass))
    (folder / "scene.xml").write_text(XML)
    return folder / "scene.xml", folder


def test_a_cached_load_is_the_same_model(tmp_path, monkeypatch):
    monkeypatch.setenv("PHYSAI_CACHE_DIR", str(tmp_path / "cache"))
    first = models.load("franka_emika_panda")
    saved = list((tmp_path / "cache").glob("*.mjb"))
    assert len(saved) == 1
    monkeypatch.setattr(mujoco.MjModel, "from_xml_path", lambda *a: pytest.fail("compiled again instead of read from the cache"))
    again = models.load("franka_emika_panda")
    a, b = arrays(first), arrays(again)
    assert a.keys() == b.keys() and len(a) > 50
    for name in a:                                    # the same file read back: the same numbers
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def test_an_edited_robot_is_compiled_again(tmp_path, monkeypatch):
    monkeypatch.setenv("PHYSAI_CACHE_DIR", str(tmp_path / "cache"))
    xml, folder = robot(tmp_path, mass=1.0)
    assert models.compiled(xml, folder).body_mass[1] == 1.0
    assert models.compiled(xml, folder).body_mass[1] == 1.0          # from the cache
    robot(tmp_path, mass=2.5)                                          # an included file changes
    assert models.compiled(xml, folder).body_mass[1] == 2.5
    assert len(list((tmp_path / "cache").glob("robot-scene-*.mjb"))) == 2


def test_the_cache_can_be_off_or_unwritable(tmp_path, monkeypatch):
    xml, folder = robot(tmp_path)
    monkeypatch.setenv("PHYSAI_CACHE_DIR", "off")
    assert models.cache_dir() is None and models.compiled(xml, folder).nv == 1
    blocked = tmp_path / "a_file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("PHYSAI_CACHE_DIR", str(blocked))
    assert models.compiled(xml, folder).nv == 1
    monkeypatch.delenv("PHYSAI_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert models.cache_dir() == tmp_path / "xdg" / "physai"


def test_a_damaged_cache_file_is_replaced(tmp_path, monkeypatch):
    monkeypatch.setenv("PHYSAI_CACHE_DIR", str(tmp_path / "cache"))
    xml, folder = robot(tmp_path)
    models.compiled(xml, folder)
    (saved,) = (tmp_path / "cache").glob("*.mjb")
    saved.write_bytes(b"not a model")
    assert models.compiled(xml, folder).nv == 1
    assert mujoco.MjModel.from_binary_path(str(saved)).nv == 1

"""physai.models' cache of compiled robots (a .mjb and its .json header): a cached load is the same model, an edited
robot is compiled again and its replaced entry removed, PHYSAI_CACHE_DIR=off and an unwritable folder only mean no
cache; a cache entry is trusted only with its own key, its checksum and a physical model (flipped bytes, another robot's
file, negative masses: compiled again), ~ and $VARIABLES are expanded in PHYSAI_CACHE_DIR, and no *.part file is left
behind."""

import os
import time

import mujoco
import numpy as np
import pytest

from physai import models
from physai.exceptions import CacheWarning

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
    assert len(saved) == 1 and saved[0].with_suffix(".json").is_file()
    monkeypatch.setattr(mujoco.MjModel, "from_xml_path", lambda *a: pytest.fail("compiled again instead of read from the cache"))
    again = models.load("franka_emika_panda")
    a, b = arrays(first), arrays(again)
    assert a.keys() == b.keys() and len(a) > 50
    for name in a:                                    # the same file read back: the same numbers
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def test_an_edited_robot_is_compiled_again(tmp_path, monkeypatch):
    """An edited robot gets a new entry, which replaces the old one (removed); so do the single files of physai's
    earlier format for the same robot and entry file, while another robot's entry and foreign files are kept."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("PHYSAI_CACHE_DIR", str(cache))
    xml, folder = robot(tmp_path, mass=1.0)
    assert models.compiled(xml, folder).body_mass[1] == 1.0
    (first,) = cache.glob("robot-scene-*.mjb")
    assert models.compiled(xml, folder).body_mass[1] == 1.0          # from the cache
    kept = [cache / "other-scene-0123abcd-0123456789abcdef01234567.mjb", cache / "notes.txt"]
    earlier = [cache / f"robot-scene-{'0' * 32}.mjb", cache / f"robot-scene-{'1' * 32}.physai-mjb"]
    for f in kept + earlier:
        f.write_bytes(b"x")
    robot(tmp_path, mass=2.5)                                          # an included file changes
    assert models.compiled(xml, folder).body_mass[1] == 2.5
    (second,) = cache.glob("robot-scene-*.mjb")
    assert second != first and not first.with_suffix(".json").exists()
    assert all(f.exists() for f in kept) and not any(f.exists() for f in earlier)


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
    header = saved.with_suffix(".json")
    for damage in (b"not a model", saved.read_bytes()[:-100], b""):        # garbage, truncated, empty
        saved.write_bytes(damage)
        with pytest.warns(CacheWarning, match="discarded the cached model .*checksum fails"):
            assert models.compiled(xml, folder).nv == 1
        assert models.read_cached(saved, models.cache_key(xml, folder)).nv == 1
    for damage in (b"{not json", b'{"format": "physai-mjb 1"}', b"\xff\xfe"):   # a header damaged or of another format
        header.write_bytes(damage)
        with pytest.warns(CacheWarning, match="discarded the cached model .*header"):
            assert models.compiled(xml, folder).nv == 1
        assert models.read_cached(saved, models.cache_key(xml, folder)).nv == 1
    for lost in (saved, header):                                           # one of the two files removed
        lost.unlink()
        with pytest.warns(CacheWarning, match="discarded the cached model .*unreadable"):
            assert models.compiled(xml, folder).nv == 1
        assert models.read_cached(saved, models.cache_key(xml, folder)).nv == 1


def panda_files(tmp_path, monkeypatch):
    """The Panda loaded once through an empty cache: (its model, its cache file)."""
    monkeypatch.setenv("PHYSAI_CACHE_DIR", str(tmp_path / "cache"))
    fresh = models.load("franka_emika_panda")
    (saved,) = (tmp_path / "cache").glob("franka_emika_panda-*.mjb")
    return fresh, saved


def assert_same_model(a: mujoco.MjModel, b: mujoco.MjModel) -> None:
    x, y = arrays(a), arrays(b)
    assert x.keys() == y.keys()
    for name in x:
        np.testing.assert_array_equal(x[name], y[name], err_msg=name)


def test_flipped_bytes_are_recompiled(tmp_path, monkeypatch):
    """A few flipped bits in the .mjb (in a mass, in the middle, near the end): the checksum fails, the Panda is compiled
    again and equals a fresh compile, and the cache file is replaced by a good one."""
    fresh, saved = panda_files(tmp_path, monkeypatch)
    good = saved.read_bytes()
    for at in (1000, len(good) // 2, len(good) - 9):
        data = bytearray(good)
        data[at] ^= 0b0010_0100
        saved.write_bytes(bytes(data))
        with pytest.warns(CacheWarning, match="checksum fails"):
            again = models.load("franka_emika_panda")
        assert_same_model(again, fresh)
        assert saved.read_bytes() == good                                # replaced by the good file
    assert_same_model(models.load("franka_emika_panda"), fresh)           # read from it, without warning


def test_another_robots_file_under_this_name_is_recompiled(tmp_path, monkeypatch):
    """The SO-101's cache entry copied over the Panda's: its header holds the SO-101's key, so the Panda is compiled;
    the SO-101's .mjb alone under the Panda's header fails the checksum."""
    fresh, saved = panda_files(tmp_path, monkeypatch)
    models.load("robotstudio_so101")
    (so101,) = (tmp_path / "cache").glob("robotstudio_so101-*.mjb")
    for suffix, message in ((".mjb", "checksum fails"),
                            (".json", "another key: .*robot 'robotstudio_so101', expected 'franka_emika_panda'")):
        saved.with_suffix(suffix).write_bytes(so101.with_suffix(suffix).read_bytes())
        with pytest.warns(CacheWarning, match=message):
            panda = models.load("franka_emika_panda")
        assert panda.nq == 9
        assert_same_model(panda, fresh)


def test_an_unphysical_cached_model_is_recompiled(tmp_path, monkeypatch):
    """A compile with a negative mass is not cached; a cache file with a valid key and checksum whose model has a
    negative mass (here: saved while the checks were off) fails the model's checks and is compiled again."""
    monkeypatch.setenv("PHYSAI_CACHE_DIR", str(tmp_path / "cache"))
    xml, folder = robot(tmp_path)
    compile_xml = mujoco.MjModel.from_xml_path

    def faulty(path):
        m = compile_xml(path)
        m.body_mass[1] = -1.0
        return m

    monkeypatch.setattr(mujoco.MjModel, "from_xml_path", faulty)
    assert models.compiled(xml, folder).body_mass[1] == -1.0                 # returned, but not cached
    assert list((tmp_path / "cache").glob("*.mjb")) == []
    monkeypatch.setattr(models, "check_cached_model", lambda m: None)         # a checker that let it through
    assert models.compiled(xml, folder).body_mass[1] == -1.0
    assert len(list((tmp_path / "cache").glob("*.mjb"))) == 1
    monkeypatch.undo()
    monkeypatch.setenv("PHYSAI_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.warns(CacheWarning, match=r"not physical: body 1 .*mass -1.0 kg"):
        assert models.compiled(xml, folder).body_mass[1] == 1.0
    assert models.compiled(xml, folder).body_mass[1] == 1.0                  # the replaced file


def test_the_folder_expands_home_and_variables(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PHYSAI_CACHE_DIR", "~/x")
    assert models.cache_dir() == tmp_path / "home" / "x"
    xml, folder = robot(tmp_path)
    models.compiled(xml, folder)
    assert len(list((tmp_path / "home" / "x").glob("*.mjb"))) == 1
    assert not (tmp_path / "~").exists()
    monkeypatch.setenv("SOMEWHERE", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("PHYSAI_CACHE_DIR", "$SOMEWHERE/physai")
    assert models.cache_dir() == tmp_path / "elsewhere" / "physai"
    monkeypatch.delenv("PHYSAI_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", "~/xdg")
    assert models.cache_dir() == tmp_path / "home" / "xdg" / "physai"


@pytest.mark.parametrize("failing", [1, 2], ids=["mjb", "header"])
@pytest.mark.parametrize("error", [OSError("disk full"), KeyboardInterrupt()])
def test_a_failed_write_leaves_no_part_file(tmp_path, monkeypatch, error, failing):
    """The rename of the .mjb or of its header fails (a full disk: the model is still returned, uncached) or the process
    is interrupted while writing (the interruption goes through): either way no *.part file and no cache file remain."""
    monkeypatch.setenv("PHYSAI_CACHE_DIR", str(tmp_path / "cache"))
    xml, folder = robot(tmp_path)
    calls, replace = [], os.replace

    def fail(*args):
        calls.append(args)
        if len(calls) == failing:
            raise error
        replace(*args)

    monkeypatch.setattr(os, "replace", fail)
    if isinstance(error, OSError):
        assert models.compiled(xml, folder).nv == 1
    else:
        with pytest.raises(KeyboardInterrupt):
            models.compiled(xml, folder)
    assert list((tmp_path / "cache").iterdir()) == []


def test_stale_part_files_are_removed(tmp_path, monkeypatch):
    """A *.part file an hour old (a process killed while writing) is removed by the next write; a young one (a write
    under way in another process) is left alone; neither is ever read."""
    monkeypatch.setenv("PHYSAI_CACHE_DIR", str(tmp_path / "cache"))
    cache = tmp_path / "cache"
    cache.mkdir()
    stale, young = cache / ".robot-scene-x.mjb.abc.part", cache / ".robot-scene-y.mjb.def.part"
    stale.write_bytes(b"half a model")
    young.write_bytes(b"half a model")
    old = time.time() - 2 * models.STALE_PART_AGE
    os.utime(stale, (old, old))
    xml, folder = robot(tmp_path)
    assert models.compiled(xml, folder).nv == 1
    assert not stale.exists() and young.exists()
    assert len(list(cache.glob("*.mjb"))) == 1

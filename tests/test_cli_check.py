"""`physai check`: the table, its exit status, and a failing run."""

import re

import pytest

from physai import dynamics, engine
from physai.cli import main
from physai.commands import check

from helpers import TENDON_XML

LABELS = ("(a) M symmetric", "(a) M positive definite", "(b) hold torque", "(c) ID(FD(tau))", "(d) C qd",
          "(d) Mdot - 2C skew", "(d) passivity", "(e) balance, physai terms", "(e) balance, MuJoCo's own",
          "(e) M vs mj_fullM", "(e) bias vs", "(e) actuator vs", "(e) passive vs", "(e) applied vs")


def _rows(out: str) -> dict[str, list[str]]:
    return {label: line for line in out.splitlines() for label in LABELS if line.startswith(label)}


@pytest.mark.parametrize("name", ["arm7", "franka_emika_panda"])
def test_passes(name, capsys):
    assert main(["check", name, "--states", "5", "--seed", "4"]) == 0
    out = capsys.readouterr().out
    assert "5 random states, seed 4" in out
    assert "mjDSBL_CONSTRAINT" in out and "qfrc_constraint = 0" in out
    rows = _rows(out)
    assert set(rows) == set(LABELS)
    for label, line in rows.items():
        assert " pass " in line, line
        worst, tol = map(float, re.search(r" (\S+) +(?:<=|>) (\S+)  ", line).groups())
        assert worst > tol if "positive definite" in label else worst <= tol
    assert out.rstrip().endswith("all checks pass")


def test_tampered_model_exits_1(capsys, monkeypatch):
    def heavier(m):
        tree = dynamics.tree_from_mujoco(m)
        tree.bodies[1].mass *= 1.05
        return engine.compile_tree(tree)

    monkeypatch.setattr(check.engine, "from_mujoco", heavier)
    assert main(["check", "arm2", "--states", "3"]) == 1
    out = capsys.readouterr().out
    assert " FAIL " in _rows(out)["(e) balance, physai terms"]
    assert "FAIL: " in out and "balance" in out.splitlines()[-1]


def test_errors_exit_2(capsys, tmp_path):
    assert main(["check", "no_such_robot"]) == 2
    assert "no_such_robot" in capsys.readouterr().err
    tendon = tmp_path / "tendon.xml"
    tendon.write_text('<mujoco><worldbody><body><joint name="h"/><geom size="0.1"/></body></worldbody>'
                      '<tendon><fixed stiffness="1 0.5"><joint joint="h" coef="1"/></fixed></tendon></mujoco>')
    assert main(["check", str(tendon), "--states", "2"]) == 2            # polynomial tendon stiffness: unsupported
    assert "polynomial tendon stiffness" in capsys.readouterr().err


def test_gravity_compensation_and_fluid_pass(capsys, tmp_path):
    """Gravity compensation and fluid forces (physai.engine.passive): every check passes against MuJoCo."""
    path = tmp_path / "passive.xml"
    path.write_text('<mujoco><option density="1000" viscosity="0.01" wind="0.3 0 0"/><worldbody><body gravcomp="0.7">'
                    '<joint/><geom size="0.1"/><body pos="0 0 -0.3"><joint/><geom type="box" size="0.1 0.05 0.02" '
                    'fluidshape="ellipsoid"/></body></body></worldbody></mujoco>')
    assert main(["check", str(path), "--states", "3"]) == 0


def test_tendons_pass(capsys, tmp_path):
    """Tendons (physai.engine.tendon, helpers.TENDON_XML): every check passes against MuJoCo."""
    path = tmp_path / "tendons.xml"
    path.write_text(TENDON_XML)
    assert main(["check", str(path), "--states", "3"]) == 0


@pytest.mark.parametrize("name", ["unitree_h1", "unitree_g1"])
def test_humanoids_pass(capsys, name):
    """Free-floating humanoids (a free joint at the pelvis): every check passes against MuJoCo."""
    assert main(["check", name, "--states", "5"]) == 0
    out = capsys.readouterr().out
    assert "1 free" in out.splitlines()[0] and out.rstrip().endswith("all checks pass")

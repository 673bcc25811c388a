"""`physai check`: the table, its exit status, and a failing run."""

import re

import pytest

from physai import dynamics
from physai.cli import main
from physai.commands import check

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
    original = dynamics.tree_from_mujoco

    def heavier(m):
        tree = original(m)
        tree.bodies[1].mass *= 1.05
        return tree

    monkeypatch.setattr(check.dynamics, "tree_from_mujoco", heavier)
    assert main(["check", "arm2", "--states", "3"]) == 1
    out = capsys.readouterr().out
    assert " FAIL " in _rows(out)["(e) balance, physai terms"]
    assert "FAIL: " in out and "balance" in out.splitlines()[-1]


def test_errors_exit_2(capsys):
    assert main(["check", "no_such_robot"]) == 2
    assert "no_such_robot" in capsys.readouterr().err
    assert main(["check", "unitree_h1", "--states", "2"]) == 2          # free joint: unsupported
    assert "free" in capsys.readouterr().err

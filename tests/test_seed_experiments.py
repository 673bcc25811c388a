"""The seed experiments in experiments/: their functions on few states, with their machine-precision claims
asserted against live MuJoCo (never against a number copied from a seed, except where labeled a cross-check)."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1] / "experiments"


def _load(folder: str, script: str):
    spec = importlib.util.spec_from_file_location(script, ROOT / folder / f"{script}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def me():
    return _load("manipulator-equation", "manipulator_equation")


@pytest.fixture(scope="module")
def eom():
    return _load("equations-of-motion", "equations_of_motion")


@pytest.fixture(scope="module")
def inv():
    return _load("inverse-dynamics", "inverse_dynamics")


# ---- seed 004: the manipulator equation ----


def test_point_mass_arm_matches_closed_forms(me):
    v = me.quantities(me.point_mass_arm())
    p, s = v["physai"], v["seed"]
    for key in ("M", "g", "C", "Mdot", "ddq"):
        assert np.abs(p[key] - s[key]).max() < 1e-12, key
    assert (p["eig"] > 0).all() and np.array_equal(p["M"], p["M"].T)
    assert np.abs(p["hold"]).max() < 1e-12
    assert np.abs(p["tau_back"] - me.TAU).max() < 1e-12
    assert p["skew"] < 1e-14 and abs(p["passivity"]) < 1e-14


def test_point_mass_arm_checks(me):
    r = me.four_checks(me.point_mass_arm(), n=20)
    for who in ("physai", "seed"):
        c = r[who]
        assert c["min_eigenvalue"] > 0
        assert max(c["hold"], c["roundtrip"], c["coriolis"], c["skew"], c["passivity"]) < 1e-12
    assert max(r["differences"].values()) < 1e-12


def test_manipulator_main_and_saved_output(me):
    lines = me.main(n=5)
    assert lines[0].startswith("Seed 004") and any("Property 2" in x for x in lines)
    saved = (ROOT / "manipulator-equation" / "output.txt").read_text()
    assert saved.splitlines()[:20] == lines[:20]          # the state-specific block does not depend on n


# ---- seed 002: the equations of motion ----


def test_two_link_lagrangian(eom):
    a = eom.two_link(n=30)
    assert a["M"] < 1e-14 and a["bias"] < 1e-12
    assert 1e-9 < a["M_rod"] < 1e-6                       # the XML's rounded inertias, not the derivation
    assert a["M_physai"] < 1e-14 and a["bias_physai"] < 1e-12
    assert np.abs(a["M00"] - a["M00_lagrange"]).max() < 1e-14
    assert a["M0pi2"][0, 1] < a["M00"][0, 1]
    assert a["M00"][0, 0] == pytest.approx(0.486, abs=5e-6)   # cross-check with the seed's printed M11 (knowledge check)


def test_armature_and_damping(eom):
    b = eom.armature_and_damping()
    assert np.abs(b["dM"] - 0.1 * np.eye(2)).max() < 1e-14
    assert np.abs(b["dM_physai"] - 0.1 * np.eye(2)).max() < 1e-14
    assert np.abs(b["passive"] - b["damping"]).max() < 1e-15
    assert np.abs(b["passive_physai"] - b["passive"]).max() < 1e-15 and b["bias_no_damping"] < 1e-13


def test_balance_arm7(eom):
    c = eom.balance(n=15)
    assert c["mujoco"] < 1e-10 and c["physai"] < 1e-10 and c["constraint"] == 0.0


def test_energy_and_spectrum(eom):
    e = eom.energy_and_spectrum()
    assert e["T_matrix"] == pytest.approx(e["T_mujoco"], abs=1e-12)
    assert e["T_physai"] == pytest.approx(e["T_mujoco"], abs=1e-12)
    assert e[0.05]["symmetric"] and e[0.0]["symmetric"]
    assert e[0.05]["cond"] < e[0.0]["cond"] / 10 and e[0.05]["lo"] > 0.05 > e[0.0]["lo"]
    assert e[0.05]["physai"] < 1e-13 and e[0.0]["physai"] < 1e-13


def test_exercise_tip_mass(eom):
    rows = eom.exercise()
    assert len(rows) == 5
    for x in rows:
        assert max(x["dM"], x["dg"], x["dM_physai"], x["dg_physai"]) < 1e-13
        assert x["dM_bare"] > 0.05                        # the update matters


def test_challenge_passivity(eom):
    ch = eom.challenge(steps=200)
    assert ch["dTdt"] < 1e-12 < 0.1 < ch["inertial"]
    assert ch["skew"] < 1e-14 and ch["skew_hand"] < 1e-14 and ch["passivity"] < 1e-13
    assert ch["dC"] < 1e-14 and ch["dMdot"] < 1e-14 and ch["Cqd"] < 1e-13
    assert ch["drift"] < 1e-9 and ch["vs_mujoco"] < 1e-10


# ---- seed 003: inverse dynamics ----


def test_inverse_undoes_forward(inv):
    a = inv.inverse_undoes_forward(n=20)
    assert a["mujoco"] < 1e-10 and a["physai"] < 1e-10 and a["identity"] < 1e-12 and a["constraint"] == 0.0


@pytest.fixture(scope="module")
def motion(inv):
    return inv.Motion(steps=100)


def test_euler_four_ways(inv, motion):
    rows = inv.euler_four_ways(motion)
    assert [(r["accel"], r["invdiscrete"]) for r in rows] == list(inv.WAYS)
    *inexact, exact = rows
    assert exact["err_mj"].max() < 1e-14 and exact["err_physai"].max() < 1e-14
    assert exact["cross_mj"] < 1e-14 and exact["cross_physai"] < 1e-14
    for r in inexact:
        assert r["err_mj"][-1] > 1e-6 and r["err_physai"][-1] > 1e-6
    assert max(r["dtau"] for r in rows) < 1e-12


def test_other_integrators(inv):
    o = inv.other_integrators(inv.Motion(steps=40))
    for name in ("implicitfast", "implicit"):
        assert max(o[name]["err_mj"], o[name]["err_physai"], o[name]["cross_mj"], o[name]["cross_physai"]) < 1e-14
        assert o[name]["dtau"] < 1e-12
    rk = o["rk4"]
    assert "RK4" in rk["refusal"]
    assert rk["error"] < 1e-12 and rk["err_physai"] < 1e-12 and rk["err_mj"] < 1e-10


def test_contact_inverse(inv):
    import mujoco

    c = inv.contact_inverse(push_steps=600)
    m = mujoco.MjModel.from_xml_string(inv.BOX.format(tc=0.02))
    weight = m.body_mass[1] * -m.opt.gravity[2]
    for tc in (0.02, 0.005):
        f = c[tc]["forces"]
        assert f[0] == pytest.approx(weight, abs=1e-9)          # 1 mm above: no contact, the whole weight
        assert abs(f[1]) < 1e-3                                  # at rest the contact carries it
        assert f[2] > f[3] > f[4] and f[2] < 0
        assert 0 < c[tc]["depth"] < 1e-3
    assert c[0.005]["forces"][4] < c[0.02]["forces"][4] and c[0.005]["depth"] < c[0.02]["depth"]
    assert c["fwdinv"][0] < 1e-9 and c["speed"] > 0.1


def test_exercise_arm2(inv):
    e = inv.exercise(steps=100)
    assert e["lagrange_vs_mj"] < 1e-12 and e["physai_vs_exact"] < 1e-12
    assert e["err"][2] < 1e-14 < 1e-8 < min(e["err"][:2])
    assert e["limit"] < 1


def test_challenge_rk4_vs_euler(inv):
    mo = inv.Motion(steps=60)
    from physai import inverse

    shot = inverse.rk4_shooting(mo.tree, mo.samples[: mo.n + 1], mo.h)
    euler = inverse.trajectory_torques(mo.tree, mo.samples[: mo.n + 1], mo.h, "euler")
    ch = inv.challenge(mo, shot, euler)
    assert ch["pair_vs_mid"] < 1e-4 < ch["rk4_vs_euler"]
    assert ch["rk4_vs_mid"] < ch["rk4_vs_start"]


def test_saved_outputs_exist():
    for folder in ("equations-of-motion", "inverse-dynamics", "manipulator-equation"):
        text = (ROOT / folder / "output.txt").read_text()
        assert "seed" in text and (ROOT / folder / "README.md").is_file()

"""Lesson 11 · Build it: the five steps, each with the lesson's check against MuJoCo, using physai.dynamics.

    uv run python experiments/11-rigid-body-dynamics/build.py     (or: physai lesson 11 build)

Prints every check and writes the same text to build_output.txt beside this file. Residuals at machine precision
are printed as the bounds of BOUNDS (their last digits depend on the CPU), so the file is the same on every machine;
the lesson's own residuals are quoted beside them.
"""

import argparse
import time
from pathlib import Path

import mujoco
import numpy as np

from physai import dynamics as dyn
from physai import models
from physai.lessons import Transcript, bound
from physai.lessons import lesson11 as L
from physai.lessons.lesson11 import full_mass, mj_state, random_poses

HERE = Path(__file__).resolve().parent

#: Printed bounds on the residuals (tests/test_lesson11_experiments.py asserts the values against them). Each is
#: 10 to 100 times the worst value seen on the kernels tried: a few eps (2.2e-16) times the quantity's scale (metres
#: ~1, torques up to ~30 N m, Panda M entries up to ~3 kg m^2), summed over a chain of bodies.
BOUNDS = {
    "com": 1e-14,            # [m] centres of mass vs xipos
    "rnea": 1e-13,           # [N m] rnea vs mj_inverse and the hand formula, |tau| up to ~9 N m
    "bias": 1e-13,           # [N m] bias vs qfrc_bias
    "so101_gravity": 1e-14,  # [N m] SO-101 g(q) vs qfrc_bias, |g| < 1 N m
    "mass": 1e-14,           # [kg m^2] double pendulum M vs mj_fullM and the formula, entries < 0.3
    "so101_mass": 1e-15,     # [kg m^2] SO-101 M entries < 0.05
    "panda_mass": 1e-12,     # [kg m^2] Panda M entries up to ~3
    "trajectory": 1e-11,     # [rad] our Euler vs mj_step after 5000 steps: rounding accumulated over the run
    "energy_readings": 1e-10,  # [% of the releasable energy] MuJoCo's readings vs our energy one step earlier
}
#: The lesson's printed residuals (000_757f3145b1b0dc81.txt, Build it), quoted beside ours; not computed here.
LESSON = {"com": "2.2e-16 m", "rnea": "3.6e-15 N m", "rnea_hand": "3.6e-15 N m", "bias": "2.7e-15 N m",
          "stretched (all 0)": "1.1e-16", "folded (lift -1.57, elbow 1.57)": "1.8e-16",
          "mass": "1.4e-16 kg m^2", "mass_hand": "1.1e-16", "SO-101": "1.9e-17 kg m^2", "Panda": "2.1e-14 kg m^2",
          "trajectory": "1.3e-13 rad"}


def fmt(values, spec: str = "6.3f") -> str:
    return " ".join(f"{v:{spec}}" for v in values)


def step1(out: Transcript, m, d, tree, states) -> float:
    """The body table; centres of mass against xipos over the random poses. Returns the max difference [m]."""
    out("== Step 1. The body tree of the double pendulum ==")
    out("body parent  joint mass (kg)    com in body (m)  inertia diag (kg m^2)")
    for i, b in enumerate(tree.bodies):
        out(f"{i:4d} {b.parent:6d} {b.joint:>6} {b.mass:9.3f} {np.array2string(b.com):>18} {np.array2string(np.diag(b.inertia)):>22}")
    diff = max(np.abs(np.array(dyn.spatial_tree(tree, q)[0]) - mj_state(m, d, q).xipos[1:]).max() for q in states[0])
    out(f"centres of mass vs MuJoCo's xipos, {len(states[0])} random poses: max diff {bound(diff, BOUNDS['com'], 'm')} "
        f"(lesson, quoted: {LESSON['com']})")
    return diff


def step2(out: Transcript, m, d, tree, p, states) -> tuple[float, float]:
    """RNEA against mj_inverse and the hand formula. Returns both max differences [N m]."""
    out(f"== Step 2. Inverse dynamics (RNEA) vs mj_inverse and the hand formula, {len(states[0])} random states ==")
    to_mj = to_hand = 0.0
    for q, qd, qdd in zip(*states):
        tau = dyn.rnea(tree, q, qd, qdd)
        d.qpos[:], d.qvel[:], d.qacc[:] = q, qd, qdd
        mujoco.mj_inverse(m, d)
        to_mj = max(to_mj, np.abs(tau - d.qfrc_inverse).max())
        to_hand = max(to_hand, np.abs(tau - L.hand_inverse(p, q, qd, qdd)).max())
    out(f"max |tau_ours - qfrc_inverse| {bound(to_mj, BOUNDS['rnea'], 'N m')}, max |tau_ours - (M qdd + C qd + g)| "
        f"{bound(to_hand, BOUNDS['rnea'], 'N m')} (lesson, quoted: {LESSON['rnea']} and {LESSON['rnea_hand']})")
    return to_mj, to_hand


def step3(out: Transcript, m, d, tree, states, so101) -> dict:
    """Bias against qfrc_bias on the pendulum; SO-101 g(q) stretched and folded. Returns the numbers."""
    out("== Step 3. Bias c = rnea(q, qd, 0) vs qfrc_bias; at rest it is gravity ==")
    diff = max(np.abs(dyn.bias(tree, q, qd) - mj_state(m, d, q, qd).qfrc_bias).max() for q, qd in zip(states[0], states[1]))
    out(f"double pendulum, {len(states[0])} states: max |c_ours - qfrc_bias| {bound(diff, BOUNDS['bias'], 'N m')} "
        f"(lesson, quoted: {LESSON['bias']})")
    result = {"pendulum": diff}
    sm, sd, stree = so101
    for label, q in L.so101_poses(sm).items():
        g = dyn.gravity(stree, q)
        gd = np.abs(g - mj_state(sm, sd, q).qfrc_bias).max()
        out(f"SO-101 {label:32} g(q) = {fmt(g[:5])} N m, max diff to qfrc_bias {bound(gd, BOUNDS['so101_gravity'], 'N m')} "
            f"(lesson, quoted: {LESSON[label]})")
        result[label] = (g, gd)
    out(L.SO101_REVISION_NOTE)
    return result


def step4(out: Transcript, m, d, tree, p, states, so101, panda) -> dict:
    """Mass matrix against mj_fullM (and the formula); the Panda home diagonal and condition number."""
    out("== Step 4. Mass matrix by composite rigid bodies vs mj_fullM ==")
    to_mj = to_hand = 0.0
    for q in states[0]:
        M = dyn.mass_matrix(tree, q)
        to_mj = max(to_mj, np.abs(M - full_mass(m, mj_state(m, d, q))).max())
        to_hand = max(to_hand, np.abs(M - L.hand_mass_matrix(p, q)).max())
    out(f"double pendulum, {len(states[0])} poses: max diff {bound(to_mj, BOUNDS['mass'], 'kg m^2')} to mj_fullM, "
        f"{bound(to_hand, BOUNDS['mass'])} to the formula (lesson, quoted: {LESSON['mass']} and {LESSON['mass_hand']})")
    result = {"pendulum": (to_mj, to_hand)}
    for label, (rm, rd, rtree), limit in (("SO-101", so101, BOUNDS["so101_mass"]), ("Panda", panda, BOUNDS["panda_mass"])):
        poses = random_poses(rm, 20)
        diff = max(np.abs(dyn.mass_matrix(rtree, q) - full_mass(rm, mj_state(rm, rd, q))).max() for q in poses)
        out(f"{label}: {rm.nv} joints, {len(poses)} random poses, max diff {bound(diff, limit, 'kg m^2')} "
            f"(lesson, quoted: {LESSON[label]})")
        result[label] = diff
    pm, _, ptree = panda
    M = dyn.mass_matrix(ptree, pm.key("home").qpos)
    cond = np.linalg.cond(M[:7, :7])
    out(f"Panda 'home': diag M = {fmt(np.diag(M)[:7], '.3f')} kg m^2, cond(M[:7, :7]) = {cond:.1f}")
    result["panda_diag"], result["panda_cond"] = np.diag(M)[:7], cond
    return result


def step5(out: Transcript, m, tree, steps: int = 5000) -> dict:
    """physai's forward dynamics plus semi-implicit Euler against mj_step (Euler, same model and timestep)."""
    dt = m.opt.timestep
    out(f"== Step 5. Forward dynamics + semi-implicit Euler, {steps * dt:g} s at dt = {dt * 1000:g} ms (the Experiment's Euler row) ==")
    q, _, energy = L.euler_simulation(tree, dt, steps)
    reference = L.mujoco_energy_run(m, "Euler")                   # mj_step on the same model, same timestep
    e0_mj, e_mj = reference(dt, steps * dt)
    scale = L.releasable_energy(tree)
    ours, mj = L.EnergyCell.from_run(energy[0], energy, scale), L.EnergyCell.from_run(e0_mj, e_mj, scale)
    dq = np.abs(q - reference.data.qpos).max()
    readings = np.abs(mj.drift - ours.drift[:-1]).max()           # MuJoCo's k-th reading vs our state k (E0 first)
    out(f"after {steps * dt:g} s: max |q_ours - q_mj_step| {bound(dq, BOUNDS['trajectory'], 'rad')} "
        f"(lesson, quoted: {LESSON['trajectory']})")
    out(f"energy error: max {ours.peak:.3f}%, final {ours.final:+.3f}% (one step earlier {ours.drift[-2]:+.3f}%) of {scale:.3f} J")
    out(f"mj_step's d.energy readings: max {mj.peak:.3f}%, final {mj.final:+.3f}%. d.energy after mj_step belongs to "
        "the state at the start of that step: each of MuJoCo's readings equals our energy one step earlier to "
        f"{bound(readings, BOUNDS['energy_readings'], '%')} (all {len(mj.drift)} readings)")
    return {"dq": dq, "ours": ours, "mj": mj, "scale": scale, "readings": readings}


def run(out: Transcript) -> dict:
    """All five steps; returns each step's numbers."""
    m = models.load("double_pendulum")
    d, tree, p = mujoco.MjData(m), dyn.tree_from_mujoco(m), L.PendulumParams.from_model(m)
    states = L.lesson_states()
    so101, panda = _robot("robotstudio_so101"), _robot("franka_emika_panda")
    return {"step1": step1(out, m, d, tree, states),
            "step2": step2(out, m, d, tree, p, states),
            "step3": step3(out, m, d, tree, states, so101),
            "step4": step4(out, m, d, tree, p, states, so101, panda),
            "step5": step5(out, m, tree)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE, help="folder for build_output.txt (default: beside this script)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    out = Transcript()
    run(out)
    args.out.mkdir(parents=True, exist_ok=True)
    out.save(args.out / "build_output.txt")
    print(f"[timing, not saved] build.py took {time.perf_counter() - start:.2f} s; wrote {args.out / 'build_output.txt'}")
    return 0


def _robot(name: str):
    m = models.load(name)
    return m, mujoco.MjData(m), dyn.tree_from_mujoco(m)


if __name__ == "__main__":
    raise SystemExit(main())

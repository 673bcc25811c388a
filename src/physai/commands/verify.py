"""`physai verify MODEL`: physai's dynamics against MuJoCo's on random states, with timings.

MODEL is a model name (see physai.models) or the path of an MJCF file; a file MuJoCo cannot compile is an error.

For each quantity (rnea, bias, gravity, mass matrix, forward dynamics, energy) the table gives the largest
absolute difference to MuJoCo over N random states, the tolerance 1e-12 x scale (scale = max(1, largest
|MuJoCo value|)), pass/fail, and the time per call of physai and of the equivalent MuJoCo call [µs]. Forward dynamics
is compared in force, M (qacc - MuJoCo's qacc) against the size of the terms that make the forces (the largest
|M| |qacc| + |bias| + |passive| + |applied|): M^-1 of a model with tiny inertias (dm_control's Fish and Manipulator:
cond(M) 6e5 to 7e5) turns rounding-level force differences into qacc differences of 1e-10 (a row by row scale is
not a bound: a light dof's row carries the rounding of the heavier bodies' forces the recursion passes through it).
With --pose NAME it also prints g(q), diag M, armature and cond(M) of the hinge block at that keyframe.
A second table turns the model's joint limits, friction loss and equality constraints on (contacts off) at states that
push limited joints past their range, and compares physai.constraints' inverse dynamics, qfrc_constraint and forward
dynamics with mj_inverse's and mj_forward's.
Exit status 0 when every difference is within its tolerance, 1 otherwise (2 for errors, from cli.py).
"""

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass

import mujoco
import numpy as np

from physai import acceptance, constraints, engine, joints, models
from physai.commands import nonnegative_int, positive_int, require_joints, require_memory
from physai.engine import native
from physai.engine.model_checks import label
from physai.exceptions import UnknownKeyframeError

RTOL = 1e-12        # tolerance = RTOL * max(1, largest |MuJoCo value|) (forward dynamics: of the forces' terms)
REPEATS = 3         # timing sweeps over the states; the best one counts
QD_MAX = 1.0        # joint speeds uniform in [-QD_MAX, QD_MAX] [rad/s | m/s]
QDD_MAX = 20.0      # joint accelerations uniform in [-QDD_MAX, QDD_MAX] [rad/s^2 | m/s^2]


@dataclass
class Quantity:
    """One row of the table: how physai computes it, how MuJoCo does, and what is compared."""

    name: str
    reference: str                            # MuJoCo's value, and the call that is timed
    unit: str
    ours: Callable[[int], np.ndarray]         # physai's value at state i
    setup: Callable[[int], None]              # put state i into MjData (not timed)
    call: Callable[[], None]                  # the MuJoCo call that is timed
    read: Callable[[], np.ndarray]            # MuJoCo's value after call()
    # (|difference| per state, its scale) from physai's and MuJoCo's values (n, ...); None: |ours - MuJoCo's| and
    # max(1, largest |MuJoCo value|)
    compare: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, float]] | None = None


#: what `physai verify` checks when no model is named: the lesson's robot and pose
DEFAULT = ("franka_emika_panda", "home")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of `physai verify`."""
    parser.add_argument("model", metavar="MODEL", nargs="?", default=None,
                        help=f"model name ({', '.join(models.names())}) or path to an MJCF file "
                             f"(default: {DEFAULT[0]} at its {DEFAULT[1]!r} keyframe)")
    parser.add_argument("--states", type=positive_int, default=100, metavar="N", help="number of random states (default 100)")
    parser.add_argument("--pose", metavar="NAME", help="keyframe at which to print g(q), diag M, armature and cond(M), e.g. home")
    parser.add_argument("--seed", type=nonnegative_int, default=0, metavar="S", help="seed of the random states (default 0)")


def run(args: argparse.Namespace) -> int:
    """Print the comparison table (and the keyframe report); 0 when everything is within tolerance, else 1."""
    if args.model is None:                                         # the built-in default: the lesson's Panda at home
        args.model, args.pose = DEFAULT[0], args.pose or DEFAULT[1]
    m = models.load(args.model)
    require_joints(args.model, m.nv)
    require_memory(args.states, m.nq, m.nv)
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT   # contacts, limits, friction loss, equalities off
    m.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_ENERGY         # MuJoCo fills d.energy
    m.tendon_armature[:] = m.tendon_stiffness[:] = 0.0             # the tree's M and energy (physai check: the tendons')
    model = engine.from_mujoco(m)                                  # every joint type: hinge, slide, ball, free
    key = _keyframe(m, args.model, args.pose) if args.pose else None
    print(f"physai verify {args.model}: nq = {m.nq}, nv = {m.nv} ({joints.describe(model.jnt_type)}), "
          f"{args.states} random states, seed {args.seed}")
    print(f"states: hinges and slides uniform in the joint range where limited, else in [-pi, pi]; quaternions uniform; "
          f"qd in [-{QD_MAX:g}, {QD_MAX:g}]; qdd in [-{QDD_MAX:g}, {QDD_MAX:g}] (rad, rad/s, rad/s^2 for rotations; "
          "m, m/s, m/s^2 for translations)")
    print(f"MuJoCo: constraints disabled on this model (mjDSBL_CONSTRAINT), so that {_constraints(m)} do not enter "
          "qfrc_inverse and qacc; energy flag enabled (mjENBL_ENERGY)"
          + ("; tendon armature and tendon springs off (the rigid tree's M and energy)" if m.ntendon else ""))
    print("forward dynamics: MuJoCo gets qfrc_applied = rnea(q, qd, qdd) - qfrc_passive - qfrc_actuator (ctrl = 0), "
          "physai the sum of the three as tau; compared as M (qacc - MuJoCo's qacc), the force their difference amounts "
          "to, against the largest |M| |qacc| + |bias| + |passive| + |applied|")
    print(f"tolerance: {RTOL:g} x scale, scale = max(1, largest |MuJoCo value|; forward dynamics': of the terms of the "
          f"forces); times: µs per call, best of {REPEATS} sweeps")
    print(f"physai engine backend: {native.describe()}\n")
    s = acceptance.mujoco_states(m, args.states, args.seed, qd_max=QD_MAX, qdd_max=QDD_MAX)
    translations = bool(np.isin(model.jnt_type, (joints.SLIDE, joints.FREE)).any())
    ok = _table(m, model, (s.q, s.qd, s.qdd), translations)
    ok &= _constraint_table(models.load(args.model), s, args.seed)
    if key is not None:
        ok &= _pose_report(m, model, key)
    return 0 if ok else 1


def _constraints(m: mujoco.MjModel) -> str:
    """What mjDSBL_CONSTRAINT switches off on this model, e.g. "contacts, 9 joint limits and 1 equality constraint"."""
    counts = [(int(m.jnt_limited.sum()), "joint limit", ""), (int((m.dof_frictionloss > 0).sum()), "dof", " with friction loss"),
              (m.neq, "equality constraint", "")]
    parts = ["contacts"] + [f"{n} {what}{'s' * (n > 1)}{extra}" for n, what, extra in counts if n]
    return ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]


def _keyframe(m: mujoco.MjModel, model: str, name: str) -> int:
    """Index of the keyframe `name`; UnknownKeyframeError listing the available ones."""
    keys = [m.key(k).name for k in range(m.nkey)]
    if name not in keys:
        available = f"available: {', '.join(keys)}" if keys else "the model has no keyframes"
        raise UnknownKeyframeError(f"{model} has no keyframe {name!r}; {available}")
    return keys.index(name)


def _quantities(m: mujoco.MjModel, d: mujoco.MjData, model: engine.Model, states, slides: bool) -> list[Quantity]:
    """The six compared quantities, with the MuJoCo state setup, timed call and read-out of each."""
    q, qd, qdd = states
    zero = np.zeros(m.nv)
    M = np.zeros((m.nv, m.nv))

    def state(i: int, vel: np.ndarray | None = None, applied: np.ndarray = zero) -> None:
        d.qpos[:], d.qvel[:], d.qacc[:], d.qfrc_applied[:] = q[i], qd[i] if vel is None else vel, qdd[i], applied

    def forward() -> None:
        mujoco.mj_forward(m, d)

    def full_mass() -> None:
        mujoco.mj_forward(m, d)
        mujoco.mj_fullM(m, d, M)

    tau = np.array([engine.rnea(model, q[i], qd[i], qdd[i]) for i in range(len(q))])   # drives forward dynamics
    passive, bias_at = np.empty_like(tau), np.empty_like(tau)
    inertia_at = np.empty((len(q), m.nv, m.nv))   # MuJoCo's M and qfrc_bias at each state (forward dynamics' comparison)
    for i in range(len(q)):                  # passive + actuator forces depend on (q, qd) only (ctrl = 0)
        state(i)
        full_mass()
        passive[i], bias_at[i], inertia_at[i] = d.qfrc_passive + d.qfrc_actuator, d.qfrc_bias, M
    applied = tau - passive
    total = applied + passive                # physai's total tau, equal to tau up to rounding

    def force_of(ours: np.ndarray, ref: np.ndarray) -> tuple[np.ndarray, float]:
        """|M (qacc - MuJoCo's qacc)|, the force the difference amounts to, and the size of the terms that make the
        forces, max(1, largest |M| |qacc| + |bias| + |passive| + |applied|)."""
        size = (np.einsum("nij,nj->ni", np.abs(inertia_at), np.abs(ref)) + np.abs(bias_at) + np.abs(passive)
                + np.abs(applied))
        return np.abs(np.einsum("nij,nj->ni", inertia_at, ours - ref)), max(1.0, float(size.max()))
    force, acc, inertia = ("N m | N", "rad/s^2 | m/s^2", "kg m^2 | kg") if slides else ("N m", "rad/s^2", "kg m^2")
    return [
        Quantity("rnea", "qfrc_inverse + qfrc_passive (mj_inverse)", force,
                 lambda i: engine.rnea(model, q[i], qd[i], qdd[i]), state,
                 lambda: mujoco.mj_inverse(m, d), lambda: d.qfrc_inverse + d.qfrc_passive),
        Quantity("bias", "qfrc_bias (mj_forward)", force,
                 lambda i: engine.bias(model, q[i], qd[i]), state, forward, lambda: d.qfrc_bias.copy()),
        Quantity("gravity", "qfrc_bias at qvel = 0 (mj_forward)", force,
                 lambda i: engine.gravity(model, q[i]), lambda i: state(i, vel=zero), forward, lambda: d.qfrc_bias.copy()),
        Quantity("mass matrix", "mj_fullM (mj_forward + mj_fullM)", inertia,
                 lambda i: engine.mass_matrix(model, q[i]), state, full_mass, lambda: M.copy()),
        Quantity("forward dynamics", "M (qacc - qacc of mj_forward)", force,
                 lambda i: engine.forward_dynamics(model, q[i], qd[i], total[i]),
                 lambda i: state(i, applied=applied[i]), forward, lambda: d.qacc.copy(), force_of),
        Quantity("energy", "energy[0] + energy[1] (mj_forward)", "J",
                 lambda i: engine.energy(model, q[i], qd[i]), state, forward, lambda: d.energy.sum()),
    ]


def _sweep(n: int, setup: Callable[[int], None], call: Callable[[int], object], read: Callable[[object], object]):
    """Values read after call(i) for i < n, and the best time per call [s] over REPEATS sweeps (setup untimed)."""
    best, values = np.inf, []
    for _ in range(REPEATS):
        total, values = 0.0, []
        for i in range(n):
            setup(i)
            t0 = time.perf_counter()
            out = call(i)
            total += time.perf_counter() - t0
            values.append(read(out))
        best = min(best, total / n)
    return np.array(values), best


def _table(m: mujoco.MjModel, model: engine.Model, states, slides: bool) -> bool:
    """Print one row per quantity; True when every difference is within its tolerance."""
    d = mujoco.MjData(m)
    n, ok = len(states[0]), True
    print(f"{'quantity':<17} {'MuJoCo reference (timed call)':<42} {'unit':<16} {'max |diff|':>10} {'scale':>9} "
          f"{'tolerance':>9}  {'result':<6} {'physai µs':>10} {'MuJoCo µs':>10} {'ratio':>7}")
    for x in _quantities(m, d, model, states, slides):
        ours, t_ours = _sweep(n, lambda i: None, x.ours, lambda out: out)
        ref, t_mj = _sweep(n, x.setup, lambda i: x.call(), lambda out: x.read())  # noqa: B023 (called in this iteration)
        diffs, scale = x.compare(ours, ref) if x.compare else (np.abs(ours - ref), max(1.0, np.abs(ref).max()))
        diff = diffs.max()
        passed = bool(diff <= RTOL * scale)
        ok &= passed
        print(f"{x.name:<17} {x.reference:<42} {x.unit:<16} {diff:>10.1e} {scale:>9.3g} {RTOL * scale:>9.1e}  "
              f"{'pass' if passed else 'FAIL':<6} {t_ours * 1e6:>10.1f} {t_mj * 1e6:>10.2f} {t_ours / t_mj:>6.3g}x")
    print("\nall quantities within tolerance" if ok else "\nFAIL: some differences exceed their tolerance")
    return ok


#: states of the constraint table (its physai side runs on the NumPy engine); forward dynamics' tolerance there
CONSTRAINT_STATES, FORWARD_RTOL = 20, 1e-7


def _constraint_table(m: mujoco.MjModel, s: acceptance.States, seed: int) -> bool:
    """With the model's joint limits, friction loss and equalities on (contacts off), at states that push some limited
    joints past their range: inverse dynamics and qfrc_constraint against mj_inverse, forward dynamics against
    mj_forward with both solvers (the model's) at tolerance 1e-15. True when all are within tolerance (and when there is
    nothing to constrain)."""
    m = acceptance.with_tight_solver(m, newton=False)
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    if not (m.jnt_limited.any() or (m.dof_frictionloss > 0).any() or m.neq):
        return True
    model = engine.from_mujoco(m)
    n = min(CONSTRAINT_STATES, len(s))
    q, qd, qdd = s.q[:n].copy(), s.qd[:n], s.qdd[:n]
    rng = np.random.default_rng(seed)
    scalar = [j for j in np.flatnonzero(m.jnt_limited) if m.jnt_type[j] in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE)]
    for k in range(n):                                    # half the limited joints past a limit by up to 0.05
        for j in rng.permutation(scalar)[:(len(scalar) + 1) // 2]:
            low, high = m.jnt_range[j]
            q[k, m.jnt_qposadr[j]] = (low - rng.uniform(0, 0.05)) if rng.random() < 0.5 else (high + rng.uniform(0, 0.05))
    d = mujoco.MjData(m)

    def state(i: int) -> None:
        d.qpos[:], d.qvel[:], d.qacc[:], d.qfrc_applied[:], d.ctrl[:] = q[i], qd[i], qdd[i], 0.0, 0.0

    # timed as the first table: best of REPEATS sweeps, so that one-time work (the first call's setup) is not counted
    inv_ours, t_ours = _sweep(n, lambda i: None, lambda i: constraints.inverse_dynamics(model, q[i], qd[i], qdd[i]),
                              lambda inv: (inv.tau, inv.qfrc_constraint))
    inv_mj, t_mj = _sweep(n, state, lambda i: mujoco.mj_inverse(m, d),
                          lambda _: (d.qfrc_inverse + d.qfrc_passive, d.qfrc_constraint.copy()))
    fwd_mj, fwd_ours = [], []
    for i in range(n):
        state(i)
        mujoco.mj_forward(m, d)
        fwd_mj.append(d.qacc.copy())
        fwd_ours.append(constraints.forward_dynamics(model, q[i], qd[i], d.qfrc_passive + d.qfrc_actuator).qacc)
    print(f"\nwith constraints: {int(m.jnt_limited.sum())} joint limits, {int((m.dof_frictionloss > 0).sum())} dofs with friction "
          f"loss, {m.neq} equalities on (contacts off), {n} of the states with half the limited joints up to 0.05 past a limit; "
          "MuJoCo's solver at tolerance 1e-15")
    scale_inv = max(1.0, float(np.abs(inv_mj).max()))
    rows = [("inverse dynamics", "qfrc_inverse + qfrc_passive (mj_inverse)", inv_ours[:, 0], inv_mj[:, 0], RTOL * scale_inv,
             t_ours, t_mj),
            ("qfrc_constraint", "qfrc_constraint (mj_inverse)", inv_ours[:, 1], inv_mj[:, 1], RTOL * scale_inv, None, None),
            ("forward dynamics", "qacc (mj_forward)", fwd_ours, fwd_mj, FORWARD_RTOL * max(1.0, np.abs(fwd_mj).max()), None, None)]
    ok = True
    for name, reference, ours, ref, tolerance, t1, t2 in rows:
        diff = float(np.abs(np.array(ours) - np.array(ref)).max())
        passed = diff <= tolerance
        ok &= passed
        times = f" {t1 * 1e6:>10.1f} {t2 * 1e6:>10.2f} {t1 / t2:>6.3g}x" if t1 is not None else ""
        print(f"{name:<17} {reference:<42} {'':<16} {diff:>10.1e} {'':>9} {tolerance:>9.1e}  {'pass' if passed else 'FAIL':<6}{times}")
    return ok


def _pose_report(m: mujoco.MjModel, model: engine.Model, key: int) -> bool:
    """Print g(q), diag M, armature per dof and cond(M) of the hinge block at keyframe `key` with qd = 0.

    Also compares g and M with MuJoCo's qfrc_bias and mj_fullM there; True when both are within tolerance.
    """
    q = m.key_qpos[key].copy()
    g, M = engine.gravity(model, q), engine.mass_matrix(model, q)
    d = mujoco.MjData(m)
    d.qpos[:] = q
    mujoco.mj_forward(m, d)
    M_mj = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, M_mj)
    dg, dM = np.abs(g - d.qfrc_bias).max(), np.abs(M - M_mj).max()
    ok = dg <= RTOL * max(1.0, np.abs(d.qfrc_bias).max()) and dM <= RTOL * max(1.0, np.abs(M_mj).max())
    jnt = m.dof_jntid                                   # the joint of each dof
    names = [label(m.joint(j).name, j, "joint") for j in jnt]
    kinds = [joints.NAMES[int(m.jnt_type[j])] for j in jnt]
    print(f"\nkeyframe {m.key(key).name!r}, qd = 0 (rotations: N m, kg m^2; translations: N, kg)")
    print(f"{'joint':<16} {'type':<6} {'g(q)':>8} {'diag M':>8} {'armature':>9}")
    for j in range(m.nv):
        print(f"{names[j]:<16} {kinds[j]:<6} {g[j]:>8.2f} {M[j, j]:>8.3f} {model.dof_armature[j]:>9.3f}")
    print(f"max |diff| to MuJoCo at this pose: g(q) vs qfrc_bias {dg:.1e}, M vs mj_fullM {dM:.1e} "
          f"({'pass' if ok else 'FAIL'})")
    hinges = [j for j in range(m.nv) if kinds[j] == "hinge"]
    if hinges:
        block = (f"M[{hinges[0]}:{hinges[-1] + 1}, {hinges[0]}:{hinges[-1] + 1}]"
                 if hinges == list(range(hinges[0], hinges[-1] + 1)) else f"rows and columns {hinges} of M")
        cond = np.linalg.cond(M[np.ix_(hinges, hinges)])
        print(f"cond(M) of the hinge block {block} ({', '.join(names[j] for j in hinges)}): {cond:.1f}")
    return bool(ok)

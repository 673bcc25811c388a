"""Collision detection's speed: physai's compiled narrow phases beside MuJoCo's, in one run (issue Q).

    uv run python benchmarks/bench_collision.py                     # the three tables below
    uv run python benchmarks/bench_collision.py --trajectories 32 --steps 200

(a) A pile: 40 free convex bodies (10 meshes, each the convex hull of 24 random points in a box; 10 cylinders, 10 ellipsoids,
10 boxes; 1.5 to 3 cm) dropped from a 4 x 5 x 2 grid into a box of five planes 20 cm wide (numpy.random.default_rng(0)).
MuJoCo 4's defaults (multi-contact on; every pair collides, cylinder-box included). --trajectories runs
from the grid with each body moved by up to 5 mm: integrators.rollout with constraints=True beside mujoco.rollout on
the same number of threads (physai's PHYSAI_NUM_THREADS, default every core), steps per second of all trajectories;
ratio = physai / MuJoCo (above 1: physai is faster). "apart": the first step at which physai's first trajectory
differs from mujoco.rollout's by more than 1e-9 in q (None: never), as a pile's chaos grows a contact's rounding.

(b) The G1 (every geom pair: meshes, cylinders, foot spheres) at 16 states from its keyframe, lowered up to 3 cm and
its joints moved by N(0, 0.15) rad: microseconds per state of collision.detect (one state per call: poses, broad and
narrow phase, the ContactSet) and of the compiled kernel alone (physai.engine.native's detect), beside MuJoCo's
mj_collision (its poses made by mj_kinematics first, not timed) and mj_kinematics + mj_collision; ratio = physai's
kernel (which makes the poses too) / (mj_kinematics + mj_collision) (below 1: physai is faster).

(c) Two meshes of 2,000 vertices each (hulls of points on a sphere of 5 cm) overlapping by 1 mm at 16 random
orientations: microseconds per state as in (b).

(d), with --profile: the pile's collision pair class by pair class. The states: every 5th of mujoco.rollout's first
trajectory (--steps / 5 of them: 100 over the default 500 steps); for each class (a plane with a kind, two kinds) a copy of the pile whose
contype/conaffinity let only that class collide (both engines filter by them: the same pairs), then the compiled
kernel on all the states in one call (its poses, broad and narrow phase) beside mj_collision per state (its poses
made by mj_kinematics first, not timed), CPU time per state; ratio = physai / MuJoCo (below 1: physai is faster).
"none": no pair collides; "all": every pair, as (a)'s steps collide.

(e), with --profile: the pile's step against its collision. One trajectory from the grid (--steps steps, one thread:
integrators.rollout beside mujoco.rollout with nthread=0), CPU time per step (best of 3); beside it (d)'s "all" row,
and the rest of the step (step - collision: the constraint rows, the solve, the smooth dynamics and the integration;
MuJoCo's rest holds its mj_kinematics, physai's collision its poses, as in (d)). Its last line computes what a ratio of
1.5 in (a) would need: physai's step at most MuJoCo's / 1.5, so, with physai's collision as measured, the rest at most
that minus it, and how much faster than MuJoCo's rest that is.

(a): best of 3 rounds, wall clock (threads); "cpu": the same ratio of the best rounds' CPU time (every thread's: on a
loaded machine the wall clock of threads counts the other processes' turns; equal to the wall clock's ratio when each
side keeps its threads busy); (b), (c): best of 5 rounds of CPU time (one thread: on a loaded machine
the wall clock of a long round counts other processes' turns, which a short one escapes); (d) as (b), the
kernel's batch of states on the batch threads (CPU time of all of them); on a shared machine expect
+-20% between runs.
"""

import argparse
import copy
import os
import platform
import time

import mujoco
import numpy as np
from mujoco import rollout as mj_rollout

from physai import collision, engine, integrators, models
from physai.engine import constraint, native

KINDS = ("mesh", "cylinder", "ellipsoid", "box")
HALF_WIDTH = 0.1                                   # the container's half width [m]


def cpu_seconds(fn) -> float:
    """The CPU time of fn() [s] (one thread: the wall clock on a loaded machine counts the other processes' turns)."""
    start = time.process_time()
    fn()
    return time.process_time() - start


def cpu_best(fn, rounds: int = 5) -> float:
    return min(cpu_seconds(fn) for _ in range(rounds))


def both_best(fn, rounds: int = 3) -> tuple[float, float]:
    """(best wall clock, best CPU time) of rounds of fn() [s]; the CPU time sums every thread of the process."""
    walls, cpus = [], []
    for _ in range(rounds):
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - wall), cpus.append(time.process_time() - cpu)
    return min(walls), min(cpus)


def pile(rng: np.random.Generator) -> mujoco.MjModel:
    """The container of five planes and the 40 free bodies on their grid (see (a))."""
    spec = mujoco.MjSpec()
    world = spec.worldbody
    walls = [([0, 0, 0], [0, 0, 1])] + [(np.r_[s * HALF_WIDTH * np.eye(3)[a][:2], 0.1], -s * np.eye(3)[a])
                                        for a in (0, 1) for s in (1, -1)]
    for pos, normal in walls:
        world.add_geom(type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 1], pos=pos, zaxis=normal)
    for k in range(40):
        kind = KINDS[k % 4]
        i, j, level = k % 4, (k // 4) % 5, k // 20
        body = spec.worldbody.add_body(pos=[-0.06 + 0.04 * i, -0.08 + 0.04 * j, 0.05 + 0.05 * level])
        body.add_freejoint()
        size = rng.uniform(0.0075, 0.015, 3)
        geom = dict(density=500.0)
        if kind == "mesh":
            spec.add_mesh(name=f"hull{k}", uservert=(rng.uniform(-1.0, 1.0, (24, 3)) * size).ravel())
            body.add_geom(type=mujoco.mjtGeom.mjGEOM_MESH, meshname=f"hull{k}", **geom)
        else:
            body.add_geom(type=getattr(mujoco.mjtGeom, f"mjGEOM_{kind.upper()}"), size=size, **geom)
    return spec.compile()


def time_pile(n: int, steps: int, threads: int) -> str:
    """(a)'s row."""
    rng = np.random.default_rng(0)
    m = pile(rng)
    model = engine.from_mujoco(m)
    Q0 = np.repeat(m.qpos0[None], n, axis=0)
    for b in range(40):                                            # each body's position moved by up to 5 mm
        Q0[1:, 7 * b:7 * b + 3] += rng.uniform(-0.005, 0.005, (n - 1, 3))
    QD0 = np.zeros((n, m.nv))
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    start, d0 = np.empty((n, mujoco.mj_stateSize(m, spec))), mujoco.MjData(m)
    for k in range(n):
        mujoco.mj_resetData(m, d0)
        d0.qpos[:] = Q0[k]
        mujoco.mj_getState(m, d0, start[k], spec)
    datas = [mujoco.MjData(m) for _ in range(max(threads, 1))]
    name = "euler"

    def physai_run():
        return integrators.rollout(model, Q0, QD0, m.opt.timestep, steps, name, constraints=True)

    with mj_rollout.Rollout(nthread=threads if threads > 1 else 0) as r:
        state, _ = r.rollout(m, datas, start, nstep=steps)
        run = physai_run()
        apart = np.abs(run.q[0, 1:] - state[0, :, 1:1 + m.nq]).max(axis=1) > 1e-9
        first = int(apart.argmax()) + 1 if apart.any() else None       # the first step differing by more than 1e-9
        t_mj, c_mj = both_best(lambda: r.rollout(m, datas, start, nstep=steps))
    t_physai, c_physai = both_best(physai_run)
    return (f"{n:>5} {steps:>5} {run.ncon.max():>8} {str(first):>7} {n * steps / t_physai:>11.0f} {n * steps / t_mj:>11.0f} "
            f"{t_mj / t_physai:>6.2f} {c_mj / c_physai:>6.2f}")


def g1_states(rng: np.random.Generator, n: int):
    """(MjModel of the G1's scene, states (n, nq)) as (b) says."""
    m = models.load("unitree_g1", "scene")
    d, qs = mujoco.MjData(m), []
    for _ in range(n):
        mujoco.mj_resetDataKeyframe(m, d, 0)
        d.qpos[7:] += rng.normal(0, 0.15, m.nq - 7)
        d.qpos[2] -= rng.uniform(0, 0.03)
        qs.append(d.qpos.copy())
    return m, np.array(qs)


def hulls(rng: np.random.Generator, n: int, vertices: int = 2000):
    """(MjModel of two free meshes of `vertices` points on a 5 cm sphere, states (n, nq) overlapping by 1 mm)."""
    spec = mujoco.MjSpec()
    for k in range(2):
        points = rng.normal(size=(vertices, 3))
        spec.add_mesh(name=f"hull{k}", uservert=(0.05 * points / np.linalg.norm(points, axis=1)[:, None]).ravel())
        body = spec.worldbody.add_body()
        body.add_freejoint()
        body.add_geom(type=mujoco.mjtGeom.mjGEOM_MESH, meshname=f"hull{k}")
    m = spec.compile()
    qs = np.zeros((n, m.nq))
    for q in qs:
        for b, x in enumerate((0.0, 0.099)):
            quat = rng.normal(size=4)
            q[7 * b:7 * b + 7] = np.r_[x, 0, 0.5, quat / np.linalg.norm(quat)]
    return m, qs


def time_detect(label: str, m: mujoco.MjModel, Q: np.ndarray) -> str:
    """(b)'s or (c)'s row: microseconds per state (see the module docstring)."""
    model = engine.from_mujoco(m)
    d = mujoco.MjData(m)
    total = 0
    for q in Q:                                                   # the same contacts as mj_collision's
        d.qpos[:] = q
        mujoco.mj_kinematics(m, d)
        mujoco.mj_collision(m, d)
        ours = collision.detect(model, q)
        if len(ours.geom) != d.ncon or (d.ncon and np.abs(ours.dist - d.contact.dist[:d.ncon]).max() > 1e-9):
            raise SystemExit(f"{label}: physai's contacts differ from mj_collision's")
        total += d.ncon
    rounds = 20
    Qs = [np.ascontiguousarray(q[None]) for q in Q]

    def detect():
        for _ in range(rounds):
            for q in Q:
                collision.detect(model, q)

    def kernel():
        for _ in range(rounds):
            for q in Qs:
                native.detect(model, q)

    def mj(kinematics: bool):
        datas = []
        for q in Q:
            d = mujoco.MjData(m)
            d.qpos[:] = q
            mujoco.mj_kinematics(m, d)
            datas.append(d)

        def run():
            for _ in range(rounds):
                for d in datas:
                    if kinematics:
                        mujoco.mj_kinematics(m, d)
                    mujoco.mj_collision(m, d)
        return run

    per = 1e6 / (rounds * len(Q))
    t_detect, t_kernel = cpu_best(detect) * per, cpu_best(kernel) * per
    t_mj, t_mj_kin = cpu_best(mj(False)) * per, cpu_best(mj(True)) * per
    return (f"{label:<15} {total / len(Q):>8.1f} {t_detect:>8.1f} {t_kernel:>8.1f} {t_mj:>12.1f} {t_mj_kin:>11.1f} "
            f"{t_kernel / t_mj_kin:>6.2f}")


def only_class(m: mujoco.MjModel, kinds: tuple[int, int] | None) -> mujoco.MjModel:
    """A copy of the pile whose contype/conaffinity let only geom pairs of the two geom types kinds collide (None: none)."""
    m = copy.deepcopy(m)
    m.geom_contype[:], m.geom_conaffinity[:] = 0, 0
    if kinds is not None:
        first, second = (m.geom_type == kinds[0]), (m.geom_type == kinds[1])
        m.geom_contype[first], m.geom_conaffinity[second] = 1, 1           # (contype1 & conaffinity2): first-second
    return m


def profile(steps: int) -> tuple[float, float]:
    """(d): the pile's collision pair class by pair class (see the module docstring); the "all" row's microseconds per
    state (physai, MuJoCo)."""
    m = pile(np.random.default_rng(0))
    d = mujoco.MjData(m)
    Q = []
    for k in range(steps):                                         # mj_step's trajectory from the grid (mujoco.rollout's)
        mujoco.mj_step(m, d)
        if k % 5 == 4:
            Q.append(d.qpos.copy())
    Q = np.array(Q)
    G = mujoco.mjtGeom
    plane, kinds = G.mjGEOM_PLANE, [getattr(G, f"mjGEOM_{k.upper()}") for k in KINDS]
    classes = [("all", None), ("none", None)] + [(f"plane-{KINDS[a]}", (plane, kinds[a])) for a in range(4)]
    classes += [(f"{KINDS[a]}-{KINDS[b]}", (kinds[a], kinds[b])) for a in range(4) for b in range(a, 4)]
    rounds, collide = 5, (np.nan, np.nan)
    for label, kinds_ in classes:
        mc = m if label == "all" else only_class(m, kinds_)
        model, dc = engine.from_mujoco(mc), mujoco.MjData(mc)
        constraint.prepare_compiled(model)                         # the compiled model as detect_arrays reads it
        datas = []
        ncon = 0
        for q in Q:
            dc.qpos[:] = q
            mujoco.mj_kinematics(mc, dc)
            mujoco.mj_collision(mc, dc)
            ncon += dc.ncon
            datas.append(copy.copy(dc))
        found = native.detect_arrays(model, Q)[0]
        if found.sum() != ncon:
            raise SystemExit(f"(d) {label}: physai's contacts ({found.sum()}) differ from mj_collision's ({ncon})")

        def mj(mc=mc, datas=datas):
            for _ in range(rounds):
                for dd in datas:
                    mujoco.mj_collision(mc, dd)

        def kernel(model=model):
            for _ in range(rounds):
                native.detect_arrays(model, Q)
        per = 1e6 / (rounds * len(Q))
        t_physai, t_mj = cpu_best(kernel) * per, cpu_best(mj) * per
        print(f"{label:<20} {ncon / len(Q):>8.1f} {t_physai:>8.1f} {t_mj:>8.1f} {t_physai / t_mj:>6.2f}")
        if label == "all":
            collide = (t_physai, t_mj)
    return collide


def split(steps: int, collide: tuple[float, float], target: float = 1.5) -> None:
    """(e): the pile's step, one trajectory (the grid's) on one thread, beside (d)'s collision of every pair."""
    m = pile(np.random.default_rng(0))
    model = engine.from_mujoco(m)
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    d = mujoco.MjData(m)
    start = np.empty((1, mujoco.mj_stateSize(m, spec)))
    mujoco.mj_getState(m, d, start[0], spec)
    q0, qd0 = m.qpos0[None].copy(), np.zeros((1, m.nv))
    per = 1e6 / steps
    with mj_rollout.Rollout(nthread=0) as r:
        step_mj = both_best(lambda: r.rollout(m, [d], start, nstep=steps))[1] * per
    step_physai = both_best(lambda: integrators.rollout(model, q0, qd0, m.opt.timestep, steps, "euler",
                                                        constraints=True))[1] * per
    (col_physai, col_mj), step_needed = collide, step_mj / target
    rest_physai, rest_mj, rest_needed = step_physai - col_physai, step_mj - col_mj, step_needed - col_physai
    print(f"{'step':<20} {step_physai:>8.1f} {step_mj:>8.1f} {step_physai / step_mj:>6.2f}")
    print(f"{'collision (all)':<20} {col_physai:>8.1f} {col_mj:>8.1f} {col_physai / col_mj:>6.2f}")
    print(f"{'the rest':<20} {rest_physai:>8.1f} {rest_mj:>8.1f} {rest_physai / rest_mj:>6.2f}")
    head = f"for {target}x MuJoCo's steps: physai's step <= {step_needed:.1f} us; with its collision as measured, the rest"
    if rest_needed <= 0:
        print(f"{head} would have to take no time")
        return
    print(f"{head} <= {rest_needed:.1f} us, {rest_mj / rest_needed:.2f}x faster than MuJoCo's rest (now "
          f"{rest_mj / rest_physai:.2f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trajectories", type=int, default=16)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--profile", action="store_true", help="(d) too: the pile's collision pair class by pair class")
    args = parser.parse_args()
    if args.profile and args.steps < 5:
        parser.error(f"--profile samples every 5th step: --steps must be at least 5, got {args.steps}")
    threads = native.threads()
    print(f"cpu {platform.machine()}, {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.2f}; backend {engine.backend}, "
          f"{threads} threads for batches; mujoco {mujoco.__version__}, numpy {np.__version__}")
    print("\n(a) the pile of 40 convex bodies: steps per second of all trajectories; ratio = physai / MuJoCo")
    print(f"{'traj':>5} {'steps':>5} {'contacts':>8} {'apart':>7} {'physai':>11} {'rollout':>11} {'ratio':>6} {'cpu':>6}")
    print(time_pile(args.trajectories, args.steps, threads))
    rng = np.random.default_rng(0)
    print("\n(b), (c) microseconds per state, one state per call; ratio = physai's kernel / (mj_kinematics + mj_collision)")
    print(f"{'model':<15} {'contacts':>8} {'detect':>8} {'kernel':>8} {'mj_collision':>12} {'+kinematics':>11} {'ratio':>6}")
    print(time_detect("G1", *g1_states(rng, 16)))
    print(time_detect("2000-vertex pair", *hulls(rng, 16)))
    if args.profile:
        print(f"\n(d) the pile's collision by pair class, {args.steps // 5} states of its trajectory: microseconds per state "
              "(CPU); ratio = physai / MuJoCo")
        print(f"{'pairs':<20} {'contacts':>8} {'physai':>8} {'MuJoCo':>8} {'ratio':>6}")
        collide = profile(args.steps)
        print(f"\n(e) the pile's step, one trajectory of {args.steps} steps on one thread, beside (d)'s collision: "
              "microseconds per step (CPU); ratio = physai / MuJoCo")
        print(f"{'':<20} {'physai':>8} {'MuJoCo':>8} {'ratio':>6}")
        split(args.steps, collide)


if __name__ == "__main__":
    main()

"""What the tests share: the models they load (one table), a Robot (MuJoCo model, physai Model, random states), the one
closeness bound, a call on a chosen engine backend, and the portable comparison of a saved text output with a rerun.

The bound of every numeric comparison (assert_close):

    |actual - expected| <= rtol * max(floor, scale),   scale = max |expected| unless given, floor = 1 unless given,

taken at the worst entry: relative to the compared quantity's largest magnitude, and absolute (rtol in the quantity's
unit) below 1. floor=0 makes it purely relative; per_state=True takes the worst entry and the scale of each state (the
first axis) on its own, with rtol either one number or one bound per state.
"""

import re
from pathlib import Path

import mujoco
import numpy as np

from physai import engine, models

import mj

DATA = Path(__file__).resolve().parent / "data"
#: a small model with tendons: a fixed tendon with armature (in MuJoCo's M), a spring with a dead band and a limit, a
#: spatial one around a sphere with a damper and friction loss, an equality between them (polycoef)
TENDON_XML = ('<mujoco><worldbody><site name="top" pos="0 0 1"/><body><joint name="a" axis="0 1 0"/>'
              '<geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.05"/><site name="s" pos="0.3 0 0.05"/>'
              '<geom name="ball" size="0.06" pos="0.5 0 0" contype="0" conaffinity="0"/>'
              '<body pos="0.5 0 0"><joint name="b" axis="0 1 0"/><joint name="c" type="slide"/>'
              '<geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.04"/><site name="e" pos="0.4 0 0"/></body>'
              '</body></worldbody><tendon><fixed name="f" armature="0.05" stiffness="3" springlength="-0.1 0.2" '
              'limited="true" range="-0.5 0.5"><joint joint="a" coef="1"/><joint joint="b" coef="-0.5"/>'
              '<joint joint="c" coef="0.3"/></fixed><spatial name="t" damping="0.4" frictionloss="0.1">'
              '<site site="top"/><site site="s"/><geom geom="ball"/><site site="e"/></spatial></tendon>'
              '<equality><tendon tendon1="t" tendon2="f" polycoef="0 0.5 0.1 0 0"/></equality></mujoco>')


def random_tree_xml(seed: int, nbody: int = 7, free_root: bool = True) -> str:
    """An MJCF tree with random joint types (a free root, balls with anchors, hinges, slides, a body with two
    joints, a welded body), random poses, physical random inertias, damping, armature, springs and tilted gravity."""
    rng = np.random.default_rng(seed)
    f = lambda x: " ".join(f"{v:.6g}" for v in np.ravel(x))  # noqa: E731

    def inertial():
        x = rng.uniform(0.01, 0.1, 3)                  # principal moments (x+y, y+z, z+x) respect the triangle rule
        quat = rng.normal(size=4)
        return (f'<inertial pos="{f(rng.uniform(-0.1, 0.1, 3))}" quat="{f(quat / np.linalg.norm(quat))}" '
                f'mass="{rng.uniform(0.3, 2):.4g}" diaginertia="{f([x[0] + x[1], x[1] + x[2], x[2] + x[0]])}"/>')

    def joint(kind):
        axis = rng.normal(size=3)
        extra = f'stiffness="{rng.uniform(0, 2):.3g}" ' if kind in ("hinge", "slide") else ""
        return (f'<joint type="{kind}" axis="{f(axis / np.linalg.norm(axis))}" pos="{f(rng.uniform(-0.05, 0.05, 3))}" '
                f'damping="{rng.uniform(0, 0.3):.3g}" armature="{rng.uniform(0, 0.05):.3g}" {extra}/>')

    parents, bodies = [-1], []
    root = ('<freejoint/>' if free_root else joint("ball")) + inertial()
    bodies.append(f'<body pos="0.1 -0.2 0.8">{root}')
    for b in range(1, nbody):
        parents.append(int(rng.integers(0, b)))
        quat = rng.normal(size=4)
        kinds = [str(rng.choice(["hinge", "slide", "ball", "hinge"]))]
        if b == 2:
            kinds = ["hinge", "slide"]
        joints = "" if b == 4 else "".join(joint(k) for k in kinds)
        bodies.append(f'<body pos="{f(rng.uniform(-0.3, 0.3, 3))}" quat="{f(quat / np.linalg.norm(quat))}">{joints}{inertial()}')
    children = {b: [c for c in range(nbody) if parents[c] == b] for b in range(nbody)}

    def emit(b):
        return bodies[b] + "".join(emit(c) for c in children[b]) + "</body>"

    return (f'<mujoco><option gravity="0.4 -0.7 -9.6"><flag contact="disable"/></option>'
            f'<worldbody>{emit(0)}</worldbody></mujoco>')


def constraint_scene_xml(seed: int, cone: str = "pyramidal", condim: int = 3, impratio: float = 1.0, nbody: int = 6) -> str:
    """An MJCF scene for the constraint model: a random tree on a plane (a free root; hinges, slides and balls with
    limits and margins, friction loss, damping and armature; spheres, capsules and boxes with random friction) and a
    free body, tied by a connect, a weld (relpose, torquescale) and a joint equality (a quartic polynomial), with the
    given friction cone, condim and impratio."""
    rng = np.random.default_rng(seed)
    f = lambda x: " ".join(f"{v:.6g}" for v in np.ravel(x))  # noqa: E731

    def inertial():
        x, quat = rng.uniform(0.01, 0.1, 3), rng.normal(size=4)
        return (f'<inertial pos="{f(rng.uniform(-0.05, 0.05, 3))}" quat="{f(quat / np.linalg.norm(quat))}" '
                f'mass="{rng.uniform(0.3, 2):.4g}" diaginertia="{f([x[0] + x[1], x[1] + x[2], x[2] + x[0]])}"/>')

    def geom():
        kind = str(rng.choice(["sphere", "capsule", "box"]))
        size = {"sphere": "0.06", "capsule": "0.04 0.08", "box": "0.05 0.06 0.07"}[kind]
        return f'<geom type="{kind}" size="{size}" condim="{condim}" friction="{f(rng.uniform(0.3, 1.0, 3) * [1, 0.05, 0.01])}"/>'

    def joint(kind, name):
        axis = rng.normal(size=3)
        limit = ""
        if kind in ("hinge", "slide"):
            r = rng.uniform(0.1, 0.6)
            limit = f'limited="true" range="{-r:.3g} {r:.3g}" margin="{rng.uniform(0, 0.05):.3g}"'
        elif kind == "ball":
            limit = f'limited="true" range="0 {rng.uniform(0.1, 0.5):.3g}" margin="{rng.uniform(0, 0.05):.3g}"'
        return (f'<joint name="{name}" type="{kind}" axis="{f(axis / np.linalg.norm(axis))}" pos="{f(rng.uniform(-0.05, 0.05, 3))}" '
                f'damping="{rng.uniform(0, 0.3):.3g}" armature="{rng.uniform(0, 0.05):.3g}" '
                f'frictionloss="{rng.uniform(0, 0.3):.3g}" {limit}/>')

    parents, scalar = [-1], []
    bodies = [f'<body name="b0" pos="0 0 0.3"><freejoint/>{inertial()}{geom()}']
    for b in range(1, nbody):
        parents.append(int(rng.integers(0, b)))
        quat = rng.normal(size=4)
        kind = str(rng.choice(["hinge", "slide", "ball", "hinge"]))
        if kind in ("hinge", "slide"):
            scalar.append(f"j{b}")
        bodies.append(f'<body name="b{b}" pos="{f(rng.uniform(-0.2, 0.2, 3))}" quat="{f(quat / np.linalg.norm(quat))}">'
                      f'{joint(kind, f"j{b}")}{inertial()}{geom()}')
    children = {b: [c for c in range(nbody) if parents[c] == b] for b in range(nbody)}

    def emit(b):
        return bodies[b] + "".join(emit(c) for c in children[b]) + "</body>"

    equalities = (f'<connect body1="b{nbody - 1}" body2="c" anchor="0.05 0 0"/>'
                  f'<weld body1="b2" body2="c" relpose="0.1 0 0 1 0 0 0" torquescale="{rng.uniform(0.5, 2):.3g}"/>')
    if len(scalar) >= 2:
        equalities += f'<joint joint1="{scalar[0]}" joint2="{scalar[1]}" polycoef="0.01 0.5 0.1 0.02 0.003"/>'
    elif scalar:
        equalities += f'<joint joint1="{scalar[0]}" polycoef="0.02 0 0 0 0"/>'
    return (f'<mujoco><option cone="{cone}" impratio="{impratio}"/><worldbody><geom type="plane" size="2 2 0.1" '
            f'condim="{condim}"/>{emit(0)}<body name="c" pos="0.4 0.1 0.2"><freejoint/>{inertial()}{geom()}</body>'
            f'</worldbody><equality>{equalities}</equality></mujoco>')


#: Every model the tests load, by the key they name it with: what physai.models.load takes (a bundled model's or a
#: Menagerie robot's name, a path), or MJCF text.
def constraint_scene(seed: int, cone: str, condim: int, tolerance: float | None = None):
    """(m, d) of a random constraint scene (constraint_scene_xml, impratio 1 + seed) after mj_forward at a random state
    whose root touches the ground; tolerance: the solver's (with 1000 iterations and 100 line-search iterations),
    default the model's."""
    m = mujoco.MjModel.from_xml_string(constraint_scene_xml(seed, cone, condim, impratio=1.0 + seed))
    if tolerance is not None:
        m.opt.tolerance, m.opt.iterations, m.opt.ls_iterations = tolerance, 1000, 100
    d = mujoco.MjData(m)
    rng = np.random.default_rng(seed)
    d.qpos[:] = m.qpos0 + 0.3 * rng.normal(size=m.nq)
    mujoco.mj_normalizeQuat(m, d.qpos)
    d.qpos[2] = 0.05
    d.qvel[:] = rng.normal(size=m.nv)
    mujoco.mj_forward(m, d)
    return m, d


MODELS = {
    # bundled with physai (src/physai/models): hinges and slides only
    "double_pendulum": "double_pendulum", "hinge_slide": "hinge_slide", "arm2": "arm2", "arm7": "arm7",
    # MuJoCo Menagerie (../shared/menagerie, else the mujoco-menagerie package): the H1 and G1 have a free joint
    "franka_emika_panda": "franka_emika_panda", "kuka_iiwa_14": "kuka_iiwa_14", "robotstudio_so101": "robotstudio_so101",
    "unitree_h1": "unitree_h1", "unitree_g1": "unitree_g1",
    # tests/data: a free root, balls, three joints in one body, welded bodies, tilted gravity
    "mixed_joints": str(DATA / "mixed_joints.xml"),
    # random trees (random_tree_xml), a free root or a ball at the root
    "random_free": random_tree_xml(1), "random_fixed": random_tree_xml(2, 6, False),
    "random_free_3": random_tree_xml(3), "random_fixed_4": random_tree_xml(4, 8, False),
    # nothing moves (nq = nv = 0): a body welded to the world and a child welded to it, tilted gravity
    "welded": """<mujoco><option gravity="0.3 -0.2 -9.81"/><worldbody>
        <body pos="0.1 0.2 0.3" euler="10 20 30"><geom type="box" size=".1 .2 .3" pos=".05 0 0" mass="2"/>
        <body pos="0 0 .4" euler="0 40 0"><geom size=".1" pos="0 .1 0" mass="1"/></body></body></worldbody></mujoco>""",
}
MIXED = MODELS["mixed_joints"]


def load(key: str, constraints: bool = True) -> mujoco.MjModel:
    """The MjModel of MODELS[key]; constraints=False switches off contacts, limits and equalities
    (MuJoCo's forces then hold only the smooth dynamics physai computes)."""
    source = MODELS[key]
    m = mujoco.MjModel.from_xml_string(source) if source.lstrip().startswith("<") else models.load(source)
    if not constraints:
        m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    return m


def states(model, n: int, seed: int = 0, qd_max: float = 2.0):
    """n random states of an engine Model: q, qd from engine.random_states(model, n, seed, qd_max) (q within the
    limited joints' ranges), qdd uniform in [-3, 3] and tau in [-5, 5] from default_rng(seed + 1), each (n, size)."""
    q, qd = engine.random_states(model, n, seed, qd_max=qd_max)
    rng = np.random.default_rng(seed + 1)
    return q, qd, rng.uniform(-3.0, 3.0, (n, model.nv)), rng.uniform(-5.0, 5.0, (n, model.nv))


class Robot:
    """MODELS[key] with constraints disabled (m, d), its engine Model and n random states (q, qd, qdd, tau: `states`).

    The conftest's `robot` fixture makes one per key of the test module's ROBOTS, with the module's ROBOT_STATES
    (keyword arguments of this class)."""

    def __init__(self, key: str, n: int = 6, seed: int = 0, qd_max: float = 2.0):
        self.key, self.n = key, n
        self.m = load(key, constraints=False)
        self.d = mujoco.MjData(self.m)
        self.model = engine.from_mujoco(self.m)
        self.q, self.qd, self.qdd, self.tau = states(self.model, n, seed, qd_max)

    def args(self, names: str, sl=slice(None)) -> list:
        """The state arrays named in `names` ("q qd qdd"), each indexed by sl (a state, a slice)."""
        return [getattr(self, a)[sl] for a in names.split()]

    def mujoco(self, q, qd, qdd=None, qfrc_applied=None) -> mujoco.MjData:
        """d after mj_forward at (q, qd) with zero ctrl and the given generalized force (and mj_inverse when qdd is given)."""
        d = mj.forward(self.m, self.d, q, qd, qfrc_applied)
        if qdd is not None:
            d.qacc[:] = qdd
            mujoco.mj_inverse(self.m, d)
        return d


def open_loop_inputs(m: mujoco.MjModel, n: int, steps: int, seed: int = 2) -> dict:
    """Random open-loop inputs of n trajectories of `steps` steps, from default_rng(seed): ctrl (n, steps, nu) uniform in
    ctrlrange (None without actuators), qfrc_applied (n, steps, nv) and xfrc_applied (n, steps, nbody, 6) for physai's
    bodies (MuJoCo's without the world) uniform in [-1, 1]."""
    rng = np.random.default_rng(seed)
    return {"ctrl": rng.uniform(*m.actuator_ctrlrange.T, (n, steps, m.nu)) if m.nu else None,
            "qfrc_applied": rng.uniform(-1.0, 1.0, (n, steps, m.nv)),
            "xfrc_applied": rng.uniform(-1.0, 1.0, (n, steps, m.nbody - 1, 6))}


def assert_close(actual, expected, rtol, scale=None, *, floor: float = 1.0, per_state: bool = False, what: str = "") -> None:
    """|actual - expected| <= rtol * max(floor, scale) at the worst entry; scale = max |expected| unless given.

    per_state: the first axis indexes states, each bounded on its own (scale and rtol may then be one per state).
    Shapes must agree; a NaN fails."""
    a, e = np.asarray(actual, dtype=float), np.asarray(expected, dtype=float)
    assert a.shape == e.shape, f"{what}: shape {a.shape} vs {e.shape}"
    if per_state:
        a, e = a.reshape(a.shape[0] if a.ndim else 1, -1), e.reshape(e.shape[0] if e.ndim else 1, -1)
        err, size = np.abs(a - e).max(axis=1), np.abs(e).max(axis=1)
    else:
        err, size = np.abs(a - e).max(initial=0.0), np.abs(e).max(initial=0.0)
    bound = np.asarray(rtol, dtype=float) * np.maximum(floor, size if scale is None else scale)
    bad = ~(err <= bound)
    if np.any(bad):
        k = int(np.argmax(np.atleast_1d(bad)))
        worst, limit = np.atleast_1d(err)[k % np.size(err)], np.atleast_1d(bound)[k % np.size(bound)]
        raise AssertionError(f"{what}: max |actual - expected| {worst:.3g} > bound {limit:.3g}"
                             + (f" (state {k})" if per_state else ""))


def run(backend: str, f, *args, **kwargs):
    """f(*args, **kwargs) on the engine backend `backend` ("native" or "numpy"), the previous one restored after."""
    previous = engine.set_backend(backend)
    try:
        return f(*args, **kwargs)
    finally:
        engine.set_backend(previous)


_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _last_digit(token: str) -> float:
    """The value of one unit in the last printed digit of a number as printed: 1e-3 for '14.357', 1e-3 for '4.6e-02'."""
    mantissa, _, exponent = token.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 10.0 ** (int(exponent or 0) - decimals)


def assert_same_text(saved: str, rerun: str, what: str = "", numbers: bool = True) -> None:
    """A saved text output against a rerun, portably: line by line the same words, and each number within one unit
    of its last printed digit (another CPU may round a value near a rounding boundary the other way, or print -0.000
    for +0.000); numbers=False compares the words alone. Residuals printed as bounds ('< 1e-13') are the same on every
    machine and compare exactly."""
    old, new = saved.splitlines(), rerun.splitlines()
    assert len(old) == len(new), f"{what}: {len(old)} lines saved, {len(new)} in the rerun"
    for k, (s, r) in enumerate(zip(old, new), 1):
        assert _NUMBER.split(s) == _NUMBER.split(r), f"{what} line {k}: {s!r} vs {r!r}"
        if not numbers:
            continue
        for x, y in zip(_NUMBER.findall(s), _NUMBER.findall(r)):
            assert abs(float(x) - float(y)) <= _last_digit(x) * (1 + 1e-9), f"{what} line {k}: {x} vs {y}: {s!r} vs {r!r}"

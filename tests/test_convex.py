"""The convex pairs by GJK/EPA (physai.engine.gjk, physai.engine.convex) against MuJoCo 4's mj_collision, computed
here: random scenes of each pair (random sizes, poses, margins and gaps, apart, resting and interpenetrating), the
contact count and geom pairs, and the positions, frames and distances where the counts agree; a short mj_step
trajectory; termination on degenerate input; both backends (the compiled mirror, cpp/gjk.h and cpp/convex.h). The
pairs of MuJoCo 4's multi-contact (MULTI_PAIRS: capsules, cylinders, boxes and meshes with cylinders, boxes and meshes)
with multiccd disabled (one contact), with it on for boxes, meshes and cylinders, with and without margins, and a
capsule with a cylinder or a mesh with and without margins (up to 4 contacts), positive or negative (margin + gap < 0).

Tolerances. physai's text follows MuJoCo 4.0's algorithm (its 3.x source with the changes 4.0's library shows: a
geom's margin taken off before GJK and added back, the nearest point moved to the origin's projection, EPA ending
when a support point closes the gap, a triangle's barycentric weights from the 2D cross products of its vertices'
offsets to the point over their sum). GJK between a point or segment and a curved surface ends on a thin triangle (two
support points a tolerance apart), whose weights amplify rounding a thousandfold: with the 3.x source's weights (the
cofactors of the vertices themselves over the largest minor) the witness points left MuJoCo's by 1e-12, and where that
changed a later iterate's choice by up to 2.5e-5 (14 of the 658 contacts of PAIRS); with 4.0's they agree to 1e-15.
Every pair holds every contact (distance, position and frame) to AGREE (1e-9). A cylinder with a mesh was held to
1e-4 in 1 contact of 89 until EPA started from MuJoCo 4.0's polytope (its hull of GJK's triangle and the two support
points, listed from the corner MuJoCo's lists first: the multi-contact line runs through that face's first vertex).
Two boxes or meshes
(MuJoCo 4's multi-contact) take nothing iterative to its end: GJK and EPA on polytopes stop on a repeated vertex or a
closed gap (tolerance 1e-15, "discrete"), on the same face as MuJoCo's, and the clipping after them is closed-form, so
every contact is held to AGREE (measured: 1e-13). A cylinder with a mesh or a cylinder under multi-contact (its
caps clipped as 16-gons) is held to AGREE in every contact too: in the scenes tried both codes stop on the same
iterates (measured: 4e-13).
"""

import mujoco
import numpy as np
import pytest

from physai import collision, engine, integrators
from physai.engine import collision as engine_collision, convex, gjk
from physai.engine.geoms import ELLIPSOID, SPHERE
from physai.exceptions import UnsupportedModelError
from helpers import run
from scenes import convex_points, in_mujocos_order

KINDS = {"sphere": SPHERE, "ellipsoid": ELLIPSOID}
PAIRS = [("sphere", "ellipsoid"), ("sphere", "mesh"), ("capsule", "ellipsoid"), ("ellipsoid", "ellipsoid"),
         ("ellipsoid", "cylinder"), ("ellipsoid", "box"), ("ellipsoid", "mesh")]
MULTI_PAIRS = [("capsule", "cylinder"), ("cylinder", "cylinder"), ("cylinder", "box"), ("capsule", "mesh"),
               ("cylinder", "mesh"), ("box", "mesh"), ("mesh", "mesh")]
NO_MULTICCD = '<option><flag multiccd="disable"/></option>'
SCENES = 40
AGREE = 1e-9


def size(kind: str, rng: np.random.Generator) -> str:
    """A random size attribute of a geom kind [m]."""
    if kind == "sphere":
        return f"{rng.uniform(0.02, 0.12):.4f}"
    if kind in ("capsule", "cylinder"):
        return f"{rng.uniform(0.02, 0.1):.4f} {rng.uniform(0.02, 0.12):.4f}"
    return " ".join(f"{x:.4f}" for x in rng.uniform(0.02, 0.12, 3))


def pair_scene(kind1: str, kind2: str, seed: int, option: str = "", margins: bool | str = True) -> str:
    """Two free bodies with one geom each (a mesh: a random convex hull or prism), random sizes, margins and gaps (none
    unless margins; margins "negative": margins of -2 to -10 mm and gaps up to 1 mm, margin + gap < 0); option: MJCF
    put first (an <option>)."""
    rng = np.random.default_rng(seed)
    assets, geoms = [], []
    for k, kind in enumerate((kind1, kind2)):
        margin, gap = rng.choice([0, 0, 0.01, 0.03]), rng.choice([0, 0, 0.005])
        if margins == "negative":
            margin, gap = round(-rng.uniform(0.002, 0.01), 5), round(rng.uniform(0, 0.001), 5)
        margin, gap = (margin, gap) if margins else (0, 0)
        if kind == "mesh":
            points = " ".join(f"{x:.5f}" for x in convex_points(str(rng.choice(["hull", "prism", "apex"])), rng).ravel())
            assets.append(f'<mesh name="m{k}" vertex="{points}"/>')
            shape = f'type="mesh" mesh="m{k}"'
        else:
            shape = f'type="{kind}" size="{size(kind, rng)}"'
        geoms.append(f'<body><freejoint/><geom {shape} margin="{margin}" gap="{gap}"/></body>')
    return f"<mujoco>{option}<asset>{''.join(assets)}</asset><worldbody>{''.join(geoms)}</worldbody></mujoco>"


def random_states(m: mujoco.MjModel, rng: np.random.Generator, n: int, near: float = 1.0) -> list:
    """n qpos of the two free bodies: random orientations, the second within about its size of the first (times near:
    near < 1 puts the centres closer, the geoms deep in each other)."""
    out = []
    reach = 0.5 * near * (m.geom_rbound[0] + m.geom_rbound[1])
    for _ in range(n):
        q = np.zeros(m.nq)
        for b in range(2):
            quat = rng.normal(size=4)
            q[7 * b + 3:7 * b + 7] = quat / np.linalg.norm(quat)
        q[7:10] = rng.normal(size=3) * reach
        out.append(q)
    return out


def compare(kind1: str, kind2: str, seeds, per_scene: int = 4, backend: str = "numpy", option: str = "",
            margins: bool | str = True, reorder: bool = False, near: float = 1.0) -> dict:
    """Counts and errors of physai's contacts (on the backend) against mj_collision's on random scenes of a pair
    (pair_scene's option and margins): states, agree (same count and geom pairs), several (of those, states of more
    than one contact), contacts (where they agree), close (within AGREE in every field), max_pos, max_frame, max_dist
    (the largest errors); reorder: each contact compared with its MuJoCo twin (in_mujocos_order), reordered counting
    the states where that is not mine's own order; near: random_states'. deepest: the largest depth -dist over the
    smaller geom's smallest semi-axis or radius."""
    out = dict(states=0, agree=0, several=0, contacts=0, close=0, max_pos=0.0, max_frame=0.0, max_dist=0.0, reordered=0,
               deepest=0.0)
    for seed in seeds:
        m = mujoco.MjModel.from_xml_string(pair_scene(kind1, kind2, seed, option, margins))
        d = mujoco.MjData(m)
        model = engine.from_mujoco(m)
        for q in random_states(m, np.random.default_rng(seed), per_scene, near):
            d.qpos[:] = q
            mujoco.mj_kinematics(m, d)
            mujoco.mj_collision(m, d)
            ref = collision.from_mujoco(m, d)
            mine = run(backend, collision.detect, model, q)
            out["states"] += 1
            if mine.geom.tolist() != ref.geom.tolist():
                continue
            out["agree"] += 1
            out["several"] += len(ref) > 1
            if len(ref):
                out["deepest"] = max(out["deepest"], float(-ref.dist.min() / m.geom_size[m.geom_size > 0].min()))
            order = in_mujocos_order(mine, ref) if reorder else list(range(len(ref)))
            out["reordered"] += order != list(range(len(ref)))
            for k, i in enumerate(order):
                errs = (np.abs(mine.pos[i] - ref.pos[k]).max(), np.abs(mine.frame[i] - ref.frame[k]).max(),
                        abs(mine.dist[i] - ref.dist[k]))
                out["contacts"] += 1
                out["close"] += int(max(errs) <= AGREE)
                for name, err in zip(("max_pos", "max_frame", "max_dist"), errs):
                    out[name] = max(out[name], float(err))
    return out


def check_agreement(kind1: str, kind2: str, backend: str, option: str = "", margins: bool | str = True, per_scene: int = 4,
                    reordered: float = 0.0, near: float = 1.0) -> dict:
    """compare's result on SCENES scenes (per_scene states each): the same contact count and geom pairs as mj_collision
    in at least 99% of the states; where they agree, every contact's distance, position and frame within AGREE;
    reordered > 0: each contact compared with its MuJoCo twin (compare's reorder), in another order in at most that
    share of the states that agree. Returns compare's counts."""
    r = compare(kind1, kind2, range(SCENES), per_scene, backend, option, margins, reordered > 0, near)
    where = f"{kind1}-{kind2}: {r}"
    assert r["agree"] >= 0.99 * r["states"] and r["reordered"] <= reordered * r["agree"], where
    assert r["contacts"] > 0.2 * r["states"], where
    assert r["max_dist"] <= AGREE, where
    assert r["close"] == r["contacts"], where
    return r


@pytest.mark.parametrize("backend", ["numpy", "native"])
@pytest.mark.parametrize("kind1,kind2", PAIRS)
def test_pairs_match_mj_collision(kind1, kind2, backend):
    """Each pair, on both backends, as check_agreement states, every contact within AGREE (GJK's thin last triangle
    weighted as MuJoCo 4 weighs it: see the module's note)."""
    r = check_agreement(kind1, kind2, backend)
    assert r["close"] == r["contacts"], f"{kind1}-{kind2}: {r}"


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_ellipsoids_deep_in_each_other_match_mj_collision(backend):
    """Two ellipsoids with their centres within 0.3 of check_agreement's reach (interpenetrating, EPA's deep case, up
    to several times the smaller's smallest semi-axis deep): in every state the contacts of mj_collision, each within
    AGREE (measured: equal to 7e-16)."""
    r = check_agreement("ellipsoid", "ellipsoid", backend, near=0.3)
    assert r["agree"] == r["states"] and r["contacts"] == r["states"] and r["close"] == r["contacts"], r
    assert r["deepest"] > 2.0, r


@pytest.mark.parametrize("backend", ["numpy", "native"])
@pytest.mark.parametrize("kind1,kind2", MULTI_PAIRS)
def test_multi_pairs_without_multiccd_match_mj_collision(kind1, kind2, backend):
    """The pairs of MuJoCo 4's multi-contact with mjDSBL_MULTICCD set (one contact each), on both backends, as
    check_agreement states."""
    check_agreement(kind1, kind2, backend, NO_MULTICCD)


@pytest.mark.parametrize("backend", ["numpy", "native"])
@pytest.mark.parametrize("kind1,kind2", [("box", "mesh"), ("mesh", "mesh")])
def test_polygon_pairs_match_mj_collision(kind1, kind2, backend):
    """Boxes and meshes without margin under MuJoCo 4's multi-contact (multiccd on), on both backends, as
    check_agreement states, every contact within AGREE, in scenes where MuJoCo finds up to 4 contacts a pair."""
    r = check_agreement(kind1, kind2, backend, margins=False)
    assert r["close"] == r["contacts"] and r["several"] > 0.05 * r["states"], f"{kind1}-{kind2}: {r}"


@pytest.mark.parametrize("backend", ["numpy", "native"])
@pytest.mark.parametrize("kind1,kind2", [("box", "mesh"), ("mesh", "mesh")])
def test_polygon_pairs_with_margins_match_mj_collision(kind1, kind2, backend):
    """Boxes and meshes with random margins and gaps under MuJoCo 4's multi-contact (multiccd on: the bare geoms'
    features from GJK's last simplex while apart, from EPA's face in contact; points within the margin kept), on both
    backends, as check_agreement states, every contact within AGREE, several contacts a pair in some states. Up to
    1% of the states may hold the same contacts in the other order (reordered): an edge clipped at both ends by a face
    gives two pairs of duplicate crossing points, whose farthest pair is a tie that rounding breaks (MuJoCo 4.0's
    polygonClip does physai's arithmetic; in 1 of 160 states of mesh-mesh it breaks the tie the other way)."""
    r = check_agreement(kind1, kind2, backend, reordered=0.01)
    assert r["close"] == r["contacts"] and r["several"] > 0.05 * r["states"], f"{kind1}-{kind2}: {r}"


@pytest.mark.parametrize("backend", ["numpy", "native"])
@pytest.mark.parametrize("kind1,kind2", [("cylinder", "cylinder"), ("cylinder", "box"), ("cylinder", "mesh")])
def test_cylinder_polygon_pairs_match_mj_collision(kind1, kind2, backend):
    """A cylinder with a cylinder, a box or a mesh, without margin, under MuJoCo 4's multi-contact (multiccd on; a cap
    clipped as a 16-gon), on both backends, as check_agreement states, every contact within AGREE."""
    r = check_agreement(kind1, kind2, backend, margins=False)
    assert r["close"] == r["contacts"] and r["several"] > 0, f"{kind1}-{kind2}: {r}"


@pytest.mark.parametrize("backend", ["numpy", "native"])
@pytest.mark.parametrize("kind1,kind2", [("cylinder", "cylinder"), ("cylinder", "box"), ("cylinder", "mesh")])
def test_cylinder_polygon_pairs_with_margins_match_mj_collision(kind1, kind2, backend):
    """A cylinder with a cylinder, a box or a mesh with random margins and gaps under MuJoCo 4's multi-contact (a
    cylinder's edge point moved radially onto its rim from the grown support point, as 4.0 does: where a face clips the
    side line at one or both ends, the duplicate crossing points tie and those bits break the tie), on both backends,
    as check_agreement states, several contacts a pair in some states."""
    r = check_agreement(kind1, kind2, backend)
    assert r["several"] > 0, f"{kind1}-{kind2}: {r}"


@pytest.mark.parametrize("backend", ["numpy", "native"])
@pytest.mark.parametrize("kind2", ["cylinder", "mesh"])
def test_capsule_pairs_match_mj_collision(kind2, backend):
    """A capsule with a cylinder or a mesh, without margin, under MuJoCo 4's multi-contact (multiccd on; its side line
    clipped by a face its axis lies on), on both backends, as check_agreement states with each contact beside its
    MuJoCo twin, in scenes where MuJoCo finds 2 contacts a pair; in MuJoCo's own order in 90% of the states."""
    r = check_agreement("capsule", kind2, backend, margins=False, per_scene=8, reordered=0.1)
    assert r["several"] > 0, f"capsule-{kind2}: {r}"


@pytest.mark.parametrize("backend", ["numpy", "native"])
@pytest.mark.parametrize("kind2", ["cylinder", "mesh"])
def test_capsule_pairs_with_margins_match_mj_collision(kind2, backend):
    """A capsule with a cylinder or a mesh with random margins and gaps under MuJoCo 4's multi-contact (multiccd on;
    the grown capsule's side line clipped, points within half the margin kept, the other geom grown), on both backends, as
    check_agreement states with each contact beside its MuJoCo twin, several contacts a pair in some states."""
    r = check_agreement("capsule", kind2, backend, per_scene=8, reordered=0.1)
    assert r["several"] > 0, f"capsule-{kind2}: {r}"


@pytest.mark.parametrize("backend", ["numpy", "native"])
@pytest.mark.parametrize("kind2", ["cylinder", "mesh"])
def test_capsule_pairs_with_margins_come_in_mujocos_order(kind2, backend):
    """A capsule with a cylinder or a mesh (either first), positive or negative margins, multiccd on: where MuJoCo
    finds 2 contacts a pair (a side line clipped at both ends is a tie between duplicate crossing points that rounding
    breaks), physai's come in MuJoCo's order in all but 1 in 10 of those states (a cylinder: all), each within AGREE of
    its twin. MuJoCo 4.0 grows a capsule by nothing in multi-contact, the other geom by half the margin: clipping the
    line moved onto the bare capsule instead (the same contacts in other rounding) put 1 state in 5 of these in the
    other order (14 of 69 with a mesh, 4 of 17 with a cylinder; measured after: 4 of 69 and 0)."""
    several = reordered = 0
    for kinds in (("capsule", kind2), (kind2, "capsule")):
        for margins in (True, "negative"):
            r = compare(*kinds, range(SCENES), 8, backend, "", margins, reorder=True)
            assert r["agree"] == r["states"] and r["close"] == r["contacts"] and r["max_dist"] <= AGREE, f"{kinds}: {r}"
            several, reordered = several + r["several"], reordered + r["reordered"]
    # the bound is not derived from a model of the ties, only placed between what it tells apart: the side line
    # clipped on the bare capsule put 1 state in 5 in the other order (14 of 69, 4 of 17), rounding's ties leave about
    # 1 in 17 (4 of 69, both backends); 1 in 10 fails the first by a margin and passes the second, on these fixed
    # seeds. With a cylinder no state was swapped after (0 of 17, 4 before): any swap there is taken as the regression.
    assert several >= 15 and reordered <= (0 if kind2 == "cylinder" else 0.1 * several), (several, reordered)


def resting_capsule_states(rng: np.random.Generator, n: int, margin: float = 0.0) -> tuple:
    """(model, n qpos): a capsule (free, with margin [m]) lying 0 to 5 mm deep on a mesh slab and on a cylinder's cap,
    or up to the margin above them, level or tilted by up to 3 degrees, where MuJoCo 4 finds 1 or 2 contacts with
    each."""
    m = mujoco.MjModel.from_xml_string(f"""<mujoco><asset>{SLAB}</asset><worldbody><geom type="mesh" mesh="slab"/>
      <geom type="cylinder" size="0.15 0.05" pos="1 0 0"/><body><freejoint/><geom type="capsule" size="0.02 0.08"
      margin="{margin}"/></body><body><freejoint/><geom type="capsule" size="0.03 0.06" margin="{margin}"/></body>
      </worldbody></mujoco>""")
    states = []
    for _ in range(n):
        q = np.zeros(m.nq)
        for b, x in ((0, 0.0), (1, 1.0)):
            axis = np.array([0.0, 1.0, 0.0]) + rng.normal(size=3) * 0.03
            quat = np.zeros(4)
            mujoco.mju_axisAngle2Quat(quat, axis / np.linalg.norm(axis), np.pi / 2 + rng.uniform(-0.05, 0.05))
            radius = m.geom_size[2 + b, 0]
            q[7 * b:7 * b + 7] = np.r_[x + rng.uniform(-0.05, 0.05), rng.uniform(-0.05, 0.05),
                                       0.05 + radius - rng.uniform(-margin, 0.005), quat]
        states.append(q)
    return m, states


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_a_capsule_resting_on_a_mesh_and_a_cylinder_gets_mujocos_contacts(backend):
    """Capsules lying on a mesh slab and a cylinder's cap (resting_capsule_states): mj_collision's contacts (multiccd
    on: 2 a pair in most states), each beside its MuJoCo twin within AGREE."""
    m, states = resting_capsule_states(np.random.default_rng(0), 40)
    several = resting_contacts_agree(backend, m, states, 2, reordered=True)
    assert several >= 20, f"more than one contact a pair in only {several} states"


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_a_capsule_with_a_margin_resting_on_a_mesh_and_a_cylinder_gets_mujocos_contacts(backend):
    """Capsules with a 1 cm margin lying on a mesh slab and a cylinder's cap, or above them within the margin
    (resting_capsule_states): mj_collision's contacts (multiccd on: 2 a pair in most states), each beside its MuJoCo
    twin within AGREE."""
    m, states = resting_capsule_states(np.random.default_rng(1), 40, margin=0.01)
    several = resting_contacts_agree(backend, m, states, 2, reordered=True)
    assert several >= 20, f"more than one contact a pair in only {several} states"


def resting_contacts_agree(backend: str, m, states: list, above: int, reordered: bool) -> int:
    """Asserts that collision.detect finds mj_collision's contacts at each state, each within AGREE of its MuJoCo twin
    (reordered: paired by in_mujocos_order, else in MuJoCo's order); returns the number of states with more than
    `above` contacts."""
    d, model, several = mujoco.MjData(m), engine.from_mujoco(m), 0
    for q in states:
        d.qpos[:] = q
        mujoco.mj_kinematics(m, d)
        mujoco.mj_collision(m, d)
        mine, ref = run(backend, collision.detect, model, q), collision.from_mujoco(m, d)
        assert mine.geom.tolist() == ref.geom.tolist(), (q, ref.geom)
        several += len(ref) > above
        order = in_mujocos_order(mine, ref) if reordered else np.arange(len(ref))
        for name in ("pos", "frame", "dist"):
            assert np.abs(getattr(mine, name)[order] - getattr(ref, name)).max(initial=0) <= AGREE, name
    return several


def resting_cylinder_states(rng: np.random.Generator, n: int) -> tuple:
    """(model, n qpos): a cylinder (free) pressed 0 to 5 mm into a wider cylinder below it, standing on its cap or
    lying on its side, level or tilted by a few degrees, where MuJoCo 4 finds 2 to 4 contacts."""
    m = mujoco.MjModel.from_xml_string("""<mujoco><worldbody><body><freejoint/><geom type="cylinder" size="0.05 0.04"/>
      </body><body><freejoint/><geom type="cylinder" size="0.07 0.03"/></body></worldbody></mujoco>""")
    states = []
    for k in range(n):
        q = np.zeros(m.nq)
        q[3] = q[10] = 1
        if k % 2:                                                      # lying on its side
            mujoco.mju_axisAngle2Quat(q[3:7], np.array([1.0, 0, 0]), np.pi / 2)
        if k % 3:                                                      # the one below tilted
            axis = rng.normal(size=3)
            mujoco.mju_axisAngle2Quat(q[10:14], axis / np.linalg.norm(axis), 0.03 * (k % 3))
        q[7:10] = rng.normal(size=3) * 0.02
        q[9] = -0.07 - rng.uniform(0, 0.005)
        states.append(q)
    return m, states


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_a_cylinder_resting_on_a_cylinder_gets_mujocos_contacts(backend):
    """A cylinder on its cap or side on a cylinder (resting_cylinder_states): mj_collision's contacts (multiccd on:
    several in most states, up to 4), every one within AGREE."""
    m, states = resting_cylinder_states(np.random.default_rng(0), 60)
    several = resting_contacts_agree(backend, m, states, 1, reordered=False)
    assert several >= 30, f"several contacts in only {several} states"


def side_by_side_cylinders() -> tuple:
    """(model, qpos list): two cylinders (radius and half length 5 cm) with parallel axes on a grid of side by side
    poses: the upper one's centre at x in [-9, 9] cm, y in [-9, 9] cm, 0.1 - dz above the lower one's (dz 0.1 mm to 5
    cm), turned 0, 0.3 or pi / 4 about its axis. Their Minkowski difference has a round side: EPA's faces there are
    chords of a circle, the two halves of a split arc a tie in exact arithmetic, so its iterates must be MuJoCo's to
    the bit (the hexahedron EPA starts from a segment: its directions rotated by a matrix summed in MuJoCo's order)."""
    m = mujoco.MjModel.from_xml_string("""<mujoco><worldbody>
      <body><freejoint/><geom type="cylinder" size=".05 .05"/></body>
      <body><freejoint/><geom type="cylinder" size=".05 .05"/></body></worldbody></mujoco>""")
    states = []
    for x in np.linspace(-0.09, 0.09, 7):
        for y in np.linspace(-0.09, 0.09, 5):
            for dz in (1e-4, 1e-3, 0.01, 0.05):
                for yaw in (0.0, np.pi / 4, 0.3):
                    q = np.zeros(14)
                    q[:3], q[3], q[6], q[10] = (x, y, 0.1 - dz), np.cos(yaw / 2), np.sin(yaw / 2), 1.0
                    states.append(q)
    return m, states


def mirrored_tie(mine, ref, q) -> bool:
    """Whether a one-contact state's physai contact and MuJoCo's are the two halves of one split arc (EPA's tie, broken
    by rounding, on a cylinder pair's round side): the same depth to 1e-17 m and positions within AGREE, the normals
    mirror images of each other (within AGREE) about the line between the axes (the exact normal, here live from q)."""
    if len(ref) != 1 or np.hypot(q[0], q[1]) < 1e-9:                 # not side by side
        return False
    c = -np.array([q[0], q[1], 0.0]) / np.hypot(q[0], q[1])            # from body 1's axis to body 2's
    n, r = mine.frame[0, 0], ref.frame[0, 0]
    mirror = 2 * (r @ c) * c - r
    return (abs(mine.dist[0] - ref.dist[0]) <= 1e-17 and np.abs(mine.pos - ref.pos).max() <= AGREE
            and np.abs(n[:2] - mirror[:2]).max() <= AGREE and np.abs(n - r).max() > AGREE)


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_cylinders_side_by_side_match_mj_collision(backend):
    """Parallel cylinders side by side (side_by_side_cylinders): mj_collision's contacts, each within AGREE of its
    MuJoCo twin, but where the two contacts are the halves of one split arc (mirrored_tie: measured in 3 of the 276
    touching states, depth equal to 1 ulp, normals 0.35 degrees apart, MuJoCo 4.0's polytope not bit for bit physai's
    there); the NumPy text was 6.1e-3 off in 4 more before its hexahedron's rotation was summed in order."""
    m, states = side_by_side_cylinders()
    d, model, touching, ties = mujoco.MjData(m), engine.from_mujoco(m), 0, 0
    for q in states:
        d.qpos[:] = q
        mujoco.mj_kinematics(m, d)
        mujoco.mj_collision(m, d)
        mine, ref = run(backend, collision.detect, model, q), collision.from_mujoco(m, d)
        assert mine.geom.tolist() == ref.geom.tolist(), q
        touching += len(ref) > 0
        if len(ref) and mirrored_tie(mine, ref, q):
            ties += 1
            continue
        for name in ("pos", "frame", "dist"):
            assert np.abs(getattr(mine, name) - getattr(ref, name)).max(initial=0) <= AGREE, (name, q)
    assert touching > 200 and ties <= 3, (touching, ties)


def test_compiled_side_by_side_cylinder_contacts_equal_the_numpy_text():
    """cpp/gjk.h mirrors gjk.py to rounding where EPA breaks ties by it: at side_by_side_cylinders' states both give
    the same contacts within 1e-12 (they were 6.1e-3 apart in 5 of 276 before)."""
    m, states = side_by_side_cylinders()
    model = engine.from_mujoco(m)
    for q in states:
        mine, ref = (run(backend, collision.detect, model, q) for backend in ("native", "numpy"))
        assert mine.geom.tolist() == ref.geom.tolist(), q
        for name in ("pos", "frame", "dist"):
            assert np.abs(getattr(mine, name) - getattr(ref, name)).max(initial=0) < 1e-12, (name, q)


@pytest.mark.parametrize("backend", ["numpy", "native"])
@pytest.mark.parametrize("kind1,kind2", MULTI_PAIRS)
def test_multi_pairs_with_negative_margins_match_mj_collision(kind1, kind2, backend):
    """With multiccd on (MuJoCo 4's default) each pair of MULTI_PAIRS given random negative margins and gaps (margin +
    gap < 0: MuJoCo grows nothing, and keeps the contacts deeper than the margin), its centres within 0.6 of the
    reach: check_agreement (a capsule's two contacts compared with their MuJoCo twins: the order of a side line clipped
    at both ends is a tie, module note), every contact within AGREE."""
    r = check_agreement(kind1, kind2, backend, margins="negative", near=0.6, reordered=0.5 if kind1 == "capsule" else 0)
    assert r["close"] == r["contacts"], f"{kind1}-{kind2}: {r}"


PRISM = " ".join(f"{np.cos(a) * 0.07:.5f} {np.sin(a) * 0.07:.5f} {z}" for a in np.linspace(0, 2 * np.pi, 7)[:-1]
                 for z in (-0.04, 0.04))                              # a hexagonal prism mesh
ALIGNED = {"cylinder": 'type="cylinder" size=".05 .05"', "box": 'type="box" size=".05 .06 .05"',
           "mesh": 'type="mesh" mesh="prism"'}


def aligned_states(rng: np.random.Generator, n: int) -> list:
    """n states (14,) of two free bodies nearly face to face: each turned by 0, pi/2 or pi (plus 0 to 1e-3 rad) about
    a world axis (7 in 10) or a random one, the second 0.09 to 0.102 from the first along a world axis, offset across
    by up to 0.11 on some axes."""
    states = []
    for _ in range(n):
        q = np.zeros(14)
        for b in range(2):
            axis = rng.normal(size=3)
            axis /= np.linalg.norm(axis)
            angle = rng.choice([0.0, np.pi / 2, np.pi]) + rng.choice([0.0, 1e-12, 1e-9, 1e-6, 1e-3])
            axis = np.eye(3)[rng.integers(3)] if rng.random() < 0.7 else axis
            q[7 * b + 3:7 * b + 7] = np.r_[np.cos(angle / 2), np.sin(angle / 2) * axis]
        q[7:10] = (rng.uniform(-0.11, 0.11, 3) * (rng.random(3) < 0.7) +
                   np.eye(3)[rng.integers(3)] * rng.choice([-1, 1]) * (0.1 - rng.uniform(-0.002, 0.01)))
        states.append(q)
    return states


@pytest.mark.parametrize("backend", ["numpy", "native"])
@pytest.mark.parametrize("kind2", ["cylinder", "box", "mesh"])
def test_negative_margins_face_to_face_get_mujocos_contact_count(kind2, backend):
    """A cylinder with a cylinder, a box or a mesh, each geom's margin -0.003 (margin + gap = -0.006), in 300 nearly
    face-to-face states (aligned_states): the same contact count and geom pairs as mj_collision in every state, the
    distances (sorted) within AGREE. MuJoCo 4's broad phase boxes each body along its covariance frame, its geoms'
    boxes shrunk by their margin: bodies whose geoms overlap by less than 6 mm there get no contact (before physai
    checked those boxes: 3, 3 and 1 of these states with a contact MuJoCo does not give)."""
    m = mujoco.MjModel.from_xml_string(
        f'<mujoco><asset><mesh name="prism" vertex="{PRISM}"/></asset><worldbody><body><freejoint/>'
        f'<geom type="cylinder" size=".05 .05" margin="-0.003"/></body><body><freejoint/>'
        f'<geom {ALIGNED[kind2]} margin="-0.003"/></body></worldbody></mujoco>')
    d, model = mujoco.MjData(m), engine.from_mujoco(m)
    touching = 0
    for q in aligned_states(np.random.default_rng(7), 300):
        d.qpos[:] = q
        mujoco.mj_kinematics(m, d)
        mujoco.mj_collision(m, d)
        ref, mine = collision.from_mujoco(m, d), run(backend, collision.detect, model, q)
        assert mine.geom.tolist() == ref.geom.tolist(), f"{kind2}: {len(mine)} contacts, MuJoCo's {len(ref)}"
        assert np.abs(np.sort(mine.dist) - np.sort(ref.dist)).max(initial=0.0) <= AGREE
        touching += len(ref) > 0
    assert touching > 100


@pytest.mark.parametrize("backend", ["numpy", "native"])
@pytest.mark.parametrize("kinds,seed,state,near", [(("mesh", "box"), 490, 2, 1.0), (("mesh", "box"), 1190, 0, 0.5),
                                                    (("mesh", "box"), 2120, 3, 1.0), (("mesh", "mesh"), 2332, 1, 1.0)])
def test_an_edge_from_gjks_simplex_on_a_face_gets_mujocos_contacts(kinds, seed, state, near, backend):
    """Two polytopes with margins, apart within them, GJK's last simplex naming an edge of geom 1 and a vertex of
    geom 2 (pair_scene's seeds 490 and 1190, 2 of 6,400 random box-mesh states): where both edges lie on a face of the
    other, MuJoCo 4 tries geom 2's edge first (the 3.x source's order for a geom 1 side larger than geom 2's), giving no
    multi-contact (seed 490: ccd's one contact, where the box's edge gave two coinciding points) or two (seed 1190,
    where the box's edge clipped to nothing); where only geom 1's edge lies on a face (seeds 2120 and 2332, box-mesh
    and mesh-mesh), geom 1's edge after it (two contacts, not ccd's one). The same contacts within AGREE."""
    m = mujoco.MjModel.from_xml_string(pair_scene(*kinds, seed, "", True))
    d, model = mujoco.MjData(m), engine.from_mujoco(m)
    d.qpos[:] = random_states(m, np.random.default_rng(seed), 4, near)[state]
    mujoco.mj_kinematics(m, d)
    mujoco.mj_collision(m, d)
    ref, mine = collision.from_mujoco(m, d), run(backend, collision.detect, model, d.qpos.copy())
    assert mine.geom.tolist() == ref.geom.tolist() and len(ref)
    assert max(np.abs(mine.pos - ref.pos).max(), np.abs(mine.frame - ref.frame).max(), np.abs(mine.dist - ref.dist).max()) <= AGREE


def test_eig3_is_mujocos():
    """physai's eig3 (MuJoCo 4's mju_eig3Tol, whose broad phase calls it at a relative tolerance of 1e-3) at
    mju_eig3's tolerance (4e-15) against mujoco.mju_eig3 on covariances of 2 to 10 random points (rank 1 to 3, some
    flat): the same eigenvectors within 1e-15."""
    rng = np.random.default_rng(3)
    for k in range(300):
        points = rng.normal(size=(2 + k % 9, 3)) * rng.uniform(0.01, 3, 3)
        points[:, 2] *= k % 5 != 0
        centre = points.mean(axis=0)
        cov = (points - centre).T @ (points - centre) / len(points)
        value, vector, quat = np.zeros(3), np.zeros(9), np.zeros(4)
        mujoco.mju_eig3(value, vector, quat, cov.ravel())
        assert np.abs(engine_collision.eig3(cov, 4e-15) - vector.reshape(3, 3)).max() <= 1e-15


def test_mujoco_gives_one_contact_for_these_pairs():
    """MuJoCo 4 (multiccd on) returns at most one contact for each pair collided here: the pairs of multi-contact
    stay refused until it exists."""
    for kind1, kind2 in PAIRS:
        for seed in range(10):
            m = mujoco.MjModel.from_xml_string(pair_scene(kind1, kind2, seed))
            d = mujoco.MjData(m)
            for q in random_states(m, np.random.default_rng(seed), 4):
                d.qpos[:] = q
                mujoco.mj_kinematics(m, d)
                mujoco.mj_collision(m, d)
                assert d.ncon <= 1, f"{kind1}-{kind2}: MuJoCo found {d.ncon} contacts"


@pytest.mark.parametrize("kind1,kind2", [("sphere", "ellipsoid"), ("ellipsoid", "ellipsoid")])
def test_degenerate_input_terminates(kind1, kind2):
    """Zero-size and coincident geoms: GJK and EPA end within their iteration limits, with a finite answer or none."""
    mat = np.eye(3)
    for size1, size2, offset in ((np.zeros(3), np.zeros(3), np.zeros(3)), (np.full(3, 0.1), np.full(3, 0.1), np.zeros(3)),
                                 (np.zeros(3), np.full(3, 0.1), np.array([0.05, 0, 0])),
                                 (np.full(3, 0.1), np.array([0.1, 0.0, 0.0]), np.array([1e-12, 0, 0]))):
        obj1 = convex.Shape(KINDS[kind1], np.zeros(3), mat, size1, 0.0)
        obj2 = convex.Shape(KINDS[kind2], offset, mat, size2, 0.0)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            status = gjk.ccd(obj1, obj2, 1e-6, 35)
        assert status.gjk_iterations <= 35 and status.epa_iterations <= 35
        contacts = convex.convex(KINDS[kind1], KINDS[kind2], np.zeros(3), mat, size1, offset, mat, size2, 0.0, 1e-6, 35)
        assert all(np.isfinite(c[0]) and np.isfinite(c[1]).all() for c in contacts)


@pytest.mark.parametrize("backend", ["numpy", "native"])
@pytest.mark.parametrize("tolerance", ["0", "1e-200"])
def test_every_pair_at_a_zero_ccd_tolerance_matches_mj_collision(tolerance, backend):
    """ccd_tolerance 0 (and 1e-200, whose square GJK compares with underflows to 0): GJK and EPA run until a repeated
    vertex, a degenerate face or their iteration limits, and still find mj_collision's contacts in every state of
    every pair (one contact: multiccd off). A degenerate new face of EPA ends it on the nearest face found, as MuJoCo
    4.0 does: measured, 25 of 1,400 states (25 scenes of each pair) lost their contact before, none after."""
    option = f'<option ccd_tolerance="{tolerance}"><flag multiccd="disable"/></option>'
    for kind1, kind2 in PAIRS + MULTI_PAIRS:
        r = compare(kind1, kind2, range(10), 4, backend, option)
        assert r["agree"] == r["states"] and r["max_dist"] <= AGREE, f"{kind1}-{kind2}: {r}"


def beside_mj_step(m: mujoco.MjModel, steps: int, backend: str) -> tuple:
    """physai's simulate on the backend beside mj_step from m's initial state: (the largest qpos difference, each
    step's contacts as mj_step found them (geom pairs), mj_step's last MjData)."""
    d = mujoco.MjData(m)
    Q, contacts = [d.qpos.copy()], []
    for _ in range(steps):
        mujoco.mj_step(m, d)
        Q.append(d.qpos.copy())
        contacts.append([tuple(int(g) for g in c.geom) for c in d.contact[:d.ncon]])
    trajectory = run(backend, integrators.simulate, engine.from_mujoco(m), Q[0], np.zeros(m.nv), m.opt.timestep, steps,
                     constraints=True)
    return np.abs(trajectory.q - np.array(Q)).max(), contacts, d


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_trajectory_matches_mj_step(backend):
    """Ellipsoids dropped on a sphere and an ellipsoid, 100 steps: physai's simulate beside mj_step."""
    xml = """<mujoco><option timestep="0.002"/><worldbody>
      <geom type="sphere" size="0.1" pos="0 0 0"/><geom type="ellipsoid" size="0.2 0.1 0.05" pos="0.3 0 0"/>
      <body pos="0.05 0.02 0.2" euler="0.3 0.2 0.1"><freejoint/><geom type="ellipsoid" size="0.06 0.04 0.05"/></body>
      <body pos="0.32 0 0.15"><freejoint/><geom type="ellipsoid" size="0.05 0.03 0.04"/></body></worldbody></mujoco>"""
    steps = 100
    err, contacts, _ = beside_mj_step(mujoco.MjModel.from_xml_string(xml), steps, backend)
    touching = sum(bool(c) for c in contacts)
    assert touching > steps // 4, f"only {touching} steps with contacts"
    assert err < 1e-9, f"qpos differs from mj_step's by {err:.3g}"


def ellipsoid_pile(seed: int, n: int = 12) -> mujoco.MjModel:
    """n free ellipsoids (semi-axes 7.5 to 15 mm, random) on a 3 x 4 grid in two layers, dropped into a box of five
    planes 8 cm wide (bench_collision's pile of ellipsoids alone)."""
    rng = np.random.default_rng(seed)
    walls = "".join(f'<geom type="plane" size="0 0 1" pos="{x} {y} 0.1" zaxis="{-x / 0.04:g} {-y / 0.04:g} 0"/>'
                    for x, y in ((0.04, 0), (-0.04, 0), (0, 0.04), (0, -0.04)))
    bodies = "".join(f'<body pos="{-0.02 + 0.02 * (k % 3)} {-0.03 + 0.02 * (k // 3 % 4)} {0.03 + 0.03 * (k // 6)}">'
                     f'<freejoint/><geom type="ellipsoid" size="{" ".join(map(str, rng.uniform(0.0075, 0.015, 3)))}"/>'
                     f'</body>' for k in range(n))
    return mujoco.MjModel.from_xml_string(f'<mujoco><worldbody><geom type="plane" size="0 0 1"/>{walls}{bodies}'
                                          f'</worldbody></mujoco>')


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_a_pile_of_ellipsoids_gets_mujocos_contact_frames(backend):
    """Ellipsoids settling in a box (ellipsoid_pile), 300 mj_step steps: at each state where the counts agree, every
    contact of two ellipsoids within AGREE of mj_forward's in position, frame and distance. Their shallow contacts
    often end GJK on a triangle whose two tetrahedra glued on it are not convex (EPA's start, gjk.polytope3: the
    convex hull is MuJoCo 4.0's); with the glued ones, 55 of the 3,461 contacts were 4.6e-7 to 8.0e-2 off (measured)."""
    m = ellipsoid_pile(0)
    model = engine.from_mujoco(m)
    d = mujoco.MjData(m)
    states = []
    for _ in range(300):
        mujoco.mj_step(m, d)
        states.append(d.qpos.copy())
    found = run(backend, collision.detect, model, np.array(states))
    contacts, worst = 0, 0.0
    for q, mine in zip(states, found):
        d.qpos[:] = q
        mujoco.mj_kinematics(m, d)
        mujoco.mj_collision(m, d)
        ref = collision.from_mujoco(m, d)
        if mine.geom.tolist() != ref.geom.tolist():
            continue
        for i in np.flatnonzero((m.geom_type[ref.geom] == mujoco.mjtGeom.mjGEOM_ELLIPSOID).all(axis=1)):
            contacts += 1
            worst = max(worst, np.abs(mine.pos[i] - ref.pos[i]).max(), np.abs(mine.frame[i] - ref.frame[i]).max(),
                        abs(mine.dist[i] - ref.dist[i]))
    assert contacts > 100, f"only {contacts} ellipsoid contacts"
    assert worst <= AGREE, f"{contacts} ellipsoid contacts, the worst {worst:.3g} from mj_collision's"


# bench_collision's pile, seed 3, step 426: two ellipsoids 0.12 mm deep (geoms 19 and 23; poses: pos, quat)
SEGMENT_ELLIPSOIDS = ((0.01062178282303821, 0.00934558990763786, 0.009168468570592126),
                      (0.011192737258269676, 0.011805844583141148, 0.010100453032226224))
SEGMENT_POSES = ((-0.0003266468392118066, 0.059594631704310244, 0.008808645887473161, 0.06760914869174367,
                  -0.33217641158530753, 0.9381447445235356, -0.07051434550753954),
                 (0.01332635597584293, 0.07652667303080314, 0.00962788179889438, 0.975483672151464,
                  -0.010316374910383444, -0.06401602370708888, 0.2103024642826045))


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_ellipsoids_whose_gjk_ends_on_a_segment_get_mujocos_contact(backend):
    """A pile state (SEGMENT_POSES) and 20 states around it (the second ellipsoid moved by up to 0.1 um): GJK ends on
    a segment through the origin (|x| 7e-7), whose three support points around it, 120 degrees apart, leave its line
    outside their triangle; MuJoCo 4.0 replaces one by the support point across the edge the line misses
    (gjk._convex_ring) and EPA finds the contact. mj_collision's contact, within AGREE (before: none, polytope2's
    mjEPA_P2_NONCONVEX; MuJoCo's dist -1.2e-4)."""
    m = mujoco.MjModel.from_xml_string("<mujoco><worldbody>" + "".join(
        f'<body><freejoint/><geom type="ellipsoid" size="{" ".join(map(repr, s))}"/></body>'
        for s in SEGMENT_ELLIPSOIDS) + "</worldbody></mujoco>")
    rng = np.random.default_rng(0)
    q = np.concatenate(SEGMENT_POSES)
    states = [q] + [q + np.concatenate([np.zeros(7), rng.uniform(-1e-7, 1e-7, 3), np.zeros(4)]) for _ in range(20)]
    touching = resting_contacts_agree(backend, m, states, 0, reordered=False)
    assert touching == len(states), f"mj_collision's contact in only {touching} of {len(states)} states"


PILE_MESH = """
    0.00018545288185123354 0.007888725958764553 -0.01138324849307537 -0.0023915404453873634
    0.005724434275180101 -0.0015134671702980995 -0.0017307111993432045 0.009115276858210564
    0.003685197327286005 -0.00265146023593843 -0.001913876156322658 -0.005448637995868921
    -0.005114284809678793 0.000283873756416142 0.005452628713101149 -0.0035746863577514887
    -0.0005416364292614162 0.012005717493593693 0.0035980490501970053 -0.0016659562243148685
    -0.002753619570285082 -0.0021725259721279144 0.009199029766023159 -0.001760696293786168
    0.00361800123937428 -0.003801955608651042 -0.007223914843052626 -0.0040367175824940205
    -0.0015600209590047598 0.008029532618820667 -0.0021352162584662437 0.006140375044196844
    0.005795678589493036 0.004443516489118338 0.0035450486466288567 0.0026655092369765043
    0.002489567967131734 -0.0060829161666333675 -0.003925149329006672 -0.0051737576723098755
    -0.0016530340071767569 -0.004138553980737925 0.005275809671729803 0.0014342262875288725
    3.434848986216821e-05 -0.003907437436282635 0.0026187316980212927 0.006148704793304205
    -0.0033482203725725412 -0.007093419320881367 -0.006025351118296385 4.9437472625868395e-05
    0.002718833275139332 -0.0023155733942985535 0.008238966576755047 -0.0009794692741706967
    0.006694777403026819 -0.004887409508228302 0.0005149404751136899 0.010463896207511425
    -0.002426735358312726 -0.011242286302149296 -0.0037757789250463247 -0.00018919155991170555
    -0.005014797672629356 0.001994286198168993 -0.00016993509780149907 -0.00270663108676672
    0.0072024185210466385 0.005903215613216162 0.0014611509395763278 0.0006459710421040654"""
# bench_collision's pile, trajectory 3 of stats at step 200: a mesh's vertices (mm-sized hull of 24 points), and the
# poses (pos, quat) of the cylinder and the mesh where the cylinder's side lies across a mesh triangle
PILE_POSES = ((-0.03171000113274006, -0.05166924486857278, 0.010667943844273216, -0.3311363262750818,
               0.004946666665603503, 0.7097793269686457, -0.6217214576624152),
              (-0.04463548587281281, -0.03770646837640349, 0.004328945297861288, 0.46147359342542854,
               0.5631331065183455, -0.44574995339988516, 0.5207976631648997))


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_a_cylinder_side_across_a_mesh_triangle_gets_mujocos_contacts(backend):
    """A pile state (PILE_POSES) and 20 states around it (the cylinder moved by up to 1 um): GJK ends on a triangle
    whose two glued tetrahedra are not convex, EPA starts from the hull (gjk.polytope3) and ends on its first face;
    multi-contact clips the cylinder's side line through that face's first cylinder point, so the hull's faces' vertex
    order decides the contacts. mj_collision's contacts, every one within AGREE (before: the hull built by joining
    the far point across the near tetrahedron's horizon: 1.4e-4 off in position, 1.9e-7 in distance)."""
    m = mujoco.MjModel.from_xml_string(f"""<mujoco><asset><mesh name="hull" vertex="{PILE_MESH}"/></asset>
      <worldbody><body><freejoint/><geom type="cylinder" size="0.012083808393256307 0.012481063925613791"/></body>
      <body><freejoint/><geom type="mesh" mesh="hull"/></body></worldbody></mujoco>""")
    rng = np.random.default_rng(0)
    q = np.concatenate(PILE_POSES)
    states = [q] + [q + np.concatenate([rng.uniform(-1e-6, 1e-6, 3), np.zeros(11)]) for _ in range(20)]
    several = resting_contacts_agree(backend, m, states, 1, reordered=False)
    assert several >= 10, f"several contacts in only {several} states"


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_multi_pairs_trajectory_without_multiccd_matches_mj_step(backend):
    """A cube, a cylinder and a capsule dropped on a mesh slab, a cylinder post and each other (mjDSBL_MULTICCD set:
    one contact a pair), 150 steps: physai's simulate beside mj_step, and the cube at rest on the mesh touching it in
    one contact, as MuJoCo's."""
    xml = f"""<mujoco>{NO_MULTICCD}<asset><mesh name="slab" vertex="-.5 -.5 -.05  .5 -.5 -.05  .5 .5 -.05  -.5 .5 -.05
      -.5 -.5 .05  .5 -.5 .05  .5 .5 .05  -.5 .5 .05"/></asset><worldbody>
      <body><geom type="mesh" mesh="slab"/></body><geom type="cylinder" size="0.04 0.1" pos="0.25 0 0.15"/>
      <body pos="-0.2 0.1 0.1"><freejoint/><geom type="box" size="0.04 0.04 0.04"/></body>
      <body pos="0.05 -0.1 0.12" euler="0.4 0.2 0"><freejoint/><geom type="cylinder" size="0.04 0.03"/></body>
      <body pos="0.22 0.02 0.38" euler="0.7 0.3 0"><freejoint/><geom type="capsule" size="0.02 0.08"/></body>
      </worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    err, contacts, d = beside_mj_step(m, 150, backend)
    kinds = {tuple(sorted(m.geom_type[list(pair)])) for step in contacts for pair in step}
    mujoco.mj_kinematics(m, d)
    mujoco.mj_collision(m, d)
    resting, ref = run(backend, collision.detect, engine.from_mujoco(m), d.qpos.copy()), collision.from_mujoco(m, d)
    cube = [2, 1]                                         # the cube (geom 2) on the slab (geom 1; world geoms first)
    assert {(5, 7), (6, 7), (3, 5)} <= kinds, f"pairs touched: {kinds}"
    assert err < 1e-9, f"qpos differs from mj_step's by {err:.3g}"
    assert resting.geom.tolist().count(cube) == 1 == ref.geom.tolist().count(cube)


SLAB = """<mesh name="slab" vertex="-.5 -.5 -.05  .5 -.5 -.05  .5 .5 -.05  -.5 .5 -.05  -.5 -.5 .05  .5 -.5 .05
    .5 .5 .05  -.5 .5 .05"/>"""


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_a_cube_resting_on_a_mesh_gets_mujocos_four_contacts(backend):
    """A cube resting on a mesh slab and a box on it: 4 contacts each as mj_collision's (multiccd on), 1 each with
    mjDSBL_MULTICCD, within AGREE."""
    for option, count in (("", 4), (NO_MULTICCD, 1)):
        m = mujoco.MjModel.from_xml_string(f"""<mujoco>{option}<asset>{SLAB}</asset><worldbody>
          <geom type="mesh" mesh="slab"/><body pos="0.1 0.05 0.0895" euler="0 0 0.3"><freejoint/>
          <geom type="box" size="0.04 0.04 0.04"/></body><body pos="0.1 0.05 0.1688" euler="0 0 0.7"><freejoint/>
          <geom type="mesh" mesh="slab" pos="0 0 0" size="1 1 1"/></body></worldbody></mujoco>""".replace(
            '<geom type="mesh" mesh="slab" pos="0 0 0" size="1 1 1"/>', '<geom type="box" size="0.03 0.02 0.04"/>'))
        d = mujoco.MjData(m)
        mujoco.mj_forward(m, d)
        mine, ref = run(backend, collision.detect, engine.from_mujoco(m), d.qpos.copy()), collision.from_mujoco(m, d)
        assert ref.geom.tolist().count([1, 0]) == count and mine.geom.tolist() == ref.geom.tolist(), (option, ref.geom)
        for name in ("pos", "frame", "dist"):
            assert np.abs(getattr(mine, name) - getattr(ref, name)).max() <= AGREE, name


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_polygon_pairs_trajectory_matches_mj_step(backend):
    """Cubes and convex meshes (a hull, a prism) dropped on a mesh slab and each other under MuJoCo 4's multi-contact,
    150 steps: physai's simulate beside mj_step, with several contacts a pair on the way."""
    rng = np.random.default_rng(2)
    meshes = "".join(f'<mesh name="m{k}" vertex="{" ".join(f"{x:.5f}" for x in convex_points(kind, rng).ravel())}"/>'
                     for k, kind in enumerate(("hull", "prism")))
    m = mujoco.MjModel.from_xml_string(f"""<mujoco><asset>{SLAB}{meshes}</asset><worldbody><geom type="mesh" mesh="slab"/>
      <body pos="-0.1 0.1 0.1" euler="0.1 0 0"><freejoint/><geom type="box" size="0.04 0.04 0.04"/></body>
      <body pos="-0.08 0.12 0.22" euler="0 0.3 0.2"><freejoint/><geom type="mesh" mesh="m0"/></body>
      <body pos="0.15 -0.1 0.12"><freejoint/><geom type="mesh" mesh="m1"/></body>
      <body pos="0.15 -0.1 0.3" euler="0.2 0.1 0"><freejoint/><geom type="box" size="0.03 0.05 0.02"/></body>
      </worldbody></mujoco>""")
    err, contacts, _ = beside_mj_step(m, 150, backend)
    most = max(step.count(pair) for step in contacts for pair in step)
    assert most >= 3, f"at most {most} contacts a pair"
    assert err < 1e-9, f"qpos differs from mj_step's by {err:.3g}"


@pytest.mark.parametrize("backend", ["numpy", "native"])
@pytest.mark.parametrize("margin", [0.0, 0.005])
def test_capsule_pairs_trajectory_matches_mj_step(backend, margin):
    """Capsules dropped on a mesh slab, a cylinder, a convex hull and each other under MuJoCo 4's multi-contact, every
    geom with margin [m], 150 steps: physai's simulate beside mj_step, with 2 contacts a capsule pair on the way."""
    hull = " ".join(f"{x:.5f}" for x in convex_points("hull", np.random.default_rng(3)).ravel())
    m = mujoco.MjModel.from_xml_string(f"""<mujoco><default><geom margin="{margin}"/></default><asset>{SLAB}
      <mesh name="hull" vertex="{hull}"/></asset><worldbody>
      <geom type="mesh" mesh="slab"/><geom type="cylinder" size="0.1 0.04" pos="0.25 0.2 0.09"/>
      <body pos="-0.15 0 0.1" euler="0 88 10"><freejoint/><geom type="capsule" size="0.02 0.08"/></body>
      <body pos="0.25 0.2 0.19" euler="0 91 0"><freejoint/><geom type="capsule" size="0.025 0.06"/></body>
      <body pos="0.1 -0.2 0.1"><freejoint/><geom type="mesh" mesh="hull"/></body>
      <body pos="0.1 -0.2 0.3" euler="0 90 30"><freejoint/><geom type="capsule" size="0.02 0.07"/></body>
      </worldbody></mujoco>""")
    err, contacts, _ = beside_mj_step(m, 150, backend)
    capsule = int(mujoco.mjtGeom.mjGEOM_CAPSULE)
    two = sum(any(step.count(p) == 2 and capsule in m.geom_type[list(p)] for p in step) for step in contacts)
    assert two >= 100, f"a capsule pair in 2 contacts in only {two} steps"
    assert err < 1e-9, f"qpos differs from mj_step's by {err:.3g}"


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_coincident_geoms_terminate_as_mujoco(backend):
    """Coincident geoms of every pair (the same centre and axes; MULTI_PAIRS without multiccd): both backends end, with
    mj_collision's contacts."""
    for kind1, kind2, option in [(*pair, "") for pair in PAIRS] + [(*pair, NO_MULTICCD) for pair in MULTI_PAIRS]:
        m = mujoco.MjModel.from_xml_string(pair_scene(kind1, kind2, 3, option))
        d, model = mujoco.MjData(m), engine.from_mujoco(m)
        q = np.r_[0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0]
        d.qpos[:] = q
        mujoco.mj_kinematics(m, d)
        mujoco.mj_collision(m, d)
        ref, mine = collision.from_mujoco(m, d), run(backend, collision.detect, model, q)
        assert mine.geom.tolist() == ref.geom.tolist(), f"{kind1}-{kind2}"
        for name in ("pos", "frame", "dist"):
            assert np.abs(getattr(mine, name) - getattr(ref, name)).max(initial=0) <= AGREE, f"{kind1}-{kind2}: {name}"


def hull_vertices(rng: np.random.Generator, n: int) -> str:
    """An MJCF vertex list of n random points on an ellipsoid of random semi-axes (0.05 to 0.1 m): a hull of n vertices."""
    points = rng.normal(size=(n, 3))
    points *= rng.uniform(0.05, 0.1, 3) / np.linalg.norm(points, axis=1)[:, None]
    return " ".join(f"{x:.5f}" for x in points.ravel())


def assert_contacts_as_mujoco(m: mujoco.MjModel, states: list, backend: str) -> list:
    """physai's contacts (on the backend) at each state equal mj_collision's (geom pairs, then pos, frame and dist
    within AGREE); the number of contacts at each state."""
    d, model, counts = mujoco.MjData(m), engine.from_mujoco(m), []
    for q in states:
        d.qpos[:] = q
        mujoco.mj_kinematics(m, d)
        mujoco.mj_collision(m, d)
        ref, mine = collision.from_mujoco(m, d), run(backend, collision.detect, model, q)
        assert mine.geom.tolist() == ref.geom.tolist()
        for name in ("pos", "frame", "dist"):
            assert np.abs(getattr(mine, name) - getattr(ref, name)).max(initial=0) <= AGREE, name
        counts.append(len(ref))
    return counts


def test_large_hulls_match_mj_collision():
    """A sphere and an ellipsoid against convex meshes of 400 hull vertices (the support climbs the hull's graph):
    the same contacts as mj_collision, within AGREE."""
    rng = np.random.default_rng(5)
    for seed in range(4):
        vertices = hull_vertices(rng, 400)
        for other, size in (("sphere", "0.05"), ("ellipsoid", "0.05 0.03 0.04")):
            m = mujoco.MjModel.from_xml_string(
                f'<mujoco><asset><mesh name="m" vertex="{vertices}"/></asset><worldbody><body><freejoint/><geom '
                f'type="{other}" size="{size}" margin="{rng.choice([0, 0.01])}"/></body><body><freejoint/><geom '
                'type="mesh" mesh="m"/></body></worldbody></mujoco>')
            assert_contacts_as_mujoco(m, random_states(m, np.random.default_rng(seed), 5), "numpy")


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_large_hull_polygon_pairs_match_mj_collision(backend):
    """A box and a convex mesh against convex meshes of 200 hull vertices (triangulated hulls: many faces at a vertex,
    the best aligned pair of faces taken) under MuJoCo 4's multi-contact: mj_collision's contacts, within AGREE."""
    rng, several = np.random.default_rng(5), 0
    for seed in range(3):
        hulls = [hull_vertices(rng, 200) for _ in range(2)]
        for other in ('type="box" size="0.05 0.03 0.04"', 'type="mesh" mesh="b"'):
            m = mujoco.MjModel.from_xml_string(
                f'<mujoco><asset><mesh name="a" vertex="{hulls[0]}"/><mesh name="b" vertex="{hulls[1]}"/></asset>'
                f'<worldbody><body><freejoint/><geom {other}/></body><body><freejoint/><geom type="mesh" mesh="a"/>'
                '</body></worldbody></mujoco>')
            counts = assert_contacts_as_mujoco(m, random_states(m, np.random.default_rng(seed), 5), backend)
            several += sum(c > 1 for c in counts)
    assert several >= 3, f"{several} states of several contacts"


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_a_cube_mesh_keeps_its_last_support_vertex_as_mujoco(backend):
    """A cube mesh (8 vertices: MuJoCo 4 scans them all, keeping the vertex its last search found among equals, and
    warm-starts a climb of a larger hull where the last one ended) with a capsule above it turned 45 degrees and a
    cylinder beside it, their axes aligned (support directions along the cube's axes: ties): mj_collision's contacts,
    within AGREE (from the first of equal vertices instead, a capsule's contact moves by 1e-4 m)."""
    cube = " ".join(f"{0.05 * x:g}" for corner in np.ndindex(2, 2, 2) for x in 2 * np.array(corner) - 1)
    for other, pose in (('type="capsule" size="0.04 0.03"', 'pos="0 -0.01 0.07" euler="0 0 45"'),
                        ('type="cylinder" size="0.04 0.03"', 'pos="0 0.05 0.03"')):
        m = mujoco.MjModel.from_xml_string(
            f'<mujoco><asset><mesh name="cube" vertex="{cube}"/></asset><worldbody><body><freejoint/><geom type="mesh" '
            f'mesh="cube"/></body><body {pose}><freejoint/><geom {other}/></body></worldbody></mujoco>')
        assert assert_contacts_as_mujoco(m, [m.qpos0.copy()], backend) != [0]


def test_libccd_is_refused_by_name():
    """MuJoCo's older libccd path (nativeccd disabled) for a model with GJK pairs: UnsupportedModelError naming it."""
    m = mujoco.MjModel.from_xml_string(pair_scene("sphere", "ellipsoid", 0).replace(
        "<mujoco>", '<mujoco><option><flag nativeccd="disable"/></option>'))
    model = engine.from_mujoco(m)
    with pytest.raises(UnsupportedModelError, match="mjDSBL_NATIVECCD"):
        run("numpy", collision.detect, model, np.r_[0, 0, 0, 1, 0, 0, 0, 0, 0, 0.5, 1, 0, 0, 0])


# ------------------------------------------------------------------ heightfields (mjc_ConvexHField)

HFIELD_KINDS = ("sphere", "capsule", "box", "ellipsoid", "cylinder", "mesh")


def hfield_scene(seed: int) -> str:
    """A random terrain (a heightfield of 3 to 12 rows and columns, moved and turned) and one free body of each convex
    kind above it, random sizes, poses and margins; the bodies collide with the terrain only."""
    rng = np.random.default_rng(seed)
    nrow, ncol = rng.integers(3, 13, 2)
    elevation = " ".join(f"{x:.4f}" for x in rng.uniform(0, 1, nrow * ncol))
    points = " ".join(f"{x:.4f}" for x in convex_points(str(rng.choice(["hull", "prism", "apex"])), rng).ravel() * 2)
    bodies = []
    for kind in HFIELD_KINDS:
        radius = f"{rng.uniform(0.05, 0.2):.4f}"
        shape = 'type="mesh" mesh="m"' if kind == "mesh" else f'type="{kind}" size="{radius if kind == "sphere" else size(kind, rng)}"'
        pos = f"{rng.uniform(-1, 1):.3f} {rng.uniform(-1, 1):.3f} {rng.uniform(0.3, 0.6):.3f}"
        euler = " ".join(f"{x:.1f}" for x in rng.uniform(-90, 90, 3))
        bodies.append(f'<body pos="{pos}" euler="{euler}"><freejoint/><geom {shape} contype="0" '
                      f'margin="{rng.choice([0, 0.01])}"/></body>')
    return (f'<mujoco><asset><hfield name="h" nrow="{nrow}" ncol="{ncol}" size="1.2 1.1 0.3 0.1" elevation="{elevation}"/>'
            f'<mesh name="m" vertex="{points}"/></asset><worldbody><geom type="hfield" hfield="h" pos="0.1 -0.1 0" '
            f'euler="2 -3 10"/>{"".join(bodies)}</worldbody></mujoco>')


def compare_along_steps(m: mujoco.MjModel, model, steps: int, every: int, backend: str, **detect) -> dict:
    """physai's contacts (collision.detect on the backend) against mj_collision's every `every` of `steps` mj_step
    steps: states, agree (same count and geom pairs), close (agree, and every position, frame and distance within
    AGREE), contacts, max_dist and max_witness (the largest distance and position or frame errors where they agree)."""
    d = mujoco.MjData(m)
    out = dict(states=0, agree=0, close=0, contacts=0, max_dist=0.0, max_witness=0.0)
    for step in range(steps):
        mujoco.mj_step(m, d)
        if step % every:
            continue
        mujoco.mj_forward(m, d)
        ref, mine = collision.from_mujoco(m, d), run(backend, collision.detect, model, d.qpos.copy(), **detect)
        out["states"] += 1
        if mine.geom.tolist() != ref.geom.tolist():
            continue
        out["agree"] += 1
        out["contacts"] += len(ref)
        dist = np.abs(mine.dist - ref.dist).max(initial=0)
        witness = max(np.abs(mine.pos - ref.pos).max(initial=0), np.abs(mine.frame - ref.frame).max(initial=0))
        out["close"] += int(max(dist, witness) <= AGREE)
        out["max_dist"], out["max_witness"] = max(out["max_dist"], dist), max(out["max_witness"], witness)
    return out


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_hfield_terrains_match_mj_collision(backend):
    """Spheres, capsules, boxes, ellipsoids, cylinders and meshes dropped on random terrains, along mj_step runs: the
    same contact count and geom pairs as mj_collision in every state, and every position, frame and distance within
    AGREE in at least 97% of them.
    What differs, now and then: a mesh without margin on a prism (both polytopes: EPA ends when a support point repeats)
    ends on another face than MuJoCo's (none of these 120 states; about 1 in 100 mesh states on other seeds)."""
    total = dict(states=0, agree=0, close=0, contacts=0)
    for seed in range(6):
        m = mujoco.MjModel.from_xml_string(hfield_scene(seed))
        r = compare_along_steps(m, engine.from_mujoco(m), 240, 12, backend)
        for key in total:
            total[key] += r[key]
    assert total["agree"] == total["states"], total
    assert total["contacts"] > 2 * total["states"], total
    assert total["close"] >= 0.97 * total["states"], total


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_hfield_terrain_steps_as_mj_step(backend):
    """Six convex bodies falling on a terrain: from each of 150 states of an mj_step run, physai's step (with MuJoCo's
    warm start) lands on mj_step's next state within 1e-9, on both backends (the compiled one collides the prisms in
    cpp/convex.h's hfield_convex). Longer runs part from MuJoCo's by more: EPA on a prism against a curved geom can
    pick another face for a state 1e-15 away, in MuJoCo as in physai."""
    m = mujoco.MjModel.from_xml_string(hfield_scene(1))
    model, d = engine.from_mujoco(m), mujoco.MjData(m)
    contacts, err = 0, 0.0
    for step in range(150):
        q, qd, warm = d.qpos.copy(), d.qvel.copy(), d.qacc_warmstart.copy()
        mujoco.mj_step(m, d)
        contacts += d.ncon
        if step >= 60:
            q1, qd1 = run(backend, integrators.step, model, q, qd, m.opt.timestep, constraints=True, qacc_warmstart=warm)[:2]
            err = max(err, np.abs(q1 - d.qpos).max(), np.abs(qd1 - d.qvel).max() * m.opt.timestep)
    assert contacts > 200
    assert err < 1e-9, err


def test_compiled_hfield_contacts_equal_the_numpy_text():
    """cpp/convex.h's hfield_convex mirrors convex.hfield_convex: the same contacts, within rounding, at the states of
    mj_step runs on random terrains."""
    for seed in range(3):
        m = mujoco.MjModel.from_xml_string(hfield_scene(seed))
        model, d = engine.from_mujoco(m), mujoco.MjData(m)
        for step in range(200):
            mujoco.mj_step(m, d)
            if step % 20 == 0:
                mine, ref = (run(backend, collision.detect, model, d.qpos.copy()) for backend in ("native", "numpy"))
                assert mine.geom.tolist() == ref.geom.tolist()
                for name in ("pos", "frame", "dist"):
                    assert np.abs(getattr(mine, name) - getattr(ref, name)).max(initial=0) < 1e-12, name


def test_hfield_contacts_mujoco_gives_several_per_pair():
    """The premise of the terrain test: mj_collision gives several contacts to one heightfield pair (a prism each), and
    physai the same number."""
    m = mujoco.MjModel.from_xml_string(hfield_scene(0))
    d, model = mujoco.MjData(m), engine.from_mujoco(m)
    most = 0
    for _ in range(150):
        mujoco.mj_step(m, d)
        mujoco.mj_forward(m, d)
        pairs = collision.from_mujoco(m, d).geom.tolist()
        most = max([most] + [pairs.count(p) for p in pairs])
    assert most > 2
    ref, mine = collision.from_mujoco(m, d), collision.detect(model, d.qpos.copy())
    assert mine.geom.tolist() == ref.geom.tolist()


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_quadruped_on_a_heightfield_matches_mj_collision(backend):
    """dm_control's Quadruped (its actuators and tendon couplings left out: their activation dynamics and tendon
    equalities are not collision's, and the second would keep the compiled path off) falling on a bumpy terrain in
    its heightfield: physai's contacts equal mj_collision's along an mj_step run, every one within AGREE (an ellipsoid
    foot on a prism: GJK's thin last triangle weighted as MuJoCo 4 weighs it, see the module's note; measured 2e-13)."""
    from pathlib import Path

    import dm_control
    spec = mujoco.MjSpec.from_file(str(Path(dm_control.__file__).parent / "suite" / "quadruped.xml"))
    for element in list(spec.actuators) + list(spec.equalities):
        spec.delete(element)
    m = spec.compile()
    nrow, ncol = int(m.hfield_nrow[0]), int(m.hfield_ncol[0])
    rng = np.random.default_rng(0)
    bumps = 1.5 + np.sin(np.linspace(0, 6 * np.pi, ncol))[None, :] * np.cos(np.linspace(0, 5 * np.pi, nrow))[:, None]
    m.hfield_data[:] = ((bumps + rng.uniform(0, 0.3, bumps.shape)) / 2.8).ravel()
    r = compare_along_steps(m, engine.from_mujoco(m), 400, 40, backend, ignore_unsupported=True)
    assert r["agree"] == r["close"] == r["states"] and r["max_dist"] <= AGREE and r["max_witness"] <= AGREE, r
    assert r["contacts"] > 4 * r["states"], r


def test_constraint_rows_of_a_terrain_equal_on_both_backends():
    """The constraint rows of a model with a heightfield on both backends: the compiled copy of the model takes the
    heightfield geoms and their fields."""
    from physai import constraints
    m = mujoco.MjModel.from_xml_string(hfield_scene(2))
    d, model = mujoco.MjData(m), engine.from_mujoco(m)
    for _ in range(100):
        mujoco.mj_step(m, d)
    q, qd = d.qpos.copy(), d.qvel.copy()
    rows = [run(backend, constraints.rows, model, q, qd) for backend in ("numpy", "native")]
    assert rows[0].J.shape[0] > 0
    assert np.abs(rows[0].J - rows[1].J).max() < 1e-12 and np.abs(rows[0].aref - rows[1].aref).max() < 1e-9


def test_libccd_is_refused_by_name_for_heightfields():
    """MuJoCo's older libccd path (nativeccd disabled) for a model whose only convex pairs are a heightfield's:
    UnsupportedModelError naming it."""
    m = mujoco.MjModel.from_xml_string(hfield_scene(0).replace("<mujoco>", '<mujoco><option><flag nativeccd="disable"/></option>'))
    model = engine.from_mujoco(m)
    with pytest.raises(UnsupportedModelError, match="mjDSBL_NATIVECCD"):
        run("numpy", collision.detect, model, m.qpos0)


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_sdf_geoms_are_refused_by_name(backend):
    """A colliding SDF geom (MuJoCo's signed-distance-field plugin shapes): UnsupportedModelError naming it, even with
    ignoring_unsupported (nothing of it is left out silently)."""
    xml = """<mujoco><extension><plugin plugin="mujoco.sdf.torus"><instance name="torus"><config key="radius1" value="0.35"/>
      <config key="radius2" value="0.15"/></instance></plugin></extension><asset><mesh name="torus"><plugin instance="torus"/>
      </mesh></asset><worldbody><geom type="plane" size="1 1 .1"/><body pos="0 0 .1"><freejoint/><geom name="ring"
      type="sdf" mesh="torus"><plugin instance="torus"/></geom></body></worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    model = engine.from_mujoco(m)
    for call in (lambda: collision.detect(model, m.qpos0), lambda: collision.detect(model, m.qpos0, ignore_unsupported=True),
                 lambda: integrators.simulate(model, m.qpos0, np.zeros(model.nv), 0.002, 3, constraints=True)):
        with pytest.raises(UnsupportedModelError, match="1 SDF geoms .*geom 1 'ring'"):
            run(backend, call)


def test_the_compiled_model_refuses_heightfield_indices_outside_its_arrays():
    """The compiled model's heightfield arrays are checked when it reads them: a field outside hfield_data, a grid of
    fewer than 2 x 2, a geom naming a field it does not have are named."""
    from physai.engine import _native, native
    from physai.engine.constraint import invweight0

    model = engine.from_mujoco(mujoco.MjModel.from_xml_string(hfield_scene(0)))
    fields = native.constraint_fields(model, *invweight0(model))
    for name, change in (("hfield_adr", {"hfield_adr": fields["hfield_adr"] + 1}),
                         ("hfield_adr", {"hfield_nrow": fields["hfield_nrow"] * 0 + 1}),
                         ("hfield_adr", {"hfield_ncol": fields["hfield_ncol"] * 0 + 2**40}),
                         ("geom_dataid", {"geom_dataid": fields["geom_dataid"] + 100})):
        with pytest.raises(ValueError, match=f"{name}: an index outside"):
            _native.Model(native.fields(model)).add_constraints({**fields, **change})


if __name__ == "__main__":                       # the accuracy table of the closing note
    for pair in PAIRS:
        print(*pair, compare(*pair, range(60)))
    for pair in MULTI_PAIRS:
        print(*pair, "(multiccd off)", compare(*pair, range(60), option=NO_MULTICCD))
    for pair in (("cylinder", "cylinder"), ("cylinder", "mesh"), ("box", "mesh"), ("mesh", "mesh")):
        print(*pair, "(multiccd on, no margin)", compare(*pair, range(60), margins=False))

"""physai.collision.detect against MuJoCo's mj_collision, computed here: the same contacts in the same order, with
positions, frames, distances and mixed parameters within 1e-12 (relative to the scene's size of about 1 m), on random
scenes of spheres, capsules, cylinders and boxes falling on a tilted plane (priorities, solmix, margins, gaps, condim,
explicit pairs, excluded pairs, parent filtering), and on the Menagerie robots in their scenes."""

import gc
import weakref
import warnings
from pathlib import Path

import mujoco
import numpy as np
import pytest

from physai import collision, engine, integrators, models
from physai.engine import collision as engine_collision
from physai.engine import constraint, native, smooth
from physai.engine.geoms import TYPE_NAMES
from physai.engine.convex import CONVEX_PAIRS, HFIELD_PAIRS, MULTI_PAIRS
from physai.engine.primitives import FUNCTIONS
from physai.exceptions import CollisionWarning, InvalidArgumentError, ShapeError, UnsupportedModelError
from helpers import run
from scenes import (capsule_beside_a_bare_mesh, convex_points, in_mujocos_order, mesh_scene, random_scene, sphere_pile, states,
                    without_meshes)

TOL = 1e-12
GJK_AGREE = 1e-9   # GJK apart on curved sides: where rounding breaks a tie between faces MuJoCo's own contact moves (test_convex's note)
FIELDS = ("pos", "frame", "dist", "includemargin", "friction", "solref", "solreffriction", "solimp")


def supported(m: mujoco.MjModel, g1: int, g2: int) -> bool:
    """Whether physai collides the geom pair (g1, g2) of m: an analytic or GJK pair (multi-contact ones at any margin),
    or a heightfield's."""
    pair = tuple(sorted((int(m.geom_type[g1]), int(m.geom_type[g2]))))
    return pair in FUNCTIONS or pair in HFIELD_PAIRS or pair in CONVEX_PAIRS + MULTI_PAIRS


def mujoco_contacts(m, d) -> collision.ContactSet:
    """MuJoCo's contacts after mj_forward, without the pairs physai has no narrow phase for."""
    full = collision.from_mujoco(m, d)
    keep = np.array([supported(m, *g) for g in full.geom], bool).reshape(-1)
    fields = {f: getattr(full, f)[keep] for f in FIELDS + ("dim", "body1", "body2", "geom")}
    return collision.ContactSet(nbody=full.nbody, **fields)


def tolerances(m, d, ref: collision.ContactSet) -> np.ndarray:
    """(nc,) each contact's bound: TOL, and for a cylinder nearly upright on a plane TOL + 1e-15 r / sin(tilt): its rim
    point's direction is (axis cos - normal) / sin, so the last digit of the geom's axes (physai's and MuJoCo's frames
    agree to 2e-16) moves the contact by about that much in MuJoCo itself; for a GJK pair apart within its margin
    (dist > 0: GJK's witness points on curved sides, no EPA) GJK_AGREE."""
    out = np.full(len(ref), TOL)
    for k, (g1, g2) in enumerate(ref.geom):
        pair = tuple(sorted((int(m.geom_type[g1]), int(m.geom_type[g2]))))
        if (pair in MULTI_PAIRS or pair in CONVEX_PAIRS) and ref.dist[k] > 0:
            out[k] = GJK_AGREE
        if m.geom_type[g1] == mujoco.mjtGeom.mjGEOM_PLANE and m.geom_type[g2] == mujoco.mjtGeom.mjGEOM_CYLINDER:
            cos = d.geom_xmat[g1].reshape(3, 3)[:, 2] @ d.geom_xmat[g2].reshape(3, 3)[:, 2]
            out[k] += 1e-15 * m.geom_size[g2, 0] / max(np.sqrt(max(1 - cos * cos, 0.0)), 1e-15)
    return out


def assert_same(mine: collision.ContactSet, ref: collision.ContactSet, where: str, bound: np.ndarray | None = None) -> None:
    assert mine.geom.tolist() == ref.geom.tolist(), f"{where}: geom pairs {mine.geom.tolist()} != MuJoCo's {ref.geom.tolist()}"
    assert mine.dim.tolist() == ref.dim.tolist() and mine.body1.tolist() == ref.body1.tolist()
    assert mine.body2.tolist() == ref.body2.tolist()
    bound = np.full(len(ref), TOL) if bound is None else bound
    if not len(ref):
        return
    for f in FIELDS:
        err = np.abs(getattr(mine, f) - getattr(ref, f)).reshape(len(ref), -1).max(axis=1, initial=0.0)
        assert (err <= bound).all(), f"{where}: {f} differs from MuJoCo's by {err.max():.3g} (bound {bound[err.argmax()]:.3g})"


@pytest.mark.parametrize("seed", range(6))
def test_random_scenes_match_mj_collision(seed):
    m = mujoco.MjModel.from_xml_string(random_scene(seed))
    model = engine.from_mujoco(m)
    touched = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollisionWarning)
        for k, d in states(m, 300, 10):
            ref = mujoco_contacts(m, d)
            assert_same(collision.detect(model, d.qpos, ignore_unsupported=True), ref, f"seed {seed}, step {k}",
                        tolerances(m, d, ref))
            touched += len(ref)
    assert touched > 20                                       # the scenes do collide


def test_every_narrow_phase_is_exercised():
    """Across the random scenes (and the convex-mesh scenes), MuJoCo's contacts cover every pair of shapes physai
    collides, so each function above was compared."""
    seen = set()
    for xml in [random_scene(seed) for seed in range(6)] + [mesh_scene(0)]:
        m = mujoco.MjModel.from_xml_string(xml)
        for _, d in states(m, 300, 10):
            for g1, g2 in d.contact.geom[:d.ncon]:
                seen.add(tuple(sorted((int(m.geom_type[g1]), int(m.geom_type[g2])))))
    missing = [f"{TYPE_NAMES[a]}-{TYPE_NAMES[b]}" for a, b in FUNCTIONS if (a, b) not in seen]
    assert not missing, f"no contact of these kinds in the scenes: {missing}"


@pytest.mark.parametrize("robot,steps,ignore", [("kuka_iiwa_14", 600, False), ("unitree_h1", 1000, True),
                                                ("unitree_g1", 400, False)])
def test_menagerie_scenes_match_mj_collision(robot, steps, ignore):
    """The iiwa (spheres) falling on its floor, the H1 left to fall from its keyframe (plane against capsules,
    spheres, boxes and cylinders; sphere against capsule and cylinder), the G1 standing on its foot spheres."""
    m = models.load(robot, "scene")
    model = engine.from_mujoco(m)
    total = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollisionWarning)
        for k, d in states(m, steps, 20, key=0 if m.nkey else None):
            ref = mujoco_contacts(m, d)
            assert len(ref) == d.ncon                             # MuJoCo found nothing physai leaves out
            assert_same(collision.detect(model, d.qpos, ignore_unsupported=ignore), ref, f"{robot}, step {k}",
                        tolerances(m, d, ref))
            total += len(ref)
    assert total > 0


def test_batch_gives_one_set_per_state():
    m = mujoco.MjModel.from_xml_string(random_scene(1))
    model = engine.from_mujoco(m)
    qs = [d.qpos.copy() for _, d in states(m, 200, 50)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollisionWarning)
        batch = collision.detect(model, np.array(qs), ignore_unsupported=True)
        for q, one in zip(qs, batch):
            assert collision.detect(model, q, ignore_unsupported=True).geom.tolist() == one.geom.tolist()


def test_explicit_pair_signatures_follow_mujoco():
    m = mujoco.MjModel.from_xml_string(random_scene(0))
    model = engine.from_mujoco(m)
    G = model.geoms
    for k in range(m.npair):
        b = sorted((int(G.geom_bodyid[G.pair_geom1[k]]) + 1, int(G.geom_bodyid[G.pair_geom2[k]]) + 1))
        assert (b[0] << 16) + b[1] == m.pair_signature[k]


def test_unsupported_pairs_are_refused_by_name():
    model = capsule_beside_a_bare_mesh(0.9)                       # a mesh geom without its data
    with pytest.raises(UnsupportedModelError, match="capsule-mesh"):
        collision.detect(model, model.qpos0)


def test_unsupported_pair_that_may_touch_warns():
    model = capsule_beside_a_bare_mesh(-0.05)
    with pytest.warns(CollisionWarning, match="capsule"):
        assert len(collision.detect(model, model.qpos0, ignore_unsupported=True)) == 0


def test_bad_input_is_refused():
    model = engine.from_mujoco(mujoco.MjModel.from_xml_string(random_scene(0)))
    with pytest.raises(ShapeError, match="q has"):
        collision.detect(model, np.zeros(3), ignore_unsupported=True)
    with pytest.raises(InvalidArgumentError, match="ignore_unsupported"):
        collision.detect(model, model.qpos0, ignore_unsupported="yes")


def test_contact_switch_off_gives_no_contacts():
    m = models.load("kuka_iiwa_14", "scene")
    m.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    model = engine.from_mujoco(m)
    q = m.qpos0.copy()
    q[1] = 2.0                                                # an arm laid on the floor
    assert len(collision.detect(model, q)) == 0


def test_parent_filter_and_its_switch():
    """A child overlapping its parent touches it only when MuJoCo's parent filter is disabled, as in MuJoCo."""
    xml = """<mujoco><option><flag filterparent="{}"/></option><worldbody><body><freejoint/><geom type="sphere" size="0.1"/>
             <body pos="0.1 0 0"><joint type="hinge"/><geom type="sphere" size="0.1"/></body></body></worldbody></mujoco>"""
    for flag in ("enable", "disable"):
        m = mujoco.MjModel.from_xml_string(xml.format(flag))
        d = mujoco.MjData(m)
        mujoco.mj_forward(m, d)
        mine = collision.detect(engine.from_mujoco(m), d.qpos)
        assert_same(mine, collision.from_mujoco(m, d), flag)
        assert len(mine) == (flag == "disable")


def test_candidates_skip_what_mujoco_cannot_collide():
    """A plane-plane pair (here an explicit one) has no collision function in MuJoCo either: it is dropped, not
    refused; the static plane's body still touches the free sphere."""
    xml = """<mujoco><worldbody><geom name="a" type="plane" size="1 1 1"/><body pos="0 0 1"><geom name="b" type="plane"
             size="1 1 1"/></body><body><freejoint/><geom type="sphere" size="0.1"/></body></worldbody>
             <contact><pair geom1="a" geom2="b"/></contact></mujoco>"""
    model = engine.from_mujoco(mujoco.MjModel.from_xml_string(xml))
    pairs, missing = engine_collision.candidates(model)
    assert pairs.geom.tolist() == [[0, 2], [1, 2]] and pairs.ipair.tolist() == [-1, -1] and missing == []


LIMIT = '<limit lower="-3" upper="3" effort="1" velocity="1"/>'
INERTIA = '<inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>'
URDF = f"""<robot name="r"><link name="base">
  <collision><origin xyz="0 0 0.05"/><geometry><box size="0.4 0.4 0.1"/></geometry></collision></link>
<joint name="a" type="revolute"><parent link="base"/><child link="left"/><origin xyz="0.1 0 0.2"/><axis xyz="0 1 0"/>
  {LIMIT}</joint>
<link name="left">{INERTIA}
  <collision><origin xyz="0 0 0.1"/><geometry><cylinder radius="0.04" length="0.2"/></geometry></collision>
  <collision><origin xyz="0 0 0.22"/><geometry><sphere radius="0.05"/></geometry></collision></link>
<joint name="b" type="revolute"><parent link="base"/><child link="right"/><origin xyz="-0.1 0 0.2"/><axis xyz="0 1 0"/>
  {LIMIT}</joint>
<link name="right">{INERTIA}
  <collision><origin xyz="0 0 0.1" rpy="0.3 0 0"/><geometry><box size="0.06 0.06 0.2"/></geometry></collision>
  <collision><origin xyz="0 0 0.22"/><geometry><sphere radius="0.05"/></geometry></collision></link></robot>"""


def test_urdf_collision_geoms_match_mujocos_urdf_import():
    """engine.from_urdf reads the links' <collision> spheres, boxes and cylinders with MuJoCo's URDF defaults: at 300
    random joint angles of two arms over a base, the contacts equal mj_collision's on MuJoCo's own import of the file
    (pairs physai cannot collide left out of both), each beside its MuJoCo twin (in_mujocos_order: a box face clipping
    a cylinder's side line at both ends makes the two contacts' order a tie that rounding breaks), in MuJoCo's own order
    in all but 1% of the states."""
    m = mujoco.MjModel.from_xml_string(URDF)
    model = engine.from_urdf(URDF)
    assert model.geoms.geom_bodyid.tolist() == m.geom_bodyid.tolist()
    d = mujoco.MjData(m)
    rng = np.random.default_rng(0)
    touched = reordered = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollisionWarning)
        for k in range(300):
            d.qpos[:] = rng.uniform(-2.5, 2.5, 2)
            mujoco.mj_forward(m, d)
            ref = mujoco_contacts(m, d)
            mine = collision.detect(model, d.qpos, ignore_unsupported=True)
            assert mine.geom.tolist() == ref.geom.tolist()
            order = in_mujocos_order(mine, ref)
            reordered += order != list(range(len(ref)))
            for f in ("pos", "frame", "dist", "friction", "solref", "solimp"):
                assert np.abs(getattr(mine, f)[order] - getattr(ref, f)).max(initial=0.0) < TOL, (k, f)
            touched += len(ref)
    assert touched > 50 and reordered <= 3


def test_urdf_mesh_collisions_are_named_when_contacts_are_asked():
    urdf = URDF.replace('<geometry><sphere radius="0.05"/></geometry></collision></link></robot>',
                        '<geometry><mesh filename="hand.stl"/></geometry></collision></link></robot>')
    model = engine.from_urdf(urdf)
    with pytest.raises(UnsupportedModelError, match="mesh of link 'right'"):
        collision.detect(model, np.zeros(2))


def crowd(n: int = 12) -> str:
    """n x n spheres of 5 cm over a floor, packed so that neighbours in a row overlap (9.5 cm apart) and rows do not."""
    bodies = "".join(f'<body pos="{0.095 * i:.3f} {0.3 * j:.2f} {0.05 + 0.01 * ((i + j) % 3):.2f}"><freejoint/>'
                     f'<geom type="sphere" size="0.05"/></body>' for i in range(n) for j in range(n))
    return f'<mujoco><worldbody><geom type="plane" size="0 0 1"/>{bodies}</worldbody></mujoco>'


def test_broad_phase_tests_near_pairs_only():
    """144 free spheres on a floor: 10,440 candidate pairs, of which the sweep over the bodies' boxes keeps the floor's
    144 and the neighbours' (about 260): contacts as mj_collision's, on both backends, along a short mj_step run."""
    m = mujoco.MjModel.from_xml_string(crowd())
    model = engine.from_mujoco(m)
    pairs = engine_collision.candidates(model)[0]
    d = mujoco.MjData(m)
    for _, d in states(m, 60, 20):
        xpos, _ = smooth.geom_poses(model, d.qpos)
        kept = engine_collision.tested(model, xpos)
        assert len(pairs) == 144 * 143 // 2 + 144 and len(kept) < 500
        ref = collision.from_mujoco(m, d)
        assert ref.geom.tolist() == collision.detect(model, d.qpos).geom.tolist()
    run = integrators.simulate(model, m.qpos0, np.zeros(m.nv), m.opt.timestep, 60, constraints=True, energy=False)
    assert np.abs(run.q[-1] - d.qpos).max() < 1e-9 and run.ncon.max() > 144


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_explicit_pairs_of_geoms_that_collide_with_nothing_else(backend):
    """A free sphere falls onto a fixed one, both with contype = conaffinity = 0, made to collide by an explicit <pair>:
    their bodies have no box to sweep (no geom that collides by type) and their pair is tested in every state, as
    mj_collision tests it. The same contacts as MuJoCo's along a short mj_step run, on both backends."""
    xml = """<mujoco><worldbody><geom type="plane" size="0 0 1"/>
             <body pos="0 0 0.3"><geom name="a" type="sphere" size="0.05" contype="0" conaffinity="0"/></body>
             <body pos="0.02 0 0.45"><freejoint/><geom name="b" type="sphere" size="0.05" contype="0" conaffinity="0"/></body>
             <body pos="0 0.2 0.1"><freejoint/><geom type="sphere" size="0.05"/></body></worldbody>
             <contact><pair geom1="a" geom2="b"/></contact></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    model, touched = engine.from_mujoco(m), 0
    for _, d in states(m, 200, 20):
        ref = collision.from_mujoco(m, d)
        previous = engine.set_backend(backend)
        try:
            got = collision.detect(model, d.qpos)
        finally:
            engine.set_backend(previous)
        assert got.geom.tolist() == ref.geom.tolist()
        touched += len(ref)
    assert touched > 0


def test_box_box_matches_mujoco_face_and_edge_contacts():
    """Two boxes of different sizes at 3000 random relative poses near touching (faces, edges and corners in contact,
    some with a margin): MuJoCo's box-box (separating axes, then an edge pair or the clipped incident face) found
    again, contact for contact."""
    xml = """<mujoco><worldbody><body><freejoint/><geom type="box" size="0.1 0.07 0.05" margin="0.004"/></body>
             <body><freejoint/><geom type="box" size="0.06 0.12 0.03"/></body></worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    model = engine.from_mujoco(m)
    d = mujoco.MjData(m)
    rng = np.random.default_rng(4)
    kinds = set()
    for _ in range(3000):
        q = np.zeros(m.nq)
        for k in (0, 7):
            quat = rng.normal(size=4)
            q[k + 3:k + 7] = quat / np.linalg.norm(quat)
        q[7:10] = rng.uniform(-0.2, 0.2, 3)
        d.qpos[:] = q
        mujoco.mj_forward(m, d)
        ref, mine = collision.from_mujoco(m, d), collision.detect(model, q)
        assert_same(mine, ref, f"q = {q.tolist()}")
        kinds.add(len(ref))
    assert {1, 2, 4} <= kinds                                   # edge, and clipped faces of several vertices


def test_plane_ellipsoid_matches_mujoco():
    """Ellipsoids tumbling onto a tilted plane: MuJoCo's plane-convex contact at the ellipsoid's support point, found
    again along an mj_step run, and the run itself within 1e-12 on the compiled backend."""
    xml = """<mujoco><worldbody><geom type="plane" size="0 0 1" euler="0.1 -0.05 0" contype="1" conaffinity="6"/>
             <body pos="0 0 0.2" euler="0.4 0.3 0"><freejoint/>
               <geom type="ellipsoid" size="0.08 0.05 0.03" contype="2" conaffinity="1"/></body>
             <body pos="0.3 0 0.3" euler="1 0 0.5"><freejoint/>
               <geom type="ellipsoid" size="0.04 0.1 0.06" contype="4" conaffinity="1"/></body></worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    model = engine.from_mujoco(m)
    touched, seen = 0, {}
    for k, d in states(m, 400, 10):                              # d after step k + 1
        ref = collision.from_mujoco(m, d)
        assert_same(collision.detect(model, d.qpos), ref, "ellipsoids")
        touched, seen[k + 1] = touched + len(ref), d.qpos.copy()
    run = integrators.simulate(model, m.qpos0, np.zeros(m.nv), m.opt.timestep, 400, constraints=True, energy=False)
    assert touched > 20 and max(np.abs(run.q[k] - q).max() for k, q in seen.items()) < 1e-12


@pytest.mark.parametrize("seed", range(4))
def test_convex_meshes_on_a_plane_match_mj_collision(seed):
    """Convex meshes (boxes and boxes with an apex: every vertex searched, ties on flat faces; prisms of 5 to 12 sides:
    the hull's graph climbed and faces of more than 4 corners pruned to 4 contacts; random hulls) falling onto a plane,
    flat and tilted, with margins and gaps: MuJoCo 4's plane-mesh contacts, the same in the same order within 1e-12."""
    m = mujoco.MjModel.from_xml_string(mesh_scene(seed))
    model = engine.from_mujoco(m)
    counts = set()
    for k, d in states(m, 300, 5):
        ref = collision.from_mujoco(m, d)
        assert_same(collision.detect(model, d.qpos), ref, f"seed {seed}, step {k}")
        counts |= {int((ref.geom[:, 1] == g).sum()) for g in set(ref.geom[:, 1].tolist())}
    assert {1, 2, 3, 4} <= counts or {2, 3, 4} <= counts      # vertices, edges, triangles and quadrilaterals


def mesh_poses(trials: int = 80):
    """(kind, trial, MjModel, MjData after mj_forward): each kind of convex mesh (scenes.convex_points) at random poses
    across a tilted plane, from clear of it to sunk in it, a third of them lying flat on a level plane (vertices at
    equal depths: MuJoCo's choice among them kept), with margins (up to 0.1 m in all, so that corners above a mesh's
    centre come within it) and gaps; MuJoCo's solver at tolerance 1e-15."""
    rng = np.random.default_rng(3)
    for kind in ("box", "apex", "prism", "hull", "padded"):
        for trial in range(trials):
            points = " ".join(f"{x:.5f}" for x in convex_points(kind, rng).ravel())
            flat = trial % 3 == 0
            euler = np.zeros(3) if flat else rng.uniform(-3, 3, 3)
            margin, gap = rng.choice([0, 0.005, 0.02, 0.05], 2), rng.choice([0, 0.004], 2)
            tilt = "0 0 0.3" if flat else "0.2 -0.1 0.3"
            xml = f"""<mujoco><option tolerance="1e-15" iterations="500" ls_iterations="500"/>
              <asset><mesh name="m" vertex="{points}"/></asset><worldbody>
              <body euler="{tilt}"><geom type="plane" size="0 0 1" margin="{margin[0]}" gap="{gap[0]}"/></body>
              <body euler="{euler[0]:.4f} {euler[1]:.4f} {euler[2]:.4f}"><freejoint/>
                <geom type="mesh" mesh="m" margin="{margin[1]}" gap="{gap[1]}"/></body></worldbody></mujoco>"""
            m = mujoco.MjModel.from_xml_string(xml)
            d = mujoco.MjData(m)
            mujoco.mj_kinematics(m, d)
            normal = d.geom_xmat[0].reshape(3, 3)[:, 2]
            height = (d.geom_xpos[1] - d.geom_xpos[0]) @ normal
            d.qpos[:3] += normal * (rng.uniform(-0.03, 0.05) + m.geom_rbound[1] * rng.uniform(0.2, 1.0) - height)
            d.qpos[:2] += rng.uniform(-1, 1, 2)
            mujoco.mj_forward(m, d)
            yield kind, trial, m, d


def test_convex_meshes_at_random_poses_match_mj_collision():
    """The contacts of mesh_poses: MuJoCo's, the same in the same order within 1e-12."""
    compared = 0
    for kind, trial, m, d in mesh_poses():
        ref = collision.from_mujoco(m, d)
        assert_same(collision.detect(engine.from_mujoco(m), d.qpos), ref, f"{kind}, trial {trial}")
        compared += len(ref)
    assert compared > 300


def test_compiled_convex_mesh_contacts_step_as_mj_step():
    """The compiled step's own plane-mesh contacts at mesh_poses: from rest, one step of the constrained dynamics reaches
    the velocities of mj_step within 1e-12."""
    worst, moved = 0.0, 0
    for _, _, m, d in mesh_poses():
        q = d.qpos.copy()
        mujoco.mj_step(m, d)
        _, qd = integrators.step(engine.from_mujoco(m), q, np.zeros(m.nv), m.opt.timestep, "euler", constraints=True)
        worst, moved = max(worst, np.abs(qd - d.qvel).max()), moved + (d.ncon > 0)
    assert moved > 120 and worst < 1e-12, worst


@pytest.mark.parametrize("backend,seed", [("native", 0), ("native", 1), ("native", 2), ("native", 3), ("numpy", 2)])
def test_convex_mesh_contacts_step_as_mj_step(backend, seed):
    """One step of the constrained dynamics with physai's own plane-mesh contacts, from MuJoCo's states along a run of
    a mesh scene (its solver at tolerance 1e-15): the velocities MuJoCo's mj_step reaches, within 1e-12."""
    m = mujoco.MjModel.from_xml_string(mesh_scene(seed))
    m.opt.tolerance, m.opt.iterations, m.opt.ls_iterations = 1e-15, 500, 500
    model, d = engine.from_mujoco(m), mujoco.MjData(m)
    start, after = [], []
    for k in range(300):
        if k % (5 if backend == "native" else 30) == 0:
            start.append((d.qpos.copy(), d.qvel.copy(), d.qacc_warmstart.copy()))
        mujoco.mj_step(m, d)
        if len(after) < len(start):
            after.append(d.qvel.copy())
    q, qd, warm = (np.array(x) for x in zip(*start))
    previous = engine.set_backend(backend)
    try:
        _, qd1 = integrators.step(model, q, qd, m.opt.timestep, "euler", constraints=True, qacc_warmstart=warm)
    finally:
        engine.set_backend(previous)
    assert np.abs(qd1 - np.array(after)).max() < 1e-12


def test_a_mesh_geom_without_its_mesh_is_refused_by_name():
    """A mesh geom whose convex mesh the Model does not hold (a Geoms made by hand) has no narrow phase: detect names
    the pair; inconsistent mesh arrays are refused when the Meshes are made."""
    from dataclasses import replace

    from physai.exceptions import InvalidModelError

    m = mujoco.MjModel.from_xml_string(mesh_scene(1))
    model = engine.from_mujoco(m)
    G = model.geoms
    bare = engine.set_const(replace(model, geoms=replace(G, geom_dataid=np.full(G.ngeom, -1, np.intp))))
    with pytest.raises(UnsupportedModelError, match="plane-mesh"):
        collision.detect(bare, m.qpos0)
    M = G.meshes
    broken = [("mesh_polyvert", M.mesh_polyvert + 10**6, "outside the mesh"),
              ("mesh_polymap", -M.mesh_polymap - 1, "outside the mesh"),
              ("mesh_vert", np.where(M.mesh_vert == M.mesh_vert.max(), np.nan, M.mesh_vert), "finite"),
              ("mesh_graph", np.where(M.mesh_graph < 0, 0, M.mesh_graph), "not ended by -1"),
              ("mesh_vertnum", M.mesh_vertnum * 0, "no vertices")]
    for name, value, message in broken:
        with pytest.raises(InvalidModelError, match=message):
            replace(M, **{name: value})
    with pytest.raises(InvalidModelError, match="geom_dataid"):
        replace(G, geom_dataid=np.full(G.ngeom, 0, np.intp))


def test_the_compiled_model_refuses_mesh_indices_outside_its_arrays():
    """The compiled model's mesh arrays are checked when it reads them: an index outside its array is named."""
    from physai.engine import _native, native
    from physai.engine.constraint import invweight0

    model = engine.from_mujoco(mujoco.MjModel.from_xml_string(mesh_scene(1)))
    fields = native.constraint_fields(model, *invweight0(model))
    graph = fields["mesh_graph"].copy()
    graph[graph < 0] = 0                                             # neighbour lists that never end
    wrap = {"mesh_polyvertadr": fields["mesh_polyvertadr"] + 2**62 + 2**36,       # adr + num wraps around
            "mesh_polyvertnum": fields["mesh_polyvertnum"] * 0 + 2**62}
    for name, change in (("mesh_polyvert", {"mesh_polyvert": fields["mesh_polyvert"] + 10**6}),
                         ("mesh_polymap", {"mesh_polymap": fields["mesh_polymap"] - 10**6}), ("mesh_graph", {"mesh_graph": graph}),
                         ("geom_dataid", {"geom_dataid": fields["geom_dataid"] + 100}), ("mesh_polyvertadr", wrap)):
        with pytest.raises(ValueError, match=f"{name}: an index outside"):
            _native.Model(native.fields(model)).add_constraints({**fields, **change})


CAPSULES = """<mujoco><worldbody><body pos="0 0 1" euler="0 90 0"><freejoint/><geom type="capsule" size=".05 .2"/></body>
              <body pos="{}" euler="{}"><freejoint/><geom type="capsule" size=".05 .2"/></body></worldbody></mujoco>"""


def near_parallel_capsules():
    """(label, MjModel, MjData after mj_forward): two free capsules of CAPSULES as issue V found them (end to end, 0.5 mm
    deep, the second tilted by 0.001 degrees), then that pair at 92 tilts (23 angles from 1e-7 to 0.1 degrees, both
    signs, about the y and the z axis), side by side at the same tilts, and 120 random near-parallel poses (offsets
    along and across, rotations of about 3e-3 rad): the parallel branch of MuJoCo 4's capsule-capsule
    (|d1 x d2|^2 <= 1e-8 |d1|^2 |d2|^2) and the general one on either side of its threshold."""
    m = mujoco.MjModel.from_xml_string(CAPSULES.format(".4995 0 1", "0 90.001 0"))
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    yield "the issue's pair", m, d
    base, rng = d.qpos.copy(), np.random.default_rng(7)
    tilts = np.deg2rad(np.geomspace(1e-7, 0.1, 45))
    poses = [(np.add(shift, [0, 0, 1]), np.eye(3)[axis] * sign * tilt)
             for shift in ([0.4995, 0, 0], [0.1, 0.095, 0]) for axis in (1, 2) for sign in (1, -1) for tilt in tilts[::2]]
    poses += [(np.r_[rng.uniform(-0.5, 0.5), rng.uniform(0, 0.1, 2) * [1, 0.5]] + [0, 0, 1], rng.normal(0, 3e-3, 3))
              for _ in range(120)]
    for k, (pos, rotvec) in enumerate(poses):
        quat = np.zeros(4)
        mujoco.mju_mulQuat(quat, quat_of(rotvec), base[10:14])
        d.qpos[:] = base
        d.qpos[7:10], d.qpos[10:14] = pos, quat
        mujoco.mj_forward(m, d)
        yield f"pose {k}: position {pos.tolist()}, rotation {rotvec.tolist()}", m, d


def quat_of(rotvec: np.ndarray) -> np.ndarray:
    quat = np.zeros(4)
    mujoco.mju_axisAngle2Quat(quat, rotvec / max(np.linalg.norm(rotvec), 1e-300), np.linalg.norm(rotvec))
    return quat


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_near_parallel_capsules_match_mj_collision(backend):
    """MuJoCo 4's capsule-capsule (its changelog: floating-point cancellation fixed for parallel and near-parallel axes;
    mjc_segWeights' nearest points, two contacts below a relative threshold): near_parallel_capsules' contacts, the
    same count, positions, frames and distances as mj_collision's within 1e-12, on both backends."""
    counts = set()
    for label, m, d in near_parallel_capsules():
        ref = collision.from_mujoco(m, d)
        assert_same(run(backend, collision.detect, engine.from_mujoco(m), d.qpos), ref, label)
        counts.add(len(ref))
    assert {0, 1, 2} <= counts


def g1_states(n: int = 12):
    """(MjModel of the G1 in its scene, MjData after mj_forward, states (n, nq)): the G1 from its keyframe, lowered by up
    to 3 cm with its joints perturbed by N(0, 0.3): feet in the floor, and cylinder-mesh pairs near."""
    m = models.load("unitree_g1", "scene")
    d, rng, qs = mujoco.MjData(m), np.random.default_rng(5), []
    for _ in range(n):
        mujoco.mj_resetDataKeyframe(m, d, 0)
        d.qpos[7:] += rng.normal(0, 0.3, m.nq - 7)
        d.qpos[2] -= rng.uniform(0, 0.03)
        qs.append(d.qpos.copy())
    return m, d, np.array(qs)


def test_compiled_detect_matches_numpy_and_mj_collision():
    """collision.detect on the compiled backend (cpp/collision.h's detect, batched over N states) gives the NumPy text's
    contacts within 1e-14, and mj_collision's within 1e-12, for g1_states, as a batch and one state at a time."""
    m, d, Q = g1_states()
    model = collision.ignoring_unsupported(engine.from_mujoco(m))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollisionWarning)
        batch, reference = run("native", collision.detect, model, Q), run("numpy", collision.detect, model, Q)
        single = [run("native", collision.detect, model, q) for q in Q]
    kernel = native.detect(model, Q)[0]                           # the compiled kernel itself
    touched = 0
    for k, q in enumerate(Q):
        d.qpos[:] = q
        mujoco.mj_forward(m, d)
        ref = mujoco_contacts(m, d)
        for mine in (batch[k], single[k], kernel[k]):
            assert_same(mine, reference[k], f"state {k} (compiled against NumPy)", np.full(len(reference[k]), 1e-14))
            assert_same(mine, ref, f"state {k} (compiled against MuJoCo)", tolerances(m, d, ref))
        touched += len(ref)
    assert touched > 20


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_unsupported_pairs_warn_once_per_pair_and_model(backend, recwarn):
    """Repeated detects (one state, then batches) and a constrained simulation of the G1 warn of each unsupported pair
    that comes near once for the model, not once per call or state; a new model warns anew."""
    warnings.simplefilter("always", CollisionWarning)             # within recwarn's filters: Python's own once-per-text off
    m, _, Q = g1_states(6)
    model = collision.ignoring_unsupported(without_meshes(engine.from_mujoco(m)))    # its mesh pairs: unsupported
    for _ in range(3):
        run(backend, collision.detect, model, Q[0])
        run(backend, collision.detect, model, Q)
    texts = [str(w.message) for w in recwarn.list if issubclass(w.category, CollisionWarning)]
    assert texts and len(texts) == len(set(texts)), f"{len(texts)} warnings for {len(set(texts))} pairs"
    recwarn.clear()
    run(backend, integrators.simulate, model, Q[0], np.zeros(m.nv), m.opt.timestep, 3, constraints=True)
    assert not [w for w in recwarn.list if issubclass(w.category, CollisionWarning)]
    run(backend, collision.detect, collision.ignoring_unsupported(model), Q)
    assert len([w for w in recwarn.list if issubclass(w.category, CollisionWarning)]) == len(set(texts))


def test_refusal_names_the_advice_that_works_everywhere():
    """The refusal of a model with pairs physai cannot collide names collision.ignoring_unsupported(model), and that
    advice works for integrators.simulate (which takes no ignore_unsupported) as for detect."""
    m, _, Q = g1_states(1)
    model = without_meshes(engine.from_mujoco(m))                 # its mesh pairs: unsupported
    with pytest.raises(UnsupportedModelError, match=r"collision\.ignoring_unsupported\(model\)") as refused:
        integrators.simulate(model, Q[0], np.zeros(m.nv), m.opt.timestep, 2, constraints=True)
    assert "ignore_unsupported=True" not in str(refused.value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollisionWarning)
        trajectory = integrators.simulate(collision.ignoring_unsupported(model), Q[0], np.zeros(m.nv), m.opt.timestep, 2,
                                          constraints=True)
    assert np.isfinite(trajectory.q).all()


@pytest.mark.parametrize("seed", range(3))
def test_the_compiled_candidates_keep_each_pairs_contact_parameters(seed):
    """The compiled model keeps one row per distinct contact parameters (native.candidate_classes): each candidate's
    row is exactly what collision.contact_parameter_arrays gives that candidate alone (random geom parameters,
    priorities and solmix, an explicit pair, default geoms sharing rows), and a pile of equal spheres keeps one row."""
    model = engine.from_mujoco(mujoco.MjModel.from_xml_string(random_scene(seed)))
    pairs, _ = engine_collision.candidates(model)
    fields = native.collision_fields(model)
    condim, friction, solref, reffric, solimp, margin, gap = engine_collision.contact_parameter_arrays(
        model, pairs.geom[:, 0], pairs.geom[:, 1], pairs.ipair)
    expected = np.column_stack([margin, gap, friction, solref, reffric, solimp])
    assert np.array_equal(fields["cand_float"][fields["cand_param"]], expected)
    assert np.array_equal(fields["cand_dim"], condim)
    assert len(fields["cand_float"]) < len(pairs.geom)
    pile = engine.from_mujoco(mujoco.MjModel.from_xml_string(sphere_pile(27)))
    assert len(native.collision_fields(pile)["cand_float"]) == 1 < len(engine_collision.candidates(pile)[0].geom)


def test_detect_of_a_pair_subset_is_the_whole_detect_restricted_to_it():
    """detect's subset (engine.collision.detect and cpp/collision.h's detect through native.detect, one flag per
    candidate pair then per left-out pair): the contacts of the whole detect whose pair is in the subset, in its order,
    within 1e-15, and only the left-out pairs in it named near; on g1_states (feet in the floor, mesh pairs near) with
    random subsets, the empty one and every pair (its meshes left out: their pairs unsupported, some near)."""
    m, _, Q = g1_states(6)
    model = collision.ignoring_unsupported(without_meshes(engine.from_mujoco(m)))
    pairs, missing = engine_collision.candidates(model)
    rng, size = np.random.default_rng(3), len(pairs) + len(missing)
    subsets = [rng.random(size) < p for p in (0.2, 0.5, 0.8)] + [np.zeros(size, bool), np.ones(size, bool)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollisionWarning)
        constraint.prepare_compiled(model)
        whole = [engine_collision.detect(model, q, True) for q in Q]
        compiled_whole, near_whole = zip(*(native.detect(model, q[None]) for q in Q))
        kept = 0
        for subset in subsets:
            for k, q in enumerate(Q):
                mine = engine_collision.detect(model, q, True, subset=subset)
                compiled, near = native.detect(model, q[None], subset[None])
                for full, part, what in ((whole[k], mine, "NumPy"), (compiled_whole[k][0], compiled[0], "compiled")):
                    inside = np.array([subset[int(np.flatnonzero((pairs.geom == g).all(axis=1))[0])] for g in full.geom], bool)
                    assert part.geom.tolist() == full.geom[inside].tolist(), what
                    assert part.dim.tolist() == full.dim[inside].tolist()
                    for f in FIELDS:
                        assert np.abs(getattr(part, f) - getattr(full, f)[inside]).max(initial=0.0) <= 1e-15, (what, f)
                    kept += int(inside.sum())
                assert near == [p for p in near_whole[k] if subset[len(pairs) + p]]
    assert kept > 40 and any(near_whole)


NEGATIVE = ('<mujoco><worldbody><body><freejoint/><geom type="cylinder" size=".05 .05" margin="-0.003"/></body><body>'
            '<freejoint/><geom type="box" size=".05 .06 .05" margin="-0.003"/></body></worldbody></mujoco>')
INVERTED = ('<mujoco><worldbody><geom type="plane" size="0 0 1"/><body pos="0 0 .05"><freejoint/><geom size=".05"/>'
            '<geom size=".004" pos=".06 0 0" margin="-.005"/></body><body pos=".09 0 .05"><freejoint/><geom type="box" '
            'size=".04 .04 .04"/></body></worldbody></mujoco>')


def along_scene(name: str) -> tuple:
    """(physai model, q0) of the scenes test_detect_along_a_dof_is_the_whole_detect_at_that_point moves along their
    dofs: the G1 (g1_states: feet in the floor), dm_control's humanoid after 100 steps of mj_step from qpos0 (lying on
    the floor), random_scene(4) (every primitive, an explicit and an excluded pair, a hinge chain) and mesh_scene(3)
    after 300 steps, a cylinder and a box face to face with margins -0.003 (NEGATIVE: MuJoCo's boxes shrunk,
    group_shrunk, as test_convex's aligned states), and a sphere holding a geom whose margin is below minus its
    radius (INVERTED: its box may be inverted, boxes_proper False)."""
    if name == "g1":
        m, _, Q = g1_states(1)
        return collision.ignoring_unsupported(engine.from_mujoco(m)), Q[0]
    if name == "humanoid":
        import dm_control
        m = mujoco.MjModel.from_xml_path(str(Path(dm_control.__file__).parent / "suite" / "humanoid.xml"))
    elif name in ("primitives", "meshes"):
        m = mujoco.MjModel.from_xml_string(random_scene(4) if name == "primitives" else mesh_scene(3))
    else:
        m = mujoco.MjModel.from_xml_string(NEGATIVE if name == "negative" else INVERTED)
    d = mujoco.MjData(m)
    if name == "negative":                                           # 2 mm into each other, 0.6 of the margins
        d.qpos[:] = [0, 0, 0, 1, 0, 0, 0, 0.098, 0.01, 0, 1, 0, 0, 0]
    for _ in range({"humanoid": 100, "primitives": 300, "meshes": 300}.get(name, 0)):
        mujoco.mj_step(m, d)
    return collision.ignoring_unsupported(engine.from_mujoco(m)), d.qpos.copy()


def along_points(model, q0: np.ndarray, step: float) -> np.ndarray:
    """(nv, nq): q0 moved by step along each dof (engine.integrate), only that dof's joint's coordinates taken from the
    move (the others q0's, bit for bit)."""
    moved = engine.integrate(model, np.repeat(q0[None], model.nv, axis=0), step * np.eye(model.nv), 1.0)
    Q = np.repeat(q0[None], model.nv, axis=0)
    for j in range(model.nv):
        joint = int(np.searchsorted(model.jnt_dofadr, j, side="right")) - 1
        a, size = int(model.jnt_qposadr[joint]), {0: 7, 1: 4}.get(int(model.jnt_type[joint]), 1)
        Q[j, a:a + size] = moved[j, a:a + size]
    return Q


@pytest.mark.parametrize("name", ["g1", "humanoid", "primitives", "meshes", "negative", "inverted"])
def test_detect_along_a_dof_is_the_whole_detect_at_that_point(name):
    """detect's along (engine.collision.detect, and cpp/collision.h's detect through native.detect): at q0 moved along
    one dof, posing only the bodies that dof moves (the others' frames q0's) and testing the subset's candidates
    without the sweep (tested_directly; the sweep where boxes_proper is False) gives the whole detect's contacts of the
    subset's pairs at that point, in its order, within 1e-15, and names the same left-out pairs near; at 0.03 along
    every dof of along_scene's scenes, each point's subset every pair, those its dof moves a geom of, and a random
    half. along_points keeps the other coordinates q0's bit for bit, so both ways do the same arithmetic on the same
    frames and agree exactly: 1e-15 is a few ulps' slack on O(1) fields, not a rounding bound."""
    model, q0 = along_scene(name)
    Q, dofs = along_points(model, q0, 0.03), np.arange(model.nv)
    pairs, missing = engine_collision.candidates(model)
    geom, rng = engine_collision.pair_geoms(model), np.random.default_rng(1)
    moves = model.geom_dofs[geom[:, 0]].T | model.geom_dofs[geom[:, 1]].T          # (nv, P): the dof moves a geom
    subsets = [np.ones_like(moves), moves, rng.random(moves.shape) < 0.5]
    assert (model.geoms.geom_type[geom] == engine.geoms.CYLINDER).any() or name not in ("g1", "primitives", "negative")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollisionWarning)
        constraint.prepare_compiled(model)
        compiled_whole, near_whole = zip(*(native.detect(model, q[None]) for q in Q))
        found = 0
        for S in subsets:
            compiled, near = native.detect(model, Q, S, (q0, dofs))
            assert near == sorted({p for k in range(len(Q)) for p in near_whole[k] if S[k, len(pairs) + p]})
            for k in dofs if S is moves else ():                          # the NumPy text at the derivatives' subsets
                mine, whole = engine_collision.detect(model, Q[k], True, S[k], (q0, k)), engine_collision.detect(model, Q[k], True)
                assert_restricted(mine, whole, pairs, S[k], f"NumPy, dof {k}")
            for k in dofs:
                assert_restricted(compiled[k], compiled_whole[k][0], pairs, S[k], f"compiled, dof {k}")
                found += len(compiled[k])
    assert found > 0


def assert_restricted(part, full, pairs, subset, what: str) -> None:
    """part holds full's contacts whose candidate pair (of pairs) is flagged in subset, in full's order, within 1e-15."""
    inside = np.array([subset[int(np.flatnonzero((pairs.geom == g).all(axis=1))[0])] for g in full.geom], bool)
    assert part.geom.tolist() == full.geom[inside].tolist() and part.dim.tolist() == full.dim[inside].tolist(), what
    for f in FIELDS:
        assert np.abs(getattr(part, f) - getattr(full, f)[inside]).max(initial=0.0) <= 1e-15, (what, f)


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_detect_refuses_an_along_of_another_shape_or_kind(backend):
    """detect's along: a q0 of another length (ShapeError), a dof outside [0, nv) or not an integer, a q0 not finite
    (InvalidArgumentError), each naming along; on the compiled path a dof count other than the states' (ShapeError)."""
    m, _, Q = g1_states(2)
    model = collision.ignoring_unsupported(engine.from_mujoco(m))
    nv, bad_q = model.nv, Q[0].copy()
    bad_q[3] = np.nan
    cases = [((Q[0][:-1], 0), ShapeError), ((Q[0], nv), InvalidArgumentError), ((Q[0], 0.5), InvalidArgumentError),
             ((bad_q, 0), InvalidArgumentError)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollisionWarning)
        constraint.prepare_compiled(model)
        for (q0, dof), error in cases:
            with pytest.raises(error, match="along"):
                if backend == "numpy":
                    engine_collision.detect(model, Q[1], True, along=(q0, dof))
                else:
                    native.detect(model, Q[1:], None, (q0, np.array([dof])))
        if backend == "native":
            with pytest.raises(ShapeError, match=r"along: a dof per state, \(2,\) expected, got \(1,\)"):
                native.detect_arrays(model, Q, None, (Q[0], np.array([0])))


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_detect_refuses_a_subset_of_another_shape_or_type(backend):
    """A subset of the wrong length or not booleans: ShapeError, InvalidArgumentError naming it; on the compiled path a
    wrong row count or width names the (N, ncand + nmissing) expected and the array passed; NumPy's names a wrong one
    on a model without contacts too (contacts off)."""
    m, _, Q = g1_states(2)
    model = engine.from_mujoco(m)
    size = sum(len(x) for x in engine_collision.candidates(model))
    for subset, error in ((np.ones(size - 1, bool), ShapeError), (np.ones(size, np.int64), InvalidArgumentError)):
        with pytest.raises(error, match="subset"):
            if backend == "numpy":
                engine_collision.detect(model, Q[0], subset=subset)
            else:
                constraint.prepare_compiled(model)
                native.detect(model, Q[:1], subset[None])
    if backend == "numpy":
        m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
        with pytest.raises(ShapeError, match="subset"):
            engine_collision.detect(engine.from_mujoco(m), Q[0], subset=np.ones(size - 1, bool))
        return
    for subset, got in ((np.ones((2, size - 1), bool), f"\\(2, {size - 1}\\)"),
                        (np.ones((3, size), bool), f"\\(3, {size}\\)"), (np.ones(size, bool), f"\\({size},\\)")):
        with pytest.raises(ShapeError, match=rf"\(N, ncand \+ nmissing\) = \(2, {size}\) expected .* got {got}"):
            native.detect_arrays(model, Q, subset)


def test_models_made_and_dropped_in_sequence_each_warn(recwarn):
    """Each of several models, made, warned of and dropped in turn, warns of its pair that may touch: the pairs warned
    of are held for the model object itself (weakly), so a model that Python allocates where a dropped one lay (the same
    id()) is never taken for it."""
    warnings.simplefilter("always", CollisionWarning)
    for k in range(4):
        model = capsule_beside_a_bare_mesh(-0.05)
        recwarn.clear()
        collision.detect(model, model.qpos0, ignore_unsupported=True)
        assert len([w for w in recwarn.list if issubclass(w.category, CollisionWarning)]) == 1, f"model {k}"
        alive = weakref.ref(model)
        del model
        gc.collect()
        assert alive() is None, f"model {k} kept alive by the pairs warned of"   # whatever address a later one takes

"""Collision detection, the NumPy text: the contacts of a state as MuJoCo's mj_collision finds them.

    candidates(model)        the geom pairs that may touch, in the order mj_collision tests them (made once per model)
    broad_phase(model), sweep_and_prune(model, xpos), tested(model, xpos)   which candidates a state tests
    contact_parameters(model, g1, g2, ipair)   condim, friction, solref, solreffriction, solimp of their contacts
    detect(model, q)         the ContactSet of the state whose kinematics d holds

The geoms' frames come from physai.engine.smooth.geom_poses (mj_kinematics' own arithmetic).

Every geom pair that passes MuJoCo's filters (contype/conaffinity, same or parent body, <exclude>, <pair>) is a
candidate, listed once per model in MuJoCo's order and grouped by body pair (broad_phase). Per state, a sweep over the
bodies' boxes (sweep_and_prune; the world and static bodies with planes are unbounded, always tested) keeps the groups
whose bodies may touch (tested), the bounding-sphere test the pairs within them, and the narrow phase
(physai.engine.primitives) finds their contacts. MuJoCo's broad phase (sweep and prune, then bounding spheres and
boxes) only drops pairs that cannot touch too, so both find the same contacts. They come in MuJoCo's order: body pairs
by (body1, body2), explicit pairs merged by the same key, and within a body pair of several geoms sorted by their geom
ids (MuJoCo's midphase).
"""

import math
import warnings
import weakref
from dataclasses import dataclass

import numpy as np

from physai import joints
from physai.engine import convex
from physai.engine.contact import ContactSet
from physai.engine.geoms import BOX, CAPSULE, CYLINDER, ELLIPSOID, HFIELD, MESH, PLANE, SPHERE, TYPE_NAMES
from physai.engine.model import Model
from physai.engine.model_checks import MINVAL
from physai.engine.primitives import FUNCTIONS, make_frame
from physai.engine.smooth import geom_poses
from physai.exceptions import CollisionWarning, UnsupportedModelError

MINMU = 1e-5                                     # MuJoCo's mjMINMU: the smallest friction coefficient


@dataclass(frozen=True)
class Candidate:
    """A geom pair that may touch: g1 of the lower type (the narrow phase's geom 1), ipair its explicit pair (-1: none)."""

    g1: int
    g2: int
    ipair: int


def _welds(model: Model) -> tuple[list, list, list]:
    """Per MuJoCo body (0: the world, b + 1: physai's body b): the body it is welded to (itself when it has joints, the
    world 0), that body's parent's weld, and the number of dofs of its weld body (MuJoCo's body_weldid, ...)."""
    n = model.nbody + 1
    parent = [0] + [int(p) + 1 for p in model.body_parentid]
    dofs = [0] * n
    for j in range(model.njnt):
        dofs[int(model.jnt_bodyid[j]) + 1] += joints.NV[int(model.jnt_type[j])]
    weld = [0] * n
    for b in range(1, n):
        weld[b] = b if dofs[b] else weld[parent[b]]
    return weld, [weld[parent[w]] for w in weld], [dofs[w] for w in weld]


def candidates(model: Model) -> tuple[list[Candidate], list[tuple[int, int]]]:
    """(the candidate pairs in MuJoCo's order, the pairs of geom types that have no narrow phase here as (g1, g2)); made
    once per model and kept. MuJoCo's pairs without a collision function (plane-plane, ...) are left out as it does."""
    return model.kept("collision_candidates", _candidates)


def narrow_functions(model: Model) -> dict:
    """{(type1, type2): the pair's narrow phase}: primitives.FUNCTIONS and the convex pairs by GJK/EPA
    (convex.functions, with the model's ccd_tolerance and ccd_iterations); made once per model."""
    return model.kept("collision_functions", lambda m: {
        **FUNCTIONS, **convex.functions(m.opt.ccd_tolerance, m.opt.ccd_iterations, m.geoms.multiccd)})


def convex_candidates(model: Model) -> list[Candidate]:
    """The candidates collided by GJK/EPA (convex.CONVEX_PAIRS)."""
    types = model.geoms.geom_type
    return [c for c in candidates(model)[0] if (int(types[c.g1]), int(types[c.g2])) in convex.CONVEX_PAIRS]


def _candidates(model: Model) -> tuple[list[Candidate], list[tuple[int, int]]]:
    G = model.geoms
    functions = narrow_functions(model)
    types, body = G.geom_type.tolist(), (G.geom_bodyid + 1).tolist()
    n = model.nbody + 1
    geoms_of = [[] for _ in range(n)]
    for g in range(G.ngeom):
        geoms_of[body[g]].append(g)
    contype, conaffinity = [0] * n, [0] * n
    for g in range(G.ngeom):
        contype[body[g]] |= int(G.geom_contype[g])
        conaffinity[body[g]] |= int(G.geom_conaffinity[g])
    weld, parent_weld, dofnum = _welds(model)
    can = [bool(contype[b] or conaffinity[b]) for b in range(n)]
    touch = lambda t1, a1, t2, a2: bool(t1 & a2 or t2 & a1)                        # noqa: E731
    exclude = {(b1 + 1, b2 + 1) for b1, b2 in G.exclude}

    def body_pair_kept(b1: int, b2: int) -> bool:                  # MuJoCo's filterBodyPair, add_pair and <exclude>
        if weld[b1] == weld[b2] or (dofnum[b1] == 0 and dofnum[b2] == 0):
            return False
        if G.filterparent and weld[b1] and weld[b2] and (weld[b1] == parent_weld[b2] or weld[b2] == parent_weld[b1]):
            return False
        return touch(contype[b1], conaffinity[b1], contype[b2], conaffinity[b2]) and (b1, b2) not in exclude

    def signature(g1: int, g2: int) -> tuple:
        return tuple(sorted((body[g1], body[g2])))

    explicit = sorted(range(G.npair), key=lambda k: signature(int(G.pair_geom1[k]), int(G.pair_geom2[k])))
    merged = {frozenset((int(G.pair_geom1[k]), int(G.pair_geom2[k]))) for k in explicit}
    items = [(signature(int(G.pair_geom1[k]), int(G.pair_geom2[k])), 0, 0, (int(G.pair_geom1[k]), int(G.pair_geom2[k]), k))
             for k in explicit]
    for b1 in range(n):
        for b2 in range(b1 + 1, n):
            if not (can[b1] and can[b2] and geoms_of[b1] and geoms_of[b2] and body_pair_kept(b1, b2)):
                continue
            several = len(geoms_of[b1]) > 1 or len(geoms_of[b2]) > 1
            for g1 in geoms_of[b1]:
                for g2 in geoms_of[b2]:
                    if frozenset((g1, g2)) in merged or not touch(int(G.geom_contype[g1]), int(G.geom_conaffinity[g1]),
                                                                  int(G.geom_contype[g2]), int(G.geom_conaffinity[g2])):
                        continue
                    a, b = (g2, g1) if types[g1] > types[g2] else (g1, g2)
                    order = (a, b) if several and G.midphase else (0, 0)    # the midphase sorts by geom ids
                    items.append(((b1, b2), 1, order, (g1, g2, -1)))
    items.sort(key=lambda item: item[:3])                              # stable: all-to-all keeps its loop order
    out, missing = [], []
    for _, _, _, (g1, g2, ipair) in items:
        a, b = (g2, g1) if types[g1] > types[g2] else (g1, g2)
        key = (types[a], types[b])
        if key[0] == PLANE and key[1] in (PLANE, HFIELD) or key == (HFIELD, HFIELD):
            continue                                                    # no collision function in MuJoCo either
        if key not in functions or key[1] == MESH and G.geom_dataid[b] < 0:       # a mesh geom without its mesh
            missing.append((a, b))
            continue
        margin = sum(contact_parameters(model, a, b, ipair)[5:]) if key in convex.MULTI_PAIRS else 0.0
        if not convex.collided(key, margin, G.multiccd) and key in convex.MULTI_PAIRS or \
                key[0] == MESH and G.geom_dataid[a] < 0:    # multi-contact physai does not reproduce; a mesh without mesh
            missing.append((a, b))
            continue
        out.append(Candidate(a, b, ipair))
    return out, missing


@dataclass(frozen=True)
class BroadPhase:
    """What the per-state broad phase reads, made once per model (broad_phase): the candidates of candidates(model) in
    groups of one body pair each (MuJoCo's bodies: the world 0, physai's body b is b + 1), in MuJoCo's order:
    group_body (G, 2), and the candidates of group g are [group_start[g], group_end[g]), the explicit pairs first, up
    to group_split[g]; group_always[g]: tested in every state (a body is the world or a body without dofs holding a
    plane: MuJoCo's unbounded bodies); sweep_body: the bodies of the other groups with candidates besides explicit pairs,
    swept by their boxes (a body in no such group cannot make a hit change what is tested: 6 of the G1's 28 colliding
    bodies in its scene); pad (ngeom,): a geom's bounding radius plus its margin and gap."""

    group_body: np.ndarray
    group_start: np.ndarray
    group_split: np.ndarray
    group_end: np.ndarray
    group_always: np.ndarray
    sweep_body: np.ndarray
    pad: np.ndarray


def broad_phase(model: Model) -> BroadPhase:
    """The model's BroadPhase (see it), made once and kept."""
    return model.kept("collision_broad_phase", _broad_phase)


def _broad_phase(model: Model) -> BroadPhase:
    G = model.geoms
    pairs = candidates(model)[0]
    body = G.geom_bodyid + 1
    key = [tuple(sorted((int(body[c.g1]), int(body[c.g2])))) for c in pairs]
    weld, _, dofnum = _welds(model)
    unbounded = {0} | {int(body[g]) for g in range(G.ngeom) if G.geom_type[g] == PLANE and dofnum[int(body[g])] == 0}
    rows = []
    for k, c in enumerate(pairs):
        if k == 0 or key[k] != key[k - 1]:
            rows.append([key[k], k, k, k + 1])
        else:
            rows[-1][3] = k + 1
        if c.ipair >= 0:
            rows[-1][2] = k + 1
    always = [r[0][0] in unbounded or r[0][1] in unbounded for r in rows]
    # the bodies of the groups a hit changes (not always tested, with candidates besides explicit pairs: their geoms
    # collide, so each body has a box); a body in no such group cannot make a pair hit one
    sweep = sorted({b for r, a in zip(rows, always) if not a and r[3] > r[2] for b in r[0]})
    return BroadPhase(
        group_body=np.array([r[0] for r in rows], np.intp).reshape(-1, 2),
        group_start=np.array([r[1] for r in rows], np.intp), group_split=np.array([r[2] for r in rows], np.intp),
        group_end=np.array([r[3] for r in rows], np.intp),
        group_always=np.array(always, bool),
        sweep_body=np.array(sweep, np.intp), pad=G.geom_rbound + G.geom_margin + G.geom_gap)


def sweep_and_prune(model: Model, xpos: np.ndarray) -> set:
    """The pairs of swept bodies (BroadPhase.sweep_body, MuJoCo's numbering) whose world-aligned boxes overlap, each box
    the union of the body's colliding geoms' bounding spheres grown by their margin and gap: sorted along x, each box
    checked against those still open (MuJoCo's mj_SAP, along the world's x axis)."""
    bp, G = broad_phase(model), model.geoms
    body = G.geom_bodyid + 1
    lo, hi = {}, {}
    for g in np.flatnonzero((G.geom_contype != 0) | (G.geom_conaffinity != 0)).tolist():
        b, r = int(body[g]), bp.pad[g]
        if b not in lo:
            lo[b], hi[b] = xpos[g] - r, xpos[g] + r
        else:
            lo[b], hi[b] = np.minimum(lo[b], xpos[g] - r), np.maximum(hi[b], xpos[g] + r)
    order = sorted(bp.sweep_body.tolist(), key=lambda b: lo[b][0])
    open_, found = [], set()
    for b in order:
        open_ = [a for a in open_ if hi[a][0] >= lo[b][0]]
        for a in open_:
            if (lo[a][1:] <= hi[b][1:]).all() and (lo[b][1:] <= hi[a][1:]).all():
                found.add((min(a, b), max(a, b)))
        open_.append(b)
    return found


def tested(model: Model, xpos: np.ndarray) -> list:
    """The candidates (candidates(model)'s) to test in the state whose geoms are at xpos, in MuJoCo's order: every
    explicit pair, every pair with an unbounded body, and the pairs of bodies whose boxes overlap (sweep_and_prune)."""
    bp, pairs = broad_phase(model), candidates(model)[0]
    index, every = model.kept("collision_groups", lambda _: (    # each body pair's group; the groups of every state
        {(int(a), int(b)): g for g, (a, b) in enumerate(bp.group_body)},
        np.flatnonzero(bp.group_always | (bp.group_split > bp.group_start)).tolist()))
    hit = {index[p] for p in sweep_and_prune(model, xpos) if p in index}
    out = []
    for g in sorted(hit | set(every)):                  # groups in MuJoCo's order
        end = bp.group_end[g] if bp.group_always[g] or g in hit else bp.group_split[g]
        out.extend(pairs[bp.group_start[g]:end])
    return out


def has_contacts(model: Model) -> bool:
    """Whether the model can have contacts: contacts on (model.opt.contact) and a geom pair that may touch."""
    pairs, missing = candidates(model)
    return bool(model.opt.contact and (pairs or missing))


def check_supported(model: Model, ignore_unsupported: bool = False) -> None:
    """UnsupportedModelError naming what physai cannot collide in this model (geom pairs without a narrow phase here,
    adhesion, flexes, ...); ignore_unsupported: the geom pairs without a narrow phase are allowed (detect leaves them
    out)."""
    G = model.geoms
    problems = list(G.unsupported)
    missing = candidates(model)[1]
    if not G.nativeccd and convex_candidates(model):
        problems.append("MuJoCo's older libccd convex collision (mjDSBL_NATIVECCD set; physai collides convex pairs "
                        "as MuJoCo's native GJK/EPA does)")
    if missing and not (ignore_unsupported or G.ignore_unsupported):
        kinds = sorted({f"{TYPE_NAMES[int(G.geom_type[a])]}-{TYPE_NAMES[int(G.geom_type[b])]}" for a, b in missing})
        examples = "; ".join(f"{G.describe(a)} with {G.describe(b)}" for a, b in missing[:3])
        multi = (" (MuJoCo 4's multi-contact of capsules, cylinders and pairs with a margin, multiccd on: physai collides "
                 "these kinds with mjDSBL_MULTICCD set)") if any(
            (int(G.geom_type[a]), int(G.geom_type[b])) in convex.MULTI_PAIRS for a, b in missing) else ""
        problems.append(f"{len(missing)} geom pairs of kinds physai cannot collide yet ({', '.join(kinds)}){multi}, e.g. {examples} "
                        "(physai.collision.ignoring_unsupported(model) leaves them out, for detect and the simulators "
                        "alike, and warns once per pair when one may touch)")
    if problems:
        raise UnsupportedModelError("physai's collision detection does not model " + "; ".join(problems) +
                                    "; or pass MuJoCo's contacts (physai.collision.from_mujoco)")


_warned: dict[int, set] = {}     # id(model): the pairs warned of (dropped with the model: no write into a Model)


def warn_near(model: Model, pairs, stacklevel: int = 2) -> None:
    """A CollisionWarning for each left-out pair (indices into candidates(model)[1]) that may be touching, once per
    pair and model, whichever call (detect, a simulation, either backend) finds it near first. stacklevel: as
    warnings.warn's, counted from the caller of warn_near."""
    warned = _warned.get(id(model))
    if warned is None:
        warned = _warned[id(model)] = set()
        weakref.finalize(model, _warned.pop, id(model), None)
    elif warned.issuperset(pairs):                        # a stepping loop's usual case: nothing new to say
        return
    missing, G = candidates(model)[1], model.geoms
    for k in pairs:
        if k in warned:
            continue
        warned.add(k)
        g1, g2 = missing[k]
        warnings.warn(f"{G.describe(g1)} and {G.describe(g2)} may be touching, and physai cannot collide them: their "
                      "contacts are left out (this warning comes once per pair and model)", CollisionWarning,
                      stacklevel=stacklevel + 1)


def contact_parameters(model: Model, g1: int, g2: int, ipair: int) -> tuple:
    """(condim, friction (5,), solref (2,), solreffriction (2,), solimp (5,), margin, gap) of the contacts of a pair:
    the explicit pair's own, else mixed from the two geoms as mj_contactParam does (the higher priority wins; at equal
    priority condim and friction the larger, solref and solimp averaged with solmix weights, direct solrefs the
    smaller); frictions at least MINMU."""
    G = model.geoms
    if ipair >= 0:
        friction = G.pair_friction[ipair]
        reffric = G.pair_solreffriction[ipair] if G.pair_solreffriction[ipair].any() else np.zeros(2)
        return (int(G.pair_dim[ipair]), np.maximum(MINMU, friction), G.pair_solref[ipair].copy(), reffric,
                G.pair_solimp[ipair].copy(), float(G.pair_margin[ipair]), float(G.pair_gap[ipair]))
    p1, p2 = G.geom_priority[g1], G.geom_priority[g2]
    if p1 != p2:
        g = g1 if p1 > p2 else g2
        condim, solref, solimp, fri = int(G.geom_condim[g]), G.geom_solref[g].copy(), G.geom_solimp[g].copy(), G.geom_friction[g]
    else:
        condim = int(max(G.geom_condim[g1], G.geom_condim[g2]))
        s1, s2 = G.geom_solmix[g1], G.geom_solmix[g2]
        if s1 >= MINVAL and s2 >= MINVAL:
            mix = s1 / (s1 + s2)
        else:
            mix = 0.5 if s1 < MINVAL and s2 < MINVAL else 0.0 if s1 < MINVAL else 1.0
        r1, r2 = G.geom_solref[g1], G.geom_solref[g2]
        solref = mix * r1 + (1 - mix) * r2 if r1[0] > 0 and r2[0] > 0 else np.minimum(r1, r2)
        solimp = mix * G.geom_solimp[g1] + (1 - mix) * G.geom_solimp[g2]
        fri = np.maximum(G.geom_friction[g1], G.geom_friction[g2])
    friction = np.maximum(MINMU, fri[[0, 0, 1, 2, 2]])
    return (condim, friction, solref, np.zeros(2), solimp, float(G.geom_margin[g1] + G.geom_margin[g2]),
            float(G.geom_gap[g1] + G.geom_gap[g2]))


def _sphere_apart(model: Model, xpos, xmat, g1: int, g2: int, bound: float) -> bool:
    """MuJoCo's bounding-sphere filter (mj_filterSphere): whether g1 and g2 are farther apart than their bounding spheres
    plus `bound` (a plane: the other's centre above it by more than its radius plus `bound`)."""
    G = model.geoms
    r1, r2 = G.geom_rbound[g1], G.geom_rbound[g2]
    if r1 > 0 and r2 > 0:
        dif = xpos[g1] - xpos[g2]
        return dif @ dif > (r1 + r2 + bound) ** 2
    for plane, other, r in ((g1, g2, r2), (g2, g1, r1)):
        if G.geom_type[plane] == PLANE and r > 0 and (xpos[other] - xpos[plane]) @ xmat[plane][:, 2] > bound + r:
            return True
    return False


def bounding_capsule(model: Model, xpos, xmat, g: int) -> tuple[np.ndarray, np.ndarray, float]:
    """(centre (3,), half axis (3,), radius) of a capsule that holds geom g (a plane: its point, its normal, 0): a
    capsule itself; a cylinder's of its radius and half length; a box's and an ellipsoid's along their longest axis, as
    thick as the other two sides' diagonal (box) or semi-axis (ellipsoid); anything else (a mesh) its bounding sphere."""
    kind, size, R = int(model.geoms.geom_type[g]), model.geoms.geom_size[g], xmat[g]
    if kind == PLANE:
        return xpos[g], R[:, 2], 0.0
    if kind in (CAPSULE, CYLINDER):
        return xpos[g], R[:, 2] * size[1], float(size[0])
    if kind in (BOX, ELLIPSOID):
        a = int(np.argmax(size))
        others = [size[k] for k in range(3) if k != a]
        radius = math.sqrt(others[0] ** 2 + others[1] ** 2) if kind == BOX else max(others)
        return xpos[g], R[:, a] * size[a], radius
    if kind == SPHERE:
        return xpos[g], np.zeros(3), float(size[0])
    return xpos[g], np.zeros(3), float(model.geoms.geom_rbound[g])


def segment_distance(p1, d1, p2, d2) -> float:
    """The distance between the segments p1 +- d1 and p2 +- d2 (their closest points, clamped to both)."""
    a, e, r = 4 * (d1 @ d1), 4 * (d2 @ d2), (p1 - d1) - (p2 - d2)
    b, c, f = 4 * (d1 @ d2), 2 * (d1 @ r), 2 * (d2 @ r)
    s = t = 0.0
    if a <= MINVAL and e <= MINVAL:
        pass
    elif a <= MINVAL:
        t = min(max(f / e, 0.0), 1.0)
    elif e <= MINVAL:
        s = min(max(-c / a, 0.0), 1.0)
    else:
        denom = a * e - b * b
        s = min(max((b * f - c * e) / denom, 0.0), 1.0) if denom > MINVAL else 0.0
        t = (b * s + f) / e
        if t < 0.0:
            t, s = 0.0, min(max(-c / a, 0.0), 1.0)
        elif t > 1.0:
            t, s = 1.0, min(max((b - c) / a, 0.0), 1.0)
    gap = (p1 - d1 + 2 * d1 * s) - (p2 - d2 + 2 * d2 * t)
    return math.sqrt(gap @ gap)


def may_touch(model: Model, xpos, xmat, g1: int, g2: int, bound: float) -> bool:
    """Whether geoms g1 and g2 may be within `bound` of each other: their bounding capsules (bounding_capsule) are, or a
    plane's half space reaches the other's capsule."""
    (p1, d1, r1), (p2, d2, r2) = (bounding_capsule(model, xpos, xmat, g) for g in (g1, g2))
    for g, other in ((g1, (p2, d2, r2)), (g2, (p1, d1, r1))):
        if model.geoms.geom_type[g] == PLANE:
            p, n = xpos[g], xmat[g][:, 2]
            centre, half, r = other
            return min((centre + half - p) @ n, (centre - half - p) @ n) - r <= bound
    return segment_distance(p1, d1, p2, d2) - r1 - r2 <= bound


def _shapes(model: Model) -> list:
    """What the narrow phase takes of each geom: its size (3,), a mesh geom's ConvexMesh."""
    G = model.geoms
    return [G.meshes.mesh(int(G.geom_dataid[g])) if G.geom_dataid[g] >= 0 else G.geom_size[g] for g in range(G.ngeom)]


def detect(model: Model, q: np.ndarray, ignore_unsupported: bool = False) -> ContactSet:
    """The contacts at q (nq,) as mj_collision finds them: the
    same pairs, in the same order, with the same positions, frames, distances and mixed parameters; contacts that
    MuJoCo excludes (between margin and margin + gap) are left out, as its rows leave them out. ignore_unsupported:
    geom pairs physai has no narrow phase for are left out, with a CollisionWarning when they may touch (may_touch)."""
    check_supported(model, ignore_unsupported)
    G = model.geoms
    found = []
    if not has_contacts(model):
        return ContactSet.empty(model.nbody)
    xpos, xmat = geom_poses(model, q)
    warn_near(model, [k for k, (g1, g2) in enumerate(candidates(model)[1])
                      if may_touch(model, xpos, xmat, g1, g2, sum(contact_parameters(model, g1, g2, -1)[5:]))], stacklevel=3)
    shape, functions = model.kept("collision_shapes", _shapes), narrow_functions(model)
    for c in tested(model, xpos):
        g1, g2 = c.g1, c.g2
        condim, friction, solref, solreffriction, solimp, margin, gap = contact_parameters(model, g1, g2, c.ipair)
        if _sphere_apart(model, xpos, xmat, g1, g2, margin + gap):
            continue
        function = functions[(int(G.geom_type[g1]), int(G.geom_type[g2]))]
        for dist, pos, normal, tangent in function(xpos[g1], xmat[g1], shape[g1], xpos[g2], xmat[g2], shape[g2], margin + gap):
            if dist >= margin:                                          # MuJoCo's exclude: in the gap
                continue
            found.append((pos, make_frame(normal, tangent), dist, margin, friction, solref, solreffriction, solimp, condim,
                          int(G.geom_bodyid[g1]), int(G.geom_bodyid[g2]), (g1, g2)))
    if not found:
        return ContactSet.empty(model.nbody)
    columns = list(zip(*found))
    return ContactSet(nbody=model.nbody, pos=np.array(columns[0]), frame=np.array(columns[1]), dist=np.array(columns[2]),
                      includemargin=np.array(columns[3]), friction=np.array(columns[4]), solref=np.array(columns[5]),
                      solreffriction=np.array(columns[6]), solimp=np.array(columns[7]), dim=np.array(columns[8], np.intp),
                      body1=np.array(columns[9], np.intp), body2=np.array(columns[10], np.intp),
                      geom=np.array(columns[11], np.intp))

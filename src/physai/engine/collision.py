"""Collision detection, the NumPy text: the contacts of a state as MuJoCo's mj_collision finds them.

    candidates(model)        the geom pairs that may touch, in the order mj_collision tests them (made once per model)
    contact_dofs(model)      the dofs that move one geom of such a pair but not the other (made once per model)
    broad_phase(model), sweep_and_prune(model, xpos), tested(model, xpos)   which candidates a state tests
    tested_directly(model, xpos, xmat, keep)   which of some candidates it tests, without the sweep
    contact_parameters(model, g1, g2, ipair)   condim, friction, solref, solreffriction, solimp of their contacts
    contact_parameter_arrays(model, g1, g2, ipair)   the same of n pairs, in arrays
    detect(model, q)         the ContactSet of the state whose kinematics d holds (subset=: of some pairs only;
                             along=: at a point moved along a dof, the other bodies posed as at the state it left)

The geoms' frames come from physai.engine.smooth.geom_poses (mj_kinematics' own arithmetic).

Every geom pair that passes MuJoCo's filters (contype/conaffinity, same or parent body, <exclude>, <pair>) is a
candidate, listed once per model in MuJoCo's order and grouped by body pair (broad_phase). Per state, a sweep over the
bodies' boxes (sweep_and_prune; the world and static bodies with planes are unbounded, always tested) keeps the groups
whose bodies may touch (tested), the bounding-sphere test the pairs within them, and the narrow phase
(physai.engine.primitives) finds their contacts. MuJoCo's broad phase (sweep and prune, then bounding spheres and
boxes) only drops pairs that cannot touch too, so both find the same contacts, but where a pair's margins and gaps sum
below 0: MuJoCo 4 sweeps each body's box along the principal axes of its geoms' positions (sweep_frame: eig3, its
mju_eig3Tol at a relative tolerance of 1e-3; the eigenvectors, read from 4.0's contacts), each geom's the overlap of its
bounding sphere's and its box's extents grown by its own margin plus gap, so that a negative one shrinks it and bodies
whose geoms overlap by less than the margins get no contact although the narrow phase (which grows nothing then)
would give one. Those groups (BroadPhase.group_shrunk) are kept only where MuJoCo's boxes overlap (mujoco_boxes_apart,
its float comparisons along the sweep axis). They come in MuJoCo's order: body pairs
by (body1, body2), explicit pairs merged by the same key, and within a body pair of several geoms sorted by their geom
ids (MuJoCo's midphase).
"""

import math
import warnings
from dataclasses import dataclass

import numpy as np

from physai import joints
from physai.engine import convex
from physai.engine.contact import ContactSet
from physai.engine.geoms import BOX, CAPSULE, CYLINDER, ELLIPSOID, HFIELD, MESH, PLANE, SPHERE, TYPE_NAMES
from physai.engine.model import Model, per_model
from physai.engine.model_checks import MAXVAL, MINVAL
from physai.engine.primitives import FUNCTIONS, make_frame, mat_times_mj
from physai.engine.smooth import geom_poses, moved_geom_poses, quat_to_mat_mj
from physai.exceptions import CollisionWarning, InvalidArgumentError, ShapeError, UnsupportedModelError
from physai.spatial import quat_mul_mj

MINMU = 1e-5                                     # MuJoCo's mjMINMU: the smallest friction coefficient


@dataclass(frozen=True)
class Candidates:
    """The geom pairs that may touch, in the order mj_collision tests them: geom (n, 2), each pair's g1 of the lower type
    first (the narrow phase's geom 1), ipair (n,) its explicit pair (-1: none), and midphase (n,) whether MuJoCo's
    midphase tests its geoms' boxes (boxes_apart: a body pair of several geoms, no explicit pair, midphase on)."""

    geom: np.ndarray
    ipair: np.ndarray
    midphase: np.ndarray

    def __len__(self) -> int:
        return len(self.ipair)


def _welds(model: Model) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
    return np.array(weld, np.intp), np.array([weld[parent[w]] for w in weld], np.intp), np.array([dofs[w] for w in weld], np.intp)


def candidates(model: Model) -> tuple[Candidates, list[tuple[int, int]]]:
    """(the candidate pairs in MuJoCo's order, the pairs of geom types that have no narrow phase here as (g1, g2)); made
    when the model is built (make_candidates). MuJoCo's pairs without a collision function (plane-plane, ...) are left
    out as it does."""
    return model.kept("collision_candidates")


def narrow_functions(model: Model) -> dict:
    """{(type1, type2): the pair's narrow phase}: primitives.FUNCTIONS and the convex pairs by GJK/EPA
    (convex.functions, with the model's ccd_tolerance and ccd_iterations); made when the model is built."""
    return model.kept("collision_functions")


def make_functions(model: Model) -> dict:
    """narrow_functions' value, made once by physai.engine.setconst.set_const."""
    return {**FUNCTIONS, **convex.functions(model.opt.ccd_tolerance, model.opt.ccd_iterations, model.geoms.multiccd)}


def convex_candidates(model: Model) -> np.ndarray:
    """The indices of the candidates collided by GJK/EPA (convex.CONVEX_PAIRS, MULTI_PAIRS, HFIELD_PAIRS)."""
    types = model.geoms.geom_type[candidates(model)[0].geom]                       # (n, 2)
    pairs = convex.CONVEX_PAIRS + convex.MULTI_PAIRS + convex.HFIELD_PAIRS
    return np.flatnonzero(_type_table(pairs)[types[:, 0], types[:, 1]])


def _type_table(pairs) -> np.ndarray:
    """(ntypes, ntypes) bool: True at the (type1, type2) pairs given."""
    table = np.zeros((len(TYPE_NAMES), len(TYPE_NAMES)), bool)
    for t1, t2 in pairs:
        table[t1, t2] = True
    return table


def _body_pairs(model: Model, body: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(b1, b2) the MuJoCo body pairs b1 < b2, both with geoms, that MuJoCo's filterBodyPair, add_pair and <exclude> keep."""
    G, n = model.geoms, model.nbody + 1
    contype, conaffinity = np.zeros(n, np.int64), np.zeros(n, np.int64)
    np.bitwise_or.at(contype, body, G.geom_contype.astype(np.int64))
    np.bitwise_or.at(conaffinity, body, G.geom_conaffinity.astype(np.int64))
    bodies = np.flatnonzero((np.bincount(body, minlength=n) > 0) & ((contype | conaffinity) != 0))
    i, j = np.triu_indices(len(bodies), 1)
    b1, b2 = bodies[i], bodies[j]
    weld, parent_weld, dofnum = _welds(model)
    w1, w2 = weld[b1], weld[b2]
    keep = (w1 != w2) & ((dofnum[b1] != 0) | (dofnum[b2] != 0))
    if G.filterparent:
        keep &= ~((w1 != 0) & (w2 != 0) & ((w1 == parent_weld[b2]) | (w2 == parent_weld[b1])))
    keep &= ((contype[b1] & conaffinity[b2]) | (contype[b2] & conaffinity[b1])) != 0
    if G.exclude:
        keep &= ~np.isin(b1 * n + b2, [(e1 + 1) * n + e2 + 1 for e1, e2 in G.exclude])
    return b1[keep], b2[keep]


def _geom_pairs(model: Model, body: np.ndarray, b1: np.ndarray, b2: np.ndarray) -> tuple:
    """(g1, g2, several) every geom of b1 with every geom of b2, in the loops' order (b1's geoms outer, geom ids
    ascending), and whether the pair's bodies hold several geoms (MuJoCo's midphase sorts those)."""
    n = model.nbody + 1
    count = np.bincount(body, minlength=n)
    start = np.concatenate([[0], np.cumsum(count)[:-1]])
    order = np.argsort(body, kind="stable")                           # the geoms body by body, ids ascending
    c1, c2 = count[b1], count[b2]
    per = c1 * c2
    pair = np.repeat(np.arange(len(b1)), per)
    k = np.arange(per.sum()) - np.repeat(np.cumsum(per) - per, per)  # the index within the pair's c1 x c2 block
    g1 = order[start[b1][pair] + k // c2[pair]]
    g2 = order[start[b2][pair] + k % c2[pair]]
    return g1, g2, ((c1 > 1) | (c2 > 1))[pair]


def make_candidates(model: Model) -> tuple[Candidates, list[tuple[int, int]]]:
    """candidates' value, made once by physai.engine.setconst.set_const, in arrays: the body pairs the filters keep,
    each geom pair of theirs that contype/conaffinity keeps and no explicit pair names, and the explicit pairs; sorted by
    body pair (explicit pairs first, then by geom ids where the midphase sorts), a stable sort that keeps the loops'
    order within a key (mj_collision's)."""
    G = model.geoms
    types, body = G.geom_type.astype(np.intp), (G.geom_bodyid + 1).astype(np.intp)
    b1, b2 = _body_pairs(model, body)
    g1, g2, several = _geom_pairs(model, body, b1, b2)
    p1, p2 = G.pair_geom1.astype(np.intp), G.pair_geom2.astype(np.intp)
    ng = max(G.ngeom, 1)
    touch = ((G.geom_contype[g1] & G.geom_conaffinity[g2]) | (G.geom_contype[g2] & G.geom_conaffinity[g1])) != 0
    merged = np.isin(np.minimum(g1, g2) * ng + np.maximum(g1, g2), np.minimum(p1, p2) * ng + np.maximum(p1, p2))
    keep = touch & ~merged
    g1, g2, several = g1[keep], g2[keep], several[keep]
    # the explicit pairs, then the all-to-all ones, each with its sort key (body pair, explicit first, midphase order)
    g1, g2 = np.concatenate([p1, g1]), np.concatenate([p2, g2])
    ipair = np.concatenate([np.arange(len(p1)), np.full(len(g1) - len(p1), -1)]).astype(np.intp)
    swap = types[g1] > types[g2]
    a, b = np.where(swap, g2, g1), np.where(swap, g1, g2)
    sorted_ = np.concatenate([np.zeros(len(p1), bool), several & G.midphase])
    order = np.lexsort((np.where(sorted_, b, 0), np.where(sorted_, a, 0), ipair < 0,
                        np.maximum(body[g1], body[g2]), np.minimum(body[g1], body[g2])))
    a, b, ipair, sorted_ = a[order], b[order], ipair[order], sorted_[order]
    ta, tb = types[a], types[b]
    # no collision function in MuJoCo either: plane-plane, plane-hfield, hfield-hfield
    none = ((ta == PLANE) & ((tb == PLANE) | (tb == HFIELD))) | ((ta == HFIELD) & (tb == HFIELD))
    # a pair without a function, a mesh or heightfield geom without its data
    missing = ~_type_table(make_functions(model))[ta, tb] | ((tb == MESH) & (G.geom_dataid[b] < 0)) | \
        (((ta == MESH) | (ta == HFIELD)) & (G.geom_dataid[a] < 0))
    out, gone = ~none & ~missing, ~none & missing
    return (Candidates(geom=np.stack([a[out], b[out]], axis=1), ipair=ipair[out], midphase=sorted_[out]),
            list(zip(a[gone].tolist(), b[gone].tolist())))


def contact_dofs(model: Model) -> np.ndarray:
    """(nv,) bool: the dofs along which a contact may appear or leave: those that move one geom of a candidate pair
    (or of a pair without a narrow phase here) but not the other (moving both, they move them as one rigid body);
    made when the model is built (make_contact_dofs). physai.derivatives looks for appearing contacts along them."""
    return model.kept("contact_dofs")


def pair_geoms(model: Model) -> np.ndarray:
    """(P, 2) the geoms of the candidate pairs, then of the pairs without a narrow phase here (P = ncand + nmissing:
    the order of detect's subset flags)."""
    pairs, missing = candidates(model)
    return np.concatenate([pairs.geom.reshape(-1, 2), np.array(missing, np.intp).reshape(-1, 2)])


def make_contact_dofs(model: Model) -> np.ndarray:
    """contact_dofs' value, made once by physai.engine.setconst.set_const from the candidates, without M's (nv, nv)
    pattern: a pair's geoms on links l1, l2 (their last dofs e1, e2; -1 on the world) are moved apart by dof j when one
    end lies in j's subtree and the other does not. Numbered depth first (dof_preorder), j's subtree is the positions
    [enter_j, end_j): j is such a dof where the partners of the ends in its subtree, their smallest and largest
    position carried up from children to parents, reach below enter_j or to end_j and past (the world at -1: below).
    O(pairs + nv)."""
    body = model.geoms.geom_bodyid[pair_geoms(model)]
    link = np.where(body >= 0, model.body_linkid[np.maximum(body, 0)], -1)
    last = np.append(model.link_dofadr + model.link_dofnum - 1, -1)[link]         # link -1 (the world): no dof
    enter, end = dof_preorder(model.dof_parentid)
    ends, partner = last.ravel(), np.append(enter, -1)[last[:, ::-1]].ravel()    # the other end's position, world -1
    # lo[e], hi[e]: the smallest and largest partner position of an end at dof e (slot nv: the world's, unread)
    lo, hi = np.full(model.nv + 1, model.nv), np.full(model.nv + 1, -1)
    np.minimum.at(lo, ends, partner)
    np.maximum.at(hi, ends, partner)
    # children folded into parents: min and max over each subtree's ends (parents come first)
    lo_, hi_, parent = lo.tolist(), hi.tolist(), model.dof_parentid.tolist()
    for j in range(model.nv - 1, -1, -1):
        if (p := parent[j]) >= 0:
            lo_[p], hi_[p] = min(lo_[p], lo_[j]), max(hi_[p], hi_[j])
    out = (np.array(lo_[:-1]) < enter) | (np.array(hi_[:-1]) >= end)
    out.setflags(write=False)
    return out


def dof_preorder(parent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(enter (nv,), end (nv,)) of the dof tree parent (nv,) (-1 at a root; parents first) numbered depth first: dof j
    at position enter_j, its subtree at the positions [enter_j, end_j) (MuJoCo's body order gives enter_j = j)."""
    nv, parents = len(parent), parent.tolist()
    children: list[list[int]] = [[] for _ in range(nv + 1)]                       # slot nv: the world's
    for j, p in enumerate(parents):
        children[p if p >= 0 else nv].append(j)
    size = [1] * nv                                                               # subtree sizes, children first
    for j in range(nv - 1, -1, -1):
        if parents[j] >= 0:
            size[parents[j]] += size[j]
    enter, stack, n = [0] * nv, children[nv][::-1], 0
    while stack:                                                                  # preorder: a dof, then its subtrees
        j = stack.pop()
        enter[j], n = n, n + 1
        stack.extend(children[j][::-1])
    enter_ = np.array(enter, np.intp)
    return enter_, enter_ + np.array(size, np.intp)


@dataclass(frozen=True)
class BroadPhase:
    """What the per-state broad phase reads, made once per model (broad_phase): the candidates of candidates(model) in
    groups of one body pair each (MuJoCo's bodies: the world 0, physai's body b is b + 1), in MuJoCo's order:
    group_body (G, 2), and the candidates of group g are [group_start[g], group_end[g]), the explicit pairs first, up
    to group_split[g]; group_always[g]: tested in every state (a body is the world or a body without dofs holding a
    plane: MuJoCo's unbounded bodies); sweep_body: the bodies of the other groups with candidates besides explicit pairs,
    swept by their boxes (a body in no such group cannot make a hit change what is tested: 6 of the G1's 28 colliding
    bodies in its scene); pad (ngeom,): a geom's bounding radius plus its margin and gap; group_shrunk (G,): a swept
    group with a candidate besides explicit pairs whose geoms' margins and gaps sum below 0, whose contacts MuJoCo's
    own boxes may drop (mujoco_boxes_apart); inflate (ngeom,): a geom's margin plus gap (MuJoCo grows its box by it)."""

    group_body: np.ndarray
    group_start: np.ndarray
    group_split: np.ndarray
    group_end: np.ndarray
    group_always: np.ndarray
    sweep_body: np.ndarray
    pad: np.ndarray
    group_shrunk: np.ndarray
    inflate: np.ndarray


def broad_phase(model: Model) -> BroadPhase:
    """The model's BroadPhase (see it), made when the model is built (make_broad_phase)."""
    return model.kept("collision_broad_phase")


def make_broad_phase(model: Model) -> BroadPhase:
    """broad_phase's value, made once by physai.engine.setconst.set_const from the candidates, in arrays: a group starts
    where the candidates' body pair changes."""
    G = model.geoms
    pairs = candidates(model)[0]
    body = (G.geom_bodyid + 1).astype(np.intp)
    k1, k2 = (np.minimum(body[pairs.geom[:, 0]], body[pairs.geom[:, 1]]), np.maximum(body[pairs.geom[:, 0]], body[pairs.geom[:, 1]]))
    start = np.flatnonzero(np.r_[True, (k1[1:] != k1[:-1]) | (k2[1:] != k2[:-1])]) if len(pairs) else np.zeros(0, np.intp)
    end = np.append(start[1:], len(pairs))[:len(start)].astype(np.intp)
    split = start + (np.add.reduceat((pairs.ipair >= 0).astype(np.intp), start) if len(start) else 0)
    dofnum = _welds(model)[2]
    unbounded = np.r_[0, body[(G.geom_type == PLANE) & (dofnum[body] == 0)]]
    group = np.stack([k1[start], k2[start]], axis=1)
    always = np.isin(group, unbounded).any(axis=1)
    # the bodies of the groups a hit changes (not always tested, with candidates besides explicit pairs: their geoms
    # collide, so each body has a box); a body in no such group cannot make a pair hit one
    sweep = np.unique(group[~always & (end > split)])
    # a pair whose geoms' margins and gaps sum to >= 0 touches only where MuJoCo's boxes (each grown by its geom's own
    # margin and gap) overlap; below 0 the boxes shrink by more than the geoms may overlap
    inflate = G.geom_margin + G.geom_gap
    negative = (inflate[pairs.geom[:, 0]] + inflate[pairs.geom[:, 1]] < 0) & (pairs.ipair < 0)
    shrunk = np.array([negative[a:e].any() for a, e in zip(split.tolist(), end.tolist())], bool) & ~always
    return BroadPhase(group_body=group.astype(np.intp), group_start=start.astype(np.intp), group_split=split.astype(np.intp),
                      group_end=end, group_always=always, sweep_body=sweep.astype(np.intp),
                      pad=G.geom_rbound + G.geom_margin + G.geom_gap, group_shrunk=shrunk, inflate=inflate)


def make_groups(model: Model) -> tuple[np.ndarray, np.ndarray]:
    """(each group's body pair as one sorted key b1 (nbody + 1) + b2, the groups tested in every state: always tested or
    with explicit pairs), made once by physai.engine.setconst.set_const for tested."""
    bp = broad_phase(model)
    return (bp.group_body[:, 0] * (model.nbody + 1) + bp.group_body[:, 1],
            np.flatnonzero(bp.group_always | (bp.group_split > bp.group_start)))


def sweep_and_prune(model: Model, xpos: np.ndarray) -> set:
    """The pairs of swept bodies (BroadPhase.sweep_body, MuJoCo's numbering) whose world-aligned boxes overlap, each box
    the union of the body's colliding geoms' bounding spheres grown by their margin and gap: sorted along the world axis
    where their lower corners spread most (sweep_axis: few boxes open at once; MuJoCo's mj_SAP sweeps along its boxes'
    principal axis), each box checked against those still open."""
    bp = broad_phase(model)
    lo, hi = body_boxes(model, xpos)
    axis = sweep_axis([lo[b] for b in bp.sweep_body.tolist()])
    across = [(axis + 1) % 3, (axis + 2) % 3]
    order = sorted(bp.sweep_body.tolist(), key=lambda b: lo[b][axis])
    open_, found = [], set()
    for b in order:
        open_ = [a for a in open_ if hi[a][axis] >= lo[b][axis]]
        for a in open_:
            if (lo[a][across] <= hi[b][across]).all() and (lo[b][across] <= hi[a][across]).all():
                found.add((min(a, b), max(a, b)))
        open_.append(b)
    return found


def body_boxes(model: Model, xpos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) (nbody + 1, 3): each body's (MuJoCo's numbering) world-aligned box, the union of its colliding geoms'
    bounding spheres (at xpos (ngeom, 3)) grown by their margin and gap (BroadPhase.pad); inf, -inf: no such geom."""
    pad, G = broad_phase(model).pad, model.geoms
    lo, hi = np.full((model.nbody + 1, 3), np.inf), np.full((model.nbody + 1, 3), -np.inf)
    for g in np.flatnonzero((G.geom_contype != 0) | (G.geom_conaffinity != 0)).tolist():
        b = int(G.geom_bodyid[g]) + 1
        lo[b], hi[b] = np.minimum(lo[b], xpos[g] - pad[g]), np.maximum(hi[b], xpos[g] + pad[g])
    return lo, hi


def boxes_proper(model: Model) -> bool:
    """Whether no body's box (body_boxes) can be inverted (lo > hi): every colliding geom's pad (its bounding radius
    plus margin plus gap) is >= 0. Then the sweep pairs two swept bodies exactly where their boxes overlap along every
    axis (tested_directly's test)."""
    G = model.geoms
    return bool((broad_phase(model).pad[(G.geom_contype != 0) | (G.geom_conaffinity != 0)] >= 0).all())


def sweep_axis(lows: list) -> int:
    """The world axis (0, 1, 2) along which the boxes' lower corners lows (each (3,)) spread most, the first of equals."""
    axis, widest = 0, -1.0
    for a in range(3):
        values = [x[a] for x in lows]
        spread = max(values, default=0.0) - min(values, default=0.0)
        if spread > widest:
            axis, widest = a, spread
    return axis


EIG_RELTOL = 1e-3        # the relative tolerance of MuJoCo 4's broad-phase frame (its mju_eig3Tol call, 4.0's library)


def eig3(mat: np.ndarray, reltol: float) -> np.ndarray:
    """MuJoCo 4's mju_eig3Tol: the eigenvectors (3, 3), as columns, of a symmetric mat (3, 3) by Jacobi rotations
    accumulated in a quaternion, until the largest off-diagonal entry is at most max(reltol, 4e-15) times mat's largest
    |entry| (at most 500 rotations), then sorted by decreasing eigenvalue (those within 1e-12 times that entry kept in
    place). MuJoCo's arithmetic (read from 4.0's library): each rotation from the tangent of its half angle."""
    scale = max(0.0, *np.abs(mat).ravel().tolist())
    eps, quat, value = max(reltol, 4e-15) * scale, np.array([1.0, 0.0, 0.0, 0.0]), [0.0, 0.0, 0.0]
    for _ in range(500):
        V = quat_to_mat_mj(quat)
        T = [[V[0, i] * mat[0, j] + V[1, i] * mat[1, j] + V[2, i] * mat[2, j] for j in range(3)] for i in range(3)]
        D = [[T[i][0] * V[0, j] + T[i][1] * V[1, j] + T[i][2] * V[2, j] for j in range(3)] for i in range(3)]  # V' mat V
        value = [D[0][0], D[1][1], D[2][2]]
        a01, a02, a12 = abs(D[0][1]), abs(D[0][2]), abs(D[1][2])
        rk, ck, rotk = (0, 1, 2) if a01 > a02 and a01 > a12 else (0, 2, 1) if a02 > a12 else (1, 2, 0)
        if abs(D[rk][ck]) <= eps:
            break
        tau = (D[ck][ck] - D[rk][rk]) / (D[rk][ck] + D[rk][ck])
        root = math.sqrt(tau * tau + 1)
        t = 1 / (tau + root) if tau >= 0 else -1 / (root - tau)          # tan of the rotation
        half = t / (math.sqrt(t * t + 1) + 1)                             # tan of half of it
        c = 1 / math.sqrt(half * half + 1)
        rot = [c, 0.0, 0.0, 0.0]
        rot[rotk + 1] = (half if rotk == 1 else -half) * c
        quat = joints.quat_normalize_mj(quat_mul_mj(quat, np.array(rot)))
    for j in range(3):                                                    # bubble sort, decreasing: 0, 1, 0
        j1 = j % 2
        if value[j1] + scale * 1e-12 < value[j1 + 1]:
            value[j1], value[j1 + 1] = value[j1 + 1], value[j1]
            rot = [0.707106781186548, 0.0, 0.0, 0.0]
            rot[(j1 + 2) % 3 + 1] = 0.707106781186548
            quat = joints.quat_normalize_mj(quat_mul_mj(quat, np.array(rot)))
    return quat_to_mat_mj(quat)


def sweep_frame(model: Model, xpos: np.ndarray) -> np.ndarray:
    """MuJoCo 4's broad-phase frame (3, 3), its axes the columns: the principal axes (eig3, EIG_RELTOL) of the
    covariance of the positions xpos (ngeom, 3) of the geoms not on the world, each sum in MuJoCo's order."""
    points = xpos[model.geoms.geom_bodyid >= 0]
    if not len(points):
        return np.eye(3)
    centre = np.zeros(3)
    for p in points:
        centre = centre + p
    centre = centre * (1.0 / len(points))
    cov = np.zeros((3, 3))
    for p in points:
        d = p - centre
        cov = cov + np.outer(d, d)
    return eig3(cov * (1.0 / len(points)), EIG_RELTOL)


def mujoco_box(model: Model, xpos, xmat, frame: np.ndarray, body: int) -> tuple[np.ndarray, np.ndarray]:
    """(lo (3,), hi (3,)): MuJoCo 4's broad-phase box of a body (MuJoCo's numbering) along the columns of frame: over
    its geoms (all of them), each the overlap of its bounding sphere's and its box's (geom_aabb) extents, grown by its
    own margin plus gap (negative: shrunk)."""
    bp, G = broad_phase(model), model.geoms
    lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
    for g in np.flatnonzero(G.geom_bodyid == body - 1).tolist():
        aabb, R, r, grow = G.geom_aabb[g], xmat[g], G.geom_rbound[g], bp.inflate[g]
        pos = mat_times_mj(R, aabb[:3]) + xpos[g]
        for j in range(3):
            f = frame[:, j]
            centre, at = pos[0] * f[0] + pos[1] * f[1] + pos[2] * f[2], xpos[g][0] * f[0] + xpos[g][1] * f[1] + xpos[g][2] * f[2]
            half = sum(abs(aabb[3 + k] * (R[0, k] * f[0] + R[1, k] * f[1] + R[2, k] * f[2])) for k in range(3))
            lo[j] = min(lo[j], max(at - r, centre - half) - grow)
            hi[j] = max(hi[j], min(at + r, centre + half) + grow)
    return lo, hi


def mujoco_boxes_apart(model: Model, xpos, xmat, frame: np.ndarray, b1: int, b2: int) -> bool:
    """Whether MuJoCo 4's sweep and prune (mj_SAP) leaves bodies b1 < b2 (MuJoCo's numbering) unpaired: their boxes
    (mujoco_box) apart along frame's second or third axis, or along its first (the sweep), compared as floats in
    the order of a stable sort of the boxes' ends (a lower end before an upper one of the same body, b1's before
    b2's; a box shrunk past empty, its upper end sorted first, stays open)."""
    (lo1, hi1), (lo2, hi2) = mujoco_box(model, xpos, xmat, frame, b1), mujoco_box(model, xpos, xmat, frame, b2)
    if lo1[1] > hi2[1] or lo2[1] > hi1[1] or lo1[2] > hi2[2] or lo2[2] > hi1[2]:
        return True
    f = [float(np.float32(x)) for x in (lo1[0], hi1[0], lo2[0], hi2[0])]
    start1, end1, start2, end2 = (f[0], 0), (f[1], 1), (f[2], 2), (f[3], 3)
    end1, end2 = (end1 if end1 > start1 else (math.inf, 0)), (end2 if end2 > start2 else (math.inf, 0))  # inverted: open
    return not (start1 < start2 < end1 or start2 < start1 < end2)


def tested(model: Model, xpos: np.ndarray, xmat: np.ndarray | None = None) -> np.ndarray:
    """The indices of the candidates (candidates(model)'s) to test in the state whose geoms are at xpos (ngeom, 3), xmat
    (ngeom, 3, 3), in MuJoCo's order: every explicit pair, every pair with an unbounded body, and the pairs of bodies
    whose boxes overlap (sweep_and_prune), a shrunk group's (BroadPhase.group_shrunk) only where MuJoCo's boxes overlap
    too (mujoco_boxes_apart; xmat None: not checked)."""
    bp, (keys, every) = broad_phase(model), model.kept("collision_groups")
    if not len(keys):
        return np.zeros(0, np.intp)
    found = np.array([a * (model.nbody + 1) + b for a, b in sweep_and_prune(model, xpos)], np.intp)
    at = np.searchsorted(keys, found)
    hit = np.zeros(len(keys), bool)
    hit[at[(at < len(keys)) & (keys[np.minimum(at, len(keys) - 1)] == found)]] = True
    shrunk = np.flatnonzero(hit & bp.group_shrunk)
    if len(shrunk) and xmat is not None:
        frame = sweep_frame(model, xpos)
        for g in shrunk.tolist():
            hit[g] = not mujoco_boxes_apart(model, xpos, xmat, frame, *bp.group_body[g].tolist())
    groups = np.flatnonzero(hit | np.isin(np.arange(len(keys)), every))        # groups in MuJoCo's order
    start = bp.group_start[groups]
    end = np.where(bp.group_always[groups] | hit[groups], bp.group_end[groups], bp.group_split[groups])
    return _ranges(start, end)


def tested_directly(model: Model, xpos: np.ndarray, xmat: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """The indices of the candidates flagged in keep (ncand + nmissing,) that tested(model, xpos, xmat) gives, in its
    order, without the sweep, where the boxes are proper (boxes_proper): a candidate of a group always tested, an
    explicit pair, or one of a group whose bodies' boxes (body_boxes) overlap along every axis (where the sweep finds
    them), a shrunk group's only where MuJoCo's boxes overlap too (mujoco_boxes_apart)."""
    bp = broad_phase(model)
    lo, hi = body_boxes(model, xpos)
    group = np.searchsorted(bp.group_start, np.arange(len(candidates(model)[0])), side="right") - 1
    out, frame = [], None
    for k in np.flatnonzero(keep[:len(group)]).tolist():
        g = int(group[k])
        if not (bp.group_always[g] or k < bp.group_split[g]):
            b1, b2 = bp.group_body[g].tolist()
            if (lo[b1] > hi[b2]).any() or (lo[b2] > hi[b1]).any():        # boxes apart: not swept together
                continue
            if bp.group_shrunk[g]:
                frame = sweep_frame(model, xpos) if frame is None else frame
                if mujoco_boxes_apart(model, xpos, xmat, frame, b1, b2):
                    continue
        out.append(k)
    return np.array(out, np.intp)


def _ranges(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """The integers of [start[k], end[k]) for each k, in order."""
    length = end - start
    return np.repeat(start - np.cumsum(length) + length, length) + np.arange(length.sum())


def has_contacts(model: Model) -> bool:
    """Whether the model can have contacts: contacts on (model.opt.contact) and a geom pair that may touch."""
    pairs, missing = candidates(model)
    return bool(model.opt.contact and (len(pairs) or missing))


def check_supported(model: Model, ignore_unsupported: bool = False) -> None:
    """UnsupportedModelError naming what physai cannot collide in this model (geom pairs without a narrow phase here,
    adhesion, flexes, ...); ignore_unsupported: the geom pairs without a narrow phase are allowed (detect leaves them
    out)."""
    G = model.geoms
    problems = list(G.unsupported)
    missing = candidates(model)[1]
    if not G.nativeccd and len(convex_candidates(model)):
        problems.append("MuJoCo's older libccd convex collision (mjDSBL_NATIVECCD set; physai collides convex pairs "
                        "as MuJoCo's native GJK/EPA does)")
    if missing and not (ignore_unsupported or G.ignore_unsupported):
        kinds = sorted({f"{TYPE_NAMES[int(G.geom_type[a])]}-{TYPE_NAMES[int(G.geom_type[b])]}" for a, b in missing})
        examples = "; ".join(f"{G.describe(a)} with {G.describe(b)}" for a, b in missing[:3])
        problems.append(f"{len(missing)} geom pairs of kinds physai cannot collide yet ({', '.join(kinds)}), e.g. {examples} "
                        "(physai.collision.ignoring_unsupported(model) leaves them out, for detect and the simulators "
                        "alike, and warns once per pair when one may touch)")
    if problems:
        raise UnsupportedModelError("physai's collision detection does not model " + "; ".join(problems) +
                                    "; or pass MuJoCo's contacts (physai.collision.from_mujoco)")


@per_model
def _warned(model: Model) -> set:
    """The left-out pairs (indices into candidates(model)[1]) warned of for the model, empty at first (engine.model's
    per-model store: dropped with the model, never written into it)."""
    return set()


def warn_near(model: Model, pairs, stacklevel: int = 2) -> None:
    """A CollisionWarning for each left-out pair (indices into candidates(model)[1]) that may be touching, once per
    pair and model, whichever call (detect, a simulation, either backend) finds it near first. stacklevel: as
    warnings.warn's, counted from the caller of warn_near."""
    warned = _warned(model)
    if warned.issuperset(pairs):                        # a stepping loop's usual case: nothing new to say
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
    contact_parameter_arrays of the one pair."""
    condim, friction, solref, reffric, solimp, margin, gap = contact_parameter_arrays(model, [g1], [g2], [ipair])
    return int(condim[0]), friction[0], solref[0], reffric[0], solimp[0], float(margin[0]), float(gap[0])


def contact_parameter_arrays(model: Model, g1, g2, ipair) -> tuple:
    """(condim (n,), friction (n, 5), solref (n, 2), solreffriction (n, 2), solimp (n, 5), margin (n,), gap (n,)) of
    the contacts of n pairs (g1, g2, ipair (n,) each): an explicit pair's own, else mixed from the two geoms as
    mj_contactParam does (the higher priority wins; at equal priority condim and friction the larger, solref and solimp
    averaged with solmix weights, direct solrefs the smaller); frictions at least MINMU."""
    G = model.geoms
    g1, g2, ipair = (np.asarray(x, np.intp) for x in (g1, g2, ipair))
    p1, p2 = G.geom_priority[g1], G.geom_priority[g2]
    win, equal = np.where(p1 > p2, g1, g2), (p1 == p2)[:, None]
    # solmix weight of geom 1: s1 / (s1 + s2), 0.5 when both are below MINVAL, else the one above it takes all
    s1, s2 = G.geom_solmix[g1], G.geom_solmix[g2]
    with np.errstate(divide="ignore", invalid="ignore"):
        mix = np.where((s1 >= MINVAL) & (s2 >= MINVAL), s1 / (s1 + s2),
                       np.where((s1 < MINVAL) & (s2 < MINVAL), 0.5, np.where(s1 < MINVAL, 0.0, 1.0)))[:, None]
    r1, r2 = G.geom_solref[g1], G.geom_solref[g2]
    mixed = np.where(((r1[:, 0] > 0) & (r2[:, 0] > 0))[:, None], mix * r1 + (1 - mix) * r2, np.minimum(r1, r2))
    condim = np.where(equal[:, 0], np.maximum(G.geom_condim[g1], G.geom_condim[g2]), G.geom_condim[win]).astype(np.intp)
    solref = np.where(equal, mixed, G.geom_solref[win])
    solimp = np.where(equal, mix * G.geom_solimp[g1] + (1 - mix) * G.geom_solimp[g2], G.geom_solimp[win])
    friction = np.maximum(MINMU, np.where(equal, np.maximum(G.geom_friction[g1], G.geom_friction[g2]),
                                          G.geom_friction[win])[:, [0, 0, 1, 2, 2]])
    reffric, margin, gap = np.zeros((len(g1), 2)), G.geom_margin[g1] + G.geom_margin[g2], G.geom_gap[g1] + G.geom_gap[g2]
    # the explicit pairs: their own parameters
    k = np.flatnonzero(ipair >= 0)
    e = ipair[k]
    condim[k], friction[k], solref[k], solimp[k] = G.pair_dim[e], np.maximum(MINMU, G.pair_friction[e]), G.pair_solref[e], \
        G.pair_solimp[e]
    reffric[k] = np.where(G.pair_solreffriction[e].any(axis=1)[:, None], G.pair_solreffriction[e], 0.0)
    margin[k], gap[k] = G.pair_margin[e], G.pair_gap[e]
    return condim, friction, solref, reffric, solimp, margin, gap


def _sphere_apart(model: Model, xpos, xmat, g1: int, g2: int, bound: float) -> bool:
    """MuJoCo's bounding-sphere filter (mj_filterSphere): whether g1 and g2 are farther apart than their bounding spheres
    plus `bound` (a plane: the other's centre above it by more than its radius plus `bound`)."""
    G = model.geoms
    r1, r2 = G.geom_rbound[g1], G.geom_rbound[g2]
    if r1 > 0 and r2 > 0:
        dif = xpos[g1] - xpos[g2]
        with np.errstate(over="ignore"):               # |dif|^2 = inf beyond 1e154 m: apart, as MuJoCo's
            return dif @ dif > (r1 + r2 + bound) ** 2
    for plane, other, r in ((g1, g2, r2), (g2, g1, r1)):
        if G.geom_type[plane] == PLANE and r > 0 and (xpos[other] - xpos[plane]) @ xmat[plane][:, 2] > bound + r:
            return True
    return False


def boxes_apart(model: Model, xpos, xmat, g1: int, g2: int, bound: float) -> bool:
    """MuJoCo's midphase box test (mj_collideOBB): whether the geoms' boxes (geom_aabb, in their frames), grown by
    `bound`, are apart along one of their six face normals; a box unbounded on every axis is never apart, nor is
    anything along the normals of one unbounded on any axis."""
    aabb = model.geoms.geom_aabb[g1], model.geoms.geom_aabb[g2]
    infinite = [a[3:] >= MAXVAL for a in aabb]
    if infinite[0].all() or infinite[1].all():
        return False
    centre = [mat_times_mj(xmat[g], a[:3]) + xpos[g] for g, a in zip((g1, g2), aabb)]
    for j in range(2):
        if infinite[1 - j].any():
            continue                                                 # the other box unbounded: not tested
        for k in range(3):
            n = xmat[(g1, g2)[j]][:, k]
            # |c2 - c1| . n against the boxes' extents along n: sum |half_l (R_l . n)|
            proj = [c[0] * n[0] + c[1] * n[1] + c[2] * n[2] for c in centre]
            radius = [sum(abs(a[3 + l] * (xmat[g][0, l] * n[0] + xmat[g][1, l] * n[1] + xmat[g][2, l] * n[2])) for l in range(3))
                      for g, a in zip((g1, g2), aabb)]
            if radius[0] + radius[1] + bound < abs(proj[1] - proj[0]):
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


def make_shapes(model: Model) -> list:
    """What the narrow phase takes of each geom: its size (3,), a mesh geom's ConvexMesh, a heightfield geom's HField;
    made once by physai.engine.setconst.set_const."""
    G = model.geoms
    paired = np.zeros(G.ngeom, bool)                 # the meshes of geoms in no candidate pair are never read
    paired[candidates(model)[0].geom.ravel()] = True
    return [G.geom_size[g] if G.geom_dataid[g] < 0 or not paired[g] else G.hfields.hfield(int(G.geom_dataid[g]))
            if G.geom_type[g] == HFIELD else G.meshes.mesh(int(G.geom_dataid[g])) for g in range(G.ngeom)]


def detect(model: Model, q: np.ndarray, ignore_unsupported: bool = False, subset: np.ndarray | None = None,
           along: tuple | None = None) -> ContactSet:
    """The contacts at q (nq,) as mj_collision finds them: the
    same pairs, in the same order, with the same positions, frames, distances and mixed parameters; contacts that
    MuJoCo excludes (between margin and margin + gap) are left out, as its rows leave them out. ignore_unsupported:
    geom pairs physai has no narrow phase for are left out, with a CollisionWarning when they may touch (may_touch).
    subset (ncand + nmissing,) bool, or None (every pair): the candidates (candidates(model)[0]) then the left-out pairs
    ([1]) to collide and look at, the others skipped (check_subset): the contacts of the whole detect's pairs in it,
    in its order (the broad phase is the whole one's). along: None, or (q0 (nq,), dof): q is q0 moved along dof, the
    bodies dof does not move posed at q0 (smooth.moved_geom_poses: the whole detect's where q differs from q0 only in
    dof's joint), and the subset's candidates tested without the sweep (tested_directly) where boxes_proper."""
    check_supported(model, ignore_unsupported)
    G = model.geoms
    found = []
    keep = check_subset(model, subset)                                  # named whether or not the model has contacts
    if along is not None:
        q0, dof = check_along(model, *along)
        if dof.shape != ():
            raise ShapeError(f"detect's along: one dof for the one state q, got shape {dof.shape}")
        along = q0, int(dof)
    if not has_contacts(model):
        return ContactSet.empty(model.nbody)
    pairs, missing = candidates(model)
    xpos, xmat = geom_poses(model, q) if along is None else moved_geom_poses(model, q, *along)
    warn_near(model, [k for k, (g1, g2) in enumerate(missing) if keep[len(pairs) + k]
                      and may_touch(model, xpos, xmat, g1, g2, sum(contact_parameters(model, g1, g2, -1)[5:]))], stacklevel=3)
    shape, functions = model.kept("collision_shapes"), narrow_functions(model)
    direct = along is not None and boxes_proper(model)
    for k in (tested_directly(model, xpos, xmat, keep) if direct else tested(model, xpos, xmat)).tolist():
        if not keep[k]:
            continue
        (g1, g2), ipair = pairs.geom[k].tolist(), int(pairs.ipair[k])
        condim, friction, solref, solreffriction, solimp, margin, gap = contact_parameters(model, g1, g2, ipair)
        if _sphere_apart(model, xpos, xmat, g1, g2, margin + gap) or \
                (pairs.midphase[k] and boxes_apart(model, xpos, xmat, g1, g2, margin + gap)):
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


def check_along(model: Model, q0, dofs) -> tuple[np.ndarray, np.ndarray]:
    """detect's along checked: (q0 float64 (nq,), dofs int64, its shape kept); ShapeError for a q0 of another shape,
    InvalidArgumentError for a dof that is no integer in [0, nv) or a q0 not finite."""
    q0, dofs = np.asarray(q0), np.asarray(dofs)
    if q0.shape != (model.nq,):
        raise ShapeError(f"detect's along: its state q0 has shape {q0.shape}, expected ({model.nq},)")
    if not np.issubdtype(dofs.dtype, np.integer) or ((dofs < 0) | (dofs >= model.nv)).any():
        raise InvalidArgumentError(f"detect's along: a dof must be an integer in [0, {model.nv}), got {dofs}")
    if not np.issubdtype(q0.dtype, np.number) or not np.isfinite(q0).all():
        raise InvalidArgumentError("detect's along: its state q0 is not finite")
    return np.asarray(q0, dtype=np.float64, order="C"), np.asarray(dofs, dtype=np.int64, order="C")


def check_subset(model: Model, subset: np.ndarray | None) -> np.ndarray:
    """detect's subset as a (ncand + nmissing,) bool array (None: every pair); ShapeError for another shape,
    InvalidArgumentError for values other than booleans."""
    pairs, missing = candidates(model)
    size = len(pairs) + len(missing)
    if subset is None:
        return np.ones(size, bool)
    subset = np.asarray(subset)
    if subset.shape != (size,):
        raise ShapeError(f"detect's subset has shape {subset.shape}, expected ({size},): a flag per candidate pair "
                         f"({len(pairs)}) then per left-out pair ({len(missing)})")
    if subset.dtype != bool:
        raise InvalidArgumentError(f"detect's subset holds {subset.dtype} values, expected booleans")
    return subset

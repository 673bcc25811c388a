"""Joints: the only place in physai that knows joint types (hinge, slide, ball, free), in MuJoCo's conventions.

    type    nq  nv  position q                                velocity v
    hinge    1   1  angle [rad], 0 at the joint's ref           angular rate about the axis [rad/s]
    slide    1   1  displacement [m], 0 at the joint's ref      linear rate along the axis [m/s]
    ball     4   3  unit quaternion (w, x, y, z), child in      angular velocity in the CHILD frame [rad/s]
                    parent (relative to the body's rest pose)
    free     7   6  world position of the body origin [m],      linear velocity of the body origin in the
                    then its world orientation (w, x, y, z)     WORLD frame [m/s], then angular velocity
                                                                in the BODY frame [rad/s]

The engine works with links: one link per joint, each moving by a motion subspace that is constant in the
link's own frame (spatial_v2's jcalc). A hinge, slide or ball joint is one link; a free joint is three
slides along the world axes followed by a ball, which reproduces MuJoCo's coordinates and velocity frames
exactly (R^3 x SO(3)). `links` makes that decomposition; `local_transforms` is jcalc for all links at once.

Positions are advanced on the joint's own manifold: `integrate` is MuJoCo's mj_integratePos
(q + h v for scalars, quat * exp(h w) for quaternions) and `difference` its inverse, mj_differentiatePos.
Arrays keep the state index last: a block of q for n states is (k, n).
"""

import math
from dataclasses import dataclass

import numpy as np

from physai.exceptions import InvalidStateError, UnsupportedModelError
from physai import spatial
from physai.spatial import dexp_inv_coefficient, skew

#: joint types, MuJoCo's numbers (mjtJoint)
FREE, BALL, SLIDE, HINGE = 0, 1, 2, 3
NAMES = {FREE: "free", BALL: "ball", SLIDE: "slide", HINGE: "hinge"}
NQ = {FREE: 7, BALL: 4, SLIDE: 1, HINGE: 1}
NV = {FREE: 6, BALL: 3, SLIDE: 1, HINGE: 1}


def check_type(jtype: int, where: str) -> int:
    """jtype as an int if it is one of the four joint types; UnsupportedModelError naming `where` otherwise."""
    if int(jtype) not in NAMES:
        raise UnsupportedModelError(f"{where}: unknown joint type {jtype}; physai has hinge, slide, ball and free joints")
    return int(jtype)


def describe(jnt_type) -> str:
    """The joints of a model counted by type, e.g. "1 free, 19 hinge"."""
    counts = [(NAMES[t], sum(1 for x in jnt_type if int(x) == t)) for t in (FREE, BALL, HINGE, SLIDE)]
    return ", ".join(f"{n} {name}" for name, n in counts if n) or "no joints"


@dataclass(frozen=True)
class Link:
    """One link of a joint: its type (HINGE, SLIDE or BALL), unit axis and anchor in the link frame, and where
    its coordinates start in q and v (offsets within the joint's own block)."""

    type: int
    axis: np.ndarray
    anchor: np.ndarray
    qoffset: int
    voffset: int
    world_axes: bool = False          # the free joint's slides: the link keeps the parent's (world) axes


def links(jtype: int, axis: np.ndarray, anchor: np.ndarray) -> list[Link]:
    """The links a joint is made of, base to tip: one for hinge, slide and ball; a free joint is three slides
    along the world axes (q[0:3], v[0:3]) followed by a ball about the body origin (q[3:7], v[3:6])."""
    if jtype == FREE:
        e, zero = np.eye(3), np.zeros(3)
        return [Link(SLIDE, e[k], zero, k, k, True) for k in range(3)] + [Link(BALL, e[0], zero, 3, 3)]
    return [Link(jtype, np.asarray(axis, float), np.asarray(anchor, float), 0, 0)]


def turning_dofs(jnt_type: np.ndarray, jnt_dofadr: np.ndarray, dof_ancestor: np.ndarray) -> np.ndarray:
    """(nv, nv) float64, [j, k] 1 where moving along dof k turns dof j's motion S_j (world frame) by S_k x S_j: k is j
    or one of its ancestors (dof_ancestor (nv, nv) bool, [k, j]), or k and j are two of a ball's (or a free joint's)
    rotations, each of which turns the others' axes (a ball's axes are its body's, moved by q's tangent as integrate
    does); 0 elsewhere."""
    turns = dof_ancestor.copy()
    for j in np.flatnonzero((jnt_type == FREE) | (jnt_type == BALL)).tolist():
        adr = jnt_dofadr[j] + (3 if jnt_type[j] == FREE else 0)                 # the rotations' first dof
        turns[adr:adr + 3, adr:adr + 3] = True
    return np.ascontiguousarray(turns.T, dtype=np.float64)


def turn_mj(link: Link, x: np.ndarray, ref: float) -> np.ndarray | None:
    """The rotation (w, x, y, z) by which a link's coordinates x (q from the link's first entry on) turn it, with
    MuJoCo's arithmetic (mj_kinematics): a ball's quaternion x[0:4] normalized (quat_normalize_mj), a hinge's
    (cos t/2, sin t/2 axis) at t = x[0] - ref (the identity at t = 0); None for a slide, which moves along its axis by
    x[0] - ref instead (physai.engine.smooth.body_poses, cpp/smooth.h's turn_mj)."""
    if link.type == SLIDE:
        return None
    if link.type == BALL:
        return quat_normalize_mj(x[:4].copy())
    angle = x[0] - ref
    return np.array([1.0, 0, 0, 0]) if angle == 0 else np.r_[math.cos(angle * 0.5), link.axis * math.sin(angle * 0.5)]


def motion_subspace(link: Link) -> np.ndarray:
    """S (nv, 6) of a link, one row per dof: its spatial velocity (angular, linear) per unit joint speed, in the
    link frame about the link origin. hinge (a, o x a) for axis a through anchor o; slide (0, a); ball: the
    three rotations (e_k, o x e_k) about the anchor, in the child frame."""
    a, o = link.axis, link.anchor
    if link.type == HINGE:
        return np.r_[a, np.cross(o, a)][None]
    if link.type == SLIDE:
        return np.r_[np.zeros(3), a][None]
    return np.array([np.r_[e, np.cross(o, e)] for e in np.eye(3)])     # BALL


def scalar_transform_constants(link: Link, rot: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """G (3, 4, 4) of a hinge or slide link with rest pose (rot, pos) in its parent: its pose in the parent at
    joint position t (from the ref) is the 3x4 matrix [R | p] = G @ (1, t, sin t, 1 - cos t):
      hinge: R = rot (1 + sin t K + (1 - cos t) K^2),  p = pos + rot (o - R_t o),  K = skew(a)   (Rodrigues)
      slide: R = rot,                                  p = pos + t rot a."""
    G = np.zeros((3, 4, 4))
    G[:, :3, 0], G[:, 3, 0] = rot, pos
    if link.type == HINGE:
        K = skew(link.axis)
        G[:, :3, 2], G[:, 3, 2] = rot @ K, -rot @ K @ link.anchor
        G[:, :3, 3], G[:, 3, 3] = rot @ K @ K, -rot @ K @ K @ link.anchor
    else:
        G[:, 3, 1] = rot @ link.axis
    return G


# sin and cos by Cody-Waite reduction by pi/2 and Cephes' minimax polynomials on [-pi/4, pi/4]: the same operations,
# in the same order, as the compiled engine's sincos (cpp/lanes.h), so both backends turn hinges by the same numbers
# on every CPU (numpy's own sin and cos differ between its SIMD kernels)
_PIO2 = (1.57079625129699707031, 7.54978941586159635336e-8, 5.39030285815811905290e-15)      # pi/2 in three parts
_SIN = (1.58962301576546568060e-10, 2.50507477628578072866e-8, 2.75573136213857245213e-6, 1.98412698295895385996e-4,
        8.33333333332211858878e-3, 1.66666666666666307295e-1)
_COS = (1.13585365213876817300e-11, 2.08757008419747316778e-9, 2.75573141792967388112e-7, 2.48015872888517045348e-5,
        1.38888888888730564116e-3, 4.16666666666665929218e-2)
_ROUND = 6755399441055744.0                          # 1.5 * 2^52: (x + _ROUND) - _ROUND rounds x to an integer, ties to even


def sincos(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sin x, cos x) for an array x: the polynomial for |x| <= 1e5, numpy's sin and cos beyond (as the C++)."""
    x = np.asarray(x, dtype=float)
    far = ~(np.abs(x) <= 1e5)
    x_near = np.where(far, 0.0, x)                  # the polynomial's input: far x (1e154) would overflow r * r
    j = (x_near * 0.63661977236758134308 + _ROUND) - _ROUND                # nearest multiple of pi/2
    r = ((x_near - j * _PIO2[0]) - j * _PIO2[1]) - j * _PIO2[2]
    z = r * r
    ps = (((((_SIN[0] * z - _SIN[1]) * z + _SIN[2]) * z - _SIN[3]) * z + _SIN[4]) * z - _SIN[5])
    pc = (((((-_COS[0] * z + _COS[1]) * z - _COS[2]) * z + _COS[3]) * z - _COS[4]) * z + _COS[5])
    sr = r + r * z * ps
    cr = (1.0 - 0.5 * z) + z * z * pc
    quadrant = j - 4.0 * (((j - 1.5) * 0.25 + _ROUND) - _ROUND)            # j mod 4
    s = np.select([quadrant == 0.0, quadrant == 1.0, quadrant == 2.0], [sr, cr, -sr], -cr)
    c = np.select([quadrant == 0.0, quadrant == 1.0, quadrant == 2.0], [cr, -sr, -cr], sr)
    if far.any():
        s[far], c[far] = np.sin(x[far]), np.cos(x[far])
    return s, c


def scalar_transforms(G: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Poses (k, 3, 4, n) of k hinge/slide links with constants G (k, 3, 4, 4) at joint positions t (k, n)."""
    coef = np.empty((len(t), 4, t.shape[1]))
    coef[:, 0], coef[:, 1] = 1.0, t
    # sin t = 2 sin(t/2) cos(t/2), 1 - cos t = 2 sin(t/2)^2: 1 - cos t keeps its relative precision for small t
    sh, ch = sincos(0.5 * t)
    np.multiply(2.0 * sh, ch, out=coef[:, 2])
    np.multiply(2.0 * sh, sh, out=coef[:, 3])
    return np.matmul(G.reshape(-1, 12, 4), coef).reshape(-1, 3, 4, t.shape[1])


def ball_transforms(rot: np.ndarray, pos: np.ndarray, anchor: np.ndarray, quat: np.ndarray, where) -> np.ndarray:
    """Poses (k, 3, 4, n) of k ball links with rest poses rot (k, 3, 3), pos (k, 3), anchors (k, 3) at
    quaternions quat (k, 4, n): R = rot Q, p = pos + rot (o - Q o), Q the normalized quaternion's rotation."""
    Q = quat_to_mat(quat, where)
    T = np.empty((len(quat), 3, 4, quat.shape[2]))
    np.einsum("kij,kjln->kiln", rot, Q, out=T[:, :, :3])
    Qo = np.einsum("kijn,kj->kin", Q, anchor)
    T[:, :, 3] = pos[:, :, None] + np.einsum("kij,kjn->kin", rot, anchor[:, :, None] - Qo)
    return T


@dataclass(frozen=True)
class LinkTransforms:
    """jcalc for every link of a model at once, compiled from its links: the constants each joint type needs.

    scalar (k,), scalar_q (k,), scalar_ref (k,), scalar_G (k, 3, 4, 4): hinge and slide links, their q entry, ref
        and the constants of scalar_transform_constants
    ball (b,), ball_q (b,), ball_rot (b, 3, 3), ball_pos (b, 3), ball_anchor (b, 3): ball links, the first q entry
        of their quaternion, rest pose in the parent link and anchor
    """

    nlink: int
    scalar: np.ndarray
    scalar_q: np.ndarray
    scalar_ref: np.ndarray
    scalar_G: np.ndarray
    ball: np.ndarray
    ball_q: np.ndarray
    ball_rot: np.ndarray
    ball_pos: np.ndarray
    ball_anchor: np.ndarray

    @classmethod
    def of(cls, links: list[Link], rots, poss, qadr, refs) -> "LinkTransforms":
        """From each link, its rest pose (rot, pos) in its parent link, its first q entry and its ref."""
        scalar = [i for i, link in enumerate(links) if link.type != BALL]
        ball = [i for i, link in enumerate(links) if link.type == BALL]
        ints = lambda x: np.array(x, dtype=np.intp)          # noqa: E731
        return cls(len(links), ints(scalar), ints([qadr[i] for i in scalar]), np.array([refs[i] for i in scalar]),
                   np.array([scalar_transform_constants(links[i], rots[i], poss[i]) for i in scalar]).reshape(-1, 3, 4, 4),
                   ints(ball), ints([qadr[i] for i in ball]), np.array([rots[i] for i in ball]).reshape(-1, 3, 3),
                   np.array([poss[i] for i in ball]).reshape(-1, 3), np.array([links[i].anchor for i in ball]).reshape(-1, 3))

    def __call__(self, q: np.ndarray) -> np.ndarray:
        """Each link's pose in its parent link, (nlink, 3, 4, n) = [R | p], at positions q (nq, n)."""
        T = np.empty((self.nlink, 3, 4, q.shape[1]))
        if len(self.scalar):
            T[self.scalar] = scalar_transforms(self.scalar_G, q[self.scalar_q] - self.scalar_ref[:, None])
        if len(self.ball):
            quat = q[self.ball_q[:, None] + np.arange(4)]
            T[self.ball] = ball_transforms(self.ball_rot, self.ball_pos, self.ball_anchor, quat, self.ball_q)
        return T


def rest_pose(link: Link, first: bool, pos: np.ndarray, rot: np.ndarray):
    """A link's rest pose in its parent link: the body's (pos, rot) for the body's first link, the identity for the
    links after it in the same body, and the identity for a free joint's links (the free joint places the body in
    the world, whatever its rest pose)."""
    if link.world_axes or not first:
        return np.zeros(3), np.eye(3)
    return pos, rot


def check_body(types: list[int], parent_is_world: bool, where: str) -> None:
    """Refuse joint combinations physai cannot chain: a free joint must be its body's only joint, under the world."""
    if FREE in types and (len(types) > 1 or not parent_is_world):
        raise UnsupportedModelError(f"{where}: a free joint must be the only joint of a body whose parent is the world "
                                    "(or is welded to it)")


def has_spring(jtype: int) -> bool:
    """Whether a joint type can carry physai's linear spring -k (q - springref): hinges and slides."""
    return jtype in (HINGE, SLIDE)


def default_range(jtype: int) -> tuple[float, float]:
    """Where random positions of a scalar coordinate are drawn without a joint range: [-pi, pi] rad for hinges,
    [-1, 1] m for slides and free joints' positions."""
    return (-np.pi, np.pi) if jtype == HINGE else (-1.0, 1.0)


# ---- quaternions (w, x, y, z), state last ----

def quat_to_mat(quat: np.ndarray, where=None, name: str = "q") -> np.ndarray:
    """Rotation matrices (..., 3, 3, n) of quaternions (..., 4, n), state last: physai.spatial.quat_to_mat, normalized.

    A zero quaternion raises InvalidStateError naming where[k] (the index in the positions `name` of the k-th
    quaternion) if given, and the state when there are several (n > 1)."""
    zero = (quat == 0).all(axis=-2)
    if zero.any():
        k, s = (int(i) for i in np.argwhere(zero)[0][-2:]) if zero.ndim > 1 else (0, int(np.argmax(zero)))
        at = f"{name}[{where[k]}:{where[k] + 4}]" if where is not None else "a quaternion"
        state = f" (state {s})" if zero.shape[-1] > 1 else ""
        raise InvalidStateError(f"{at} is a zero quaternion{state}; a ball or free joint needs a unit quaternion "
                                "(w, x, y, z), e.g. (1, 0, 0, 0)")
    return np.moveaxis(spatial.quat_to_mat(np.moveaxis(quat, -1, -2)), -3, -1)


def quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product a * b of quaternions (..., 4, n), state last (physai.spatial.quat_mul)."""
    return np.moveaxis(spatial.quat_mul(np.moveaxis(a, -2, -1), np.moveaxis(b, -2, -1)), -1, -2)


def quat_integrate(quat: np.ndarray, w: np.ndarray, h) -> np.ndarray:
    """MuJoCo's mju_quatIntegrate: normalize(quat) * (rotation by h |w| about w / |w|), quat (..., 4, n), w (..., 3, n).
    Rounded as MuJoCo 4.0's, operation by operation (RK4's stages collide at these positions: a box resting exactly on
    a plane touches it or not by the last bit): the axis w (1 / |w|), libm's sin and cos, quat scaled by 1 / |quat|
    (|quat|^2 summed in pairs) only when ||quat| - 1| > 1e-15, the product's terms added in pairs."""
    speed = np.sqrt(w[..., 0, :] * w[..., 0, :] + w[..., 1, :] * w[..., 1, :] + w[..., 2, :] * w[..., 2, :])
    angle = h * speed
    axis = np.where(speed[..., None, :] > 1e-15, w * (1.0 / np.where(speed > 1e-15, speed, 1.0))[..., None, :], 0.0)
    b0, b1, b2, b3 = np.cos(angle * 0.5), *np.moveaxis(axis * np.sin(angle * 0.5)[..., None, :], -2, 0)
    q0, q1, q2, q3 = np.moveaxis(quat, -2, 0)
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        norm2 = (q0 * q0 + q1 * q1) + (q2 * q2 + q3 * q3)
        norm = np.sqrt(norm2)
        scale = np.where(np.abs(norm - 1.0) > 1e-15, 1.0 / norm, 1.0)   # a zero quaternion gives NaN
        a0, a1, a2, a3 = q0 * scale, q1 * scale, q2 * scale, q3 * scale
    extreme = ~((norm2 >= 1e-200) & (norm2 <= 1e200))   # |quat|^2 over- or underflows: scaled exactly
    if extreme.any():
        unit = np.moveaxis(spatial.quat_normalize(np.moveaxis(quat, -2, -1)), -1, 0)
        a0, a1, a2, a3 = (np.where(extreme, x, y) for x, y in zip(unit, (a0, a1, a2, a3)))
    return spatial.quat_mul_mj(np.stack([a0, a1, a2, a3], axis=-2), np.stack([b0, b1, b2, b3], axis=-2), axis=-2)


def quat_normalize_mj(quat: np.ndarray) -> np.ndarray:
    """MuJoCo 4's mju_normalize4 of a quaternion (4,) (squares summed in pairs; unchanged when its norm is within mjMINVAL
    = 1e-15 of 1, else times 1 / norm), exact at any size (spatial.quat_normalize when the squared norm would overflow
    or underflow); a zero quaternion is the identity."""
    with np.errstate(over="ignore", under="ignore"):
        norm2 = (quat[0] * quat[0] + quat[1] * quat[1]) + (quat[2] * quat[2] + quat[3] * quat[3])
    if not 1e-200 <= norm2 <= 1e200:
        return spatial.quat_normalize(quat) if quat.any() else np.array([1.0, 0.0, 0.0, 0.0])
    norm = math.sqrt(norm2)
    return quat * (1 / norm) if abs(norm - 1) > 1e-15 else quat


def quat_difference(q1: np.ndarray, q0: np.ndarray) -> np.ndarray:
    """MuJoCo's mju_subQuat of q0 and q1 normalized first (mj_differentiatePos): the rotation vector (..., 3, n) that
    takes q0 to q1 in q0's frame, log(q0^-1 q1), angle wrapped to [-pi, pi]. A zero quaternion gives NaN."""
    unit = lambda quat: np.moveaxis(spatial.quat_normalize(np.moveaxis(quat, -2, -1)), -1, -2)   # noqa: E731
    conj = unit(q0) * np.array([1.0, -1.0, -1.0, -1.0])[:, None]
    d = quat_mul(conj, unit(q1))
    v = d[..., 1:, :]
    s = np.sqrt(np.einsum("...in,...in->...n", v, v))
    angle = 2.0 * np.arctan2(s, d[..., 0, :])
    angle = np.where(angle > np.pi, angle - 2.0 * np.pi, angle)
    return v * np.where(s > 1e-15, angle / np.where(s > 1e-15, s, 1.0), 0.0)[..., None, :]


# ---- the configuration manifold: q's layout as index maps ----

@dataclass(frozen=True)
class Coordinates:
    """Where each kind of coordinate sits in q (nq) and v (nv), compiled once from the joints.

    scalar_q, scalar_v  (k,)  entries that add: hinge and slide positions, free joints' world positions
    quat_q, quat_v      (b,)  first q index of each quaternion (ball and free joints) and of its 3 velocities
    free_q              (f,)  the position entries of free joints (for random states)
    neutral             (nq,) q of the rest pose: refs for hinge and slide, identity quaternions
    """

    nq: int
    nv: int
    scalar_q: np.ndarray
    scalar_v: np.ndarray
    quat_q: np.ndarray
    quat_v: np.ndarray
    free_q: np.ndarray
    neutral: np.ndarray

    @classmethod
    def of(cls, jnt_type, jnt_qposadr, jnt_dofadr, jnt_ref, nq: int, nv: int) -> "Coordinates":
        scalar_q, scalar_v, quat_q, quat_v, free_q = [], [], [], [], []
        neutral = np.zeros(nq)
        for t, qa, va, ref in zip(jnt_type, jnt_qposadr, jnt_dofadr, jnt_ref):
            if t in (HINGE, SLIDE):
                scalar_q.append(qa), scalar_v.append(va)
                neutral[qa] = ref
            else:
                if t == FREE:
                    scalar_q += [qa, qa + 1, qa + 2]
                    scalar_v += [va, va + 1, va + 2]
                    free_q += [qa, qa + 1, qa + 2]
                    qa, va = qa + 3, va + 3
                quat_q.append(qa), quat_v.append(va)
                neutral[qa] = 1.0
        ints = lambda x: np.array(x, dtype=np.intp)          # noqa: E731
        return cls(nq, nv, ints(scalar_q), ints(scalar_v), ints(quat_q), ints(quat_v), ints(free_q), neutral)

    def quats(self) -> tuple[np.ndarray, np.ndarray]:
        """Index arrays (b, 4) of the quaternions in q and (b, 3) of their angular velocities in v."""
        return self.quat_q[:, None] + np.arange(4), self.quat_v[:, None] + np.arange(3)


def integrate(c: Coordinates, q: np.ndarray, v: np.ndarray, h) -> np.ndarray:
    """q advanced by velocity v for time h (MuJoCo's mj_integratePos), q (nq, n), v (nv, n) -> (nq, n)."""
    out = q.copy()
    out[c.scalar_q] = q[c.scalar_q] + h * v[c.scalar_v]
    if len(c.quat_q):
        iq, iv = c.quats()
        out[iq] = quat_integrate(q[iq], v[iv], h)
    return out


def dexp_inv(c: Coordinates, theta: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The velocity k (nv, n) in q's tangent space of a motion that passes q (+) theta with velocity v (nv, n).

    Scalars: k = v. Rotations (the 3 velocities of each quaternion, in the body frame):
    k = v + 1/2 theta x v + c(|theta|) theta x (theta x v), SO(3)'s inverse right-trivialized dexp. These are the
    stage velocities of a Runge-Kutta-Munthe-Kaas step, which MuJoCo 4's RK4 takes on quaternions.
    """
    k = v.copy()
    if len(c.quat_q):
        _, iv = c.quats()
        th, w = theta[iv], v[iv]                                     # (b, 3, n)
        coef = dexp_inv_coefficient(np.sqrt(np.einsum("bin,bin->bn", th, th)))
        tw = np.cross(th, w, axis=1)
        k[iv] = w + 0.5 * tw + coef[:, None] * np.cross(th, tw, axis=1)
    return k


def difference(c: Coordinates, q0: np.ndarray, q1: np.ndarray, h) -> np.ndarray:
    """The velocity v (nv, n) with integrate(q0, v, h) = q1 (MuJoCo's mj_differentiatePos)."""
    v = np.empty((c.nv, q0.shape[1]))
    v[c.scalar_v] = (q1[c.scalar_q] - q0[c.scalar_q]) / h
    if len(c.quat_q):
        iq, iv = c.quats()
        v[iv] = quat_difference(q1[iq], q0[iq]) / h
    return v


def random_quaternions(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    """Unit quaternions uniformly distributed on SO(3) (normalized Gaussian 4-vectors), shape + (4,), w >= 0."""
    x = rng.normal(size=shape + (4,))
    x /= np.linalg.norm(x, axis=-1, keepdims=True)
    return x * np.where(x[..., :1] < 0, -1.0, 1.0)


def random_positions(c: Coordinates, n: int, rng: np.random.Generator, low: np.ndarray, high: np.ndarray,
                     free_box: float | None = 1.0) -> np.ndarray:
    """n configurations (n, nq): scalar coordinates uniform in [low, high] (per scalar_q entry), then free joints'
    positions uniform in [-free_box, free_box] m (None keeps [low, high]), quaternions uniform on SO(3)."""
    q = np.empty((n, c.nq))
    q[:, c.scalar_q] = rng.uniform(low, high, (n, len(c.scalar_q)))
    if len(c.free_q) and free_box is not None:
        q[:, c.free_q] = rng.uniform(-free_box, free_box, (n, len(c.free_q)))
    if len(c.quat_q):
        q[:, c.quats()[0]] = random_quaternions(rng, (n, len(c.quat_q)))
    return q

"""Tendons on a Data workspace (MuJoCo's mj_tendon in engine_core_smooth.c and mju_wrap in engine_util_misc.c):

    tendons(model, d, q)                   ten_length (ntendon,) [m | rad] and ten_J (ntendon, nv) of one state  (mj_tendon)
    wrap(x0, x1, xpos, xmat, radius, kind, side)   the path of a segment around a sphere or cylinder          (mju_wrap)
    armature_matrix(model, J)              sum_t armature_t J_t^T J_t in M's sparsity pattern        (mj_tendonArmature)
    armature(model, d, q)                  the same at a state

The passive force along a tendon is physai.engine.passive.tendon_force; whether a tendon acts on the dynamics at all
is Model.has_tendon_forces. cpp/tendon.h is the compiled twin, function by function.

A fixed tendon's length is sum_k coef_k q_k over its joints (hinges and slides), its Jacobian the coefficients at their
dofs. A spatial tendon is a path through sites; a sphere or cylinder between two sites wraps it when the straight segment
would pass through the geom (or a side site asks for the other side); a pulley divides the rest of the path's length and
Jacobian by its divisor. Its Jacobian is the sum over the segments whose ends move with different bodies of
u^T (J_p1 - J_p0) / divisor, u the unit vector from p0 to p1 (MuJoCo's chain rule; the wrap points are taken as fixed in
the geom's body). Positions come from the MuJoCo-order body poses (smooth.body_poses), so lengths agree with MuJoCo's to
rounding; Jacobians from the point Jacobians of the Data (support.point_jacobians, after com_pos).

Known gap: a side site inside the wrapped geom (_wrap_inside) follows MuJoCo 3's Newton iteration; MuJoCo 4 places the
touching point differently by up to ~1e-8 m, so such a tendon's length agrees to rounding and its Jacobian to ~1e-6.
"""

import math

import numpy as np

from physai.engine.data import Data
from physai.engine.model import WRAP_CYLINDER, WRAP_JOINT, WRAP_PULLEY, WRAP_SPHERE, Model
from physai.engine.model_checks import MINVAL
from physai.engine.primitives import mat_t_times_mj, mat_times_mj, sequential_sum
from physai.engine.smooth import body_poses, geom_poses, quat_to_mat_mj
from physai.engine.support import point_jacobians

def site_positions(model: Model, q: np.ndarray, poses: tuple | None = None) -> np.ndarray:
    """site_xpos (nsite, 3) [m] at q (nq,): each site at p_body + R_body site_pos, with MuJoCo's arithmetic
    (mj_kinematics); poses: body_poses(model, q) when the caller has them."""
    xpos, xquat = body_poses(model, q) if poses is None else poses
    xmat = quat_to_mat_mj(xquat)
    sites = np.zeros((model.nsite, 3))
    for k, b in enumerate(model.site_bodyid.tolist()):
        sites[k] = model.site_pos[k] if b < 0 else mat_times_mj(xmat[b], model.site_pos[k]) + xpos[b]
    return sites


def tendons(model: Model, d: Data, q: np.ndarray, poses: tuple | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(ten_length (ntendon,) [m | rad], ten_J (ntendon, nv)) of one state q (nq,), from a one-state Data with
    com_pos done (MuJoCo's mj_tendon); ten_velocity is ten_J qd. poses: body_poses(model, q) when the caller has them
    (spatial tendons' sites and geoms are placed from one pass of them)."""
    length, J = np.zeros(model.ntendon), np.zeros((model.ntendon, model.nv))
    if not model.ntendon:
        return length, J
    spatial = (model.wrap_type[model.tendon_adr] != WRAP_JOINT).any()
    poses = body_poses(model, q) if spatial and poses is None else poses
    sites = site_positions(model, q, poses) if spatial else None
    geoms = geom_poses(model, q, poses) if spatial and model.geoms.ngeom else None
    for t in range(model.ntendon):
        adr, num = int(model.tendon_adr[t]), int(model.tendon_num[t])
        if model.wrap_type[adr] == WRAP_JOINT:
            # fixed: L = sum coef q, J = coef at the joints' dofs
            for w in range(adr, adr + num):
                j, coef = int(model.wrap_objid[w]), model.wrap_prm[w]
                length[t] += coef * q[model.jnt_qposadr[j]]
                J[t, model.jnt_dofadr[j]] += coef
        else:
            length[t] = _spatial(model, d, t, sites, geoms, J[t])
    return length, J


def _spatial(model: Model, d: Data, t: int, sites: np.ndarray, geoms, J: np.ndarray) -> float:
    """The length of spatial tendon t, its Jacobian added into J (nv,): the path site by site, each wrapping geom
    between two sites, each pulley's divisor applying to what follows it."""
    adr, num = int(model.tendon_adr[t]), int(model.tendon_num[t])
    kinds, ids, prm = model.wrap_type[adr:adr + num], model.wrap_objid[adr:adr + num], model.wrap_prm[adr:adr + num]
    length, divisor, j = 0.0, 1.0, 0
    while j < num - 1:
        if kinds[j] == WRAP_PULLEY or kinds[j + 1] == WRAP_PULLEY:
            if kinds[j] == WRAP_PULLEY:
                divisor = prm[j]
            j += 1
            continue
        s0 = int(ids[j])
        points, bodies = [sites[s0]], [int(model.site_bodyid[s0])]
        wlen, geom = -1.0, kinds[j + 1] in (WRAP_SPHERE, WRAP_CYLINDER)
        if geom:
            g, s1 = int(ids[j + 1]), int(ids[j + 2])
            side = int(round(prm[j + 1]))
            wlen, w0, w1 = wrap(sites[s0], sites[s1], geoms[0][g], geoms[1][g], model.geoms.geom_size[g, 0],
                                int(kinds[j + 1]), sites[side] if side >= 0 else None)
            if wlen >= 0:
                body = int(model.geoms.geom_bodyid[g])
                points, bodies = points + [w0, w1], bodies + [body, body]
        else:
            s1 = int(ids[j + 1])
        points.append(sites[s1])
        bodies.append(int(model.site_bodyid[s1]))
        # L += (|p1 - p0| + wrap + |p3 - p2|) / divisor, or |p1 - p0| / divisor without a wrap
        if wlen < 0:
            length += _distance(points[0], points[1]) / divisor
        else:
            length += (_distance(points[0], points[1]) + wlen + _distance(points[2], points[3])) / divisor
        # J += u^T (J_p1 - J_p0) / divisor over segments whose ends move with different bodies
        for k in range(len(points) - 1):
            if bodies[k] != bodies[k + 1]:
                J += _segment_jacobian(model, d, bodies[k], bodies[k + 1], points[k], points[k + 1]) / divisor
        j += 2 if geom else 1
    return length


def _distance(a: np.ndarray, b: np.ndarray) -> float:
    """|b - a| (mju_dist3)."""
    dif = a - b
    return math.sqrt(dif[0] * dif[0] + dif[1] * dif[1] + dif[2] * dif[2])


def _segment_jacobian(model: Model, d: Data, b0: int, b1: int, p0: np.ndarray, p1: np.ndarray) -> np.ndarray:
    """u^T (J_p1 - J_p0) (nv,): the rate of |p1 - p0| for p0 moving with body b0 and p1 with b1, u = (p1 - p0) / |p1 - p0|."""
    u = p1 - p0
    norm = _distance(p0, p1)
    u = u / norm if norm >= MINVAL else np.zeros(3)
    J0, J1 = (point_jacobians(model, d, b, p[None, :, None])[0, :3, :, 0] for b, p in ((b0, p0), (b1, p1)))
    return u @ (J1 - J0)


# ---------------------------------------------------------------- wrapping (mju_wrap)

def wrap(x0: np.ndarray, x1: np.ndarray, xpos: np.ndarray, xmat: np.ndarray, radius: float, kind: int,
         side: np.ndarray | None) -> tuple[float, np.ndarray, np.ndarray]:
    """(length of the wrapped arc [m] or -1 without a wrap, the two wrap points (3,) each in the world) of the segment
    x0 -> x1 (world points [m]) around a sphere or cylinder (kind WRAP_SPHERE, WRAP_CYLINDER) of the radius at xpos, xmat,
    with an optional side site (world point): MuJoCo's mju_wrap. The wrap is solved in a plane: the one through the
    sphere's centre and both points, or the cylinder's cross-section (its length along the axis added after)."""
    p0, p1 = mat_t_times_mj(xmat, x0 - xpos), mat_t_times_mj(xmat, x1 - xpos)
    none = (-1.0, np.zeros(3), np.zeros(3))
    if _norm(p0) < MINVAL or _norm(p1) < MINVAL:
        return none
    axis0, axis1 = _plane(p0, p1) if kind == WRAP_SPHERE else (np.array([1.0, 0, 0]), np.array([0.0, 1, 0]))
    # the points in the plane's coordinates
    end = np.array([p0 @ axis0, p0 @ axis1, p1 @ axis0, p1 @ axis1])
    s = sd = None
    if side is not None:
        s = mat_t_times_mj(xmat, side - xpos)
        sd = np.array([s @ axis0, s @ axis1])
        sd = sd / _norm(sd) * radius if _norm(sd) >= MINVAL else sd
    if s is not None and _norm(s) < radius:
        wlen, pnt = _wrap_inside(end, radius)
    else:
        wlen, pnt = _wrap_circle(end, sd, radius)
    if wlen < 0:
        return none
    res = [axis0 * pnt[0] + axis1 * pnt[1], axis0 * pnt[2] + axis1 * pnt[3]]
    if kind == WRAP_CYLINDER:
        # heights along the axis in proportion to the path length: z = z0 + (z1 - z0) L_before / L_total
        L0 = math.sqrt((p0[0] - res[0][0]) ** 2 + (p0[1] - res[0][1]) ** 2)
        L1 = math.sqrt((p1[0] - res[1][0]) ** 2 + (p1[1] - res[1][1]) ** 2)
        res[0][2] = p0[2] + (p1[2] - p0[2]) * L0 / (L0 + wlen + L1)
        res[1][2] = p0[2] + (p1[2] - p0[2]) * (L0 + wlen) / (L0 + wlen + L1)
        height = abs(res[1][2] - res[0][2])
        wlen = math.sqrt(wlen * wlen + height * height)
    return wlen, mat_times_mj(xmat, res[0]) + xpos, mat_times_mj(xmat, res[1]) + xpos


def _norm(v: np.ndarray) -> float:
    return math.sqrt(float(v @ v))


def _plane(p0: np.ndarray, p1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two unit axes of the plane through the sphere's centre, p0 and p1: p0's direction and the one normal to it in the
    plane (a plane through p0 and a coordinate axis when p0 and p1 are parallel)."""
    axis0 = p0 / _norm(p0)
    normal = np.cross(p0, p1)
    if _norm(normal) < MINVAL:
        i = 1 if abs(axis0[1]) > abs(axis0[0]) and abs(axis0[1]) > abs(axis0[2]) else \
            2 if abs(axis0[2]) > abs(axis0[0]) and abs(axis0[2]) > abs(axis0[1]) else 0
        other = np.ones(3)
        other[i] = 0.0
        normal = np.cross(axis0, other)
    normal = normal / _norm(normal)
    axis1 = np.cross(normal, axis0)
    return axis0, axis1 / _norm(axis1)


def _cross2(a, b) -> float:
    return a[0] * b[1] - a[1] * b[0]


def _angle(a, b) -> float:
    """The signed angle from a to b (2D) in (-pi, pi] [rad]."""
    return math.atan2(_cross2(a, b), a[0] * b[0] + a[1] * b[1])


def _tangent(p, radius: float, sign: float) -> np.ndarray:
    """The point where the line from p (2D, outside the circle) touches the circle, on the side `sign` (+1: the tangent
    point lies counter-clockwise of p, seen from the centre)."""
    sqlen = p[0] * p[0] + p[1] * p[1]
    root = math.sqrt(sqlen - radius * radius)
    return np.array([p[0] * radius * radius - sign * radius * p[1] * root,
                     p[1] * radius * radius + sign * radius * p[0] * root]) / sqlen


def _wrap_circle(end: np.ndarray, side, radius: float) -> tuple[float, np.ndarray]:
    """(arc length or -1, the two tangent points (4,)) of the 2D segment end[:2] -> end[2:] around the circle of the
    radius at the origin. Without a side point: the shorter way round, when the segment passes through the circle.
    With one (on the circle): the way the polyline end0 -> side -> end1 winds around the centre (MuJoCo 4's sidesite:
    the shortest path of that homotopy class), no wrap when the straight segment already winds so and misses the circle."""
    a, b = end[:2], end[2:]
    sq = radius * radius
    if a @ a < sq or b @ b < sq or radius < MINVAL:
        return -1.0, np.zeros(4)
    dif = b - a
    dd = dif @ dif
    if dd < MINVAL:
        return -1.0, np.zeros(4)
    # the point of the segment nearest the centre: a + t dif, t in [0, 1]
    t = min(1.0, max(0.0, -(dif @ a) / dd))
    near = a + t * dif
    crosses = near @ near <= sq
    straight = _angle(a, b)
    if side is None:
        if not crosses:
            return -1.0, np.zeros(4)
        sign = 1.0 if straight >= 0 else -1.0
        turn = abs(straight)
    else:
        turn = _angle(a, side) + _angle(side, b)            # the winding angle of end0 -> side -> end1
        sign = 1.0 if turn >= 0 else -1.0
        turn = abs(turn)
        if not crosses and abs(straight - sign * turn) < math.pi:
            return -1.0, np.zeros(4)
    # tangent points: from a turning `sign`, into b turning `sign`; the arc between them
    t0, t1 = _tangent(a, radius, sign), _tangent(b, radius, -sign)
    arc = sign * _angle(t0, t1)
    if arc < 0:
        arc += 2 * math.pi
    if side is not None:
        alpha0, alpha1 = math.acos(min(1.0, radius / _norm(a))), math.acos(min(1.0, radius / _norm(b)))
        arc = max(0.0, turn - alpha0 - alpha1)
    return radius * arc, np.r_[t0, t1]


def _wrap_inside(end: np.ndarray, radius: float) -> tuple[float, np.ndarray]:
    """(0 when wrapped, else -1; the point (twice, (4,)) on the circle the path touches) of the 2D segment end[:2] ->
    end[2:] forced through the inside of the circle (a side site inside the geom): the point where the path's angles
    of incidence balance, asin(A z) + asin(B z) - 2 asin(z) + G = 0 solved by Newton's method (MuJoCo's wrap_inside)."""
    len0, len1 = _norm(end[:2]), _norm(end[2:])
    dif = end[2:] - end[:2]
    dd = dif @ dif
    if len0 <= radius or len1 <= radius or radius < MINVAL or len0 < MINVAL or len1 < MINVAL:
        return -1.0, np.zeros(4)
    if dd > MINVAL:
        a = -(dif @ end[:2]) / dd
        if 0 < a < 1 and _norm(end[:2] + a * dif) <= radius:
            return -1.0, np.zeros(4)
    mid = 0.5 * (end[:2] + end[2:])
    mid = mid / _norm(mid) * radius
    fallback = (0.0, np.r_[mid, mid])
    A, B = radius / len0, radius / len1
    cosG = (len0 * len0 + len1 * len1 - dd) / (2 * len0 * len1)
    if cosG < -1 + MINVAL:
        return -1.0, np.zeros(4)
    if cosG > 1 - MINVAL:
        return fallback
    G = math.acos(cosG)
    z = 1 - 1e-7
    f = math.asin(A * z) + math.asin(B * z) - 2 * math.asin(z) + G
    if f > 0:
        return fallback
    iterations = 0
    while iterations < 20 and abs(f) > 1e-6:                 # Newton's method from z just below 1, moving left
        df = (A / max(MINVAL, math.sqrt(1 - z * z * A * A)) + B / max(MINVAL, math.sqrt(1 - z * z * B * B))
              - 2 / max(MINVAL, math.sqrt(1 - z * z)))
        if df > -MINVAL:
            return fallback
        z1 = z - f / df
        if z1 > z:
            return fallback
        z = z1
        f = math.asin(A * z) + math.asin(B * z) - 2 * math.asin(z) + G
        if f > 1e-6:
            return fallback
        iterations += 1
    if iterations >= 20:
        return fallback
    # the touching point: vec turned by ang, vec the endpoint the other lies counter-clockwise of
    if _cross2(end[:2], end[2:]) > 0:
        vec, ang = end[:2] / len0, math.asin(z) - math.asin(A * z)
    else:
        vec, ang = end[2:] / len1, math.asin(z) - math.asin(B * z)
    p = radius * np.array([math.cos(ang) * vec[0] - math.sin(ang) * vec[1], math.sin(ang) * vec[0] + math.cos(ang) * vec[1]])
    return 0.0, np.r_[p, p]


# ---------------------------------------------------------------- inertia

def armature(model: Model, d: Data, q: np.ndarray) -> np.ndarray:
    """(nv, nv) the tendons' armature added to M at q (nq,) (armature_matrix; zeros without tendon armature), from a
    one-state Data with com_pos done."""
    if not model.ntendon or not model.tendon_armature.any():
        return np.zeros((model.nv, model.nv))
    return armature_matrix(model, tendons(model, d, q)[1])


def armature_matrix(model: Model, J: np.ndarray) -> np.ndarray:
    """(nv, nv) sum over tendons of armature J^T J, kept to M's sparsity pattern (dof pairs where one is an ancestor of
    the other), as MuJoCo adds tendon armature into its sparse M (mj_tendonArmature)."""
    return weighted_outer(J, model.tendon_armature) * model.dof_Mmask[:, :, 0]


def weighted_outer(J: np.ndarray, w: np.ndarray) -> np.ndarray:
    """J^T diag(w) J (nv, nv) for J (n, nv), w (n,) in the compiled twin's order (cpp/tendon.h's armature_matrix,
    forward.h's add_outer): entry (i, j) += (J_ti w_t) J_tj row after row, elementwise (no BLAS kernel's order or fused
    multiply-adds: sequential_sum); rows with w_t = 0 add nothing and are skipped."""
    t = np.flatnonzero(w)
    return sequential_sum((J[t] * w[t, None])[:, :, None] * J[t][:, None, :])

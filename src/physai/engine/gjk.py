"""GJK and EPA, the NumPy text of MuJoCo 4's native convex collision (engine_collision_gjk.c), for one contact.

Two convex shapes A and B touch when their Minkowski difference A - B = {a - b} holds the origin, and the distance
between them is the distance from the origin to A - B. Neither set is built: a shape is known by its support function
s(d), its point farthest along a unit direction d (physai.engine.convex), and s_{A-B}(d) = s_A(d) - s_B(-d).

    gjk(status, obj1, obj2)        Gilbert-Johnson-Keerthi: simplices (1 to 4 points of A - B) that close in on the
                                   origin, to the point of A - B nearest it (the distance) or a tetrahedron around it
    polytope2/3/4(...)             EPA's starting polytope from GJK's last simplex (a segment, a triangle, a tetrahedron)
    epa(status, pt, obj1, obj2)    the Expanding Polytope Algorithm: grow the polytope at its face nearest the origin
                                   (horizon) until that face is on A - B's surface: the penetration depth and direction
    epa_witness(pt, face)          the points of A and B behind that face
    inflate(status, m1, m2)        a sphere or capsule collided as its centre point or segment: the radii added back
    ccd(obj1, obj2, tolerance, iterations)   MuJoCo's mjc_ccd: all of the above (one contact, max_contacts = 1)
    distance_lower_bound(obj1, obj2, ...)    GJK alone, for a proven lower bound on the shapes' distance

Termination: GJK stops within `iterations` steps (MuJoCo's ccd_iterations), when the gap closes below tolerance**2 / 2
(Frank-Wolfe duality gap) or the distance stops changing by 1e-15; EPA within min(iterations, 1000) steps when its
upper and lower bounds on the depth meet within tolerance, or when it runs out of faces (6 per iteration). Both always
end, on any input (a zero-size or coincident shape included).
"""

import math
from dataclasses import dataclass, field

import numpy as np

from physai.engine.primitives import cross3, mat_times_mj

MINVAL = 1e-15                     # MuJoCo's mjMINVAL
MINVAL2 = MINVAL * MINVAL
MAXVAL2 = 1e10 * 1e10              # MuJoCo's mjMAXVAL squared
MAX_LIMIT = float(np.finfo(float).max)   # MuJoCo's mjMAX_LIMIT: "no distance"
MINDIST2 = MINDIST3 = MINDIST4 = MINVAL2  # smallest squared distance of the origin to a starting polytope's face


@dataclass(eq=False)
class Vertex:
    """A point of A - B: vert = vert1 - vert2, vert1 on A and vert2 on B (each (3,) [m]); index: the ids of the box
    corners or mesh vertices they are (-1: neither); bare: (vert1, vert2) before the margins grew them (multi-contact
    clips the geoms' own faces and edges)."""

    vert: np.ndarray
    vert1: np.ndarray
    vert2: np.ndarray
    index: tuple = (-1, -1)
    bare: tuple = ()


@dataclass(eq=False)
class Status:
    """What GJK and EPA find (MuJoCo's mjCCDStatus, one witness pair): dist [m] (negative: depth), x1, x2 the witness
    points on A and B, nx how many (0 or 1), the last simplex, and the settings they ran with; bounds (lower, upper)
    on the exact signed distance that the iterations proved (GJK: <x, s> / |x| and |x|; EPA: -(its upper bound on the
    depth) and -(the nearest face's distance)); face: the 3 Vertex of the face EPA ended on ([]: none), which
    multi-contact reads (physai.engine.convex.multicontact); shallow: ended with a sphere or capsule collided as its
    centre or segment (inflate), whose last simplex a capsule's multi-contact reads instead."""

    tolerance: float
    max_iterations: int
    dist_cutoff: float = 0.0
    x1: np.ndarray = field(default_factory=lambda: np.zeros(3))
    x2: np.ndarray = field(default_factory=lambda: np.zeros(3))
    dist: float = 0.0
    nx: int = 0
    separated: bool = False
    gjk_iterations: int = 0
    epa_iterations: int = 0
    simplex: list = field(default_factory=list)
    bounds: tuple = (-MAX_LIMIT, MAX_LIMIT)
    face: list = field(default_factory=list)
    shallow: bool = False


def support(obj1, obj2, direction: np.ndarray) -> Vertex:
    """s_{A-B}(direction) = s_A(d) - s_B(-d) for a unit direction (3,), each shape grown by half its margin."""
    v1 = bare1 = obj1.support(direction)
    if obj1.margin > 0:
        v1 = bare1 + direction * (0.5 * obj1.margin)
    v2 = bare2 = obj2.support(-direction)
    if obj2.margin > 0:
        v2 = bare2 + -direction * (0.5 * obj2.margin)
    return Vertex(v1 - v2, v1, v2, (obj1.vertex, obj2.vertex), (bare1, bare2))


def gjk_support(obj1, obj2, x: np.ndarray, x_norm: float) -> Vertex:
    """The support point of A - B towards the origin from x (3,) of length x_norm."""
    return support(obj1, obj2, -(x * (1 / x_norm)))


def discrete(obj1, obj2) -> bool:
    """Both shapes polytopes (meshes or boxes without margin): GJK then ends in finitely many steps."""
    return obj1.margin == 0 and obj2.margin == 0 and obj1.polytope and obj2.polytope


def gjk(status: Status, obj1, obj2) -> None:
    """GJK from the guess x = status.x1 - status.x2 ((1, 0, 0) when they coincide): each step adds the support point
    s_k towards the origin, whose <x_k, s_k> / |x_k| bounds the distance below, keeps the simplex's vertices that span
    its point nearest the origin (subdistance) and moves x_k there (the origin's projection on their line or plane).
    Sets status.dist (|x_k|, 0 when a tetrahedron holds the origin, MAX_LIMIT when proven apart), the witness points
    and the simplex. Without a distance cutoff only contact matters: proven apart at the first positive lower bound."""
    get_dist = status.dist_cutoff > 0
    simplex, lam = [], [1.0]
    status.separated = False
    polytopes = discrete(obj1, obj2)
    epsilon = 0.0 if polytopes else 0.5 * status.tolerance ** 2
    min_norm = MINVAL if polytopes or get_dist else status.tolerance
    x = status.x1 - status.x2
    x_norm = norm3(x)
    if x_norm < MINVAL:                                                 # coincident centres: any direction
        x, x_norm = np.array([1.0, 0.0, 0.0]), 1.0
    k = 0
    while k < status.max_iterations:
        s = gjk_support(obj1, obj2, x, x_norm)
        lower = dot3(x, s.vert)                                         # |x| times a lower bound on the distance
        status.bounds = (max(status.bounds[0], lower / x_norm), status.bounds[1])
        if lower > 0:
            status.separated = True
            if not get_dist or status.dist_cutoff < MAX_LIMIT and lower >= status.dist_cutoff * x_norm:
                _apart(status, k)
                return
        if k and dot3(x, x - s.vert) < epsilon:                         # duality gap <x, x - s> closed
            break
        weights = subdistance(simplex + [s])
        simplex = [v for v, w in zip(simplex + [s], weights) if w]      # drop the points not needed
        lam = [w for w in weights if w]
        if not simplex:                                                 # should not occur
            _apart(status, k)
            return
        if len(simplex) == 4:                                           # a tetrahedron around the origin
            _finish(status, obj1, obj2, simplex, lam, x, x_norm if status.separated else 0.0, k)
            return
        x, x_norm_prev = nearest(simplex, lam), x_norm
        x_norm = norm3(x)
        if x_norm < (MINVAL if len(simplex) == 1 else min_norm):        # touching
            break
        if k and abs(x_norm - x_norm_prev) < MINVAL:                    # stalled
            break
        k += 1
    _finish(status, obj1, obj2, simplex, lam, x, x_norm, k)


def nearest(simplex: list, lam: list) -> np.ndarray:
    """The point of the simplex's affine hull nearest the origin: the origin projected on its line (2 vertices) or
    plane (3), else sum lambda_i s_i (lincomb)."""
    p = [v.vert for v in simplex]
    if len(p) == 2:
        d = p[1] - p[0]
        dd = dot3(d, d)
        if dd >= MINVAL2:
            return p[1] + d * (-dot3(p[1], d) / dd)
    if len(p) == 3:
        projected = project_origin_plane(p[0], p[1], p[2])
        if projected is not None:
            return projected
    return lincomb(lam, p)


def _finish(status: Status, obj1, obj2, simplex: list, lam: list, x: np.ndarray, dist: float, k: int) -> None:
    """GJK's result: the witness points sum lambda_i of each shape's points, a last separation check (the support
    point towards the origin beyond x), the distance `dist` and the simplex."""
    if simplex:
        status.x1 = lincomb(lam, [v.vert1 for v in simplex])
        status.x2 = lincomb(lam, [v.vert2 for v in simplex])
    x_norm = norm3(x)
    if len(simplex) <= 3 and not status.separated and x_norm >= MINVAL and \
            dot3(x, gjk_support(obj1, obj2, x, x_norm).vert) > 0:
        status.separated = True
    status.nx, status.gjk_iterations, status.simplex, status.dist = 1, k, simplex, dist
    status.bounds = (status.bounds[0], x_norm)


def _apart(status: Status, k: int) -> None:
    """status of shapes proven apart at iteration k."""
    status.separated, status.gjk_iterations, status.simplex, status.nx, status.dist = True, k, [], 0, MAX_LIMIT


# ------------------------------------------------------------------ the distance subalgorithm (Montanari et al. 2017)

def lincomb(coef, points) -> np.ndarray:
    """sum coef_i points_i (MuJoCo's lincomb, summed in order)."""
    out = coef[0] * points[0]
    for c, p in zip(coef[1:], points[1:]):
        out = out + c * p
    return out


def project_origin_plane(v1, v2, v3) -> np.ndarray | None:
    """The origin projected on the plane of v1 v2 v3 (n <n, v> / <n, n> with the first well-conditioned normal of
    three); None for a degenerate triangle."""
    d21, d31, d32 = v2 - v1, v3 - v1, v3 - v2
    for n, v in ((cross3(d32, d21), v2), (cross3(d21, d31), v1)):
        nv, nn = dot3(n, v), dot3(n, n)
        if nn == 0:
            return None
        if nv != 0 and nn > MINVAL:
            return n * (nv / nn)
    n = cross3(d31, d32)
    return n * div(dot3(n, v3), dot3(n, n))


def same_sign(a: float, b: float) -> int:
    """1 if both positive, -1 if both negative, else 0."""
    return 1 if a > 0 and b > 0 else -1 if a < 0 and b < 0 else 0


def subdistance(simplex: list) -> list:
    """Barycentric weights (one per vertex, zero: not needed) of the simplex's point nearest the origin."""
    p = [v.vert for v in simplex]
    if len(p) == 4:
        return s3d(*p)
    if len(p) == 3:
        return s2d(*p)
    if len(p) == 2:
        return s1d(*p)
    return [1.0]


def det3(a, b, c) -> float:
    """det [a b c] = a . (b x c)."""
    return dot3(a, cross3(b, c))


def _nearest_of_faces(candidates, n: int) -> list:
    """Of sub-simplex solutions (weights over the kept vertices, their indices), the weights (n,) of the one whose point
    is nearest the origin (the first of equals)."""
    best, dmin = [0.0] * n, MAX_LIMIT
    for weights, keep, points in candidates:
        x = lincomb(weights, points)
        d = dot3(x, x)
        if d < dmin:
            best, dmin = [0.0] * n, d
            for w, i in zip(weights, keep):
                best[i] = w
    return best


def s3d(s1, s2, s3, s4) -> list:
    """Weights of a tetrahedron's point nearest the origin: itself when the signed volumes (cofactors C4i) of the
    origin with each face share det M's sign, else the nearest of the faces facing the origin (s2d)."""
    C = [-det3(s2, s3, s4), det3(s1, s3, s4), -det3(s1, s2, s4), det3(s1, s2, s3)]
    m_det = C[0] + C[1] + C[2] + C[3]
    return _inside_or_faces(C, m_det, [s1, s2, s3, s4], s2d)


def _inside_or_faces(C: list, det: float, pts: list, sub) -> list:
    """The weights C / sum C of the simplex pts when every C shares det's sign (the origin's projection inside), else
    those of the nearest (_nearest_of_faces) of the faces without a vertex whose C does not (each by sub)."""
    comp = [same_sign(det, c) for c in C]
    if all(comp):
        total = C[0]
        for c in C[1:]:                                                 # summed in order (s3d: det itself)
            total += c
        return [c / total for c in C]
    faces = []
    for drop in range(len(pts)):
        if not comp[drop]:
            keep = [i for i in range(len(pts)) if i != drop]
            faces.append((sub(*[pts[i] for i in keep]), keep, [pts[i] for i in keep]))
    return _nearest_of_faces(faces, len(pts))


def _minors(s1, s2, s3) -> tuple[float, int, int]:
    """(the largest minor M_i4 of [s1 s2 s3; 1 1 1], the two axes kept by dropping its axis): the components of
    (s2 - s1) x (s3 - s1), up to sign, from the edges (MuJoCo 4's, stable for a thin triangle far from the origin)."""
    d21, d31 = s2 - s1, s3 - s1
    m14 = d21[1] * d31[2] - d21[2] * d31[1]
    m24 = d21[0] * d31[2] - d21[2] * d31[0]
    m34 = d21[0] * d31[1] - d21[1] * d31[0]
    mu1, mu2, mu3 = abs(m14), abs(m24), abs(m34)
    if mu1 >= mu2 and mu1 >= mu3:
        return m14, 1, 2
    if mu2 >= mu3:
        return m24, 0, 2
    return m34, 0, 1


def _areas(p, s1, s2, s3, x: int, y: int) -> list:
    """The signed areas C3i of p with each edge of the triangle, in the plane of axes x, y: 2D cross products of the
    vertices' offsets from p, u_j x u_k (MuJoCo 4's)."""
    u1, u2, u3 = ((s[x] - p[x], s[y] - p[y]) for s in (s1, s2, s3))

    def area(a, b):
        return a[0] * b[1] - b[0] * a[1]
    return [area(u2, u3), area(u3, u1), area(u1, u2)]


def s2d(s1, s2, s3) -> list:
    """Weights of a triangle's point nearest the origin: the origin's projection on its plane when inside (signed
    areas in the plane of its largest shadow, over their sum), else the nearest of its edges facing it (s1d); a degenerate triangle:
    the nearer of its edges s2 s3 and s1 s3."""
    p_o = project_origin_plane(s1, s2, s3)
    if p_o is None:                                                     # degenerate: the nearer of two edges
        return _nearest_of_faces([(s1d(s2, s3), [1, 2], [s2, s3]), (s1d(s1, s3), [0, 2], [s1, s3])], 3)
    m_max, x, y = _minors(s1, s2, s3)
    return _inside_or_faces(_areas(p_o, s1, s2, s3, x, y), m_max, [s1, s2, s3], s1d)


def s1d(s1, s2) -> list:
    """Weights of a segment's point nearest the origin: the origin's projection when inside (along the axis of its
    largest shadow), else the end nearer it (s2 for a segment shorter than 1e-15)."""
    diff = s2 - s1
    dd = dot3(diff, diff)
    if dd < MINVAL2:
        return [0.0, 1.0]
    p_o = s2 + diff * -(dot3(s2, diff) / dd)
    index, mu_max = 0, s1[0] - s2[0]
    for i in (1, 2):
        if abs(s1[i] - s2[i]) >= abs(mu_max):
            index, mu_max = i, s1[i] - s2[i]
    c1, c2 = p_o[index] - s2[index], s1[index] - p_o[index]
    if same_sign(mu_max, c1) and same_sign(mu_max, c2):
        return [c1 / mu_max, c2 / mu_max]
    return [1.0, 0.0] if same_sign(mu_max, c1) else [0.0, 1.0]


# ------------------------------------------------------------------ EPA


@dataclass(eq=False)
class Face:
    """A triangle of the polytope: its vertex ids, the faces across its edges (v0 v1, v1 v2, v2 v0), the origin's
    projection v on its plane (pointing out), dist2 = |v|^2, index its place in the polytope's map (-1: not in it,
    -2: deleted)."""

    verts: tuple
    adj: list
    v: np.ndarray = None
    dist2: float = 0.0
    index: int = -1


@dataclass(eq=False)
class Polytope:
    """EPA's polytope: vertices (Vertex), faces (Face), map: the ids of the faces that may be nearest the origin,
    centre: a point inside it; horizon: the (face, edge) pairs that bound the faces a new vertex sees."""

    max_faces: int
    verts: list = field(default_factory=list)
    faces: list = field(default_factory=list)
    map: list = field(default_factory=list)
    center: np.ndarray = None
    horizon: list = field(default_factory=list)


def epa_support(pt: Polytope, obj1, obj2, d: np.ndarray, dnorm: float) -> int:
    """The support point of A - B along d (3,) of length dnorm ((1, 0, 0) for a zero d) added to the polytope; its id."""
    direction = d / dnorm if dnorm > MINVAL else np.array([1.0, 0.0, 0.0])
    pt.verts.append(support(obj1, obj2, direction))
    return len(pt.verts) - 1


def attach_face(pt: Polytope, v1: int, v2: int, v3: int, adj1: int, adj2: int, adj3: int) -> float:
    """A face v1 v2 v3 (neighbours adj1..3) added to the polytope; its squared distance to the origin (0: degenerate)."""
    face = Face((v1, v2, v3), [adj1, adj2, adj3])
    pt.faces.append(face)
    v = project_origin_plane(pt.verts[v3].vert, pt.verts[v2].vert, pt.verts[v1].vert)
    if v is None:
        return 0.0
    if dot3(v, pt.verts[v1].vert - pt.center) < 0:                      # point it out of the polytope
        v = -v
    face.v, face.dist2 = v, dot3(v, v)
    return face.dist2


def _map_all(pt: Polytope) -> int:
    """Every face of the starting polytope in the map; 0 (success)."""
    pt.map = list(range(len(pt.faces)))
    for i, face in enumerate(pt.faces):
        face.index = i
    return 0


def _restart3(pt: Polytope, status: Status, ids: tuple, obj1, obj2) -> int:
    """polytope3 from the triangle ids of the polytope's vertices (the origin lies on it), the polytope emptied."""
    status.simplex = [pt.verts[i] for i in ids]
    pt.verts, pt.faces, pt.map = [], [], []
    return polytope3(pt, status, obj1, obj2)


def rotation_120(axis: np.ndarray) -> np.ndarray:
    """(3, 3) the rotation by 120 degrees about axis (Rodrigues' formula)."""
    u = axis * div(1.0, norm3(axis))
    sin, cos = 0.86602540378, -0.5
    return np.array([
        [cos + u[0] * u[0] * (1 - cos), u[0] * u[1] * (1 - cos) - u[2] * sin, u[0] * u[2] * (1 - cos) + u[1] * sin],
        [u[1] * u[0] * (1 - cos) + u[2] * sin, cos + u[1] * u[1] * (1 - cos), u[1] * u[2] * (1 - cos) - u[0] * sin],
        [u[0] * u[2] * (1 - cos) - u[1] * sin, u[1] * u[2] * (1 - cos) + u[0] * sin, cos + u[2] * u[2] * (1 - cos)]])


def ray_triangle(v1, v2, v3, v4, v5) -> int:
    """Nonzero when the ray v1 -> v2 passes through the triangle v3 v4 v5 (the signed volumes agree)."""
    d12, d13, d14, d15 = v2 - v1, v3 - v1, v4 - v1, v5 - v1
    vol = [det3(d13, d14, d12), det3(d14, d15, d12), det3(d15, d13, d12)]
    if all(x >= 0 for x in vol):
        return 1
    return -1 if all(x <= 0 for x in vol) else 0


HEXAHEDRON = ((0, 2, 3, 1, 3, 2), (0, 4, 2, 2, 4, 0), (0, 3, 4, 0, 5, 1), (1, 3, 2, 5, 0, 4), (1, 2, 4, 3, 1, 5),
              (1, 4, 3, 4, 2, 3))          # polytope2's faces: vertex slots (of v1, v2, v3, v4, v5) and neighbours


def polytope2(pt: Polytope, status: Status, obj1, obj2) -> int:
    """EPA's start from a segment v1 v2 through the origin: three support points around it, 120 degrees apart, make a
    hexahedron (two fans of three faces; centre: the five points' mean); when the segment's line misses their triangle
    (_convex_ring), one of them is replaced by the support point across the edge it misses, as MuJoCo 4.0's library
    does (measured: its polytope2's support directions read with gdb); when the origin lies on a face, that face's
    triangle (polytope3). 0: success."""
    v1, v2 = status.simplex[0].vert, status.simplex[1].vert
    diff = v2 - v1
    e = np.zeros(3)
    e[int(np.argmin(np.abs(diff)))] = 1.0                              # the axis most across the segment
    d1 = cross3(e, diff)
    R = rotation_120(diff)
    d2 = mat_times_mj(R, d1)                                           # summed in order (mju_mulMatVec3), not
    d3 = mat_times_mj(R, d2)                                           # by BLAS: its order broke EPA's ties
    ids = [len(pt.verts), len(pt.verts) + 1]
    pt.verts += [status.simplex[0], status.simplex[1]]
    ids += [epa_support(pt, obj1, obj2, d, norm3(d)) for d in (d1, d2, d3)]
    _convex_ring(pt, obj1, obj2, v1, diff, ids[2:])
    p = [pt.verts[i].vert for i in ids]
    pt.center = ((((p[0] + p[1]) + p[2]) + p[3]) + p[4]) * 0.2
    for a, b, c, n1, n2, n3 in HEXAHEDRON:
        if attach_face(pt, ids[a], ids[b], ids[c], n1, n2, n3) < MINDIST2:
            return _restart3(pt, status, (ids[a], ids[b], ids[c]), obj1, obj2)
    if not ray_triangle(v1, v2, *p[2:]):
        return 2                                                        # mjEPA_P2_NONCONVEX
    return _map_all(pt)


def _ring_volumes(v1, diff, a, b, c) -> list:
    """rayTriangle's signed volumes of the line v1 + t diff with the edges a b, b c, c a of a triangle."""
    da, db, dc = a - v1, b - v1, c - v1
    return [det3(da, db, diff), det3(db, dc, diff), det3(dc, da, diff)]


def _through(vols: list, tol: float) -> bool:
    """Whether the line passes through the triangle: its volumes all at least tol, or all at most -tol."""
    return all(x >= tol for x in vols) or all(x <= -tol for x in vols)


def _convex_ring(pt: Polytope, obj1, obj2, v1, diff, ring: list) -> None:
    """When the line v1 + t diff misses the triangle of the ring ids (its volumes within 1e-15 |diff|^3 of zero or of
    mixed sign), the support point w across the edge a b of the least volume, along (b - a) x diff tilted by
    0.001 |b - a| diff towards the end of the segment that the third vertex c is nearer, replaces a, else b, else c,
    the first that makes the line pass through the triangle (none: the ring kept)."""
    dd = dot3(diff, diff)
    tol = dd * 1e-15 * math.sqrt(dd)
    a, b, c = ring
    vols = _ring_volumes(v1, diff, *(pt.verts[i].vert for i in ring))
    if _through(vols, tol):
        return
    if vols[1] >= vols[0] and vols[2] >= vols[0]:                       # edge a b (the ring's first two)
        pass
    elif vols[1] <= vols[0] and vols[1] <= vols[2]:
        a, b, c = ring[1], ring[2], ring[0]
    else:
        a, b, c = ring[2], ring[0], ring[1]
    edge = pt.verts[b].vert - pt.verts[a].vert
    tilt = 0.001 if 0.5 * dd <= dot3(pt.verts[c].vert - v1, diff) else -0.001
    d = diff * (norm3(edge) * tilt) + cross3(edge, diff)
    w = pt.verts[epa_support(pt, obj1, obj2, d, norm3(d))]
    pt.verts.pop()
    for slot in (a, b, c):
        verts = [w.vert if i == slot else pt.verts[i].vert for i in ring]
        if _through(_ring_volumes(v1, diff, *verts), tol):
            pt.verts[slot] = w
            return


def tri_affine(v1, v2, v3, p) -> list:
    """The affine coordinates of p on the triangle v1 v2 v3 (signed areas in the plane of its largest shadow, over
    their sum)."""
    _, x, y = _minors(v1, v2, v3)
    C = _areas(p, v1, v2, v3, x, y)
    total = C[0] + C[1] + C[2]
    return [div(c, total) for c in C]


def tri_point_intersect(v1, v2, v3, p) -> bool:
    """Whether p lies on the triangle v1 v2 v3."""
    lam = tri_affine(v1, v2, v3, p)
    if lam[0] < 0 or lam[1] < 0 or lam[2] < 0:
        return False
    return norm3(v1 * lam[0] + v2 * lam[1] + v3 * lam[2] - p) < MINVAL


def same_side(p0, p1, p2, p3) -> bool:
    """Whether the origin and p3 lie strictly on the same side of the plane p0 p1 p2."""
    n = cross3(p1 - p0, p2 - p0)
    dot1, dot2 = dot3(n, p3 - p0), dot3(n, -p0)
    return (dot1 > 0 and dot2 > 0) or (dot1 < 0 and dot2 < 0)


def test_tetra(p0, p1, p2, p3) -> bool:
    """Whether the origin lies inside the tetrahedron."""
    return same_side(p0, p1, p2, p3) and same_side(p1, p2, p3, p0) and same_side(p2, p3, p0, p1) and same_side(p3, p0, p1, p2)


test_tetra.__test__ = False                # not a pytest test


GLUED = ((3, 0, 1, 1, 3, 2), (3, 2, 0, 2, 4, 0), (3, 1, 2, 0, 5, 1), (4, 1, 0, 5, 0, 4), (4, 0, 2, 3, 1, 5),
         (4, 2, 1, 4, 2, 3))      # polytope3's faces: slots (of v1, v2, v3, v4, v5) and neighbours; face j lacks v OPPOSITE[j]
OPPOSITE = (2, 1, 0, 2, 1, 0)


def polytope3(pt: Polytope, status: Status, obj1, obj2) -> int:
    """EPA's start from a triangle: the support points v4, v5 along its normal both ways make a hexahedron (two
    tetrahedra glued on the triangle). Where that is not convex (the far support point sees a face of the near
    tetrahedron: the segment v4 v5 misses the triangle, across the edge of that face), the hull of the five points is
    glued the same way on the triangle (v_k, v5, v4) of the vertex v_k opposite that edge, the edge's ends v_k+1,
    v_k-1 its apexes, as MuJoCo 4.0's library starts (measured: its polytope read from mjc_ccd's buffer; the faces'
    vertex order decides multi-contact's cylinder side line). The glued one kept where that has a degenerate face
    (cylinders' flat caps). Nonzero (failure) for a degenerate triangle, a support point on it, a hexahedron without
    the origin or the origin on a face."""
    v1, v2, v3 = (s.vert for s in status.simplex[:3])
    pt.center = (v1 + v2 + v3) * (1.0 / 3.0)
    n = cross3(v2 - v1, v3 - v1)
    n_norm = norm3(n)
    if n_norm < MINVAL:
        return 3                                                        # mjEPA_P3_BAD_NORMAL
    i1 = len(pt.verts)
    pt.verts += list(status.simplex[:3])
    i5 = epa_support(pt, obj1, obj2, -n, n_norm)
    i4 = epa_support(pt, obj1, obj2, n, n_norm)
    v4, v5 = pt.verts[i4].vert, pt.verts[i5].vert
    if tri_point_intersect(v1, v2, v3, v4):
        return 4
    if tri_point_intersect(v1, v2, v3, v5):
        return 5
    if status.dist > 10 * MINVAL and not test_tetra(v1, v2, v3, v4) and not test_tetra(v1, v2, v3, v5):
        return 6                                                        # mjEPA_P3_MISSING_ORIGIN
    ids = (i1, i1 + 1, i1 + 2)
    if not _glue(pt, (*ids, i4, i5)):
        return 7                                                        # mjEPA_P3_ORIGIN_ON_FACE
    near, far = (i4, i5) if dot3(n, v1) < 0 else (i5, i4)              # the origin on n's side: v4 nearer it
    w = pt.verts[far].vert
    seen = [j for j, f in enumerate(pt.faces) if near in f.verts and dot3(f.v, w) - f.dist2 > MINVAL]
    if seen:                                                            # not convex: the hull, glued on (v_k, v5, v4)
        k = OPPOSITE[seen[0]]
        hull = (ids[k], i5, i4, ids[(k + 1) % 3], ids[(k - 1) % 3])
        glued, center = pt.faces, pt.center
        pt.faces, pt.center = [], (pt.verts[hull[0]].vert + v5 + v4) * (1.0 / 3.0)
        if not _glue(pt, hull):
            pt.faces, pt.center = glued, center                        # a degenerate face: the glued one
    return _map_all(pt)


def _glue(pt: Polytope, ids: tuple) -> bool:
    """The hexahedron of the triangle ids[:3] and the apexes ids[3] (on its normal's side), ids[4] as the polytope's
    faces; False when the origin is within MINDIST3 of a face's plane."""
    return all(attach_face(pt, ids[a], ids[b], ids[c], n1, n2, n3) >= MINDIST3 for a, b, c, n1, n2, n3 in GLUED)


def polytope4(pt: Polytope, status: Status, obj1, obj2) -> int:
    """EPA's start from GJK's tetrahedron; the origin on a face: that face's triangle (polytope3). 0: success."""
    i1 = len(pt.verts)
    pt.verts += list(status.simplex[:4])
    v = [pt.verts[i1 + j].vert for j in range(4)]
    pt.center = (((v[0] + v[1]) + v[2]) + v[3]) * 0.25
    i2, i3, i4 = i1 + 1, i1 + 2, i1 + 3
    for a, b, c, n1, n2, n3 in ((i1, i2, i3, 1, 3, 2), (i1, i4, i2, 2, 3, 0), (i1, i3, i4, 0, 3, 1), (i4, i3, i2, 2, 0, 1)):
        if attach_face(pt, a, b, c, n1, n2, n3) < MINDIST4:
            return _restart3(pt, status, (a, b, c), obj1, obj2)
    if not test_tetra(*v):
        return 8                                                        # mjEPA_P4_MISSING_ORIGIN
    return _map_all(pt)


def delete_face(pt: Polytope, f: int) -> None:
    """Face f out of the map (the map's last face takes its place) and marked deleted."""
    face = pt.faces[f]
    if face.index >= 0:
        last = pt.map.pop()
        if last != f:
            pt.map[face.index] = last
            pt.faces[last].index = face.index
    face.index = -2


def edge_of(face: Face, vertex: int) -> int:
    """The edge of face that starts at vertex."""
    return 0 if face.verts[0] == vertex else 1 if face.verts[1] == vertex else 2


def _horizon_from(pt: Polytope, f: int, e: int, w: np.ndarray) -> bool:
    """Whether w sees face f (entered across its edge e): then f is deleted and its other two edges searched, the
    edges to faces w does not see added to the horizon."""
    face = pt.faces[f]
    if dot3(face.v, w) - face.dist2 <= MINVAL:
        return False
    delete_face(pt, f)
    for k in (1, 2):
        i = (e + k) % 3
        adj = face.adj[i]
        if pt.faces[adj].index > -2:
            adj_edge = edge_of(pt.faces[adj], face.verts[(i + 1) % 3])
            if not _horizon_from(pt, adj, adj_edge, w):
                pt.horizon.append((adj, adj_edge))
    return True


def horizon(pt: Polytope, f: int, w: np.ndarray) -> None:
    """The horizon of the new point w seen from face f: f and every face w sees deleted, the loop of edges around them
    in pt.horizon (face, edge) in order."""
    delete_face(pt, f)
    face = pt.faces[f]
    for i in range(3):
        adj = face.adj[i]
        adj_edge = edge_of(pt.faces[adj], face.verts[(i + 1) % 3])
        if (i == 0 or pt.faces[adj].index > -2) and not _horizon_from(pt, adj, adj_edge, w):
            pt.horizon.append((adj, adj_edge))


def epa_witness(pt: Polytope, face: Face, status: Status) -> float:
    """The witness points of face (its v's affine coordinates applied to A's and B's points) in status; -|v|."""
    a, b, c = (pt.verts[i] for i in face.verts)
    lam = tri_affine(a.vert, b.vert, c.vert, face.v)
    status.x1 = lincomb(lam, [a.vert1, b.vert1, c.vert1])
    status.x2 = lincomb(lam, [a.vert2, b.vert2, c.vert2])
    return -math.sqrt(face.dist2)


def epa(status: Status, pt: Polytope, obj1, obj2) -> Face | None:
    """EPA: the face nearest the origin bounds the depth below (|v|); the support point w along it bounds it above
    (<v, w> / |v|). Until w's bound meets the lower one within tolerance, w is joined to the polytope across its
    horizon; a new face that is degenerate ends it on the nearest face found (as MuJoCo 4.0 does: with ccd_tolerance
    0, 25 of 1,400 random convex states lost their contact before, none after). The depth and the witness points go
    into status (nx = 0 when no face is found)."""
    upper = upper2 = MAX_LIMIT
    f = -1                                                              # the nearest face's id (-1: none)
    polytopes = discrete(obj1, obj2)
    tolerance = MINVAL if polytopes else status.tolerance
    kmax = min(status.max_iterations, 1000)
    k = 0
    while k < kmax:
        previous, lower2, f = f, MAX_LIMIT, -1
        for i in pt.map:                                                # the face nearest the origin
            if pt.faces[i].dist2 < lower2:
                f, lower2 = i, pt.faces[i].dist2
        if f < 0 or lower2 > upper2:                                    # none valid: the previous one
            f = previous
            break
        if lower2 <= 0:                                                 # the origin on a face's plane
            break
        face, lower = pt.faces[f], math.sqrt(lower2)
        wi = epa_support(pt, obj1, obj2, face.v, lower)
        w = pt.verts[wi]
        upper_k = dot3(face.v, w.vert) / lower
        if upper_k < upper:
            upper, upper2 = upper_k, upper_k * upper_k
        if upper_k - lower < tolerance:                                 # this support point closes the gap
            if k == 0 and lower - tolerance > upper:                    # no depth after all
                f = -1
            break
        if polytopes and any(w.index == v.index for v in pt.verts[:-1]):     # a vertex seen before
            break
        horizon(pt, f, w.vert)
        if len(pt.horizon) < 3:                                         # unrecoverable
            f = -1
            break
        if len(pt.horizon) > pt.max_faces - len(pt.faces):              # out of room
            break
        if not _join(pt, wi, lower2, upper2):                          # a degenerate new face: keep the nearest
            pt.horizon = []
            break
        pt.horizon = []
        if not pt.map or f < 0:
            break
        k += 1
    status.epa_iterations = k
    if f >= 0:
        status.dist, status.nx = epa_witness(pt, pt.faces[f], status), 1
        status.bounds = (-upper, status.dist)
        return pt.faces[f]
    status.dist, status.nx = 0.0, 0
    return None


def _join(pt: Polytope, wi: int, lower2: float, upper2: float) -> bool:
    """The new vertex wi joined to each horizon edge by a face (kept in the map when its distance lies between the
    bounds); False on a degenerate new face (epa then keeps its nearest face)."""
    nfaces, nedges = len(pt.faces), len(pt.horizon)
    for i, (h, e) in enumerate(pt.horizon):
        hface = pt.faces[h]
        v1, v2 = hface.verts[e], hface.verts[(e + 1) % 3]
        cur = nfaces + i
        hface.adj[e] = cur
        previous = nfaces + nedges - 1 if i == 0 else cur - 1
        dist2 = attach_face(pt, wi, v2, v1, previous, h, nfaces + (i + 1) % nedges)
        if dist2 == 0:
            return False
        if lower2 <= dist2 <= upper2:
            pt.faces[-1].index = len(pt.map)
            pt.map.append(len(pt.faces) - 1)
    return True


def inflate_along(x1: np.ndarray, x2: np.ndarray, n: np.ndarray, margin1: float, margin2: float) -> tuple:
    """Witness points x1, x2 (3,) moved out by margin1, margin2 [m] along the unit direction n (3,) from geom 1 into
    geom 2: (x1 + margin1 n, x2 - margin2 n)."""
    return (x1 + margin1 * n if margin1 else x1), (x2 - margin2 * n if margin2 else x2)


def inflate(status: Status, margin1: float, margin2: float) -> None:
    """The witness points of a point or segment moved out by the radii margin1, margin2 along x2 - x1, and the
    distance shortened by their sum."""
    n = status.x2 - status.x1
    length = norm3(n)
    n = n * (1 / length) if length >= MINVAL else np.array([1.0, 0.0, 0.0])
    status.x1, status.x2 = inflate_along(status.x1, status.x2, n, margin1, margin2)
    status.dist -= margin1 + margin2
    status.bounds = (status.bounds[0] - (margin1 + margin2), status.bounds[1] - (margin1 + margin2))


def ccd(obj1, obj2, tolerance: float, iterations: int) -> Status:
    """MuJoCo's mjc_ccd for one contact: a sphere or a capsule first as its centre point or segment, and a geom with a
    margin without it (GJK's distance, the radius and half the margin added back: inflate), while they are apart by
    more than tolerance; else GJK on the grown shapes themselves and, in contact, EPA from its simplex. status.dist < 0:
    in contact, depth -dist."""
    status = Status(tolerance, iterations)
    status.x1, status.x2 = obj1.pos.copy(), obj2.pos.copy()
    if obj1.rounded or obj2.rounded or obj1.margin > 0 or obj2.margin > 0:
        full1, full2 = obj1.shrink(), obj2.shrink()
        status.dist_cutoff = full1 + full2
        gjk(status, obj1, obj2)
        status.dist_cutoff = 0.0
        obj1.restore(), obj2.restore()
        if status.dist > tolerance:                                     # shallow: the radii added back
            inflate(status, full1, full2)
            status.shallow = True
            if status.dist > 0:
                status.dist = MAX_LIMIT
            return status
        status.gjk_iterations, status.bounds = 0, (-MAX_LIMIT, MAX_LIMIT)   # deep: the shapes themselves
        status.x1, status.x2 = obj1.pos.copy(), obj2.pos.copy()
    gjk(status, obj1, obj2)
    if status.dist <= tolerance and len(status.simplex) > 1 and not status.separated:
        status.dist = 0.0                                               # touching at least
        pt = Polytope(max_faces=6 * iterations)
        start = {2: polytope2, 3: polytope3}.get(len(status.simplex), polytope4)
        if start(pt, status, obj1, obj2) == 0:
            face = epa(status, pt, obj1, obj2)
            status.face = [pt.verts[i] for i in face.verts] if face is not None else []
    return status


def distance_lower_bound(obj1, obj2, cutoff: float, tolerance: float, iterations: int) -> float:
    """A lower bound [m] on the distance between two shapes as they are (no margin, a sphere or capsule whole): GJK's
    best <x, s> / |x| (status.bounds[0]), ended once it passes cutoff > 0 [m], at its duality gap or after iterations
    steps; -MAX_LIMIT or below 0 where it proves none (the shapes may touch). Exact as the support functions are: every
    point p of A - B has <x, p> >= <x, s> (derivatives._Constraints._separation's bound for convex pairs)."""
    status = Status(tolerance, iterations, dist_cutoff=cutoff)
    status.x1, status.x2 = obj1.pos.copy(), obj2.pos.copy()
    gjk(status, obj1, obj2)
    return status.bounds[0]


def div(a: float, b: float) -> float:
    """a / b with IEEE 754's answers for b = 0 (inf, or nan for 0 / 0), as C divides: degenerate input then takes
    the branches MuJoCo's does."""
    if b:
        return a / b
    if a == 0 or math.isnan(a):
        return math.nan
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


def dot3(a, b) -> float:
    """a . b summed in order."""
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def norm3(a) -> float:
    """|a|."""
    return math.sqrt(dot3(a, a))

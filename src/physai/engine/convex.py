"""Convex pairs by GJK and EPA, the NumPy text of MuJoCo 4's engine_collision_convex.c (native CCD, one contact).

    Shape(kind, pos, mat, shape, margin)    a geom as GJK sees it (MuJoCo's mjCCDObj): its support function
    sphere_support ... mesh_support_point   the support functions: the geom's point farthest along a unit direction
    convex(kind1, kind2, pos1, mat1, shape1, pos2, mat2, shape2, margin, tolerance, iterations)
                                            MuJoCo's mjc_Convex: the pair's contact (physai.engine.gjk's ccd)
    hfield_convex(kind2, tolerance, iterations, pos1, mat1, hfield, pos2, mat2, shape2, margin)
                                            MuJoCo's mjc_ConvexHField: a heightfield's prisms (Prism) against a convex
                                            geom, one contact a prism (HFIELD_PAIRS)
    functions(tolerance, iterations)        the narrow phase of each pair CONVEX_PAIRS, MULTI_PAIRS and HFIELD_PAIRS list
    collided(kinds, multiccd)               whether physai collides that pair as MuJoCo 4 does

The pairs here are those of MuJoCo 4's collision table (mjCOLLISIONFUNC) collided by mjc_Convex whose result is one
contact: a sphere or an ellipsoid with a convex geom (a sphere or an ellipsoid has no face or edge for MuJoCo's
multi-contact; measured with MuJoCo 4.0: at most one contact for these pairs). Each geom is grown by half the pair's
margin (support points moved out along the direction) so that contacts within the margin are found; a contact's
distance is the margin plus GJK/EPA's signed distance.

MULTI_PAIRS (a capsule, cylinder, box or mesh with a cylinder, box or mesh) are the pairs MuJoCo 4 may give several
contacts (multiccd, on by default): with mjDSBL_MULTICCD set they are one contact each, as above, and collided here.
With multiccd on, MuJoCo 4's single-shot multi-contact (polygon clipping of the touching faces; its capsule, cylinder
and margin variants came in 3.14 to 3.17 and its clipping changed in 4.0, none of it in the published source) is not
reproduced: those candidates are refused by name (collision.check_supported), or left out with
physai.collision.ignoring_unsupported. MuJoCo's mjc_fixNormal belongs to
its older libccd path (mjDSBL_NATIVECCD), which physai refuses, and is not here.
"""

import functools
import math

import numpy as np

from physai.engine import gjk
from physai.engine.geoms import BOX, CAPSULE, CYLINDER, ELLIPSOID, HFIELD, MESH, SPHERE
from physai.engine.primitives import MINVAL, mat_t_times_mj, mat_times_mj, mesh_support

MINVAL2 = MINVAL * MINVAL


def sphere_support(obj, d: np.ndarray) -> np.ndarray:
    """A sphere's point farthest along d: p + r d."""
    return obj.size[0] * d + obj.pos


def point_support(obj, d: np.ndarray) -> np.ndarray:
    """A sphere collided as its centre: p."""
    return obj.pos.copy()


def line_support(obj, d: np.ndarray) -> np.ndarray:
    """A capsule collided as its segment: the end p +- h z along d."""
    z = obj.mat[:, 2]
    along = z[0] * d[0] + z[1] * d[1] + z[2] * d[2]
    return z * (obj.size[1] if along >= 0 else -obj.size[1]) + obj.pos


def _to_world(obj, local: np.ndarray) -> np.ndarray:
    """R local + p."""
    return mat_times_mj(obj.mat, local) + obj.pos


def capsule_support(obj, d: np.ndarray) -> np.ndarray:
    """A capsule's: r d_local + (0, 0, +-h), in the world."""
    local = mat_t_times_mj(obj.mat, d)
    out = local * obj.size[0]
    out[2] += obj.size[1] if local[2] >= 0 else -obj.size[1]
    return _to_world(obj, out)


def ellipsoid_support(obj, d: np.ndarray) -> np.ndarray:
    """An ellipsoid's (semi-axes a): a * u / |u| with u = a * d_local (the x axis's end when u is below 1e-15)."""
    local = mat_t_times_mj(obj.mat, d)
    a = obj.size
    u = local * a
    norm2 = u[0] * u[0] + u[1] * u[1] + u[2] * u[2]
    if norm2 < MINVAL2:
        return obj.mat[:, 0] * a[0] + obj.pos
    return _to_world(obj, u * ((1 / math.sqrt(norm2)) * a))


def cylinder_support(obj, d: np.ndarray) -> np.ndarray:
    """A cylinder's: the rim point r d_xy / |d_xy| (the axis when d_xy is below 1e-15) at the cap z = +-h along d."""
    local = mat_t_times_mj(obj.mat, d)
    n2 = local[0] * local[0] + local[1] * local[1]
    scale = obj.size[0] / math.sqrt(n2) if n2 >= MINVAL2 else 0.0
    return _to_world(obj, np.array([scale * local[0], scale * local[1], obj.size[1] if local[2] >= 0 else -obj.size[1]]))


def box_support(obj, d: np.ndarray) -> np.ndarray:
    """A box's corner along d; obj.vertex its id (bit k: the + side of axis k)."""
    local = mat_t_times_mj(obj.mat, d)
    corner = np.where(local >= 0, obj.size, -obj.size)
    obj.vertex = int(corner[0] > 0) | int(corner[1] > 0) << 1 | int(corner[2] > 0) << 2
    return _to_world(obj, corner)


def mesh_support_point(obj, d: np.ndarray) -> np.ndarray:
    """A convex mesh's vertex along d (primitives.mesh_support: the hull graph's climb); obj.vertex its id."""
    obj.vertex = mesh_support(obj.mesh, mat_t_times_mj(obj.mat, d))
    return _to_world(obj, obj.mesh.vert[obj.vertex])


SUPPORTS = {SPHERE: sphere_support, CAPSULE: capsule_support, ELLIPSOID: ellipsoid_support, CYLINDER: cylinder_support,
            BOX: box_support, MESH: mesh_support_point}


class Shape:
    """A geom for GJK (MuJoCo's mjCCDObj): kind, pos (3,) [m], mat (3, 3), size (3,) (a mesh: its ConvexMesh in mesh),
    margin [m] (the geom grown by half of it), support(d) its support function, vertex the id of the last support
    point's corner or vertex (a box or a mesh; else -1). polytope: a box or a mesh; rounded: a sphere or a capsule,
    which ccd first collides as its centre point or segment (shrink, restore), as it does a geom with a margin
    without it."""

    def __init__(self, kind: int, pos: np.ndarray, mat: np.ndarray, shape, margin: float):
        self.kind, self.pos, self.mat, self.margin, self.vertex = kind, pos, mat, margin, -1
        self.mesh = shape if kind == MESH else None
        self.size = None if kind == MESH else shape
        self.polytope, self.rounded = kind in (BOX, MESH), kind in (SPHERE, CAPSULE)
        self._support = SUPPORTS[kind]
        self._saved = None

    def support(self, d: np.ndarray) -> np.ndarray:
        """The geom's point farthest along the unit direction d (3,) [m], world frame."""
        return self._support(self, d)

    def shrink(self) -> float:
        """The geom without its margin, a sphere as its centre and a capsule as its segment; what was taken off its
        surface: half the margin, plus the radius of a sphere or capsule."""
        self._saved = (self._support, self.margin)
        full = 0.5 * self.margin
        if self.rounded:
            full += self.size[0]
            self._support = point_support if self.kind == SPHERE else line_support
        self.margin = 0.0
        return full

    def restore(self) -> None:
        """The support function and margin shrink took."""
        if self._saved is not None:
            self._support, self.margin = self._saved
            self._saved = None


def convex(kind1: int, kind2: int, pos1, mat1, shape1, pos2, mat2, shape2, margin: float, tolerance: float,
           iterations: int) -> list:
    """MuJoCo's mjc_Convex with native CCD, one contact: [(dist [m], pos (3,), normal (3,), tangent (3,))] when the two
    geoms, each grown by margin / 2, overlap (gjk.ccd's distance below 0), else []. dist = margin + ccd's distance, pos
    halfway between the witness points, normal along x1 - x2 (from geom 1 into geom 2)."""
    obj1, obj2 = Shape(kind1, pos1, mat1, shape1, margin), Shape(kind2, pos2, mat2, shape2, margin)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):   # degenerate input: C's IEEE answers
        status = gjk.ccd(obj1, obj2, tolerance, iterations)
    return _contact(status, margin)


def _contact(status, margin: float) -> list:
    """[(margin + dist, pos, normal, tangent)] of gjk.ccd's status when in contact (dist < 0), else []: pos halfway
    between the witness points, normal along x1 - x2 ((1, 0, 0) when they coincide), tangent 0."""
    if not status.dist < 0 or not status.nx:
        return []
    normal = status.x1 - status.x2
    length = gjk.norm3(normal)
    normal = normal * (1 / length) if length >= MINVAL else np.array([1.0, 0.0, 0.0])
    return [(margin + status.dist, (status.x1 + status.x2) * 0.5, normal, np.zeros(3))]


CONVEX_PAIRS = ((SPHERE, ELLIPSOID), (SPHERE, MESH), (CAPSULE, ELLIPSOID), (ELLIPSOID, ELLIPSOID),
                (ELLIPSOID, CYLINDER), (ELLIPSOID, BOX), (ELLIPSOID, MESH))
MULTI_PAIRS = ((CAPSULE, CYLINDER), (CYLINDER, CYLINDER), (CYLINDER, BOX), (CAPSULE, MESH), (CYLINDER, MESH),
               (BOX, MESH), (MESH, MESH))            # the pairs MuJoCo 4's multi-contact may give several contacts


def collided(kinds: tuple, multiccd: bool) -> bool:
    """Whether physai collides a pair of geom kinds (type1, type2) as MuJoCo 4 does: CONVEX_PAIRS always (one contact);
    MULTI_PAIRS with multiccd off (one contact). MuJoCo 4's multi-contact (multiccd on) is not here."""
    return kinds in CONVEX_PAIRS or kinds in MULTI_PAIRS and not multiccd


HFIELD_PAIRS = tuple((HFIELD, kind) for kind in (SPHERE, CAPSULE, ELLIPSOID, CYLINDER, BOX, MESH))


def functions(tolerance: float, iterations: int) -> dict:
    """{(type1, type2): the narrow phase of that pair (primitives' signature)} for CONVEX_PAIRS, MULTI_PAIRS and
    HFIELD_PAIRS, with ccd_tolerance and ccd_iterations (collided says which candidates they take)."""
    return {**{pair: functools.partial(_pair, pair, tolerance, iterations) for pair in CONVEX_PAIRS + MULTI_PAIRS},
            **{pair: functools.partial(hfield_convex, pair[1], tolerance, iterations) for pair in HFIELD_PAIRS}}


def _pair(kinds: tuple, tolerance: float, iterations: int, pos1, mat1, shape1, pos2, mat2, shape2, margin) -> list:
    """convex() in the narrow phase's signature."""
    return convex(kinds[0], kinds[1], pos1, mat1, shape1, pos2, mat2, shape2, margin, tolerance, iterations)


# ------------------------------------------------------------------ heightfields (MuJoCo's mjc_ConvexHField)

MAXCONPAIR = 50                                  # MuJoCo's mjMAXCONPAIR: the most contacts of one geom pair


class Prism:
    """One triangular prism of a heightfield for GJK (MuJoCo's hfield mjCCDObj), in the heightfield's frame: vert (6, 3)
    [m], 0-2 the bottom triangle at the base's depth, 3-5 the top one on the surface, the newest corner last (add); pos
    its centre (GJK's first guess); margin [m] (grown by half of it, as a geom). A polytope whose corners have no ids."""

    kind, vertex, polytope, rounded = HFIELD, -1, True, False

    def __init__(self, depth: float, margin: float):
        self.vert = np.zeros((6, 3))
        self.vert[:3, 2] = -depth
        self.pos, self.margin, self._saved = np.zeros(3), margin, margin

    def add(self, x: float, y: float, z: float) -> None:
        """A new corner (x, y) at height z on top: the oldest of the three dropped."""
        self.vert[[0, 1, 3, 4]] = self.vert[[1, 2, 4, 5]]
        self.vert[2, :2] = self.vert[5, :2] = x, y
        self.vert[5, 2] = z

    def center(self) -> None:
        """pos = the mean of the six corners (MuJoCo's mjc_center: summed in order, times 1/6)."""
        total = np.zeros(3)
        for v in self.vert:
            total = total + v
        self.pos = total * (1.0 / 6.0)

    def support(self, d: np.ndarray) -> np.ndarray:
        """The corner farthest along d: of the top triangle when d_z >= 0, else of the bottom one (the first of equals)."""
        start = 0 if d[2] < 0 else 3
        best, out = gjk.dot3(self.vert[start], d), start
        for i in (start + 1, start + 2):
            value = gjk.dot3(self.vert[i], d)
            if value > best:
                best, out = value, i
        return self.vert[out].copy()

    def shrink(self) -> float:
        """The prism without its margin; half the margin (what was taken off)."""
        self._saved, self.margin = self.margin, 0.0
        return 0.5 * self._saved

    def restore(self) -> None:
        """The margin shrink took."""
        self.margin = self._saved


def local_extent(obj) -> tuple[np.ndarray, np.ndarray]:
    """(lo (3,), hi (3,)): the geom's axis-aligned box in its frame's axes, by its support points along -+x, y, z."""
    lo, hi = np.zeros(3), np.zeros(3)
    for axis in range(3):
        d = np.zeros(3)
        d[axis] = 1.0
        hi[axis] = obj.support(d)[axis]
        d[axis] = -1.0
        lo[axis] = obj.support(d)[axis]
    return lo, hi


def hfield_convex(kind2: int, tolerance: float, iterations: int, pos1, mat1, hfield, pos2, mat2, shape2,
                  margin: float) -> list:
    """MuJoCo's mjc_ConvexHField: the contacts (dist, pos, normal, tangent; world frame) of the heightfield geom 1
    (HField) with the convex geom 2 of type kind2, at most MAXCONPAIR. In the heightfield's frame, the cells under
    geom 2's box (local_extent) grown by the margin are cut into two triangular prisms each (Prism, from the base to
    the surface); a prism whose top lies wholly below the geom's box and margin is skipped, the others collided with
    geom 2 by GJK/EPA, both grown by margin / 2 as in mjc_Convex, one contact each (convex's: dist = margin + ccd's
    distance, pos halfway between the witness points, normal from geom 2 to the prism). MuJoCo 4.0 differs here from
    its 3.x source (measured: the same contacts as mj_collision): there the prism's top was raised by the margin, the
    geom alone grown, the grid taken under the box without the margin and the distance not offset by it."""
    size, elevation = hfield.size, hfield.elevation
    nrow, ncol = elevation.shape
    local_mat = mat1[0][:, None] * mat2[0] + mat1[1][:, None] * mat2[1] + mat1[2][:, None] * mat2[2]   # mat1^T mat2
    obj2 = Shape(kind2, mat_t_times_mj(mat1, pos2 - pos1), local_mat, shape2, 0.0)
    lo, hi = local_extent(obj2)
    if not (np.isfinite(lo).all() and np.isfinite(hi).all()):          # a pose or size not finite: no cell under it
        return []
    if lo[0] - margin > size[0] or hi[0] + margin < -size[0] or lo[1] - margin > size[1] or \
            hi[1] + margin < -size[1] or lo[2] - margin > size[2] or hi[2] + margin < -size[3]:
        return []                                                       # boxes apart
    # the grid's columns and rows under the box grown by margin: c = (x + size_x) / (2 size_x) (ncol - 1), r along y
    cmin = max(0, math.floor((lo[0] - margin + size[0]) / (2.0 * size[0]) * (ncol - 1)))
    cmax = min(ncol - 1, math.ceil((hi[0] + margin + size[0]) / (2.0 * size[0]) * (ncol - 1)))
    rmin = max(0, math.floor((lo[1] - margin + size[1]) / (2.0 * size[1]) * (nrow - 1)))
    rmax = min(nrow - 1, math.ceil((hi[1] + margin + size[1]) / (2.0 * size[1]) * (nrow - 1)))
    obj2.margin = margin
    dx, dy = 2.0 * size[0] / (ncol - 1), 2.0 * size[1] / (nrow - 1)
    prism, out = Prism(size[3], margin), []

    def corner(r: int, c: int) -> None:                                # grid point (r, c) on top
        prism.add(dx * c - size[0], dy * r - size[1], elevation[r, c] * size[2])

    for r in range(rmin, rmax):
        corner(r + 1, cmin), corner(r, cmin)
        for c in range(cmin + 1, cmax + 1):
            for row in (r + 1, r):                                      # two prisms per cell
                corner(row, c)
                if (prism.vert[3:, 2] < lo[2] - margin).all():          # wholly below the geom and its margin
                    continue
                prism.center()
                for dist, pos, normal, tangent in _prism_contact(prism, obj2, tolerance, iterations):
                    out.append((dist, mat_times_mj(mat1, pos) + pos1, mat_times_mj(mat1, normal), tangent))
                if len(out) >= MAXCONPAIR:
                    return out
    return out


def _prism_contact(prism: Prism, obj2: Shape, tolerance: float, iterations: int) -> list:
    """[(dist, pos, normal, tangent)] of a prism and geom 2 in the heightfield's frame (gjk.ccd; [] when apart)."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        status = gjk.ccd(prism, obj2, tolerance, iterations)
    return _contact(status, prism.margin)

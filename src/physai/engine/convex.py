"""Convex pairs by GJK and EPA, the NumPy text of MuJoCo 4's engine_collision_convex.c (native CCD) and of the
multi-contact of engine_collision_gjk.c (multicontact, polygonClip, the face and edge normals of boxes, meshes and
cylinders).

    Shape(kind, pos, mat, shape, margin)    a geom as GJK sees it (MuJoCo's mjCCDObj): its support function
    sphere_support ... mesh_support_point   the support functions: the geom's point farthest along a unit direction
    convex(kind1, kind2, pos1, mat1, shape1, pos2, mat2, shape2, margin, tolerance, iterations)
                                            MuJoCo's mjc_Convex: the pair's contact (physai.engine.gjk's ccd)
    hfield_convex(kind2, tolerance, iterations, pos1, mat1, hfield, pos2, mat2, shape2, margin)
                                            MuJoCo's mjc_ConvexHField: a heightfield's prisms (Prism) against a convex
                                            geom, one contact a prism (HFIELD_PAIRS)
    functions(tolerance, iterations, multiccd)   the narrow phase of each pair CONVEX_PAIRS, MULTI_PAIRS and
                                            HFIELD_PAIRS list
    multicontact(status, obj1, obj2, margin)   MuJoCo's single-shot multi-contact of two boxes, meshes or cylinders, or
                                            a capsule with a cylinder or a mesh: up to 4 contacts from EPA's last face
                                            or GJK's last simplex (face and edge normals, polygon_clip)

The pairs here are those of MuJoCo 4's collision table (mjCOLLISIONFUNC) collided by mjc_Convex whose result is one
contact: a sphere or an ellipsoid with a convex geom (a sphere or an ellipsoid has no face or edge for MuJoCo's
multi-contact; measured with MuJoCo 4.0: at most one contact for these pairs). Each geom is grown by half the pair's
margin (support points moved out along the direction) so that contacts within the margin are found; a contact's
distance is the margin plus GJK/EPA's signed distance.

MULTI_PAIRS (a capsule, cylinder, box or mesh with a cylinder, box or mesh) are the pairs MuJoCo 4 may give several
contacts (multiccd, on by default): with mjDSBL_MULTICCD set they are one contact each, as above. With multiccd on, two
boxes, meshes or cylinders get MuJoCo's single-shot multi-contact (polygon_pair, multicontact): EPA's
last face names a vertex, edge or face of each; a face of one facing a face of the other (normals within FACE_TOL), or
an edge of one lying on a face of the other (EDGE_TOL), is clipped against it, and each clipped point is a contact. This
is the 3.x source's algorithm with the changes MuJoCo 4.0's contacts show (measured against mj_collision): the clipped
point projected onto the reference face is the witness x1, its distance measured along the other face's normal; a
crossing point interpolated by the two ends' distances to the clipping plane; the quadrilateral's area by its
diagonals; geom 1's edge tried whatever the size of geom 2's side (EPA's face, or a cylinder; from GJK's simplex
between boxes and meshes, with a margin, only where geom 1's side is no larger than geom 2's, as in the 3.x source:
2 of 6,400 random box-mesh states with margins differed before, and the cylinders' margin states need the first rule),
then geom 2's edge. A cylinder (MuJoCo 3.14's
multi-contact) names its caps by its support point's cap (vertex 0: +z, 1: -z); a cap point is a vertex whose one face
is its cap, a 16-gon of rim points (cos and sin of 2 pi k / 16 to 15 decimals, MuJoCo's table); its edge is the side
line through the point, to the other cap. A cap inside the other face clips to the whole 16-gon, whose largest
quadrilaterals tie: rounding picks one, so a state 1e-18 away may get 4 contacts turned by 22.5 degrees about the axis
(as MuJoCo's own). Two boxes, meshes or cylinders with a margin (MuJoCo 3.17's multi-contact with margins, read from
4.0's library and contacts): the geoms without their margin name the features, from GJK's last simplex while they are
apart within the margin, else from EPA's face of the grown geoms, their points the bare support points (Vertex.bare);
the bare faces are clipped, points within the margin of the reference face kept, and each witness pair is grown by half
the margin along that face's normal from geom 1 into geom 2 (inflate_witnesses: dist the bare distance). A cylinder's
edge point, with a margin, is its grown support point moved radially onto its rim (cylinder_rim, as 4.0's library
does): where a face clips a side line at one or both ends, the duplicate crossing points make the farthest pair a tie,
and those bits break it as MuJoCo's (without a margin a box's two contacts may come in MuJoCo's other order: 1 state
in 300 of the URDF arms of tests/test_collision.py). A capsule without margin (MuJoCo 3.15's multi-contact, measured against 4.0's
mj_collision) has no face: its edge is its side line through its witness point x1, parallel to its axis from the level
of one end to the other (capsule_side), clipped as a box's edge by the first face of the other geom its axis lies on
(capsule_on_face); after a shallow contact (its segment outside the other geom, the radius added back) that face is
named by GJK's last simplex too (simplex_face). Where both ends of that line are clipped, the duplicate crossing points
make the two contacts' order a tie that rounding breaks (MuJoCo's order differs in about 1 state in 20 of those with 2
contacts; the contacts are the same). A capsule with a margin (MuJoCo 4.0's library: mjc_multicontact grows a capsule
by nothing, the other geom by half the margin): the side line through the grown capsule's witness point, its ends at the
segment's levels, clipped keeping points within half the margin of the face, only the other geom's witness grown.
A negative margin (margin + gap < 0) grows nothing (MuJoCo grows a geom only by a positive margin): the bare geoms are
collided, their contacts kept where deeper than the margin. MuJoCo's mjc_fixNormal belongs to its older libccd path
(mjDSBL_NATIVECCD), which physai refuses, and is not here.
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
    obj.vertex = 0 if local[2] >= 0 else 1
    return _to_world(obj, np.array([scale * local[0], scale * local[1], obj.size[1] if local[2] >= 0 else -obj.size[1]]))


def box_support(obj, d: np.ndarray) -> np.ndarray:
    """A box's corner along d; obj.vertex its id (bit k: the + side of axis k)."""
    local = mat_t_times_mj(obj.mat, d)
    corner = np.where(local >= 0, obj.size, -obj.size)
    obj.vertex = int(corner[0] > 0) | int(corner[1] > 0) << 1 | int(corner[2] > 0) << 2
    return _to_world(obj, corner)


def mesh_support_point(obj, d: np.ndarray) -> np.ndarray:
    """A convex mesh's vertex along d (primitives.mesh_support: the hull graph's climb, from where obj's last one
    ended); obj.vertex its id."""
    obj.vertex, obj.climbed = mesh_support(obj.mesh, mat_t_times_mj(obj.mat, d), obj.climbed)
    return _to_world(obj, obj.mesh.vert[obj.vertex])


SUPPORTS = {SPHERE: sphere_support, CAPSULE: capsule_support, ELLIPSOID: ellipsoid_support, CYLINDER: cylinder_support,
            BOX: box_support, MESH: mesh_support_point}


class Shape:
    """A geom for GJK (MuJoCo's mjCCDObj): kind, pos (3,) [m], mat (3, 3), size (3,) (a mesh: its ConvexMesh in mesh),
    margin [m] (the geom grown by half of it), support(d) its support function, vertex the id of the last support
    point's corner or vertex (a box or a mesh; else -1), climbed where a mesh's last support search ended (its next
    one starts there: MuJoCo's warm start; -1: none yet). polytope: a box or a mesh; rounded: a sphere or a capsule,
    which ccd first collides as its centre point or segment (shrink, restore), as it does a geom with a margin
    without it."""

    def __init__(self, kind: int, pos: np.ndarray, mat: np.ndarray, shape, margin: float):
        self.kind, self.pos, self.mat, self.margin, self.vertex, self.climbed = kind, pos, mat, margin, -1, -1
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
           iterations: int, max_contacts: int = 1) -> list:
    """MuJoCo's mjc_Convex with native CCD: [(dist [m], pos (3,), normal (3,), tangent (3,))] when the two geoms, each
    grown by margin / 2, overlap (gjk.ccd's distance below 0), else []. dist = margin + ccd's distance, pos halfway
    between the witness points, normal along x1 - x2 (from geom 1 into geom 2). max_contacts > 1 (a polygon_pair,
    multiccd on): up to 4 contacts from EPA's face, or from GJK's last simplex with a margin while the geoms without it
    are apart or after a capsule's shallow contact (multicontact), else ccd's one."""
    obj1, obj2 = Shape(kind1, pos1, mat1, shape1, margin), Shape(kind2, pos2, mat2, shape2, margin)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):   # degenerate input: C's IEEE answers
        status = gjk.ccd(obj1, obj2, tolerance, iterations)
        shallow = status.shallow and status.dist < 0                    # a capsule touching, its segment apart
        apart = margin > 0 and status.simplex and status.dist < gjk.MAX_LIMIT   # within the margin: GJK's simplex
        touching = status.face or shallow or apart
        found = multicontact(status, obj1, obj2, margin) if max_contacts > 1 and touching else []
    return _contact(found or _witnesses(status), margin)


def inflate_witnesses(found: list, n: np.ndarray, margin: float) -> list:
    """multicontact's witness pairs [(dist, x1, x2)] (dist: the bare geoms' signed distance [m]) as ccd's: each geom
    grown by margin / 2 along the clipped face's unit normal n (3,) from geom 1 into geom 2 (gjk.inflate_along), dist
    - margin; unchanged without margin."""
    if not margin:
        return found
    half = 0.5 * margin
    return [(dist - (half + half), *gjk.inflate_along(x1, x2, n, half, half)) for dist, x1, x2 in found]


def _witnesses(status) -> list:
    """[(dist, x1, x2)]: ccd's one witness pair ([] when it found none)."""
    return [(status.dist, status.x1, status.x2)] if status.nx else []


def _contact(found: list, margin: float) -> list:
    """[(margin + dist, pos, normal, tangent)] of the witness pairs found [(dist, x1, x2)] when in contact (the least
    dist < 0), else []: pos halfway between the witness points, normal along x1 - x2 ((1, 0, 0) when they coincide),
    tangent 0."""
    if not found or not min(dist for dist, _, _ in found) < 0:
        return []
    return [(margin + dist, (x1 + x2) * 0.5, normalize(x1 - x2), np.zeros(3)) for dist, x1, x2 in found]


CONVEX_PAIRS = ((SPHERE, ELLIPSOID), (SPHERE, MESH), (CAPSULE, ELLIPSOID), (ELLIPSOID, ELLIPSOID),
                (ELLIPSOID, CYLINDER), (ELLIPSOID, BOX), (ELLIPSOID, MESH))
MULTI_PAIRS = ((CAPSULE, CYLINDER), (CYLINDER, CYLINDER), (CYLINDER, BOX), (CAPSULE, MESH), (CYLINDER, MESH),
               (BOX, MESH), (MESH, MESH))            # the pairs MuJoCo 4's multi-contact may give several contacts


def polygon_pair(kinds: tuple, multiccd: bool) -> bool:
    """Whether physai collides a pair by MuJoCo 4's multicontact, multiccd on: two boxes or meshes, a cylinder with a
    cylinder, a box or a mesh, or a capsule with a cylinder or a mesh, whatever their margin (margin + gap)."""
    polygonal = kinds[0] in (BOX, MESH, CYLINDER) and kinds[1] in (BOX, MESH) or kinds == (CYLINDER, CYLINDER)
    capsule = kinds in ((CAPSULE, CYLINDER), (CAPSULE, MESH))
    return multiccd and (polygonal or capsule)


HFIELD_PAIRS = tuple((HFIELD, kind) for kind in (SPHERE, CAPSULE, ELLIPSOID, CYLINDER, BOX, MESH))


def functions(tolerance: float, iterations: int, multiccd: bool) -> dict:
    """{(type1, type2): the narrow phase of that pair (primitives' signature)} for CONVEX_PAIRS, MULTI_PAIRS and
    HFIELD_PAIRS, with ccd_tolerance, ccd_iterations and MuJoCo's multiccd flag (MULTI_PAIRS: one contact with multiccd
    off, up to 4 by multicontact with it on, polygon_pair)."""
    return {**{pair: functools.partial(_pair, pair, tolerance, iterations, multiccd) for pair in CONVEX_PAIRS + MULTI_PAIRS},
            **{pair: functools.partial(hfield_convex, pair[1], tolerance, iterations) for pair in HFIELD_PAIRS}}


def _pair(kinds: tuple, tolerance: float, iterations: int, multiccd: bool, pos1, mat1, shape1, pos2, mat2, shape2,
          margin) -> list:
    """convex() in the narrow phase's signature, up to 4 contacts for a polygon_pair."""
    return convex(kinds[0], kinds[1], pos1, mat1, shape1, pos2, mat2, shape2, margin, tolerance, iterations,
                  MAX_POLYGON_CONTACTS if polygon_pair(kinds, multiccd) else 1)


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
    return _contact(_witnesses(status), prism.margin)


# ------------------------------------------------------------------ multi-contact (MuJoCo's multiccd, single shot)

FACE_TOL = 0.996                   # MuJoCo's mjFACE_TOL: two faces touch when their normals' cosine is below -FACE_TOL
EDGE_TOL = 0.0888                  # MuJoCo's mjEDGE_TOL: an edge lies on a face when |cos| to its normal is below it
MAX_POLYGON_CONTACTS = 4           # a box or mesh pair's contact limit (MuJoCo's maxContacts)
BOX_NORMALS = np.array([[1.0, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]])
BOX_FACES = ((7, 3, 1, 5), (2, 6, 4, 0), (2, 3, 7, 6), (4, 5, 1, 0), (6, 7, 5, 4), (3, 2, 0, 1))
# BOX_FACES[f]: the corners of face f (2 axis + (0: +, 1: -)) in MuJoCo's order; corner id bit k: the + side of axis k


def normalize(v: np.ndarray) -> np.ndarray:
    """v / |v| ((1, 0, 0) when |v| < 1e-15: mju_normalize3)."""
    n = gjk.norm3(v)
    return v * (1 / n) if n >= MINVAL else np.array([1.0, 0.0, 0.0])


def simplex_dim(ids: list, points: list) -> int:
    """How many distinct corners (1, 2, 3) one shape's side of EPA's face has; a repeated one dropped (ids and points
    (3 each) reordered so the distinct ones come first)."""
    if ids[0] == ids[1]:
        if ids[0] == ids[2]:
            return 1
        ids[1], points[1] = ids[2], points[2]
        return 2
    return 2 if ids[2] in (ids[0], ids[1]) else 3


def box_corner(obj, corner: int) -> np.ndarray:
    """A box's corner (bit k of its id: the + side of axis k) in the world."""
    return _to_world(obj, np.array([obj.size[k] if corner >> k & 1 else -obj.size[k] for k in range(3)]))


def box_normal_near(obj, n: np.ndarray) -> tuple[list, list]:
    """([the world normal], [its face id]) of the first box face within FACE_TOL of direction n, else ([], [])."""
    local = mat_t_times_mj(obj.mat, n)
    local = local * (1 / math.sqrt(gjk.dot3(local, local)))
    for i in range(6):
        if gjk.dot3(local, BOX_NORMALS[i]) > FACE_TOL:
            return [mat_times_mj(obj.mat, BOX_NORMALS[i])], [i]
    return [], []


def box_normals(obj, dim: int, ids: list, direction: np.ndarray) -> tuple[list, list]:
    """The world normals and face ids (2 axis + (0: +, 1: -)) of the box faces holding all `dim` corners ids (a vertex:
    its 3 faces); when the corners do not name them (a face of 3, an edge of 2), the face along direction."""
    if dim == 1:
        signs = [1 if ids[0] >> k & 1 else -1 for k in range(3)]
        return ([mat_times_mj(obj.mat, BOX_NORMALS[2 * k + (signs[k] < 0)]) for k in range(3)],
                [2 * k + (signs[k] < 0) for k in range(3)])
    shared = [int(all(i >> k & 1 for i in ids[:dim])) - int(not any(i >> k & 1 for i in ids[:dim])) for k in range(3)]
    faces = [2 * k + (shared[k] < 0) for k in range(3) if shared[k]]
    if len(faces) != 4 - dim:                                          # a face: 1 shared axis; an edge: 2
        return box_normal_near(obj, direction)
    return [mat_times_mj(obj.mat, BOX_NORMALS[f]) for f in faces], faces


def box_edge_normals(obj, dim: int, points: list, corner: int) -> tuple[list, list]:
    """(unit directions, far ends) of the box edges at a corner (dim 1: its 3 edges) or of the edge points[0] points[1]."""
    if dim == 2:
        return [normalize(points[1] - points[0])], [points[1]]
    ends = [box_corner(obj, corner ^ (1 << k)) for k in range(3)]
    return [normalize(e - points[0]) for e in ends], ends


def box_face(obj, f: int) -> list:
    """Box face f's 4 corners in the world, in MuJoCo's order."""
    return [box_corner(obj, c) for c in BOX_FACES[f]]


def _shared(a, b, limit: int = 2) -> list:
    """The first (up to limit) entries of a also in b, in a's order."""
    return [x for x in a if x in b][:limit]


def mesh_normals(obj, dim: int, ids: list) -> tuple[list, list]:
    """The world normals and polygon ids of the mesh polygons holding all `dim` vertices ids (a vertex: all of its
    polygons; an edge: up to 2; a face of 3: the first)."""
    mesh = obj.mesh
    if dim == 1:
        polys = list(mesh.polymap[ids[0]])
    else:
        polys = _shared(mesh.polymap[ids[0]], mesh.polymap[ids[1]])
        if dim == 3:
            polys = _shared(polys, mesh.polymap[ids[2]])[:1]
    return [mat_times_mj(obj.mat, mesh.normals[p]) for p in polys], polys


def mesh_edge_normals(obj, dim: int, points: list, vertex: int) -> tuple[list, list]:
    """(unit directions, far ends) of the mesh edges at a vertex (dim 1: one per polygon holding it, to the vertex before
    it in that polygon) or of the edge points[0] points[1]."""
    if dim == 2:
        return [normalize(points[1] - points[0])], [points[1]]
    mesh, ends = obj.mesh, []
    for p in mesh.polymap[vertex]:
        poly = list(mesh.polygons[p])
        ends.append(_to_world(obj, mesh.vert[poly[poly.index(vertex) - 1]]))
    return [normalize(e - points[0]) for e in ends], ends


def mesh_face(obj, p: int) -> list:
    """Mesh polygon p's vertices in the world, in reverse order."""
    return [_to_world(obj, obj.mesh.vert[v]) for v in obj.mesh.polygons[p][::-1]]


def cylinder_normals(obj, dim: int, ids: list) -> tuple[list, list]:
    """A cylinder's cap normal and cap id (0: +z, 1: -z) when its side of EPA's face is one cap point, else ([], [])."""
    if dim != 1:
        return [], []
    return [obj.mat[:, 2] * (-1.0 if ids[0] else 1.0)], [ids[0]]


def cylinder_edge_normals(obj, points: list, cap: int) -> tuple[list, list]:
    """(the unit direction along the side, its far end points[0] + 2 h direction) of the cylinder's side line through
    points[0] on cap (0: +z, going down; 1: -z, going up)."""
    direction = obj.mat[:, 2] * (1.0 if cap else -1.0)
    return [direction], [points[0] + direction * (2 * obj.size[1])]


COS16 = (1.0, 0.923879532511287, 0.707106781186548, 0.382683432365090, 0.0, -0.382683432365090, -0.707106781186547,
         -0.923879532511287, -1.0, -0.923879532511287, -0.707106781186548, -0.382683432365090, 0.0, 0.382683432365090,
         0.707106781186547, 0.923879532511287)
SIN16 = COS16[12:] + COS16[:12]
# cos and sin of 2 pi k / 16 to 15 decimals (MuJoCo's table; its rounding breaks polygon_quad's ties on a cap)


def cylinder_face(obj, f: int) -> list:
    """Cap f (0: +z, 1: -z) as a 16-gon of rim points in the world, clockwise seen from outside."""
    sign = -1.0 if f else 1.0
    r, h = obj.size[0], obj.size[1]
    return [_to_world(obj, np.array([c * r, -s * r * sign, sign * h])) for c, s in zip(COS16, SIN16)]


def capsule_side(obj, point: np.ndarray) -> list:
    """A capsule's side line through point (3,) [m] (its witness point), from the -z end's level to the +z end's:
    point + (-s -+ h) z with s = <point - p, z>, the axial coordinate of point."""
    z = obj.mat[:, 2]
    s = gjk.dot3(point - obj.pos, z)
    return [z * (-s - obj.size[1]) + point, z * (obj.size[1] - s) + point]


def feature_normals(obj, dim: int, ids: list, direction: np.ndarray) -> tuple[list, list]:
    """The face normals and face ids of a box, mesh or cylinder at its side of EPA's face."""
    if obj.kind == CYLINDER:
        return cylinder_normals(obj, dim, ids)
    return box_normals(obj, dim, ids, direction) if obj.kind == BOX else mesh_normals(obj, dim, ids)


def edge_normals(obj, dim: int, points: list, vertex: int) -> tuple[list, list]:
    """The edge directions and far ends of a box, mesh or cylinder."""
    if obj.kind == CYLINDER:
        return cylinder_edge_normals(obj, points, vertex)
    return (box_edge_normals if obj.kind == BOX else mesh_edge_normals)(obj, dim, points, vertex)


def face_points(obj, f: int) -> list:
    """Face f of a box, mesh or cylinder, its points in the world."""
    return {BOX: box_face, MESH: mesh_face, CYLINDER: cylinder_face}[obj.kind](obj, f)


def aligned_faces(n1: list, n2: list) -> tuple | None:
    """The (i, j) of the normals n1[i], n2[j] facing each other most closely (least cosine, the first of equals) when
    their cosine is below -FACE_TOL, or None."""
    best, found = -FACE_TOL, None
    for i, a in enumerate(n1):
        for j, b in enumerate(n2):
            if (cos := gjk.dot3(a, b)) < best:
                best, found = cos, (i, j)
    return found


def aligned_face_edge(edges: list, normals: list, toward: np.ndarray) -> tuple | None:
    """The first (edge j, face i) (faces outer) with the edge across the face's normal within EDGE_TOL, of the faces
    whose normal points along toward (3,) (<n, toward> > 1e-15: facing the other geom), or None."""
    for i, n in enumerate(normals):
        if gjk.dot3(n, toward) <= MINVAL:                              # facing away from the other geom
            continue
        for j, e in enumerate(edges):
            if abs(gjk.dot3(e, n)) < EDGE_TOL:
                return j, i
    return None


def area4(a, b, c, d) -> float:
    """The area of the quadrilateral a b c d: |(c - a) x (d - b)| / 2 (half its diagonals' cross product)."""
    return 0.5 * gjk.norm3(gjk.cross3(c - a, d - b))


def polygon_quad(polygon: list) -> list:
    """The 4 vertices of the polygon (n > 4, convex, in order) spanning the largest quadrilateral, as MuJoCo's rotating
    search finds them: for each first corner a, move d, then c, then b forward while the area grows."""
    n = len(polygon)
    area = lambda *k: area4(*(polygon[i] for i in k))                  # noqa: E731
    step = lambda i: (i + 1) % n                                       # noqa: E731
    b, c, d = 1, 2, 3
    best, m = (0, 1, 2, 3), area(0, 1, 2, 3)
    for a in range(n):
        while (m_next := area(a, b, c, step(d))) > m:
            m, d, best = m_next, step(d), (a, b, c, step(d))
            while (m_next := area(a, b, step(c), d)) > m:
                m, c, best = m_next, step(c), (a, b, step(c), d)
            while (m_next := area(a, step(b), c, d)) > m:
                m, b, best = m_next, step(b), (a, step(b), c, d)
        if b == a:
            b = step(b)
            if c == b:
                c = step(c)
                if d == c:
                    d = step(d)
    return [polygon[i] for i in best]


def plane_normal(v1, v2, n) -> np.ndarray:
    """The unit normal of the plane through the edge v1 v2 along n: (v2 - v1) x n, normalized."""
    return normalize(gjk.cross3(v2 - v1, (v1 + n) - v1))


def witness_on_face(v, origin, n, direction) -> tuple[float, np.ndarray, np.ndarray]:
    """(dist, x1, x2) of a clipped vertex v: x1 its projection along n onto the face's plane through origin, dist
    <x1 - v, direction> (direction: the other side's face normal, or -n), x2 = x1 - direction dist."""
    w = v - n * gjk.dot3(v - origin, n)
    dist = gjk.dot3(w - v, direction)
    return dist, w, w - direction * dist


def clip(polygon: list, a, pn) -> list:
    """The polygon clipped by the half space <p - a, pn> > -1e-15 of one edge (Sutherland-Hodgman): a vertex inside
    kept, and where an edge PQ crosses the plane, P + (Q - P) d_P / (d_P - d_Q) (d: <p - a, pn>)."""
    out = []
    for i, P in enumerate(polygon):
        Q = polygon[(i + 1) % len(polygon)]
        dP, dQ = gjk.dot3(P - a, pn), gjk.dot3(Q - a, pn)
        inside1, inside2 = dP > -MINVAL, dQ > -MINVAL
        if inside1 and inside2:
            out.append(Q)
        elif inside1 or inside2:
            if dP != dQ and 0.0 <= (t := dP / (dP - dQ)) <= 1.0:        # where PQ crosses the edge's plane
                out.append(P + (Q - P) * t)
            if inside2:
                out.append(Q)
    return out


def polygon_clip(face1: list, face2: list, n: np.ndarray, direction: np.ndarray, margin: float) -> list:
    """The contacts [(dist, x1, x2)] of face2 (a polygon or an edge) on face1 (normal n): face2 clipped by the planes
    through face1's edges along n, its points within margin [m] of face1's plane kept, each a witness pair (witness_on_face);
    more than 4: the 4 of the largest quadrilateral (polygon_quad); an edge's: its two farthest points. [] when face1 has
    fewer than 3 points or nothing is left."""
    if len(face1) < 3:
        return []
    polygon = list(face2)
    for e in range(len(face1)):
        polygon = clip(polygon, face1[e], plane_normal(face1[e], face1[(e + 1) % len(face1)], n))
    polygon = [p for p in polygon if gjk.dot3(p - face1[0], n) <= margin]   # within margin of face1's plane
    if len(polygon) > MAX_POLYGON_CONTACTS:
        polygon = polygon_quad(polygon)
    elif len(face2) == 2 and len(polygon) > 2:                          # an edge: its two farthest points
        best, far = (0, 1), 0.0
        for i in range(len(polygon)):
            for j in range(i + 1, len(polygon)):
                if (d2 := gjk.dot3(polygon[j] - polygon[i], polygon[j] - polygon[i])) > far:
                    best, far = (i, j), d2
        polygon = [polygon[best[0]], polygon[best[1]]]
    return [witness_on_face(p, face1[0], n, direction) for p in polygon]


def simplex_face(status) -> list:
    """The 3 Vertex multi-contact reads: EPA's last face, else GJK's last simplex (the geoms without their margin
    apart, or a capsule's segment apart from the other geom: a shallow contact), its last vertex repeated to 3 (its
    first repeated would name the same features: simplex_dim reads the distinct ids)."""
    if status.face:
        return status.face
    return status.simplex + status.simplex[-1:] * (3 - len(status.simplex))


def cylinder_rim(obj, point: np.ndarray, cap: int) -> np.ndarray:
    """The rim point of cap (0: +z, 1: -z) radially out from point (3,) [m] (its local x, y scaled to the radius; the
    axis when they are below 1e-15), in the world."""
    local = mat_t_times_mj(obj.mat, point - obj.pos)
    n2 = local[0] * local[0] + local[1] * local[1]
    scale = obj.size[0] / math.sqrt(n2) if n2 >= MINVAL2 else 0.0
    return _to_world(obj, np.array([scale * local[0], scale * local[1], -obj.size[1] if cap else obj.size[1]]))


def edge_points(obj, face: list, side: int, margin: float) -> list:
    """The 3 points of one geom (side 0: geom 1, 1: geom 2) at EPA's face or GJK's simplex that multi-contact reads:
    the bare support points; a cylinder's, with a margin, its grown points moved radially onto its rim (cylinder_rim)."""
    if obj.kind == CYLINDER and margin > 0:
        return [cylinder_rim(obj, (v.vert1, v.vert2)[side], v.index[side]) for v in face]
    return [v.bare[side] for v in face]


def capsule_on_face(status, obj1, obj2, n2: list, faces2: list, margin: float) -> list:
    """MuJoCo 4's multi-contact of a capsule (geom 1; it has no faces): its side line through its witness point x1
    (capsule_side) clipped by the first face of geom 2 facing it that its axis lies on (aligned_face_edge), as a box's
    edge is, else []. With a margin [m] (MuJoCo 4.0's library: a capsule is not grown again), the grown capsule's line
    is clipped, its points within half the margin of the face kept, and only geom 2's witness grown by half the margin
    along the face's normal n (3,), dist - margin / 2 (the same contacts as moving the line onto the bare capsule and
    growing both back, in other rounding)."""
    if (match := aligned_face_edge([obj1.mat[:, 2]], n2, status.x2 - status.x1)) is None:
        return []
    j, half = match[1], 0.5 * margin
    found = polygon_clip(face_points(obj2, faces2[j]), capsule_side(obj1, status.x1), n2[j], -n2[j], half)
    return [(dist - half, *gjk.inflate_along(x2, x1, -n2[j], 0.0, half)) for dist, x1, x2 in found]   # faces swapped


def edge_on_face(edge_obj, dim: int, points, vertex: int, face_obj, faces, normals, toward, margin: float):
    """An edge of edge_obj (its side of dimension dim, points: edge_points', vertex: its first vertex's index) lying on
    a face of face_obj (faces, normals: feature_normals'; toward: face_obj's witness minus edge_obj's): (the edge
    clipped by that face, polygon_clip's [(dist, x on face_obj, x on edge_obj)], the face's normal), or None."""
    edges, ends = edge_normals(edge_obj, dim, points, vertex)
    if (match := aligned_face_edge(edges, normals, toward)) is None:
        return None
    i, j = match
    return polygon_clip(face_points(face_obj, faces[j]), [points[0], ends[i]], normals[j], -normals[j], margin), normals[j]


def multicontact(status, obj1, obj2, margin: float) -> list:
    """MuJoCo's multicontact: up to 4 contacts [(dist, x1, x2)] of two boxes, meshes or cylinders, or of a capsule
    (geom 1) with a cylinder or a mesh (capsule_on_face), from EPA's last face (or GJK's last simplex: simplex_face), or
    [] (keep ccd's one). Each shape's side of that face is a vertex, an edge or a face (simplex_dim) of the bare geom (no
    margin); when a face of one is aligned with a face of the other (aligned_faces) the two faces are clipped
    (polygon_clip, points within margin [m] kept), else when an edge of one lies on a face of the other
    (aligned_face_edge; geom 1's edge first, but from GJK's simplex between a box and a mesh geom 2's edge first where
    1's side is larger than 2's, as in the 3.x source, and 1's after it) the edge is clipped by the face; the witness
    pairs then grown by the margin (inflate_witnesses)."""
    if any(o.kind == MESH and not o.mesh.polygons for o in (obj1, obj2)):
        return []
    face = simplex_face(status)
    ids1, ids2 = [v.index[0] for v in face], [v.index[1] for v in face]
    p1, p2 = edge_points(obj1, face, 0, margin), edge_points(obj2, face, 1, margin)
    dim1, dim2 = simplex_dim(ids1, p1), simplex_dim(ids2, p2)
    n2, faces2 = feature_normals(obj2, dim2, ids2, status.x2 - status.x1)
    if obj1.kind == CAPSULE:                                           # a capsule's side on a face of 2
        return capsule_on_face(status, obj1, obj2, n2, faces2, margin)
    n1, faces1 = feature_normals(obj1, dim1, ids1, status.x1 - status.x2)
    if (match := aligned_faces(n1, n2)) is not None:                   # face on face
        i, j = match
        found = polygon_clip(face_points(obj1, faces1[i]), face_points(obj2, faces2[j]), n1[i], n2[j], margin)
        return inflate_witnesses(found, -n2[j], margin)

    def edge_of_1():                                                   # an edge of 1 on a face of 2, or None
        if (clipped := edge_on_face(obj1, dim1, p1, ids1[0], obj2, faces2, n2, status.x2 - status.x1, margin)) is None:
            return None
        found, normal = clipped
        return inflate_witnesses([(dist, x2, x1) for dist, x1, x2 in found], -normal, margin)   # the faces swapped

    first = dim1 <= dim2 or bool(status.face) or CYLINDER in (obj1.kind, obj2.kind)   # 1's edge before 2's
    if dim1 < 3 and first and (found := edge_of_1()) is not None:
        return found
    if dim2 < 3 and (clipped := edge_on_face(obj2, dim2, p2, ids2[0], obj1, faces1, n1, status.x1 - status.x2,
                                             margin)) is not None:   # an edge of 2 on a face of 1
        return inflate_witnesses(clipped[0], clipped[1], margin)
    if dim1 < 3 and not first and (found := edge_of_1()) is not None:   # 1's edge after 2's
        return found
    return []

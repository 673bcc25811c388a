"""The collision model: the geoms of a Model and what decides which of them touch (MuJoCo's geom_*, pair_*, exclude_*).

Geoms are MuJoCo's, numbered as MuJoCo numbers them (physai.collision's contacts name them by these numbers); each
sits on a body (physai's index, -1 the world) at a pose in that body's frame. Shapes, for ngeom geoms and npair
explicit pairs:

    geom_type        (ngeom,)      PLANE, SPHERE, CAPSULE, ELLIPSOID, CYLINDER, BOX, MESH (MuJoCo's mjtGeom numbers)
    geom_bodyid      (ngeom,)      the body it is fixed in (-1: the world)
    geom_pos, geom_quat  (ngeom, 3), (ngeom, 4)  its pose in the body's frame [m] (w x y z, unit)
    geom_size        (ngeom, 3)    MuJoCo's geom_size [m]: sphere (r), capsule and cylinder (r, half length), box (half
                                   sides), plane (half sides, 0: infinite), ellipsoid (semi-axes)
    geom_rbound      (ngeom,)      radius of its bounding sphere about geom_pos [m] (0: a plane, unbounded)
    geom_aabb        (ngeom, 6)    its box in its own frame: centre (3), half sides (3) [m] (MuJoCo's geom_aabb;
                                   default: half sides UNBOUNDED)
    geom_contype, geom_conaffinity  (ngeom,)  bitmasks: two geoms may touch when one's contype shares a bit with the
                                   other's conaffinity
    geom_condim, geom_priority, geom_solmix  (ngeom,)  contact dimension (1, 3, 4, 6), priority, solver mix weight
    geom_friction    (ngeom, 3)    sliding, torsional, rolling
    geom_solref, geom_solimp  (ngeom, 2), (ngeom, 5)
    geom_margin, geom_gap  (ngeom,)  [m]: contacts are found below margin + gap and act below margin
    geom_name        (ngeom,)
    geom_dataid      (ngeom,)      a mesh geom's mesh in `meshes`, a heightfield geom's heightfield in `hfields` (-1:
                                   none, or neither; a mesh geom without one has no narrow phase)
    meshes           Meshes: the convex meshes the mesh geoms collide with (below)
    hfields          Hfields: the heightfields of the hfield geoms (below)
    pair_geom1, pair_geom2, pair_dim  (npair,)  explicit pairs (MuJoCo's <pair>): always tested, with their own
    pair_friction (npair, 5), pair_solref, pair_solreffriction (npair, 2), pair_solimp (npair, 5), pair_margin,
    pair_gap (npair,)                parameters
    exclude          frozenset of (body, body) pairs (physai's indices, the smaller first) never tested (<exclude>)
    filterparent     MuJoCo's parent filter on: a body does not touch its parent (mjDSBL_FILTERPARENT off)
    midphase         MuJoCo's midphase on (mjDSBL_MIDPHASE off): it sorts the contacts of a multi-geom body pair
    nativeccd        MuJoCo's native GJK/EPA collides the convex pairs (mjDSBL_NATIVECCD off; on: its older libccd,
                     which physai refuses for them)
    multiccd         MuJoCo 4's multi-contact on (mjDSBL_MULTICCD off): boxes, meshes and cylinders may touch in several
                     contacts
    unsupported      what the source has that physai's collision does not model (adhesion, flexes, ...): detect refuses
    ignore_unsupported  detect leaves out the geom pairs it has no narrow phase for (warning when one may touch)
                     instead of refusing the model (physai.collision.ignoring_unsupported sets it)
"""

from dataclasses import dataclass, field, fields

import numpy as np

from physai.exceptions import InvalidModelError

#: geom types, MuJoCo's numbers (mjtGeom)
PLANE, HFIELD, SPHERE, CAPSULE, ELLIPSOID, CYLINDER, BOX, MESH, SDF = range(9)
UNBOUNDED = 1e10                 #: MuJoCo's mjMAXVAL: a box's half side at least this large is unbounded
TYPE_NAMES = ("plane", "hfield", "sphere", "capsule", "ellipsoid", "cylinder", "box", "mesh", "sdf")


def spans(adr: np.ndarray, num: np.ndarray) -> np.ndarray:
    """The indices adr[k] .. adr[k] + num[k] - 1 of every k, in order (num >= 0)."""
    total = int(num.sum())
    if not total:
        return np.zeros(0, np.intp)
    begin = np.repeat(adr - np.cumsum(num) + num, num)
    return begin + np.arange(total)


def _floats(width: tuple):
    return field(default_factory=lambda: np.zeros((0,) + width))


def _ints():
    return field(default_factory=lambda: np.zeros(0, np.intp))


@dataclass(frozen=True, eq=False)
class ConvexMesh:
    """One mesh of Meshes with its own ids: vert (n, 3) [m]; hull: its graph's (neighbour list starts, vertex ids,
    neighbour lists) or None; extrema (27,); polygons: each polygon's vertex ids in order; normals (npoly, 3); polymap:
    each vertex's polygon ids (polygons and polymap: Rows, indexed by the mesh's own ids)."""

    vert: np.ndarray
    hull: tuple | None
    extrema: np.ndarray
    polygons: "Rows"
    normals: np.ndarray
    polymap: "Rows"


@dataclass(frozen=True)
class Rows:
    """Rows of different lengths in one flat array: row k is values[adr[k] : adr[k] + num[k]], a view made when asked
    for (a mesh's polygons and its vertices' polygons, without one array per row)."""

    values: np.ndarray
    adr: np.ndarray
    num: np.ndarray

    def __getitem__(self, k: int) -> np.ndarray:
        a = int(self.adr[k])
        return self.values[a:a + int(self.num[k])]

    def __len__(self) -> int:
        return len(self.adr)


#: how far a mesh polygon's normal may be from unit length (MuJoCo computes it from float32 vertices)
UNIT_NORMAL = 1e-5


@dataclass(frozen=True, eq=False)
class Meshes:
    """Convex meshes for collision, in MuJoCo's layout (mjModel's mesh_*; nmesh meshes, V vertices, P polygons):

        mesh_vertadr, mesh_vertnum (nmesh,)    mesh i's vertices are mesh_vert[vertadr[i] : vertadr[i] + vertnum[i]]
        mesh_vert (V, 3)                       vertices in the geom's frame [m] (MuJoCo's float32 values)
        mesh_graphadr (nmesh,), mesh_graph     the convex hull's graph (-1: none): numvert, numface, then per hull
                                               vertex the start of its neighbour list (numvert), its vertex id in the
                                               mesh (numvert), then the neighbour lists (numvert + 3 numface entries:
                                               hull-local ids, each list ended by -1; MuJoCo's layout without the faces)
        mesh_extrema (nmesh, 27)               the hull vertex (hull-local id) that starts the support search for each
                                               cell of a 3 x 3 x 3 grid of directions
        mesh_polyadr, mesh_polynum (nmesh,)    mesh i's polygons (the hull's faces, coplanar triangles merged) are
                                               polygons polyadr[i] .. polyadr[i] + polynum[i] - 1
        mesh_polyvertadr, mesh_polyvertnum (P,), mesh_polyvert   a polygon's vertices (ids in its mesh), in order
        mesh_polynormal (P, 3)                 a polygon's outward unit normal in the geom's frame
        mesh_polymapadr, mesh_polymapnum (V,), mesh_polymap      a vertex's polygons (ids in its mesh), in order

    Only the hull's vertices are kept of a mesh whose hull has 10 or more (MuJoCo's support search climbs the graph of
    a mesh of 10 vertices or more, the cut mesh's too); its ids are then those of the kept vertices. Meshes() has
    none."""

    mesh_vertadr: np.ndarray = _ints()
    mesh_vertnum: np.ndarray = _ints()
    mesh_vert: np.ndarray = _floats((3,))
    mesh_graphadr: np.ndarray = _ints()
    mesh_graph: np.ndarray = _ints()
    mesh_extrema: np.ndarray = field(default_factory=lambda: np.zeros((0, 27), np.intp))
    mesh_polyadr: np.ndarray = _ints()
    mesh_polynum: np.ndarray = _ints()
    mesh_polyvertadr: np.ndarray = _ints()
    mesh_polyvertnum: np.ndarray = _ints()
    mesh_polyvert: np.ndarray = _ints()
    mesh_polynormal: np.ndarray = _floats((3,))
    mesh_polymapadr: np.ndarray = _ints()
    mesh_polymapnum: np.ndarray = _ints()
    mesh_polymap: np.ndarray = _ints()

    def __post_init__(self):
        for f in fields(self):
            getattr(self, f.name).setflags(write=False)
        problem = self._problem()
        if problem:
            raise InvalidModelError(f"Meshes: {problem}")

    @property
    def nmesh(self) -> int:
        return len(self.mesh_vertadr)

    def mesh(self, i: int) -> "ConvexMesh":
        """Mesh i's arrays, with its own vertex and polygon ids (ConvexMesh)."""
        va, nv, pa, pn = (int(x[i]) for x in (self.mesh_vertadr, self.mesh_vertnum, self.mesh_polyadr, self.mesh_polynum))
        hull = None
        ga = int(self.mesh_graphadr[i])
        if ga >= 0:
            n = int(self.mesh_graph[ga])
            hull = (self.mesh_graph[ga + 2:ga + 2 + n], self.mesh_graph[ga + 2 + n:ga + 2 + 2 * n], self.mesh_graph[ga + 2 + 2 * n:])
        polygons = Rows(self.mesh_polyvert, self.mesh_polyvertadr[pa:pa + pn], self.mesh_polyvertnum[pa:pa + pn])
        polymap = Rows(self.mesh_polymap, self.mesh_polymapadr[va:va + nv], self.mesh_polymapnum[va:va + nv])
        return ConvexMesh(self.mesh_vert[va:va + nv], hull, self.mesh_extrema[i], polygons, self.mesh_polynormal[pa:pa + pn],
                          polymap)

    def _problem(self) -> str:
        """What makes these arrays inconsistent (an index outside its array, a size that does not match), or ''."""
        n, V, P = self.nmesh, len(self.mesh_vert), len(self.mesh_polyvertadr)
        shapes = {"mesh_vertnum": (n,), "mesh_graphadr": (n,), "mesh_extrema": (n, 27), "mesh_polyadr": (n,),
                  "mesh_polynum": (n,), "mesh_vert": (V, 3), "mesh_polyvertnum": (P,), "mesh_polynormal": (P, 3),
                  "mesh_polymapadr": (V,), "mesh_polymapnum": (V,)}
        for name, shape in shapes.items():
            if getattr(self, name).shape != shape:
                return f"{name} has shape {getattr(self, name).shape}, expected {shape}"
        if not np.isfinite(self.mesh_vert).all() or not np.isfinite(self.mesh_polynormal).all():
            return "mesh_vert and mesh_polynormal must be finite"
        lengths = np.linalg.norm(self.mesh_polynormal, axis=1)
        off = np.flatnonzero(np.abs(lengths - 1.0) > UNIT_NORMAL)
        if off.size:
            return (f"polygon {int(off[0])}'s normal mesh_polynormal[{int(off[0])}] has length {lengths[off[0]]:.6g}: "
                    f"expected a unit normal (length within {UNIT_NORMAL:g} of 1)")

        def within(adr, num, size) -> bool:
            return bool(((num >= 0) & (adr >= 0) & (num <= size - adr)).all())      # no overflow

        if (self.mesh_vertnum < 1).any():
            return "a mesh has no vertices"
        if not within(self.mesh_vertadr, self.mesh_vertnum, V) or not within(self.mesh_polyadr, self.mesh_polynum, P):
            return "a mesh's vertices or polygons lie outside mesh_vert or mesh_polyvertadr"
        if not within(self.mesh_polyvertadr, self.mesh_polyvertnum, len(self.mesh_polyvert)):
            return "a polygon's vertices lie outside mesh_polyvert"
        if not within(self.mesh_polymapadr, self.mesh_polymapnum, len(self.mesh_polymap)):
            return "a vertex's polygons lie outside mesh_polymap"
        for i in range(n):
            nv, va = int(self.mesh_vertnum[i]), int(self.mesh_vertadr[i])
            pa, npoly = int(self.mesh_polyadr[i]), int(self.mesh_polynum[i])
            corners = self.mesh_polyvert[spans(self.mesh_polyvertadr[pa:pa + npoly], self.mesh_polyvertnum[pa:pa + npoly])]
            if ((corners < 0) | (corners >= nv)).any():
                return f"mesh {i}: a polygon names a vertex outside the mesh"
            faces = self.mesh_polymap[spans(self.mesh_polymapadr[va:va + nv], self.mesh_polymapnum[va:va + nv])]
            if ((faces < 0) | (faces >= npoly)).any():
                return f"mesh {i}: a vertex names a polygon outside the mesh"
            ga = int(self.mesh_graphadr[i])
            if ga < 0:
                continue
            graph, size = self.mesh_graph, len(self.mesh_graph)
            if ga + 2 > size or not 0 < graph[ga] <= nv or graph[ga + 1] < 0 or \
                    ga + 2 + 3 * int(graph[ga]) + 3 * int(graph[ga + 1]) > size:
                return f"mesh {i}: its graph lies outside mesh_graph or names more vertices than the mesh has"
            hull, faces = int(graph[ga]), int(graph[ga + 1])
            start, ids = graph[ga + 2:ga + 2 + hull], graph[ga + 2 + hull:ga + 2 + 2 * hull]
            edges = graph[ga + 2 + 2 * hull:ga + 2 + 3 * hull + 3 * faces]
            if ((ids < 0) | (ids >= nv)).any() or ((self.mesh_extrema[i] < 0) | (self.mesh_extrema[i] >= hull)).any():
                return f"mesh {i}: its graph or extrema name a vertex outside the mesh"
            ends = np.flatnonzero(edges < 0)                  # each neighbour list ends at the first negative after it
            last = np.searchsorted(ends, start)
            if ((start < 0) | (last >= len(ends))).any() or (edges[:ends[-1] if len(ends) else 0] >= hull).any():
                return f"mesh {i}: a neighbour list of its graph is not ended by -1 or names a vertex outside the hull"
        return ""


@dataclass(frozen=True, eq=False)
class HField:
    """One heightfield of Hfields: size (4,) [m] (x and y half sides, the top's height, the base's depth), elevation
    (nrow, ncol) in [0, 1] (row r at y = -size[1] + 2 size[1] r / (nrow - 1), column c at x likewise)."""

    size: np.ndarray
    elevation: np.ndarray


@dataclass(frozen=True, eq=False)
class Hfields:
    """Heightfields for collision, in MuJoCo's layout (mjModel's hfield_*; nhfield fields):

        hfield_size (nhfield, 4)               x, y half sides, the top's height above the geom's frame, the base's
                                               depth below it [m]
        hfield_nrow, hfield_ncol (nhfield,)    the grid's rows (along y) and columns (along x), at least 2 each
        hfield_adr (nhfield,), hfield_data     field i's elevations are hfield_data[adr : adr + nrow ncol], row after row,
                                               in [0, 1] (MuJoCo's float32 values): a point's height is elevation
                                               times size[2]

    Hfields() has none."""

    hfield_size: np.ndarray = field(default_factory=lambda: np.zeros((0, 4)))
    hfield_nrow: np.ndarray = _ints()
    hfield_ncol: np.ndarray = _ints()
    hfield_adr: np.ndarray = _ints()
    hfield_data: np.ndarray = _floats(())

    def __post_init__(self):
        problem = self._problem()
        if problem:
            raise InvalidModelError(f"Hfields: {problem}")
        for value in vars(self).values():
            value.setflags(write=False)

    @property
    def nhfield(self) -> int:
        return len(self.hfield_size)

    def hfield(self, i: int) -> HField:
        """Heightfield i (HField)."""
        nrow, ncol, adr = int(self.hfield_nrow[i]), int(self.hfield_ncol[i]), int(self.hfield_adr[i])
        return HField(self.hfield_size[i], self.hfield_data[adr:adr + nrow * ncol].reshape(nrow, ncol))

    def _problem(self) -> str:
        """What makes these arrays unusable (a shape, a grid of fewer than 2 x 2, a size that is not positive and
        finite, an elevation that is not finite or lies outside hfield_data), or ''."""
        n = self.nhfield
        for name in ("hfield_nrow", "hfield_ncol", "hfield_adr"):
            if getattr(self, name).shape != (n,):
                return f"{name} has shape {getattr(self, name).shape}, expected {(n,)}"
        if self.hfield_size.shape != (n, 4) or self.hfield_data.ndim != 1:
            return f"hfield_size has shape {self.hfield_size.shape}, expected {(n, 4)}; hfield_data must be flat"
        for i in range(n):
            nrow, ncol, adr, size = int(self.hfield_nrow[i]), int(self.hfield_ncol[i]), int(self.hfield_adr[i]), self.hfield_size[i]
            if nrow < 2 or ncol < 2:
                return f"heightfield {i} has {nrow} x {ncol} points, expected at least 2 x 2"
            if adr < 0 or nrow * ncol > len(self.hfield_data) - adr:
                return f"heightfield {i}'s {nrow} x {ncol} elevations lie outside hfield_data ({len(self.hfield_data)} values)"
            if not np.isfinite(size).all() or (size[:2] <= 0).any() or (size[2:] < 0).any():
                return f"heightfield {i} has size {size.tolist()}, expected finite half sides > 0 and heights >= 0"
            data = self.hfield_data[adr:adr + nrow * ncol]
            if not np.isfinite(data).all():
                bad = int(np.flatnonzero(~np.isfinite(data))[0])
                return (f"heightfield {i} has elevation {data[bad]} at row {bad // ncol}, column {bad % ncol}; "
                        "elevations must be finite")
        return ""


@dataclass(frozen=True, eq=False)
class Geoms:
    """A Model's collision geometry and filters (see the module docstring); Geoms() has none."""

    geom_type: np.ndarray = _ints()
    geom_bodyid: np.ndarray = _ints()
    geom_pos: np.ndarray = _floats((3,))
    geom_quat: np.ndarray = _floats((4,))
    geom_size: np.ndarray = _floats((3,))
    geom_rbound: np.ndarray = _floats(())
    geom_contype: np.ndarray = _ints()
    geom_conaffinity: np.ndarray = _ints()
    geom_condim: np.ndarray = _ints()
    geom_priority: np.ndarray = _ints()
    geom_solmix: np.ndarray = _floats(())
    geom_friction: np.ndarray = _floats((3,))
    geom_solref: np.ndarray = _floats((2,))
    geom_solimp: np.ndarray = _floats((5,))
    geom_margin: np.ndarray = _floats(())
    geom_gap: np.ndarray = _floats(())
    geom_name: tuple = ()
    pair_geom1: np.ndarray = _ints()
    pair_geom2: np.ndarray = _ints()
    pair_dim: np.ndarray = _ints()
    pair_friction: np.ndarray = _floats((5,))
    pair_solref: np.ndarray = _floats((2,))
    pair_solreffriction: np.ndarray = _floats((2,))
    pair_solimp: np.ndarray = _floats((5,))
    pair_margin: np.ndarray = _floats(())
    pair_gap: np.ndarray = _floats(())
    geom_dataid: np.ndarray = None
    geom_aabb: np.ndarray = None
    meshes: Meshes = field(default_factory=Meshes)
    hfields: Hfields = field(default_factory=Hfields)
    exclude: frozenset = frozenset()
    filterparent: bool = True
    midphase: bool = True
    nativeccd: bool = True
    multiccd: bool = True
    unsupported: tuple = ()
    ignore_unsupported: bool = False

    def __post_init__(self):
        n, npair = len(self.geom_type), len(self.pair_geom1)
        if self.geom_dataid is None:
            object.__setattr__(self, "geom_dataid", np.full(n, -1, np.intp))
        if self.geom_aabb is None:
            object.__setattr__(self, "geom_aabb", np.tile([0.0, 0.0, 0.0] + [UNBOUNDED] * 3, (n, 1)))
        for name, value in vars(self).items():
            if not isinstance(value, np.ndarray):
                continue
            rows = npair if name.startswith("pair_") else n
            if len(value) != rows:
                raise InvalidModelError(f"Geoms.{name} has {len(value)} rows, expected {rows} (one per "
                                        f"{'pair' if name.startswith('pair_') else 'geom'})")
            value.setflags(write=False)
        if len(self.geom_name) != n:
            raise InvalidModelError(f"Geoms.geom_name has {len(self.geom_name)} names, expected {n}")
        bad = np.flatnonzero((self.geom_type < 0) | (self.geom_type >= len(TYPE_NAMES)))
        if bad.size:
            raise InvalidModelError(f"geom {int(bad[0])} has type {int(self.geom_type[bad[0]])}; geom types are 0..8 (mjtGeom)")
        count = np.where(self.geom_type == MESH, self.meshes.nmesh, np.where(self.geom_type == HFIELD, self.hfields.nhfield, 0))
        bad = np.flatnonzero((self.geom_dataid < -1) | (self.geom_dataid >= count))
        if bad.size:
            raise InvalidModelError(f"geom {int(bad[0])} has geom_dataid {int(self.geom_dataid[bad[0]])}; a mesh geom names one "
                                    f"of the {self.meshes.nmesh} meshes, a heightfield geom one of the {self.hfields.nhfield} "
                                    "heightfields (-1: none), other geoms -1")
        for name in ("pair_geom1", "pair_geom2"):
            out = np.flatnonzero((getattr(self, name) < 0) | (getattr(self, name) >= n))
            if out.size:
                raise InvalidModelError(f"pair {int(out[0])}: {name} is {int(getattr(self, name)[out[0]])}; the model has {n} geoms")
        self._check_sizes()

    def _check_sizes(self) -> None:
        """InvalidModelError naming a colliding geom (contype or conaffinity set, or in an explicit pair) whose size is
        not finite and positive where its type uses it (a sphere's radius, a capsule's or cylinder's radius and half
        length, an ellipsoid's or box's three), as MuJoCo's compiler requires."""
        used = {SPHERE: 1, CAPSULE: 2, CYLINDER: 2, ELLIPSOID: 3, BOX: 3}
        colliding = (self.geom_contype != 0) | (self.geom_conaffinity != 0)
        colliding[self.pair_geom1], colliding[self.pair_geom2] = True, True
        for g in np.flatnonzero(colliding).tolist():
            size = self.geom_size[g, :used.get(int(self.geom_type[g]), 0)]
            if not (np.isfinite(size) & (size > 0)).all():
                raise InvalidModelError(f"{self.describe(g)} has size {self.geom_size[g].tolist()}; a colliding "
                                        f"{TYPE_NAMES[int(self.geom_type[g])]} needs its first {len(size)} sizes finite "
                                        "and > 0")

    @property
    def ngeom(self) -> int:
        return len(self.geom_type)

    @property
    def npair(self) -> int:
        return len(self.pair_geom1)

    def describe(self, g: int) -> str:
        """'geom 3 ("left_foot", sphere)': a geom for messages."""
        name = self.geom_name[g]
        return f"geom {g} ({(repr(name) + ', ') if name else ''}{TYPE_NAMES[int(self.geom_type[g])]})"

    def check_bodies(self, nbody: int) -> None:
        """InvalidModelError when a geom is on a body the model does not have."""
        out = np.flatnonzero((self.geom_bodyid < -1) | (self.geom_bodyid >= nbody))
        if out.size:
            raise InvalidModelError(f"{self.describe(int(out[0]))} is on body {int(self.geom_bodyid[out[0]])}; the model has "
                                    f"{nbody} bodies (-1: the world)")

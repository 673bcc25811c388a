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
    geom_contype, geom_conaffinity  (ngeom,)  bitmasks: two geoms may touch when one's contype shares a bit with the
                                   other's conaffinity
    geom_condim, geom_priority, geom_solmix  (ngeom,)  contact dimension (1, 3, 4, 6), priority, solver mix weight
    geom_friction    (ngeom, 3)    sliding, torsional, rolling
    geom_solref, geom_solimp  (ngeom, 2), (ngeom, 5)
    geom_margin, geom_gap  (ngeom,)  [m]: contacts are found below margin + gap and act below margin
    geom_name        (ngeom,)
    pair_geom1, pair_geom2, pair_dim  (npair,)  explicit pairs (MuJoCo's <pair>): always tested, with their own
    pair_friction (npair, 5), pair_solref, pair_solreffriction (npair, 2), pair_solimp (npair, 5), pair_margin,
    pair_gap (npair,)                parameters
    exclude          frozenset of (body, body) pairs (physai's indices, the smaller first) never tested (<exclude>)
    filterparent     MuJoCo's parent filter on: a body does not touch its parent (mjDSBL_FILTERPARENT off)
    midphase         MuJoCo's midphase on (mjDSBL_MIDPHASE off): it sorts the contacts of a multi-geom body pair
    unsupported      what the source has that physai's collision does not model (adhesion, flexes, ...): detect refuses
    ignore_unsupported  detect leaves out the geom pairs it has no narrow phase for (warning when one may touch)
                     instead of refusing the model (physai.collision.ignoring_unsupported sets it)
"""

from dataclasses import dataclass, field

import numpy as np

from physai.exceptions import InvalidModelError

#: geom types, MuJoCo's numbers (mjtGeom)
PLANE, HFIELD, SPHERE, CAPSULE, ELLIPSOID, CYLINDER, BOX, MESH, SDF = range(9)
TYPE_NAMES = ("plane", "hfield", "sphere", "capsule", "ellipsoid", "cylinder", "box", "mesh", "sdf")


def _floats(width: tuple):
    return field(default_factory=lambda: np.zeros((0,) + width))


def _ints():
    return field(default_factory=lambda: np.zeros(0, np.intp))


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
    exclude: frozenset = frozenset()
    filterparent: bool = True
    midphase: bool = True
    unsupported: tuple = ()
    ignore_unsupported: bool = False

    def __post_init__(self):
        n, npair = len(self.geom_type), len(self.pair_geom1)
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
        for name in ("pair_geom1", "pair_geom2"):
            out = np.flatnonzero((getattr(self, name) < 0) | (getattr(self, name) >= n))
            if out.size:
                raise InvalidModelError(f"pair {int(out[0])}: {name} is {int(getattr(self, name)[out[0]])}; the model has {n} geoms")

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

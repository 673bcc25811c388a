"""A contact set: the contacts of one state, in MuJoCo's terms (mjContact), as the constraint rows read them.

physai.collision.from_mujoco makes one from MuJoCo's d.contact; physai's own collision detection (issue J) will make
them from a Model and q. Shapes, for nc contacts:

    pos            (nc, 3)     the contact point in the world [m]
    frame          (nc, 3, 3)  rows: the normal (from body1 towards body2), then two tangents (MuJoCo's frame)
    dist           (nc,)       signed distance between the surfaces [m]: negative when they overlap
    includemargin  (nc,)       the distance below which the contact is active (margin - gap) [m]
    friction       (nc, 5)     tangent, tangent, torsional, rolling, rolling coefficients
    solref, solreffriction  (nc, 2)  solver reference (time constant [s], damping ratio) of the normal and friction rows
    solimp         (nc, 5)     impedance (d0, dwidth, width [m], midpoint, power)
    dim            (nc,)       1 (frictionless), 3 (sliding friction), 4 (+ torsional), 6 (+ rolling)
    body1, body2   (nc,)       the two bodies (physai's indices, -1: the world)
    geom           (nc, 2)     the two geoms (MuJoCo's numbering, the Model's geoms); -1 when not known
    nbody                      the number of bodies of the model the set belongs to

ContactSet.packed() gives the same numbers as two arrays, one row per contact, as the compiled kernels read them.
"""

from dataclasses import dataclass, field

import numpy as np

from physai import validation
from physai.engine.model_checks import CONTACT_DIMS
from physai.exceptions import InvalidArgumentError, InvalidModelError, ShapeError

# packed()'s columns: (field, width) of the floats, then the ints (cpp/data.h's Contacts)
PACKED_FLOATS = (("pos", 3), ("frame", 9), ("dist", 1), ("includemargin", 1), ("friction", 5), ("solref", 2),
                 ("solreffriction", 2), ("solimp", 5))
PACKED_INTS = ("dim", "body1", "body2")
FRICTION_COLUMNS = slice(14, 19)                    # friction's columns in packed()'s floats
MINMU = 1e-5                                        # MuJoCo's mjMINMU: the smallest friction coefficient of a contact
FRAME_TOLERANCE = 1e-6                              # how far frame F F^T may be from the identity


@dataclass(frozen=True, eq=False)
class ContactSet:
    """The contacts of one state (see the module docstring); ContactSet.empty(nbody) has none. Arrays of the wrong shape
    raise ShapeError, NaN or infinity InvalidStateError, a dim other than 1, 3, 4 or 6 or a body outside the model
    InvalidModelError; an nbody that is not a whole number >= 0, a frame whose rows are not orthonormal, or a friction
    coefficient below MINMU among the dim - 1 a contact uses InvalidArgumentError."""

    nbody: int
    pos: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    frame: np.ndarray = field(default_factory=lambda: np.zeros((0, 3, 3)))
    dist: np.ndarray = field(default_factory=lambda: np.zeros(0))
    includemargin: np.ndarray = field(default_factory=lambda: np.zeros(0))
    friction: np.ndarray = field(default_factory=lambda: np.zeros((0, 5)))
    solref: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    solreffriction: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    solimp: np.ndarray = field(default_factory=lambda: np.zeros((0, 5)))
    dim: np.ndarray = field(default_factory=lambda: np.zeros(0, np.intp))
    body1: np.ndarray = field(default_factory=lambda: np.zeros(0, np.intp))
    body2: np.ndarray = field(default_factory=lambda: np.zeros(0, np.intp))
    geom: np.ndarray | None = None

    def __post_init__(self):
        if isinstance(self.nbody, (bool, np.bool_)) or not isinstance(self.nbody, (int, np.integer)) or self.nbody < 0:
            raise InvalidArgumentError(f"contacts.nbody is {self.nbody!r}: expected a whole number >= 0, the number of "
                                       "bodies of the model the contacts belong to")
        n = len(np.atleast_1d(self.dist))
        for name, width in (("pos", (3,)), ("frame", (3, 3)), ("dist", ()), ("includemargin", ()), ("friction", (5,)),
                            ("solref", (2,)), ("solreffriction", (2,)), ("solimp", (5,))):
            value = validation.as_array(f"contacts.{name}", getattr(self, name), (n,) + width)
            value.setflags(write=False)
            object.__setattr__(self, name, value)
        for name in ("dim", "body1", "body2"):
            value = np.asarray(getattr(self, name))
            if value.shape != (n,) or value.dtype.kind not in "iu":
                raise ShapeError(f"contacts.{name} must be {n} whole numbers (one per contact), got {value.dtype} of shape {value.shape}")
            value = value.astype(np.intp)
            value.setflags(write=False)
            object.__setattr__(self, name, value)
        geom = np.full((n, 2), -1, np.intp) if self.geom is None else np.asarray(self.geom)
        if geom.shape != (n, 2) or geom.dtype.kind not in "iu":
            raise ShapeError(f"contacts.geom must be ({n}, 2) whole numbers (two geoms per contact), got {geom.dtype} of shape "
                             f"{geom.shape}")
        geom = geom.astype(np.intp)
        geom.setflags(write=False)
        object.__setattr__(self, "geom", geom)
        bad = np.flatnonzero(~np.isin(self.dim, CONTACT_DIMS))
        if bad.size:
            raise InvalidModelError(f"contact {int(bad[0])} has dim {int(self.dim[bad[0]])}; a contact's dim is 1, 3, 4 or 6")
        self._check_frames()
        self._check_friction()
        for name in ("body1", "body2"):
            ids = getattr(self, name)
            out = np.flatnonzero((ids < -1) | (ids >= self.nbody))
            if out.size:
                raise InvalidModelError(f"contact {int(out[0])}: {name} is {int(ids[out[0]])}, but the model has {self.nbody} "
                                        "bodies (-1 is the world): is this the contact set of another model?")

    def _check_frames(self) -> None:
        """InvalidArgumentError unless each frame's rows (normal, tangent, tangent) are unit vectors at right angles."""
        error = np.abs(self.frame @ self.frame.transpose(0, 2, 1) - np.eye(3)).max(axis=(1, 2), initial=0.0)
        bad = np.flatnonzero(~(error <= FRAME_TOLERANCE))
        if bad.size:
            k = int(bad[0])
            raise InvalidArgumentError(f"contact {k}'s frame is not orthonormal (F F^T is off the identity by {error[k]:.3g}): "
                                       "its rows, the normal and two tangents, must be unit vectors at right angles")

    def _check_friction(self) -> None:
        """InvalidArgumentError when a contact's friction coefficient among the dim - 1 it uses is below MINMU."""
        used = np.arange(5) < (self.dim - 1)[:, None]                       # dim 3: sliding; 4: + torsional; 6: + rolling
        bad = np.argwhere(used & ~(self.friction >= MINMU))
        if bad.size:
            k, c = (int(i) for i in bad[0])
            raise InvalidArgumentError(f"contact {k} has dim {int(self.dim[k])} and friction[{c}] = {self.friction[k, c]:g}: "
                                       f"a contact with friction needs its first dim - 1 coefficients >= {MINMU:g} (MuJoCo's "
                                       "mjMINMU); a frictionless contact has dim 1")

    def packed(self) -> tuple[np.ndarray, np.ndarray]:
        """The contacts as two read-only arrays, one row per contact: floats (nc, 28) float64, the columns of
        PACKED_FLOATS (pos, frame row by row, dist, includemargin, friction, solref, solreffriction, solimp), and ints
        (nc, 3) int64 (dim, body1, body2); made on first use."""
        packed = self.__dict__.get("_packed")
        if packed is None:
            n = len(self)
            floats = np.concatenate([getattr(self, name).reshape(n, width) for name, width in PACKED_FLOATS], axis=1)
            ints = np.stack([getattr(self, name) for name in PACKED_INTS], axis=1).astype(np.int64).reshape(n, 3)
            for a in (floats, ints):
                a.setflags(write=False)
            packed = (floats, ints)
            object.__setattr__(self, "_packed", packed)
        return packed

    @classmethod
    def unpacked(cls, nbody: int, floats: np.ndarray, ints: np.ndarray, geom: np.ndarray) -> "ContactSet":
        """The ContactSet whose packed() is (floats (nc, 28) float64, ints (nc, 3) int64) and whose geom pairs are geom
        (nc, 2), read-only arrays taken as they are: the compiled detection's own output (physai.engine.native.detect),
        whose dims and bodies come from the model, so __post_init__'s checks (most of the cost of a state's contacts)
        are skipped; the other fields are read-only views of packed()'s arrays, each made when first read (_Unpacked)."""
        out = object.__new__(_Unpacked)
        geom = geom.astype(np.intp, copy=False)
        for name, value in (("nbody", nbody), ("geom", geom), ("_packed", (floats, ints))):
            object.__setattr__(out, name, value)
        return out

    @classmethod
    def empty(cls, nbody: int) -> "ContactSet":
        """No contacts, for a model of nbody bodies."""
        return cls(nbody)

    def __len__(self) -> int:
        return len(self.dist)

    def check_model(self, model) -> None:
        """InvalidModelError unless the set was made for a model with as many bodies as `model`."""
        if self.nbody != model.nbody:
            raise InvalidModelError(f"the contact set was made for a model with {self.nbody} bodies; this model has "
                                    f"{model.nbody}: pass the contacts of this model's own state")


# packed()'s columns of each field: (floats or ints, first column, width)
_COLUMNS = {name: (0, sum(w for _, w in PACKED_FLOATS[:k]), width) for k, (name, width) in enumerate(PACKED_FLOATS)}
_COLUMNS.update({name: (1, k, 1) for k, name in enumerate(PACKED_INTS)})


class _Unpacked(ContactSet):
    """A ContactSet made by ContactSet.unpacked: a field not read yet is made from packed()'s arrays when first read, a
    read-only view (frame (nc, 3, 3), the one-column fields (nc,), the others (nc, width))."""

    def __getattr__(self, name: str):
        if name not in _COLUMNS:
            raise AttributeError(f"'ContactSet' object has no attribute {name!r}")
        which, at, width = _COLUMNS[name]
        array = self.__dict__["_packed"][which]
        n = len(array)
        value = array[:, at:at + width].reshape((n, 3, 3) if name == "frame" else (n, width)[:1 + (width > 1)])
        value = value.astype(np.intp, copy=False) if which else value
        object.__setattr__(self, name, value)                              # made once: the next read finds it
        return value

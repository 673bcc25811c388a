"""Contacts for physai's constraint model: which bodies touch, where, and how (MuJoCo's mjContact, physai's ContactSet).

    contacts = collision.from_mujoco(m, d)      # MuJoCo's d.contact after mj_forward / mj_collision, as a ContactSet
    ContactSet.empty(model.nbody)               # no contacts

A ContactSet holds what the constraint rows read of each contact: position, frame, distance, margin, friction, solver
parameters, dimension and the two bodies (physai's indices: MuJoCo's body b + 1 is physai's body b, -1 the world).
physai's own collision detection (issue J) will make them from a Model and q.
"""

import mujoco
import numpy as np

from physai.engine.contact import ContactSet
from physai.exceptions import InvalidArgumentError, UnsupportedModelError

__all__ = ["ContactSet", "from_mujoco"]


def from_mujoco(m: mujoco.MjModel, d: mujoco.MjData) -> ContactSet:
    """The contacts MuJoCo found in d (d.contact, after mj_forward or mj_collision) as a ContactSet of the physai Model
    built from m (physai.engine.from_mujoco(m)). Contacts MuJoCo excludes (gap, disabled pairs) are left out, as its
    constraint rows leave them out. Contacts of flexes raise UnsupportedModelError."""
    if not isinstance(m, mujoco.MjModel) or not isinstance(d, mujoco.MjData):
        raise InvalidArgumentError(f"from_mujoco needs a mujoco.MjModel and its mujoco.MjData, got {type(m).__name__} and "
                                   f"{type(d).__name__}")
    con = d.contact
    keep = np.flatnonzero(con.exclude[:d.ncon] == 0)
    geoms = con.geom[keep].reshape(-1, 2)
    if (geoms < 0).any():
        raise UnsupportedModelError("a contact involves a flex; physai's contacts are between bodies' geoms")
    body = m.geom_bodyid[geoms] - 1                                  # MuJoCo's body b + 1 is physai's body b
    return ContactSet(nbody=m.nbody - 1, pos=con.pos[keep].reshape(-1, 3), frame=con.frame[keep].reshape(-1, 3, 3),
                      dist=con.dist[keep].reshape(-1), includemargin=con.includemargin[keep].reshape(-1),
                      friction=con.friction[keep].reshape(-1, 5), solref=con.solref[keep].reshape(-1, 2),
                      solreffriction=con.solreffriction[keep].reshape(-1, 2), solimp=con.solimp[keep].reshape(-1, 5),
                      dim=con.dim[keep].reshape(-1).astype(np.intp), body1=body[:, 0].astype(np.intp),
                      body2=body[:, 1].astype(np.intp))

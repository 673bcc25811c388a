"""Tendons: their lengths, Jacobians and velocities, for one state or N (MuJoCo's d.ten_length, d.ten_J and
d.ten_velocity after mj_forward).

    L = tendons.lengths(model, q)            # q (nq,): (ntendon,) [m | rad]; q (N, nq): (N, ntendon)
    J = tendons.jacobians(model, q)          # (ntendon, nv) or (N, ntendon, nv): L's rate is J qd
    L, J = tendons.kinematics(model, q)      # both from one pass
    v = tendons.velocities(model, q, qd)     # (ntendon,) or (N, ntendon) [m/s | rad/s]
    A = tendons.armature(model, q)           # (nv, nv) or (N, nv, nv): the tendons' armature in MuJoCo's M

A fixed tendon is a linear combination of hinge and slide positions; a spatial tendon a path through sites, wrapping
around spheres and cylinders (with side sites), divided by pulleys (physai.engine.tendon, MuJoCo's mj_tendon). Tendons
are the model's, in MuJoCo's order (Model.tendon_name). On the compiled backend the lengths and Jacobians come from
cpp/tendon.h (the kernel "tendons"), else from the NumPy text.
"""

import numpy as np

from physai.engine import api, as_model
from physai.engine.model import Model
from physai.engine.tendon import armature_matrix
from physai.validation import states

__all__ = ["armature", "jacobians", "kinematics", "lengths", "velocities"]

def kinematics(model, q) -> tuple[np.ndarray, np.ndarray]:
    """(lengths (ntendon,) [m | rad], Jacobians (ntendon, nv)) at joint positions q (nq,), or with a leading N for q
    (N, nq). Equal MuJoCo's d.ten_length and d.ten_J (dense) after mj_kinematics, mj_comPos and mj_tendon
    (physai.engine.api.tendon_kinematics)."""
    return api.tendon_kinematics(model, q)


def lengths(model, q) -> np.ndarray:
    """Tendon lengths (ntendon,) [m | rad] at q (nq,), or (N, ntendon) for q (N, nq): MuJoCo's d.ten_length."""
    return kinematics(model, q)[0]


def jacobians(model, q) -> np.ndarray:
    """Tendon Jacobians (ntendon, nv) at q (nq,), or (N, ntendon, nv) for q (N, nq): MuJoCo's d.ten_J (dense); the
    rate of the lengths is J qd, and a tendon force f acts on the joints as J^T f."""
    return kinematics(model, q)[1]


def velocities(model, q, qd) -> np.ndarray:
    """Tendon velocities J qd (ntendon,) [m/s | rad/s] at (q (nq,), qd (nv,)), or (N, ntendon) for N states (either
    may be one state shared by the batch): MuJoCo's d.ten_velocity."""
    model = model if type(model) is Model else as_model(model)
    (Q, QD), batch = states(q=(q, model.nq), qd=(qd, model.nv))
    if batch is None:
        return jacobians(model, Q[:, 0]) @ QD[:, 0]
    J = jacobians(model, np.broadcast_to(Q, (model.nq, batch)).T)                  # (N, ntendon, nv)
    return np.einsum("ntj,nj->nt", J, np.broadcast_to(QD, (model.nv, batch)).T)


def armature(model, q) -> np.ndarray:
    """The tendons' armature sum_t armature_t J_t^T J_t in M's sparsity pattern (nv, nv) [kg m^2 | kg] at q (nq,), or
    (N, nv, nv) for q (N, nq): what MuJoCo's M (mj_fullM) adds to the rigid bodies' (physai.engine.mass_matrix)."""
    model = model if type(model) is Model else as_model(model)
    J = jacobians(model, q)
    return armature_matrix(model, J) if J.ndim == 2 else np.array([armature_matrix(model, j) for j in J])

"""The whole body's centre of mass and its Jacobian, for one state or N (MuJoCo's subtree_com[0], mj_jacSubtreeCom).

    c = centroidal.com(model, q)               # (3,) [m], or (N, 3) for q (N, nq)
    Jc = centroidal.com_jacobian(model, q)     # (3, nv): c_dot = Jc qd [m/s], or (N, 3, nv)

MuJoCo's convention: every body counts, those welded to the world included (MuJoCo's subtree_com[0]). Pinocchio's
centerOfMass and jacobianCenterOfMass leave out the universe's inertia (the Panda's 0.63 kg base): they are the centre
of mass of the moving bodies, and Pinocchio's Jacobian is physai's times total / moving mass. On a model with no mass
welded to the world (a free-floating humanoid) the two agree. Velocities are MuJoCo's coordinates, as everywhere in
physai (physai.conventions for a free joint).
"""

import numpy as np

from physai.engine import as_model
from physai.engine.model import Model
from physai.exceptions import InvalidModelError
from physai.jacobians import body_jacobian
from physai.kinematics import body_poses


def _massive(model: Model) -> float:
    """The model's total mass [kg]; InvalidModelError when it is zero (no centre of mass)."""
    total = float(model.body_mass.sum())
    if not total > 0:
        raise InvalidModelError("the model's bodies have no mass: its centre of mass is undefined")
    return total


def com(model, q) -> np.ndarray:
    """Centre of mass of the whole model (3,) [m] at joint positions q (nq,), or (N, 3) for q (N, nq): the mass-weighted
    mean of every body's centre of mass, sum_b m_b (p_b + R_b ipos_b) / sum_b m_b (MuJoCo's subtree_com[0])."""
    model = model if type(model) is Model else as_model(model)
    total = _massive(model)
    pos, rot = body_poses(model, q)
    centres = pos + np.einsum("...bij,bj->...bi", rot, model.body_ipos)
    return np.einsum("b,...bi->...i", model.body_mass, centres) / total


def com_jacobian(model, q) -> np.ndarray:
    """Jacobian (3, nv) of the centre of mass, c_dot = Jc qd [m/s], or (N, 3, nv) for q (N, nq): the mass-weighted mean of
    the bodies' centre-of-mass Jacobians, sum_b m_b Jp(b, ipos_b) / sum_b m_b (MuJoCo's mj_jacSubtreeCom of the world;
    Pinocchio's jacobianCenterOfMass divides by the moving mass instead, see the module docstring)."""
    model = model if type(model) is Model else as_model(model)
    total = _massive(model)
    J = 0.0
    for b in np.flatnonzero((model.body_mass > 0) & (model.body_linkid >= 0)).tolist():
        J = J + model.body_mass[b] * body_jacobian(model, q, b, model.body_ipos[b])[..., :3, :]
    if isinstance(J, float):                                   # nothing moves: zeros of the right shape
        J = 0.0 * body_jacobian(model, q, 0)[..., :3, :]
    return J / total

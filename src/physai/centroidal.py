"""The whole body's centre of mass and its Jacobian, for one state or N (MuJoCo's subtree_com[0], mj_jacSubtreeCom).

    c = centroidal.com(model, q)               # (3,) [m], or (N, 3) for q (N, nq)
    Jc = centroidal.com_jacobian(model, q)     # (3, nv): c_dot = Jc qd [m/s], or (N, 3, nv)
    Ag = centroidal.momentum_matrix(model, q)  # (6, nv): h_g = Ag qd, rows (linear [kg m/s]; angular [kg m^2/s]
                                               # about the centre of mass), or (N, 6, nv)
    hg = centroidal.momentum(model, q, qd)     # (6,) or (N, 6)
    Ag_dot = centroidal.momentum_matrix_dot(model, q, qd)   # (6, nv): hg_dot = Ag qdd + Ag_dot qd, or (N, 6, nv)

MuJoCo's convention: every body counts, those welded to the world included (MuJoCo's subtree_com[0]). Pinocchio's
centerOfMass and jacobianCenterOfMass leave out the universe's inertia (the Panda's 0.63 kg base): they are the centre
of mass of the moving bodies, and Pinocchio's Jacobian is physai's times total / moving mass. On a model with no mass
welded to the world (a free-floating humanoid) the two agree. Velocities are MuJoCo's coordinates, as everywhere in
physai (physai.conventions for a free joint).
"""

import numpy as np

from physai.engine import Data, as_model, batching, native, support
from physai.engine.model import Model
from physai.engine.smooth import com_pos, com_vel, composite_inertias, kinematics, position_stages
from physai.engine.support import point_jacobian_dots, point_jacobians
from physai.exceptions import InvalidModelError
from physai.kinematics import body_poses
from physai.spatial import skew
from physai.validation import states


def _massive(model) -> tuple[Model, float]:
    """(the Model, its total mass [kg]); InvalidModelError when the mass is zero (no centre of mass)."""
    model = model if type(model) is Model else as_model(model)
    total = model.total_mass
    if not total > 0:
        raise InvalidModelError("the model's bodies have no mass: its centre of mass is undefined")
    return model, total


def com(model, q) -> np.ndarray:
    """Centre of mass of the whole model (3,) [m] at joint positions q (nq,), or (N, 3) for q (N, nq): the mass-weighted
    mean of every body's centre of mass, sum_b m_b (p_b + R_b ipos_b) / sum_b m_b (MuJoCo's subtree_com[0])."""
    model, total = _massive(model)
    pos, rot = body_poses(model, q)
    centres = pos + np.einsum("...bij,bj->...bi", rot, model.body_ipos)
    return np.einsum("b,...bi->...i", model.body_mass, centres) / total


def com_jacobian(model, q) -> np.ndarray:
    """Jacobian (3, nv) of the centre of mass, c_dot = Jc qd [m/s], or (N, 3, nv) for q (N, nq): the momentum matrix's
    linear rows over the mass, A_g[:3] / sum_b m_b (one compiled call on the compiled backend; MuJoCo's mj_jacSubtreeCom
    of the world; Pinocchio's jacobianCenterOfMass divides by the moving mass instead, see the module docstring).
    InvalidModelError for a model without mass."""
    model, _ = _massive(model)
    return _com_jacobian(model, q)


def _from_composite_inertias(model, q, data, result, what: str) -> np.ndarray:
    """result(model, d) (engine layout) after the position stages and the composite inertias, for one state or N."""
    model = as_model(model)

    def compute(d, q):
        position_stages(model, d, q)
        composite_inertias(model, d)
        return result(model, d)
    return batching.result(*batching.run(model, data, dict(q=(q, model.nq)), compute), what)


@native.dispatch("com_jacobian", "the centre of mass's Jacobian", batching.result)
def _com_jacobian(model, q, *, data: Data | None = None) -> np.ndarray:
    """com_jacobian of a model with mass (the NumPy text of cpp/support.h's com_jacobian)."""
    return _from_composite_inertias(model, q, data, support.com_jacobian, "the centre of mass's Jacobian")


def momentum_matrix(model, q) -> np.ndarray:
    """The centroidal momentum matrix A_g (6, nv), or (N, 6, nv) for q (N, nq): h_g = A_g qd is the whole body's
    momentum, rows (linear: sum_b m_b v_b [kg m/s]; angular about the centre of mass c: sum_b I_b w_b + m_b (c_b - c) x
    v_b [kg m^2/s]), with v_b the velocity of body b's centre of mass c_b, w_b its angular velocity and I_b its inertia
    about c_b. Column j is the momentum of the subtree dof j moves, its composite inertia times cdof_j
    (physai.engine.support.momentum_matrix, one compiled call on the compiled backend). Equals (total mass times
    MuJoCo's subtree_linvel[0]; subtree_angmom[0]) after mj_subtreeVel, and Pinocchio's ccrba moved to this c.
    InvalidModelError for a model without mass."""
    model, _ = _massive(model)
    return _momentum_matrix(model, q)


@native.dispatch("momentum_matrix", "the centroidal momentum matrix", batching.result)
def _momentum_matrix(model, q, *, data: Data | None = None) -> np.ndarray:
    """momentum_matrix of a model with mass (the NumPy text of cpp/support.h's momentum_matrix)."""
    return _from_composite_inertias(model, q, data, support.momentum_matrix, "the centroidal momentum matrix")


def momentum(model, q, qd) -> np.ndarray:
    """The centroidal momentum h_g = A_g qd (6,), or (N, 6): (linear [kg m/s]; angular about the centre of mass
    [kg m^2/s]); see momentum_matrix."""
    model = model if type(model) is Model else as_model(model)
    (_, V), batch = states(q=(q, model.nq), qd=(qd, model.nv))
    A = momentum_matrix(model, q)
    return np.einsum("...ij,...j->...i", A, V.T if batch is not None else V[:, 0])


def momentum_matrix_dot(model, q, qd) -> np.ndarray:
    """The time derivative of momentum_matrix along velocity qd, A_g_dot (6, nv), or (N, 6, nv): the rate of the
    centroidal momentum is h_g_dot = A_g qdd + A_g_dot qd (Pinocchio's dccrba, about physai's centre of mass). Term by
    term, with J_dot each body's centre-of-mass Jacobian's rate (support.point_jacobian_dots, MuJoCo's mj_jacDot):
        linear   sum_b m_b Jp_dot_b
        angular  sum_b (w_b x I_b - I_b w_b x) Jr_b + I_b Jr_dot_b + m_b (c_b_dot - c_dot) x Jp_b + m_b (c_b - c) x Jp_dot_b
    Computed by the NumPy engine on either backend."""
    model, total = _massive(model)
    (Q, V), batch = states(q=(q, model.nq), qd=(qd, model.nv))
    n = Q.shape[1]
    d = Data(model, n)
    kinematics(model, d, Q)
    com_pos(model, d)
    com_vel(model, d, V)
    moving = np.flatnonzero((model.body_mass > 0) & (model.body_linkid >= 0)).tolist()
    parts = []                                                 # per body: m, c_b (3, n), R (3, 3, n), J, J_dot (6, nv, n)
    for b in moving:
        link = int(model.body_linkid[b])
        in_link = model.body_pos[b] + model.body_rot[b] @ model.body_ipos[b]
        r = d.cpos[link] + np.einsum("ijn,j->in", d.xmat[link], in_link)          # c_b relative to the centre
        R = np.einsum("ijn,jk->ikn", d.xmat[link], model.body_rot[b])
        parts.append((model.body_mass[b], d.center[link] + r, R, point_jacobians(model, d, b, r[None], centered=True)[0],
                      point_jacobian_dots(model, d, b, r[None])[0]))
    c = com(model, Q.T).T                                      # (3, n); welded mass counts in c, not in its rate
    c_dot = sum(m * np.einsum("ijn,jn->in", J[:3], V) for m, _, _, J, _ in parts) / total if parts else np.zeros((3, n))
    A_dot = np.zeros((n, 6, model.nv))
    for (m, p, R, J, Jd), b in zip(parts, moving):
        J, Jd, R = J.transpose(2, 0, 1), Jd.transpose(2, 0, 1), R.transpose(2, 0, 1)              # state first
        inertia = R @ model.body_inertia[b] @ np.swapaxes(R, -1, -2)                                # I_b in world axes
        A_dot[:, :3] += m * Jd[:, :3]
        w = skew(np.einsum("nij,jn->ni", J[:, 3:], V))
        cb_dot = np.einsum("nij,jn->ni", J[:, :3], V)
        offset = skew((p - c).T)
        A_dot[:, 3:] += ((w @ inertia - inertia @ w) @ J[:, 3:] + inertia @ Jd[:, 3:]
                         + m * skew(cb_dot - c_dot.T) @ J[:, :3] + m * offset @ Jd[:, :3])
    return A_dot[0] if batch is None else A_dot

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
from physai.engine.smooth import (composite_inertias, cross_force, cross_motion, inertia_times, kinematics, motion_subspaces,
                                  position_stages, subtree_moments, subtree_sums, velocity_stages)
from physai.exceptions import InvalidModelError
from physai.kinematics import body_poses
from physai.validation import states


def _massive(model) -> tuple[Model, float]:
    """(the Model, its total mass [kg]); InvalidModelError when the mass is zero (no centre of mass). Also the compiled
    kernels' check (native.Kernel's, run only when a call fails: they return NONFINITE for a model without mass)."""
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


@native.dispatch("com_jacobian", "the centre of mass's Jacobian", batching.result, check=_massive)
def com_jacobian(model, q, *, data: Data | None = None) -> np.ndarray:
    """Jacobian (3, nv) of the centre of mass, c_dot = Jc qd [m/s], or (N, 3, nv) for q (N, nq): the momentum matrix's
    linear rows over the mass, A_g[:3] / sum_b m_b, from the positions and motion subspaces alone (the subtrees' masses
    and mass moments: support.com_jacobian; one compiled call on the compiled backend; MuJoCo's mj_jacSubtreeCom of the
    world; Pinocchio's jacobianCenterOfMass divides by the moving mass instead, see the module docstring).
    InvalidModelError for a model without mass."""
    model, _ = _massive(model)

    def compute(d, q):
        kinematics(model, d, q)
        motion_subspaces(model, d)
        subtree_moments(model, d)
        return support.com_jacobian(model, d)
    return batching.result(*batching.run(model, data, dict(q=(q, model.nq)), compute), "the centre of mass's Jacobian")


@native.dispatch("momentum_matrix", "the centroidal momentum matrix", batching.result, check=_massive)
def momentum_matrix(model, q, *, data: Data | None = None) -> np.ndarray:
    """The centroidal momentum matrix A_g (6, nv), or (N, 6, nv) for q (N, nq): h_g = A_g qd is the whole body's
    momentum, rows (linear: sum_b m_b v_b [kg m/s]; angular about the centre of mass c: sum_b I_b w_b + m_b (c_b - c) x
    v_b [kg m^2/s]), with v_b the velocity of body b's centre of mass c_b, w_b its angular velocity and I_b its inertia
    about c_b. Column j is the momentum of the subtree dof j moves, its composite inertia times cdof_j
    (physai.engine.support.momentum_matrix, one compiled call on the compiled backend). Equals (total mass times
    MuJoCo's subtree_linvel[0]; subtree_angmom[0]) after mj_subtreeVel, and Pinocchio's ccrba moved to this c.
    InvalidModelError for a model without mass."""
    model, _ = _massive(model)

    def compute(d, q):
        position_stages(model, d, q)
        composite_inertias(model, d)
        return support.momentum_matrix(model, d)
    return batching.result(*batching.run(model, data, dict(q=(q, model.nq)), compute), "the centroidal momentum matrix")


def momentum(model, q, qd) -> np.ndarray:
    """The centroidal momentum h_g = A_g qd (6,), or (N, 6): (linear [kg m/s]; angular about the centre of mass
    [kg m^2/s]); see momentum_matrix."""
    model = model if type(model) is Model else as_model(model)
    (_, V), batch = states(q=(q, model.nq), qd=(qd, model.nv))
    A = momentum_matrix(model, q)
    return np.einsum("...ij,...j->...i", A, V.T if batch is not None else V[:, 0])


@native.dispatch("momentum_matrix_dot", "the rate of the centroidal momentum matrix", batching.result, check=_massive)
def momentum_matrix_dot(model, q, qd, *, data: Data | None = None) -> np.ndarray:
    """The time derivative of momentum_matrix along velocity qd, A_g_dot (6, nv), or (N, 6, nv): the rate of the
    centroidal momentum is h_g_dot = A_g qdd + A_g_dot qd (Pinocchio's dccrba, about physai's centre of mass). One
    compiled call on the compiled backend (cpp/support.h's momentum_matrix_dot). InvalidModelError for a model without
    mass.

    The formulas (this NumPy text's and the C++'s): column j of A_g is dof j's subtree momentum F_j = Ic S_j (about
    its tree's centre O, a point fixed at this instant), its angular part moved to the centre of mass c; so, with
    v_k each link's velocity (cvel) and S_dot_j the rate of column j (cdof_dot; for a ball's or a free joint's
    rotation, cvel of its own link x S_j, as mj_jacDot):
        Ic_dot = sum over the subtree of I_k_dot,   I_k_dot = v_k x* I_k - I_k v_k x = X + X^T,  X = v_k x* I_k
        F_j_dot = Ic_dot S_j + Ic S_dot_j
        A_g_dot column j = (F_lin_dot;  F_ang_dot + (O - c) x F_lin_dot - c_dot x F_lin)"""
    model, total = _massive(model)

    def compute(d, q, qd):
        velocity_stages(model, d, q, qd)
        composite_inertias(model, d)
        n, nlink = d.n, model.nlink
        v = d.cvel[:nlink]                                                        # (nlink, 6, n)
        columns = d.cinert.transpose(0, 2, 1, 3).reshape(nlink * 6, 6, n)         # I_k's columns (I_k symmetric)
        X = cross_force(np.repeat(v, 6, axis=0), columns).reshape(nlink, 6, 6, n).transpose(0, 2, 1, 3)
        d.crb_dot = subtree_sums(model, X + X.transpose(0, 2, 1, 3))
        S, S_dot = d.cdof, d.cdof_dot.copy()
        turn = support.dof_turnlink(model)
        turning = np.flatnonzero(turn >= 0)
        if len(turning):                                                          # columns turning with their own link
            S_dot[turning] = cross_motion(d.cvel[turn[turning]], S[turning])
        link = model.dof_linkid
        F = inertia_times(d.crb[link], S)                                         # (nv, 6, n): (angular about O; linear)
        F_dot = inertia_times(d.crb_dot[link], S) + inertia_times(d.crb[link], S_dot)
        c = support.centre_of_mass(model, d)                                      # (3, n)
        com_velocity = v[:, 3:] + np.cross(v[:, :3], d.cipos, axis=1)             # each link's centre of mass (nlink, 3, n)
        c_dot = np.einsum("l,lin->in", model.link_mass, com_velocity) / total
        ang = (F_dot[:, :3] + np.cross(d.center[link] - c[None], F_dot[:, 3:], axis=1)
               - np.cross(c_dot[None], F[:, 3:], axis=1))
        return np.concatenate([F_dot[:, 3:], ang], axis=1).transpose(1, 0, 2)   # (6, nv, n)
    arrays = dict(q=(q, model.nq), qd=(qd, model.nv))
    return batching.result(*batching.run(model, data, arrays, compute), "the rate of the centroidal momentum matrix")

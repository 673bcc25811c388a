"""The Coriolis matrix C(q, qd) with Christoffel symbols, and the rate of change of the mass matrix.

The bias force of physai.dynamics splits as c(q, qd) = C(q, qd) qd + g(q). Many matrices C give the same
product C qd; this module returns the one built from the Christoffel symbols of M,

    C_ij = sum_k Gamma_ijk qd_k,    Gamma_ijk = 1/2 (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i),

which is the only C that is linear in qd with Gamma_ijk = Gamma_ikj. It has the properties controllers and
integrators rely on:

    C(q, qd) qd = c(q, qd) - g(q)                    (bias minus gravity, MuJoCo's qfrc_bias at g = 0)
    Mdot = C + C^T,  so  Mdot - 2C is skew-symmetric  (passivity: qd^T (Mdot - 2C) qd = 0)
    d(C(q, qd) qd)/d qd = 2 C(q, qd)                  (velocity derivative of the bias force, MuJoCo's
                                                       mjd_rne_vel, used by the implicit integrator)

Everything is computed at once from the engine's spatial quantities (physai.engine, taken here about the
world origin, a fixed point), in the symbols of Featherstone's book, with no differentiation. For link b with
spatial velocity v_b and inertia I_b, and dof i with motion vector S_i fixed in its link:

    Sdot_i = v_link(i) x S_i                            a joint axis turns with its link
    Idot_b = v_b x* I_b - I_b v_b x                     an inertia about a fixed point turns with its body
    B_b    = 1/2 (v_b x* I_b - I_b v_b x + (I_b v_b) xbar*)   the body's Coriolis matrix, B_b v_b = v_b x* I_b v_b

where (f xbar*) u = u x* f. With J_b the (6, nv) matrix whose column i is S_i for the dofs i that move b,
M = sum_b J_b^T I_b J_b and the Christoffel C = sum_b J_b^T (I_b Jdot_b + B_b J_b) (Echeandia and Wensing,
"Numerical methods to compute the Coriolis matrix and Christoffel symbols for rigid-body systems", 2021).
Summing over a subtree gives composite quantities, so both matrices fill like the mass matrix in CRBA: for
dof i an ancestor of dof j (or j itself), with Ic_j, Bc_j the sums over j's link and its descendants,

    Mdot_ij = Mdot_ji = Sdot_i . Ic_j S_j + S_i . (Icdot_j S_j + Ic_j Sdot_j)
    C_ij = S_i . (Ic_j Sdot_j + Bc_j S_j)
    C_ji = Sdot_i . Ic_j S_j + S_i . Bc_j^T S_j

Armature is constant, so it adds to M but not to Mdot or C. With ball or free joints the velocities are not the
time derivatives of q (angular velocities, quaternion positions); C qd = c - g and Mdot = C + C^T still hold,
and the q-derivatives below are taken along the tangent directions of physai.joints.integrate.
"""

import numpy as np

from physai import validation
from physai.engine import Data, as_model
from physai.engine.smooth import com_pos, com_vel, kinematics
from physai.spatial import cross_force, cross_motion, skew


def cross_force_bar(f: np.ndarray) -> np.ndarray:
    """6x6 matrix of u -> u x* f for a force f: cross_force_bar(f) @ u == cross_force(u) @ f; it is skew-symmetric."""
    n, f0 = skew(f[:3]), skew(f[3:])
    return -np.block([[n, f0], [f0, np.zeros((3, 3))]])


def _motion(model, q: np.ndarray, qd: np.ndarray):
    """At (q, qd), about the world origin: link inertias I and velocities v (6x6 and 6 per link), dof motion vectors
    S and their rates Sdot (6 per dof)."""
    q, qd = validation.vector("q", q, model.nq), validation.vector("qd", qd, model.nv)
    d = Data(model)
    kinematics(model, d, q[:, None], about_origin=True)
    com_pos(model, d)
    com_vel(model, d, qd[:, None])
    I, v, S = list(d.cinert[..., 0]), list(d.cvel[:-1, :, 0]), list(d.cdof[..., 0])
    Sdot = [cross_motion(v[model.dof_linkid[i]]) @ S[i] for i in range(model.nv)]   # Sdot_i = v_link(i) x S_i
    return I, v, S, Sdot


def _composite(model, X: list) -> list:
    """Subtree sums of per-link 6x6 matrices: Xc_l = X_l + sum of Xc over l's children."""
    Xc = [x.copy() for x in X]
    for i in model.backward_links:
        Xc[model.link_parents[i]] += Xc[i]
    return Xc


def _ancestors(model, j: int):
    """Dof j, then every dof between it and the root."""
    i = j
    while i >= 0:
        yield i
        i = model.dof_parentid[i]


def _each_state(one, model, **arrays) -> np.ndarray:
    """one(model, *arrays) of one state, or of each of N stacked (N, ...): the arrays given by name with their sizes
    (q=(x, nq), ...), each one state (size,) or N (N, size) (one state shared by the batch; physai.validation.states)."""
    columns, batch = validation.states(**arrays)
    if batch is None:
        return one(model, *(c[:, 0] for c in columns))
    return np.stack([one(model, *(c[:, k] for c in columns)) for k in range(batch)])


def mass_matrix_dot(model, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """Time derivative of the mass matrix, Mdot = dM/dt along the motion (nv, nv) [kg m^2/s | kg/s].

    Computed analytically from Sdot_i = v_link(i) x S_i and Idot_b = v_b x* I_b - I_b v_b x; equals C + C^T.
    q (nq,), qd (nv,), or N states (N, nq), (N, nv) giving (N, nv, nv); model: a physai.engine.Model or anything
    physai.engine.as_model takes.
    """
    model = as_model(model)
    return _each_state(_mass_matrix_dot, model, q=(q, model.nq), qd=(qd, model.nv))


def _mass_matrix_dot(model, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """Mdot (nv, nv) of one state (mass_matrix_dot)."""
    I, v, S, Sdot = _motion(model, q, qd)
    Ic = _composite(model, I)
    Icdot = _composite(model, [cross_force(vb) @ Ib - Ib @ cross_motion(vb) for vb, Ib in zip(v, I)])
    Mdot = np.zeros((model.nv, model.nv))
    for j in range(model.nv):
        b = model.dof_linkid[j]
        F, Fdot = Ic[b] @ S[j], Icdot[b] @ S[j] + Ic[b] @ Sdot[j]   # F = Ic_j S_j and its rate
        for i in _ancestors(model, j):                # d/dt (S_i . F) for every dof between j and the root
            Mdot[i, j] = Mdot[j, i] = Sdot[i] @ F + S[i] @ Fdot
    return Mdot


def coriolis_matrix(model, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """Coriolis and centrifugal matrix C(q, qd) (nv, nv) built from the Christoffel symbols of M [N m s | N s].

    C_ij = sum_k Gamma_ijk qd_k with Gamma_ijk = 1/2 (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i). Then
      C qd = bias(q, qd) - gravity(q)       (the velocity-dependent part of MuJoCo's qfrc_bias),
      Mdot - 2C is skew-symmetric           (Mdot = C + C^T),
      d(C(q, qd) qd)/d qd = 2 C(q, qd)      (because Gamma_ijk = Gamma_ikj: the velocity Jacobian of the bias
                                             force, MuJoCo's mjd_rne_vel, is 2C; the implicit integrator uses it).
    q (nq,), qd (nv,), or N states (N, nq), (N, nv) giving (N, nv, nv).
    """
    model = as_model(model)
    return _each_state(_coriolis_matrix, model, q=(q, model.nq), qd=(qd, model.nv))


def _coriolis_matrix(model, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """C (nv, nv) of one state (coriolis_matrix)."""
    I, v, S, Sdot = _motion(model, q, qd)
    Ic = _composite(model, I)
    Bc = _composite(model, [0.5 * (cross_force(vb) @ Ib - Ib @ cross_motion(vb) + cross_force_bar(Ib @ vb))
                            for vb, Ib in zip(v, I)])
    C = np.zeros((model.nv, model.nv))
    for j in range(model.nv):
        b = model.dof_linkid[j]
        f1 = Ic[b] @ Sdot[j] + Bc[b] @ S[j]            # C_ij = S_i . f1
        f2, f3 = Ic[b] @ S[j], Bc[b].T @ S[j]          # C_ji = Sdot_i . f2 + S_i . f3
        for i in _ancestors(model, j):                 # every dof i between j and the root
            C[i, j] = S[i] @ f1
            if i != j:
                C[j, i] = Sdot[i] @ f2 + S[i] @ f3
    return C


def mass_matrix_derivatives(model, q: np.ndarray) -> np.ndarray:
    """Partial derivatives of the mass matrix, dM[i, j, k] = dM_ij/dq_k (nv, nv, nv).

    Mdot is linear in qd, so dM/dq_k is mass_matrix_dot at qd = e_k (the k-th unit vector); for ball and free
    joints that is the derivative along the k-th tangent direction of physai.joints.integrate. q (nq,), or N states
    (N, nq) giving (N, nv, nv, nv).
    """
    model = as_model(model)
    return _each_state(lambda model, q: _columns(model, [_mass_matrix_dot(model, q, e) for e in np.eye(model.nv)]),
                       model, q=(q, model.nq))


def christoffel_symbols(model, q: np.ndarray) -> np.ndarray:
    """Christoffel symbols of the first kind, Gamma[i, j, k] = Gamma_ijk (nv, nv, nv), so that C = Gamma @ qd.

    Gamma_ijk = 1/2 (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i) = Gamma_ikj; C is linear in qd, so
    Gamma[:, :, k] is coriolis_matrix at qd = e_k. q (nq,), or N states (N, nq) giving (N, nv, nv, nv).
    """
    model = as_model(model)
    return _each_state(lambda model, q: _columns(model, [_coriolis_matrix(model, q, e) for e in np.eye(model.nv)]),
                       model, q=(q, model.nq))


def _columns(model, matrices: list) -> np.ndarray:
    """(nv, nv, nv) with [:, :, k] the k-th of the nv matrices (nv, nv); (0, 0, 0) for a model without dofs."""
    return np.stack(matrices, axis=-1) if matrices else np.zeros((model.nv,) * 3)

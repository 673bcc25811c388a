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

Everything is computed at once from spatial quantities about the world origin (physai.spatial), in the
symbols of Featherstone's book, with no differentiation. For body b with spatial velocity v_b and inertia I_b:

    Sdot_i = v_i x S_i                                  a joint axis turns with its body
    Idot_b = v_b x* I_b - I_b v_b x                     an inertia about a fixed point turns with its body
    B_b    = 1/2 (v_b x* I_b - I_b v_b x + (I_b v_b) xbar*)   the body's Coriolis matrix, B_b v_b = v_b x* I_b v_b

where (f xbar*) u = u x* f. With J_b the (6, nv) matrix whose column i is S_i for the joints i that move b,
M = sum_b J_b^T I_b J_b and the Christoffel C = sum_b J_b^T (I_b Jdot_b + B_b J_b) (Echeandia and Wensing,
"Numerical methods to compute the Coriolis matrix and Christoffel symbols for rigid-body systems", 2021).
Summing over a subtree gives composite quantities, so both matrices fill like the mass matrix in CRBA: for
i an ancestor of j (or j itself), with Ic_j, Bc_j the sums over j and its descendants,

    Mdot_ij = Mdot_ji = Sdot_i . Ic_j S_j + S_i . (Icdot_j S_j + Ic_j Sdot_j)
    C_ij = S_i . (Ic_j Sdot_j + Bc_j S_j)
    C_ji = Sdot_i . Ic_j S_j + S_i . Bc_j^T S_j

Armature is constant, so it adds to M but not to Mdot or C.
"""

import numpy as np

from physai import _checks
from physai.dynamics import Tree, _dof_of, spatial_tree
from physai.spatial import cross_force, cross_motion, skew


def cross_force_bar(f: np.ndarray) -> np.ndarray:
    """6x6 matrix of u -> u x* f for a force f: cross_force_bar(f) @ u == cross_force(u) @ f; it is skew-symmetric."""
    n, f0 = skew(f[:3]), skew(f[3:])
    return -np.block([[n, f0], [f0, np.zeros((3, 3))]])


def _motion(tree: Tree, q: np.ndarray, qd: np.ndarray):
    """Inertias I, motion vectors S, their rates Sdot, body velocities v and dof indices at (q, qd)."""
    qd = _checks.vector("qd", qd, tree.nv)
    _, I, S = spatial_tree(tree, q)
    dof = _dof_of(S)
    v = []
    for i, b in enumerate(tree.bodies):                # outward: v_i = v_parent + S_i qd_i
        vi = v[b.parent] if b.parent >= 0 else np.zeros(6)
        v.append(vi + S[i] * qd[dof[i]] if dof[i] is not None else vi)
    Sdot = [cross_motion(vi) @ s if s is not None else None for vi, s in zip(v, S)]   # Sdot_i = v_i x S_i
    return I, S, Sdot, v, dof


def _composite(tree: Tree, X: list) -> list:
    """Subtree sums of per-body 6x6 matrices: Xc_i = X_i + sum of Xc over i's children."""
    Xc = [x.copy() for x in X]
    for i in reversed(range(len(tree.bodies))):
        if tree.bodies[i].parent >= 0:
            Xc[tree.bodies[i].parent] += Xc[i]
    return Xc


def mass_matrix_dot(tree: Tree, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """Time derivative of the mass matrix, Mdot = dM/dt = sum_k dM/dq_k qd_k (nv, nv) [kg m^2/s | kg/s].

    Computed analytically from Sdot_i = v_i x S_i and Idot_b = v_b x* I_b - I_b v_b x; equals C + C^T.
    """
    I, S, Sdot, v, dof = _motion(tree, q, qd)
    Ic = _composite(tree, I)
    Icdot = _composite(tree, [cross_force(vb) @ Ib - Ib @ cross_motion(vb) for vb, Ib in zip(v, I)])
    Mdot = np.zeros((tree.nv, tree.nv))
    for j in range(len(tree.bodies)):
        if dof[j] is None:
            continue
        F, Fdot = Ic[j] @ S[j], Icdot[j] @ S[j] + Ic[j] @ Sdot[j]   # F = Ic_j S_j and its rate
        i = j
        while i >= 0:                                  # d/dt (S_i . F) for every joint between j and the base
            if dof[i] is not None:
                Mdot[dof[i], dof[j]] = Mdot[dof[j], dof[i]] = Sdot[i] @ F + S[i] @ Fdot
            i = tree.bodies[i].parent
    return Mdot


def coriolis_matrix(tree: Tree, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """Coriolis and centrifugal matrix C(q, qd) (nv, nv) built from the Christoffel symbols of M [N m s | N s].

    C_ij = sum_k Gamma_ijk qd_k with Gamma_ijk = 1/2 (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i). Then
      C qd = bias(q, qd) - gravity(q)       (the velocity-dependent part of MuJoCo's qfrc_bias),
      Mdot - 2C is skew-symmetric           (Mdot = C + C^T),
      d(C(q, qd) qd)/d qd = 2 C(q, qd)      (because Gamma_ijk = Gamma_ikj: the velocity Jacobian of the bias
                                             force, MuJoCo's mjd_rne_vel, is 2C; the implicit integrator uses it).
    """
    I, S, Sdot, v, dof = _motion(tree, q, qd)
    Ic = _composite(tree, I)
    Bc = _composite(tree, [0.5 * (cross_force(vb) @ Ib - Ib @ cross_motion(vb) + cross_force_bar(Ib @ vb))
                           for vb, Ib in zip(v, I)])
    C = np.zeros((tree.nv, tree.nv))
    for j in range(len(tree.bodies)):
        if dof[j] is None:
            continue
        f1 = Ic[j] @ Sdot[j] + Bc[j] @ S[j]            # C_ij = S_i . f1
        f2, f3 = Ic[j] @ S[j], Bc[j].T @ S[j]          # C_ji = Sdot_i . f2 + S_i . f3
        i = j
        while i >= 0:                                  # every joint i between j and the base
            if dof[i] is not None:
                C[dof[i], dof[j]] = S[i] @ f1
                if i != j:
                    C[dof[j], dof[i]] = Sdot[i] @ f2 + S[i] @ f3
            i = tree.bodies[i].parent
    return C


def mass_matrix_derivatives(tree: Tree, q: np.ndarray) -> np.ndarray:
    """Partial derivatives of the mass matrix, dM[i, j, k] = dM_ij/dq_k (nv, nv, nv).

    Mdot is linear in qd, so dM/dq_k is mass_matrix_dot at qd = e_k (the k-th unit vector).
    """
    E = np.eye(tree.nv)
    return np.stack([mass_matrix_dot(tree, q, E[k]) for k in range(tree.nv)], axis=-1)


def christoffel_symbols(tree: Tree, q: np.ndarray) -> np.ndarray:
    """Christoffel symbols of the first kind, Gamma[i, j, k] = Gamma_ijk (nv, nv, nv), so that C = Gamma @ qd.

    Gamma_ijk = 1/2 (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i) = Gamma_ikj; C is linear in qd, so
    Gamma[:, :, k] is coriolis_matrix at qd = e_k.
    """
    E = np.eye(tree.nv)
    return np.stack([coriolis_matrix(tree, q, E[k]) for k in range(tree.nv)], axis=-1)

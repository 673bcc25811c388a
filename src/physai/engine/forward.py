"""Forward dynamics' stages on a Data workspace (mirrored function by function by the compiled engine's cpp/forward.h):

    cholesky_solve(M, b)        x with M x = b for symmetric positive definite M, state last   (the constraint solver's H)
    tree_cholesky_solve(model, M, b)  the same for M on the tree's pattern: M = L^T L, no fill-in  (mj_factorM, mj_solveM)
    block_inverse(D)            inverse of each link's 1x1 or 3x3 joint-space block (by its adjugate)
    aba(model, d, qd, tau)      qdd by the articulated-body algorithm                            (RBDA table 7.1)

Both solves are written as the C++ writes them (the Cholesky factor column by column, the 3x3 inverse by its
adjugate), vectorized over the states: the two backends take the same steps.
"""

import numpy as np

from physai.engine.data import Data
from physai.engine.model import Model
from physai.engine.smooth import base_acceleration, cross_force, inertia_times, per_link
from physai.exceptions import InvalidModelError
from physai.linalg import SINGULAR, pivot_error


def cholesky_solve(M: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x (nv, n) with M x = b for M (nv, nv, n) symmetric positive definite and b (nv, n): M = L L^T, L y = b, L^T x = y.

    Raises InvalidModelError when a pivot is not positive (M singular: a dof without mass or armature)."""
    n = len(M)
    L = np.zeros_like(M)
    # L_jj = sqrt(M_jj - sum_k<j L_jk^2),  L_ij = (M_ij - sum_k<j L_ik L_jk) / L_jj  for i > j
    for j in range(n):
        s = M[j, j] - np.einsum("kn,kn->n", L[j, :j], L[j, :j]) if j else M[j, j].copy()
        if not (s > 0).all():
            raise pivot_error(s)
        L[j, j] = np.sqrt(s)
        if j + 1 < n:
            L[j + 1:, j] = (M[j + 1:, j] - np.einsum("ikn,kn->in", L[j + 1:, :j], L[j, :j])) / L[j, j]
    x = np.empty_like(b)
    for i in range(n):                                                 # L y = b
        x[i] = (b[i] - np.einsum("kn,kn->n", L[i, :i], x[:i])) / L[i, i]
    for i in reversed(range(n)):                                       # L^T x = y
        x[i] = (x[i] - np.einsum("kn,kn->n", L[i + 1:, i], x[i + 1:])) / L[i, i]
    return x


def tree_cholesky_solve(model: Model, M: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x (nv, n) with M x = b for M (nv, nv, n) on the tree's pattern (M_ij = 0 unless dofs i and j are on one path to
    the root: the mass matrix, and the steppers' M + h B and M - h D): M = L^T L with L lower triangular on the same
    pattern, eliminating the last dof first, which fills nothing in (MuJoCo's mj_factorM as L^T L); L^T y = b, L x = y.
    Work O(sum of the dofs' depths squared) against cholesky_solve's O(nv^3).

    Raises InvalidModelError when a pivot is not positive (M singular: a dof without mass or armature)."""
    ancestors = dof_ancestors(model)
    L = M.copy()
    for k in reversed(range(len(M))):
        a = ancestors[k]
        if not (L[k, k] > 0).all():
            raise pivot_error(L[k, k])
        L[k, k] = np.sqrt(L[k, k])
        if a:
            L[k, a] = L[k, a] * (1.0 / L[k, k])                        # L_ki = M_ki / L_kk
            # M_ij -= L_ki L_kj for ancestors i, j of k (one chain: all on the pattern; the upper triangle is not read)
            L[np.ix_(a, a)] -= L[k, a][:, None] * L[k, a][None, :]
    x = b.copy()
    for k in reversed(range(len(M))):                                  # L^T y = b
        x[k] = x[k] / L[k, k]
        x[ancestors[k]] -= L[k, ancestors[k]] * x[k]
    for k in range(len(M)):                                            # L x = y
        a = ancestors[k]
        x[k] = (x[k] - np.einsum("kn,kn->n", L[k, a], x[a])) / L[k, k]
    return x


def dof_ancestors(model: Model) -> list[list[int]]:
    """Each dof's ancestors on dof_parentid's chain, from the root (the columns left of the diagonal in M's row: MuJoCo's
    M_colind, which the compiled model derives the same way). Made once per model and kept."""
    def make(model):
        chains: list[list[int]] = []
        for p in model.dof_parentid.tolist():
            chains.append([] if p < 0 else chains[p] + [p])
        return chains
    return model.kept("dof_ancestors", make)


def block_inverse(D: np.ndarray) -> np.ndarray:
    """Inverse (k, k, n) of symmetric k x k blocks D (k, k, n), k = 1 or 3, by the adjugate; InvalidModelError when
    a determinant is zero."""
    if D.shape[0] == 1:
        if (D == 0).any():
            raise InvalidModelError(SINGULAR)
        return 1.0 / D
    A = np.empty_like(D)                                               # adjugate: A = det(D) D^-1
    for r in range(3):
        for c in range(3):
            r1, r2, c1, c2 = (c + 1) % 3, (c + 2) % 3, (r + 1) % 3, (r + 2) % 3
            A[r, c] = D[r1, c1] * D[r2, c2] - D[r1, c2] * D[r2, c1]
    det = D[0, 0] * A[0, 0] + D[0, 1] * A[1, 0] + D[0, 2] * A[2, 0]
    if (det == 0).any():
        raise InvalidModelError(SINGULAR)
    return A * (1.0 / det)


def aba(model: Model, d: Data, qd: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """qdd (nv, n) by the articulated-body algorithm (RBDA table 7.1) from a Data with positions and velocities done.

    Works about the centres in the world frame, so no coordinate changes between links are needed; a link's dofs form
    one block D (1 x 1 for hinges and slides, 3 x 3 for balls). Fills d.cacc.
    """
    arm, parents, adr, num = model.dof_armature, model.link_parents, model.link_dofadr, model.link_dofnum
    c = list(per_link(model, d.cdof_dot * qd[:, None, :]))           # velocity-product accelerations (6, n)
    IA = list(d.cinert.copy())                                         # articulated inertias (6, 6, n)
    # pA = v x* (I v): bias forces
    pA = list(cross_force(d.cvel[:-1], inertia_times(d.cinert, d.cvel[:-1])))
    S, U, Dinv, u = [None] * model.nlink, [None] * model.nlink, [None] * model.nlink, [None] * model.nlink
    # backward pass over links: U = IA S, D = S^T U + armature, u = tau - S^T pA;
    # the parent gets Ia = IA - U D^-1 U^T and pA + Ia c + U D^-1 u
    for i in reversed(range(model.nlink)):
        k = slice(adr[i], adr[i] + num[i])
        S[i] = d.cdof[k]                                               # (k, 6, n)
        U[i] = np.einsum("ijn,ajn->ain", IA[i], S[i])
        D = np.einsum("ain,bin->abn", S[i], U[i])
        D[np.arange(num[i]), np.arange(num[i])] += arm[k, None]
        Dinv[i] = block_inverse(D)
        u[i] = tau[k] - np.einsum("ain,in->an", S[i], pA[i])
        p = parents[i]
        if p >= 0:
            UD = np.einsum("ain,abn->bin", U[i], Dinv[i])              # (U D^-1)^T rows
            Ia = IA[i] - np.einsum("bin,bjn->ijn", UD, U[i])
            np.add(IA[p], Ia, out=IA[p])
            np.add(pA[p], pA[i] + np.einsum("ijn,jn->in", Ia, c[i]) + np.einsum("bin,bn->in", UD, u[i]), out=pA[p])
    a, qdd = np.empty((model.nlink + 1, 6, d.n)), np.empty((model.nv, d.n))
    a[-1] = base_acceleration(model)
    As = list(a)
    # forward pass over links: a' = a_parent + c, qdd = D^-1 (u - U^T a'), a = a' + S^T qdd
    for i, p in enumerate(parents):
        k = slice(adr[i], adr[i] + num[i])
        np.add(As[p], c[i], out=As[i])
        qdd[k] = np.einsum("abn,bn->an", Dinv[i], u[i] - np.einsum("ain,in->an", U[i], As[i]))
        As[i] += np.einsum("ain,an->in", S[i], qdd[k])
    d.cacc = a
    return qdd

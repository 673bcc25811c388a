"""Rigid-body dynamics on a compiled Model, for one state or a batch of N states at once.

Every public function takes joint arrays of shape (nv,) for one state or (N, nv) for N states (a single
(nv,) argument is shared by a batch) and returns results with the batch dimension of its input:

    rnea(model, q, qd, qdd)              tau = M(q) qdd + C(q, qd) qd + g(q)  (nv,) | (N, nv)  [N m | N]
    bias(model, q, qd)                   c = C(q, qd) qd + g(q) = rnea(q, qd, 0)   (MuJoCo's qfrc_bias)
    gravity(model, q)                    g(q) = rnea(q, 0, 0)
    mass_matrix(model, q)                M(q) by composite rigid bodies, armature on the diagonal
                                         (nv, nv) | (N, nv, nv)                    (mj_fullM)
    forward_dynamics(model, q, qd, tau)  qdd = M(q)^-1 (tau - c)                    (mj_forward's qacc)
    aba(model, q, qd, tau)               the same qdd by the articulated-body algorithm (pin.aba)
    kinetic_energy, potential_energy, energy    [J], () | (N,)              (MuJoCo's energy)

They run the stages below, named after MuJoCo's engine_core_smooth.c, on a Data workspace whose arrays
keep the state index last (see physai.engine.data). Each stage is one forward and/or one backward loop
over bodies, parents before children; everything that is independent per body is one numpy operation
over all bodies and all states. Pass data=Data(model, N) to keep the intermediate quantities.

    kinematics(model, d, q)     body poses                         xmat, cpos, center
    com_pos(model, d)           inertias and motion subspaces      cipos, cinert, cdof
    com_vel(model, d, qd)       velocities                         cvel, cdof_dot
    rne(model, d, qd, qdd)      recursive Newton-Euler             cacc, cfrc, qfrc
    crb(model, d)               composite rigid bodies             crb, qM
"""

import numpy as np

from physai import _linalg as linalg
from physai.engine._checks import states
from physai.engine.data import Data
from physai.engine.model import Model
from physai.exceptions import InvalidModelError, ShapeError

# skew(v)[i, j] = _SKEW_SIGN[i, j] * v[_SKEW_IDX[i, j]]: the cross-product matrix gathered from v
_SKEW_IDX = np.array([[0, 2, 1], [2, 0, 0], [1, 0, 0]])
_SKEW_SIGN = np.array([[0.0, -1, 1], [1, 0, -1], [-1, 1, 0]])[:, :, None]
# a x b = a[_L1] b[_L2] - a[_L2] b[_L1]; three crosses of 6-vectors' halves at once, products (k, 18, n) minus
# (angular = 0:3, linear = 3:6):
#   motion  v x m  = (w x m_ang, w x m_lin + u x m_ang)          for v = (w, u)
#   force   v x* f = (w x f_ang + u x f_lin, w x f_lin)
_L1, _L2 = np.array([1, 2, 0]), np.array([2, 0, 1])
_XM_V = np.r_[_L1, _L1, _L1 + 3, _L2, _L2, _L2 + 3]
_XM_M = np.r_[_L2, _L2 + 3, _L2, _L1, _L1 + 3, _L1]
_XF_V = np.r_[_L1, _L1 + 3, _L1, _L2, _L2 + 3, _L2]
_XF_F = np.r_[_L2, _L2 + 3, _L2 + 3, _L1, _L1 + 3, _L1 + 3]
# cinert[i, j] = P[_CINERT_IDX[i, j]] for P = (Ibar row-major (9) | h (3) | -h (3) | m | 0): [[Ibar, skew(h)], [-skew(h), m 1]]
_CINERT_IDX = np.full((6, 6), 16)
_CINERT_IDX[:3, :3] = np.arange(9).reshape(3, 3)
_CINERT_IDX[:3, 3:] = np.where(_SKEW_SIGN[:, :, 0] > 0, 9, 12) + _SKEW_IDX
_CINERT_IDX[3:, :3] = np.where(_SKEW_SIGN[:, :, 0] > 0, 12, 9) + _SKEW_IDX
_CINERT_IDX[3:, 3:][np.diag_indices(3)] = 15
_CINERT_IDX[np.arange(3), np.arange(3) + 3] = _CINERT_IDX[np.arange(3) + 3, np.arange(3)] = 16


def _cross_motion(v: np.ndarray, m: np.ndarray) -> np.ndarray:
    """v x m (Featherstone's crm(v) m) for motion vectors stacked as (k, 6, n)."""
    P = v[:, _XM_V] * m[:, _XM_M]
    r = P[:, :9] - P[:, 9:]                                            # w x m_ang, w x m_lin, u x m_ang
    r[:, 3:6] += r[:, 6:9]
    return r[:, :6]


def _cross_force(v: np.ndarray, f: np.ndarray) -> np.ndarray:
    """v x* f (Featherstone's crf(v) f = -crm(v)^T f) for a motion vector v and a force f, stacked as (k, 6, n)."""
    P = v[:, _XF_V] * f[:, _XF_F]
    r = P[:, :9] - P[:, 9:]                                            # w x f_ang, u x f_lin, w x f_lin
    r[:, 3:6] += r[:, 0:3]
    return r[:, 3:]


def _model(model) -> Model:
    if not isinstance(model, Model):
        raise InvalidModelError(f"model must be a physai.engine.Model (from engine.compile_tree(tree)), got {type(model).__name__}")
    return model


def _data(model: Model, data, batch) -> Data:
    n = 1 if batch is None else batch
    if data is None:
        return Data(model, n)
    if not isinstance(data, Data) or data.n != n:
        got = f"a Data for {data.n} states" if isinstance(data, Data) else type(data).__name__
        raise ShapeError(f"data must be a physai.engine.Data for {n} states (Data(model, {n})), got {got}")
    if data.model is not model:
        raise InvalidModelError("data was made for another Model; use Data(model, n) with the model you pass")
    return data


def _out(x: np.ndarray, batch):
    """Engine layout (..., n) to the caller's: (N, ...) for a batch, (...) for a single state."""
    if batch is None:
        return x[..., 0].copy()
    return np.ascontiguousarray(np.moveaxis(x[..., :batch], -1, 0))


# ---------------------------------------------------------------- position

def kinematics(model: Model, d: Data, q: np.ndarray) -> None:
    """Body poses at joint positions q (nv, n): d.xmat, d.cpos (origin relative to the centre), d.center."""
    # jcalc for all joints at once: T_loc = G (1, t, sin t, 1 - cos t), the 3x4 pose in the parent frame
    coef = np.empty((model.nv, 4, d.ncol))
    coef[:, 0] = 1.0
    t = np.subtract(q, model.dof_ref[:, None], out=coef[:, 1])
    # sin t = 2u / (1 + u^2), 1 - cos t = 2u^2 / (1 + u^2), u = tan(t/2): one tan (numpy vectorizes float64 tan
    # but not sin and cos, 7x slower each), and 1 - cos t keeps its relative precision for small t
    u = np.tan(0.5 * t)
    u2 = u * u
    r = 2.0 / (1.0 + u2)
    np.multiply(u, r, out=coef[:, 2])
    np.multiply(u2, r, out=coef[:, 3])
    T_loc = np.matmul(model.jnt_G.reshape(-1, 12, 4), coef).reshape(-1, 3, 4, d.ncol)
    T = np.empty_like(T_loc)                                           # (nbody, 3, 4, n): [xmat | cpos]
    R, x = T[:, :, :3], T[:, :, 3]
    center = np.empty((model.nbody, 3, d.ncol))
    Ts, Rs, xs, Ls = list(T), list(R), list(x), list(T_loc)            # per-body views
    # forward pass over bodies: R = R_parent R_loc, x = x_parent + R_parent p_loc (roots: x = 0, centre = p_loc)
    for i, p in enumerate(model._parents):
        if p < 0:
            Ts[i][...] = Ls[i]
            xs[i][...] = 0.0
            center[i] = Ls[i][:, 3]
        else:
            np.einsum("ikn,kjn->ijn", Rs[p], Ls[i], out=Ts[i])
            np.add(xs[i], xs[p], out=xs[i])
    d.xmat, d.cpos, d.center = R, x, center[model.body_rootid]


# ---------------------------------------------------------------- inertia

def com_pos(model: Model, d: Data) -> None:
    """Spatial inertias d.cinert, centres of mass d.cipos and motion subspaces d.cdof, about the centres."""
    R, x, m = d.xmat, d.cpos, model.body_mass[:, None, None]
    # c = x + R ipos;  h = m c
    d.cipos = c = x + np.matmul(model.body_ipos[:, None, None, :], R)[:, :, 0]
    # cinert = [[R I R^T + m (c.c 1 - c c^T), skew(h)], [skew(h)^T, m 1]], h = m c, gathered from
    # P = (its top-left 3x3 | h | -h | m | 0)
    P = np.empty((model.nbody, 17, d.ncol))
    Ibar, h = P[:, :9].reshape(-1, 3, 3, d.ncol), P[:, 9:12]
    np.multiply(m, c, out=h)
    np.negative(h, out=P[:, 12:15])
    RI = np.matmul(model.body_inertia[:, None], R)                     # (R I)[b, i, k, n]; I is symmetric
    np.einsum("bikn,bjkn->bijn", RI, R, out=Ibar)
    Ibar -= h[:, :, None] * c[:, None, :]
    hc = np.einsum("bin,bin->bn", h, c)
    for k in (0, 4, 8):
        P[:, k] += hc
    P[:, 15] = model.body_mass[:, None]
    P[:, 16] = 0.0
    d.cinert = P[:, _CINERT_IDX]
    # cdof = (R s_ang, x x (R s_ang) + R s_lin): the body-frame motion subspace moved to the centre
    S = np.empty((model.nv, 6, d.ncol))
    np.matmul(model.dof_motion.reshape(-1, 1, 2, 3), R, out=S.reshape(-1, 2, 3, d.ncol).transpose(0, 2, 1, 3))
    S[:, 3:] += x[:, _L1] * S[:, _L2] - x[:, _L2] * S[:, _L1]
    d.cdof = S


# ---------------------------------------------------------------- velocity

def com_vel(model: Model, d: Data, qd: np.ndarray) -> None:
    """Body velocities d.cvel and d.cdof_dot = cvel x cdof."""
    Sqd = d.cdof * qd[:, None, :]                                      # (nv, 6, n)
    v = np.empty((model.nbody, 6, d.ncol))
    vs, Ss = list(v), list(Sqd)
    # forward pass over bodies: v = v_parent + S qd
    for i, p in enumerate(model._parents):
        if p < 0:
            vs[i][...] = Ss[i]
        else:
            np.add(vs[p], Ss[i], out=vs[i])
    d.cvel = v
    # cdof_dot = v x S
    d.cdof_dot = _cross_motion(v, d.cdof)


# ---------------------------------------------------------------- RNE

def rne(model: Model, d: Data, qd: np.ndarray | None, qdd: np.ndarray | None) -> np.ndarray:
    """Recursive Newton-Euler on a Data with positions (and, if qd is given, velocities) done.

    Returns d.qfrc = M qdd + C qd + g (nv, n); qd None means qd = 0 and qdd None means qdd = 0
    (MuJoCo's flg_acc), so rne(model, d, None, None) is g(q).
    """
    a_g = model._a_g                                                   # (0, -gravity): gravity as an upward base acceleration
    if qd is None and qdd is None:
        # every body accelerates at a_g: f = cinert a_g
        f = np.einsum("bijn,j->bin", d.cinert, a_g[:, 0])
    else:
        inc = 0.0
        if qdd is not None:
            inc = d.cdof * qdd[:, None, :]
        if qd is not None:
            inc = inc + d.cdof_dot * qd[:, None, :]
        a = np.empty((model.nbody, 6, d.ncol))
        As, incs = list(a), list(inc)
        # forward pass over bodies: a = a_parent + S qdd + cdof_dot qd
        for i, p in enumerate(model._parents):
            np.add(a_g if p < 0 else As[p], incs[i], out=As[i])
        d.cacc = a
        # f = cinert a + v x* (cinert v)
        f = np.einsum("bijn,bjn->bin", d.cinert, a)
        if qd is not None:
            f += _cross_force(d.cvel, np.einsum("bijn,bjn->bin", d.cinert, d.cvel))
    # backward pass over bodies: f_parent += f
    fs, parents = list(f), model._parents
    for i in model._children:
        np.add(fs[parents[i]], fs[i], out=fs[parents[i]])
    d.cfrc = f
    # tau = S . f + armature qdd
    tau = np.einsum("bin,bin->bn", d.cdof, f)
    if qdd is not None:
        tau += model.dof_armature[:, None] * qdd
    d.qfrc = tau
    return tau


# ---------------------------------------------------------------- CRBA

def crb(model: Model, d: Data) -> np.ndarray:
    """Composite inertias d.crb and the joint-space inertia d.qM = M(q) (nv, nv, n), armature included."""
    Ic = d.cinert.copy()
    Ics, parents = list(Ic), model._parents
    # backward pass over bodies: Ic_parent += Ic
    for i in model._children:
        np.add(Ics[parents[i]], Ics[i], out=Ics[parents[i]])
    d.crb = Ic
    # M_ij = S_i . (Ic_j S_j) for i = j or an ancestor of j, M_ji = M_ij, 0 between unrelated branches
    F = np.einsum("bijn,bjn->bin", Ic, d.cdof)
    SF = np.einsum("ikn,jkn->ijn", d.cdof, F)
    M = SF[model.dof_Mrow, model.dof_Mcol] * model.dof_Mmask
    M[model._diag] += model.dof_armature[:, None]
    d.qM = M
    return M


# ---------------------------------------------------------------- public functions

#: states per chunk of a large batch: arrays stay a few MB (cache-sized, reused by malloc instead of page-faulted)
CHUNK = 1024


def _batched(model, data, arrays: dict, compute):
    """Check the joint arrays, run compute(d, *arrays) on the states, chunk by chunk; returns (result, batch).

    A large batch runs in near-equal chunks of at most CHUNK states (each at least 2, so results are
    bit-for-bit those of any other split); with data given, everything runs at once in it.
    """
    model = _model(model)
    cols, batch = states(model.nv, **arrays)
    n = cols[0].shape[1]
    if data is not None or n <= CHUNK:
        return compute(_data(model, data, batch), *cols), batch
    bounds = np.linspace(0, n, -(-n // CHUNK) + 1).astype(int)
    parts = [compute(Data(model, hi - lo), *(np.ascontiguousarray(c[:, lo:hi]) for c in cols))
             for lo, hi in zip(bounds[:-1], bounds[1:])]
    return np.concatenate(parts, axis=-1), batch


def rnea(model: Model, q, qd, qdd, *, data: Data | None = None) -> np.ndarray:
    """Inverse dynamics by recursive Newton-Euler: the joint forces that give accelerations qdd at (q, qd).

    tau = M(q) qdd + C(q, qd) qd + g(q), armature included; equals physai.dynamics.rnea, pin.rnea and, on a
    model without constraints, MuJoCo's qfrc_inverse + qfrc_passive.

    Args:
        model: compiled Model.
        q: joint positions (nv,) or (N, nv) [rad | m].
        qd: joint velocities, same shapes [rad/s | m/s].
        qdd: joint accelerations, same shapes [rad/s^2 | m/s^2].
        data: optional Data(model, N or 1) that keeps the intermediate quantities.

    Returns:
        tau (nv,) or (N, nv) [N m | N].
    """
    def compute(d, q, qd, qdd):
        kinematics(model, d, q)
        com_pos(model, d)
        com_vel(model, d, qd)
        return rne(model, d, qd, qdd)
    return _out(*_batched(model, data, dict(q=q, qd=qd, qdd=qdd), compute))


def bias(model: Model, q, qd, *, data: Data | None = None) -> np.ndarray:
    """Bias force c(q, qd) = C(q, qd) qd + g(q) (nv,) or (N, nv) [N m | N].

    Equals rnea(model, q, qd, 0), physai.dynamics.bias, pin.nonLinearEffects and MuJoCo's qfrc_bias.
    """
    def compute(d, q, qd):
        kinematics(model, d, q)
        com_pos(model, d)
        com_vel(model, d, qd)
        return rne(model, d, qd, None)
    return _out(*_batched(model, data, dict(q=q, qd=qd), compute))


def gravity(model: Model, q, *, data: Data | None = None) -> np.ndarray:
    """Gravity torques g(q) (nv,) or (N, nv) [N m | N], the joint forces that hold the tree still.

    Equals rnea(model, q, 0, 0), physai.dynamics.gravity and pin.computeGeneralizedGravity.
    """
    def compute(d, q):
        kinematics(model, d, q)
        com_pos(model, d)
        return rne(model, d, None, None)
    return _out(*_batched(model, data, dict(q=q), compute))


def mass_matrix(model: Model, q, *, data: Data | None = None) -> np.ndarray:
    """Joint-space inertia M(q) by composite rigid bodies, armature on the diagonal, symmetric.

    (nv, nv) for q (nv,), (N, nv, nv) for q (N, nv) [kg m^2 | kg m | kg]. Equals physai.dynamics.mass_matrix,
    MuJoCo's mj_fullM and pin.crba (whose upper triangle Pinocchio fills).
    """
    def compute(d, q):
        kinematics(model, d, q)
        com_pos(model, d)
        return crb(model, d)
    return _out(*_batched(model, data, dict(q=q), compute))


crba = mass_matrix


def _solve(M: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x with M x = b for M (nv, nv, n) symmetric positive definite and b (nv, n): one LAPACK solve per state.

    LU with partial pivoting (numpy.linalg.solve) is as accurate as Cholesky on a positive definite M; numpy
    has no batched triangular solve, so Cholesky would need three LAPACK calls per state (2.5x slower).
    """
    return linalg.solve(np.moveaxis(M, -1, 0), b.T).T


def forward_dynamics(model: Model, q, qd, tau, *, data: Data | None = None) -> np.ndarray:
    """Joint accelerations qdd for total applied joint forces tau: M(q) qdd = tau - c(q, qd), M from CRBA.

    Equals physai.dynamics.forward_dynamics, aba, pin.aba, and MuJoCo's qacc when tau is qfrc_applied +
    qfrc_actuator + qfrc_passive on a model without constraints.

    Args:
        q, qd: joint positions and velocities (nv,) or (N, nv) [rad, rad/s | m, m/s].
        tau: applied joint forces, same shapes [N m | N].

    Returns:
        qdd (nv,) or (N, nv) [rad/s^2 | m/s^2].
    Raises InvalidModelError when M is singular (a massless dof without armature).
    """
    def compute(d, q, qd, tau):
        kinematics(model, d, q)
        com_pos(model, d)
        com_vel(model, d, qd)
        c = rne(model, d, qd, None)
        return _solve(crb(model, d), tau - c)
    return _out(*_batched(model, data, dict(q=q, qd=qd, tau=tau), compute))


def aba(model: Model, q, qd, tau, *, data: Data | None = None) -> np.ndarray:
    """Forward dynamics by the articulated-body algorithm (RBDA table 7.1): the qdd of forward_dynamics.

    Works about the centres in the world frame, so no coordinate changes between bodies are needed.
    Shapes and units as forward_dynamics; equals pin.aba.
    """
    return _out(*_batched(model, data, dict(q=q, qd=qd, tau=tau), lambda d, q, qd, tau: _aba(model, d, q, qd, tau)))


def _aba(model: Model, d: Data, q: np.ndarray, qd: np.ndarray, tau: np.ndarray) -> np.ndarray:
    kinematics(model, d, q)
    com_pos(model, d)
    com_vel(model, d, qd)
    S, arm, parents = list(d.cdof), model.dof_armature, model._parents
    c = list(d.cdof_dot * qd[:, None, :])                              # velocity-product accelerations, per body (6, n)
    IA = list(d.cinert.copy())                                         # articulated inertias (6, 6, n)
    # pA = v x* (I v): bias forces
    pA = list(_cross_force(d.cvel, np.einsum("bijn,bjn->bin", d.cinert, d.cvel)))
    U, D, u = [None] * model.nbody, [None] * model.nbody, [None] * model.nbody
    # backward pass over bodies: U = IA S, D = S.U + armature, u = tau - S.pA;
    # the parent gets IA - U U^T / D and pA + (IA - U U^T / D) c + U u / D
    for i in reversed(range(model.nbody)):
        U[i] = np.einsum("ijn,jn->in", IA[i], S[i])
        D[i] = np.einsum("in,in->n", S[i], U[i]) + arm[i]
        u[i] = tau[i] - np.einsum("in,in->n", S[i], pA[i])
        p = parents[i]
        if p >= 0:
            Ud = U[i] / D[i]
            Ia = IA[i] - U[i][:, None] * Ud[None, :]
            np.add(IA[p], Ia, out=IA[p])
            np.add(pA[p], pA[i] + np.einsum("ijn,jn->in", Ia, c[i]) + Ud * u[i], out=pA[p])
    a, qdd = np.empty((model.nbody, 6, d.ncol)), np.empty((model.nv, d.ncol))
    As = list(a)
    # forward pass over bodies: a' = a_parent + c, qdd = (u - U.a') / D, a = a' + S qdd
    for i, p in enumerate(parents):
        np.add(model._a_g if p < 0 else As[p], c[i], out=As[i])
        qdd[i] = (u[i] - np.einsum("in,in->n", U[i], As[i])) / D[i]
        As[i] += S[i] * qdd[i]
    d.cacc = a
    return qdd


def kinetic_energy(model: Model, q, qd, *, data: Data | None = None):
    """Kinetic energy 1/2 qd^T M(q) qd [J], armature included: a float, or (N,) for a batch (MuJoCo's energy[1]).

    Computed body by body as 1/2 sum_b v_b . (cinert_b v_b) + 1/2 sum_i armature_i qd_i^2, without forming M.
    """
    def compute(d, q, qd):
        kinematics(model, d, q)
        com_pos(model, d)
        com_vel(model, d, qd)
        return _kinetic(model, d, qd)
    return _energy_out(*_batched(model, data, dict(q=q, qd=qd), compute))


def potential_energy(model: Model, q, *, data: Data | None = None):
    """Potential energy [J] of gravity (zero at the world origin) plus joint springs; float or (N,) (MuJoCo's energy[0]).

    U = -sum_b m_b gravity . com_b + 1/2 sum_i k_i (q_i - springref_i)^2, bodies welded to the world included.
    """
    def compute(d, q):
        kinematics(model, d, q)
        com_pos(model, d)
        return _potential(model, d, q)
    return _energy_out(*_batched(model, data, dict(q=q), compute))


def energy(model: Model, q, qd, *, data: Data | None = None):
    """Kinetic plus potential energy [J]; float or (N,) (MuJoCo's energy[0] + energy[1], physai.dynamics.energy)."""
    def compute(d, q, qd):
        kinematics(model, d, q)
        com_pos(model, d)
        com_vel(model, d, qd)
        return _kinetic(model, d, qd) + _potential(model, d, q)
    return _energy_out(*_batched(model, data, dict(q=q, qd=qd), compute))


def _kinetic(model: Model, d: Data, qd: np.ndarray) -> np.ndarray:
    # T = 1/2 sum_b v . (cinert v) + 1/2 sum_i armature qd^2
    Iv = np.einsum("bijn,bjn->bin", d.cinert, d.cvel)
    return 0.5 * (np.einsum("bin,bin->n", d.cvel, Iv) + np.einsum("i,in->n", model.dof_armature, qd**2))


def _potential(model: Model, d: Data, q: np.ndarray) -> np.ndarray:
    # U = -g . (sum_b m_b (center_b + cipos_b) + static mass moment) + 1/2 k (q - springref)^2
    moment = np.einsum("b,bin->in", model.body_mass, d.cipos + d.center) + (model.static_mass * model.static_com)[:, None]
    springs = 0.5 * np.einsum("i,in->n", model.dof_stiffness, (q - model.dof_springref[:, None]) ** 2)
    return springs - np.einsum("i,in->n", model.gravity, moment)


def _energy_out(e: np.ndarray, batch):
    return e[:batch].copy() if batch is not None else float(e[0])

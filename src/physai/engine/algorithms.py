"""Rigid-body dynamics on a Model, for one state or a batch of N states at once, for every joint type.

Every public function takes q of shape (nq,) for one state or (N, nq) for N states, and qd, qdd, tau of
shape (nv,) or (N, nv) (a single state is shared by a batch), and returns results with the batch dimension
of its input:

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
over links, parents before children, written once for every joint type: a link moves by its dofs' columns
of cdof, whatever their number. Joint types enter only through physai.joints (the links' local transforms).
Pass data=Data(model, N) to keep the intermediate quantities.

    kinematics(model, d, q)     link poses                         xmat, xpos, center, cpos
    com_pos(model, d)           inertias and motion subspaces      cipos, cinert, cdof
    com_vel(model, d, qd)       velocities                         cvel, cdof_dot
    rne(model, d, qd, qdd)      recursive Newton-Euler             cacc, cfrc, qfrc
    crb(model, d)               composite rigid bodies             crb, qM
"""

import numpy as np

from physai import _linalg as linalg
from physai.engine import native
from physai.engine._checks import states
from physai.engine.data import Data
from physai.engine.loaders import as_model
from physai.engine.model import Model
from physai.exceptions import InvalidModelError, InvalidStateError, ShapeError

# a x b = a[_L1] b[_L2] - a[_L2] b[_L1]; three crosses of 6-vectors' halves at once, products (k, 18, n) minus
# (angular = 0:3, linear = 3:6):
#   motion  v x m  = (w x m_ang, w x m_lin + u x m_ang)          for v = (w, u)
#   force   v x* f = (w x f_ang + u x f_lin, w x f_lin)
_L1, _L2 = np.array([1, 2, 0]), np.array([2, 0, 1])
_XM_V = np.r_[_L1, _L1, _L1 + 3, _L2, _L2, _L2 + 3]
_XM_M = np.r_[_L2, _L2 + 3, _L2, _L1, _L1 + 3, _L1]
_XF_V = np.r_[_L1, _L1 + 3, _L1, _L2, _L2 + 3, _L2]
_XF_F = np.r_[_L2, _L2 + 3, _L2 + 3, _L1, _L1 + 3, _L1 + 3]
# skew(v)[i, j] = _SKEW_SIGN[i, j] * v[_SKEW_IDX[i, j]]
_SKEW_IDX = np.array([[0, 2, 1], [2, 0, 0], [1, 0, 0]])
_SKEW_SIGN = np.array([[0.0, -1, 1], [1, 0, -1], [-1, 1, 0]])
# cinert[i, j] = P[_CINERT_IDX[i, j]] for P = (Ibar row-major (9) | h (3) | -h (3) | m | 0): [[Ibar, skew(h)], [-skew(h), m 1]]
_CINERT_IDX = np.full((6, 6), 16)
_CINERT_IDX[:3, :3] = np.arange(9).reshape(3, 3)
_CINERT_IDX[:3, 3:] = np.where(_SKEW_SIGN > 0, 9, 12) + _SKEW_IDX
_CINERT_IDX[3:, :3] = np.where(_SKEW_SIGN > 0, 12, 9) + _SKEW_IDX
_CINERT_IDX[3:, 3:][np.diag_indices(3)] = 15
_CINERT_IDX[np.arange(3), np.arange(3) + 3] = _CINERT_IDX[np.arange(3) + 3, np.arange(3)] = 16


def cross_motion(v: np.ndarray, m: np.ndarray) -> np.ndarray:
    """v x m (Featherstone's crm(v) m) for motion vectors stacked as (k, 6, n)."""
    P = v[:, _XM_V] * m[:, _XM_M]
    r = P[:, :9] - P[:, 9:]                                            # w x m_ang, w x m_lin, u x m_ang
    r[:, 3:6] += r[:, 6:9]
    return r[:, :6]


def cross_force(v: np.ndarray, f: np.ndarray) -> np.ndarray:
    """v x* f (Featherstone's crf(v) f = -crm(v)^T f) for a motion vector v and a force f, stacked as (k, 6, n)."""
    P = v[:, _XF_V] * f[:, _XF_F]
    r = P[:, :9] - P[:, 9:]                                            # w x f_ang, u x f_lin, w x f_lin
    r[:, 3:6] += r[:, 0:3]
    return r[:, 3:]


def _inertia_times(I: np.ndarray, v: np.ndarray) -> np.ndarray:
    """I v for 6x6 inertias (k, 6, 6, n) and 6-vectors (k, 6, n)."""
    return np.einsum("bijn,bjn->bin", I, v)


def _per_link(model: Model, x: np.ndarray) -> np.ndarray:
    """Sum (nlink, ...) over each link's dofs of a per-dof array (nv, ...) (a link's dofs are consecutive)."""
    return np.add.reduceat(x, model.link_dofadr, axis=0) if model.nv else np.zeros((0,) + x.shape[1:])


def _model(model) -> Model:
    """The Model to compute with: model itself, or what physai.engine.as_model makes of a Tree, MjModel, name or path."""
    return model if isinstance(model, Model) else as_model(model)


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


def _out(x: np.ndarray, batch, what: str):
    """Engine layout (..., n) to the caller's: (N, ...) for a batch, (...) for a single state.

    Finite inputs that give a non-finite result (an overflow, a massless link) raise InvalidStateError naming `what`.
    """
    if not np.isfinite(x).all():
        k = int(np.argwhere(~np.isfinite(x))[0][-1])
        raise InvalidStateError(f"{what} is not finite at state {k} although the inputs are: the numbers overflow "
                                "(velocities or accelerations too large, e.g. 1e200) or a link moves without mass, "
                                "inertia or armature")
    if batch is None:
        return x[..., 0].copy()
    return np.ascontiguousarray(np.moveaxis(x, -1, 0))


# ---------------------------------------------------------------- position

def kinematics(model: Model, d: Data, q: np.ndarray, about_origin: bool = False) -> None:
    """Link poses at joint positions q (nq, n): d.xmat, d.xpos, d.center, d.cpos.

    about_origin=True puts every centre at the world origin (a fixed point: physai.coriolis needs one)."""
    n = q.shape[1]
    T_loc = model.link_transforms(q)                                   # each link's pose in its parent: jcalc
    T = np.empty_like(T_loc)                                           # (nlink, 3, 4, n): [xmat | xpos]
    Ts, Ls, xs = list(T), list(T_loc), list(T[:, :, 3])
    step = np.empty((model.nlink, 3, n))                               # R_parent p_loc: the offset from the parent
    # forward pass over links: R = R_parent R_loc, x = x_parent + R_parent p_loc
    for i, p in enumerate(model._parents):
        if p < 0:
            Ts[i][...] = Ls[i]
        else:
            np.einsum("ikn,kjn->ijn", Ts[p][:, :3], Ls[i], out=Ts[i])
            step[i] = xs[i]
            np.add(xs[i], xs[p], out=xs[i])
    d.xmat, d.xpos = T[:, :, :3], T[:, :, 3]
    if about_origin:
        d.center, d.cpos = np.zeros_like(d.xpos), d.xpos
        return
    d.center = d.xpos[model.link_centerid]
    # positions relative to the centre, summed from the centre outward so that they keep their digits far away
    cpos = d.xpos - d.center
    cs = list(cpos)
    for i in model._relative:
        np.add(cs[model._parents[i]], step[i], out=cs[i])
    cpos[model.link_centerid == np.arange(model.nlink)] = 0.0
    d.cpos = cpos


# ---------------------------------------------------------------- inertia

def com_pos(model: Model, d: Data) -> None:
    """Spatial inertias d.cinert, centres of mass d.cipos and motion subspaces d.cdof, about the centres."""
    R, x, m, n = d.xmat, d.cpos, model.link_mass[:, None, None], d.n
    # c = x + R ipos;  h = m c
    d.cipos = c = x + np.einsum("bikn,bk->bin", R, model.link_ipos)
    # cinert = [[R I R^T + m (c.c 1 - c c^T), skew(h)], [skew(h)^T, m 1]], gathered from P = (top-left 3x3 | h | -h | m | 0)
    P = np.empty((model.nlink, 17, n))
    Ibar, h = P[:, :9].reshape(-1, 3, 3, n), P[:, 9:12]
    np.multiply(m, c, out=h)
    np.negative(h, out=P[:, 12:15])
    RI = np.einsum("bikn,bkl->biln", R, model.link_inertia)
    np.einsum("bikn,bjkn->bijn", RI, R, out=Ibar)
    Ibar -= h[:, :, None] * c[:, None, :]
    hc = np.einsum("bin,bin->bn", h, c)
    for k in (0, 4, 8):
        P[:, k] += hc
    P[:, 15] = model.link_mass[:, None]
    P[:, 16] = 0.0
    d.cinert = P[:, _CINERT_IDX]
    # cdof = (R s_ang, x x (R s_ang) + R s_lin): each dof's link-frame motion subspace moved to the centre
    Rd, xd = R[model.dof_linkid], x[model.dof_linkid]
    S = np.empty((model.nv, 6, n))
    S[:, :3] = np.einsum("dikn,dk->din", Rd, model.dof_motion[:, :3])
    S[:, 3:] = np.einsum("dikn,dk->din", Rd, model.dof_motion[:, 3:])
    S[:, 3:] += xd[:, _L1] * S[:, _L2] - xd[:, _L2] * S[:, _L1]
    d.cdof = S


# ---------------------------------------------------------------- velocity

def com_vel(model: Model, d: Data, qd: np.ndarray) -> None:
    """Link velocities d.cvel and d.cdof_dot = cvel_parent x cdof."""
    Sqd = _per_link(model, d.cdof * qd[:, None, :])                  # (nlink, 6, n)
    v = np.zeros((model.nlink + 1, 6, d.n))                            # row -1: the world
    vs, Ss = list(v), list(Sqd)
    # forward pass over links: v = v_parent + S qd
    for i, p in enumerate(model._parents):
        np.add(vs[p], Ss[i], out=vs[i])
    d.cvel = v
    # cdof_dot = v_parent x S (for a multi-dof link the product with qd is the same as with its own velocity)
    d.cdof_dot = cross_motion(v[model.link_parentid[model.dof_linkid]], d.cdof)


# ---------------------------------------------------------------- RNE

def rne(model: Model, d: Data, qd: np.ndarray | None, qdd: np.ndarray | None) -> np.ndarray:
    """Recursive Newton-Euler on a Data with positions (and, if qd is given, velocities) done.

    Returns d.qfrc = M qdd + C qd + g (nv, n); qd None means qd = 0 and qdd None means qdd = 0
    (MuJoCo's flg_acc), so rne(model, d, None, None) is g(q).
    """
    a_g = model._a_g                                                   # (0, -gravity): gravity as an upward base acceleration
    if qd is None and qdd is None:
        # every link accelerates at a_g: f = cinert a_g
        f = np.einsum("bijn,j->bin", d.cinert, a_g[:, 0])
    else:
        inc = 0.0
        if qdd is not None:
            inc = d.cdof * qdd[:, None, :]
        if qd is not None:
            inc = inc + d.cdof_dot * qd[:, None, :]
        inc = _per_link(model, inc)
        a = np.empty((model.nlink + 1, 6, d.n))
        a[-1] = a_g
        As, incs = list(a), list(inc)
        # forward pass over links: a = a_parent + S qdd + cdof_dot qd
        for i, p in enumerate(model._parents):
            np.add(As[p], incs[i], out=As[i])
        d.cacc = a
        # f = cinert a + v x* (cinert v)
        f = _inertia_times(d.cinert, a[:-1])
        if qd is not None:
            f += cross_force(d.cvel[:-1], _inertia_times(d.cinert, d.cvel[:-1]))
    # backward pass over links: f_parent += f
    fs, parents = list(f), model._parents
    for i in model._children:
        np.add(fs[parents[i]], fs[i], out=fs[parents[i]])
    d.cfrc = f
    # tau = S . f + armature qdd
    tau = np.einsum("din,din->dn", d.cdof, f[model.dof_linkid])
    if qdd is not None:
        tau += model.dof_armature[:, None] * qdd
    d.qfrc = tau
    return tau


# ---------------------------------------------------------------- CRBA

def crb(model: Model, d: Data) -> np.ndarray:
    """Composite inertias d.crb and the joint-space inertia d.qM = M(q) (nv, nv, n), armature included."""
    Ic = d.cinert.copy()
    Ics, parents = list(Ic), model._parents
    # backward pass over links: Ic_parent += Ic
    for i in model._children:
        np.add(Ics[parents[i]], Ics[i], out=Ics[parents[i]])
    d.crb = Ic
    # M_ij = S_i . (Ic_j S_j) for i = j or an ancestor of j, M_ji = M_ij, 0 between unrelated branches
    F = _inertia_times(Ic[model.dof_linkid], d.cdof)
    SF = np.einsum("ikn,jkn->ijn", d.cdof, F)
    M = SF[model.dof_Mrow, model.dof_Mcol] * model.dof_Mmask
    M[model._diag] += model.dof_armature[:, None]
    d.qM = M
    return M


# ---------------------------------------------------------------- public functions

#: states per chunk of a large batch: arrays stay a few MB (cache-sized, reused by malloc instead of page-faulted)
CHUNK = 1024


def _batched(model, data, arrays: dict, compute):
    """Check the arrays (name -> (value, size)), run compute(d, *arrays) on the states, chunk by chunk.

    Returns (result, batch). A large batch runs in near-equal chunks of at most CHUNK states; with data given,
    everything runs at once in it. A state's result does not depend on the chunking or the batch size beyond
    rounding (numpy may sum in another order for other shapes): compare across batch sizes with a bound.
    """
    model = _model(model)
    cols, batch = states(**arrays)
    n = cols[0].shape[1]
    with np.errstate(over="ignore", invalid="ignore"):                # an overflow is reported by _out, by name
        if data is not None or n <= CHUNK:
            return compute(_data(model, data, batch), *cols), batch
        bounds = np.linspace(0, n, -(-n // CHUNK) + 1).astype(int)
        parts = [compute(Data(model, int(hi - lo)), *(np.ascontiguousarray(c[:, lo:hi]) for c in cols))
                 for lo, hi in zip(bounds[:-1], bounds[1:])]
    return np.concatenate(parts, axis=-1), batch


def _position(model: Model, d: Data, q) -> None:
    kinematics(model, d, q)
    com_pos(model, d)


def _velocity(model: Model, d: Data, q, qd) -> None:
    _position(model, d, q)
    com_vel(model, d, qd)


@native.dispatch(native.RNEA, "q qd qdd")
def rnea(model: Model, q, qd, qdd, *, data: Data | None = None) -> np.ndarray:
    """Inverse dynamics by recursive Newton-Euler: the joint forces that give accelerations qdd at (q, qd).

    tau = M(q) qdd + C(q, qd) qd + g(q), armature included; equals physai.dynamics.rnea, pin.rnea (in MuJoCo's
    velocity coordinates) and, on a model without constraints, MuJoCo's qfrc_inverse + qfrc_passive.

    Args:
        model: the Model.
        q: joint positions (nq,) or (N, nq) [rad | m | unit quaternion].
        qd: joint velocities (nv,) or (N, nv) [rad/s | m/s].
        qdd: joint accelerations, same shapes as qd [rad/s^2 | m/s^2].
        data: optional Data(model, N or 1) that keeps the intermediate quantities.

    Returns:
        tau (nv,) or (N, nv) [N m | N].
    """
    model = _model(model)
    def compute(d, q, qd, qdd):
        _velocity(model, d, q, qd)
        return rne(model, d, qd, qdd)
    arrays = dict(q=(q, model.nq), qd=(qd, model.nv), qdd=(qdd, model.nv))
    return _out(*_batched(model, data, arrays, compute), "rnea")


@native.dispatch(native.BIAS, "q qd")
def bias(model: Model, q, qd, *, data: Data | None = None) -> np.ndarray:
    """Bias force c(q, qd) = C(q, qd) qd + g(q) (nv,) or (N, nv) [N m | N].

    Equals rnea(model, q, qd, 0), physai.dynamics.bias, pin.nonLinearEffects and MuJoCo's qfrc_bias.
    """
    model = _model(model)
    def compute(d, q, qd):
        _velocity(model, d, q, qd)
        return rne(model, d, qd, None)
    arrays = dict(q=(q, model.nq), qd=(qd, model.nv))
    return _out(*_batched(model, data, arrays, compute), "bias")


@native.dispatch(native.GRAVITY, "q")
def gravity(model: Model, q, *, data: Data | None = None) -> np.ndarray:
    """Gravity torques g(q) (nv,) or (N, nv) [N m | N], the joint forces that hold the tree still.

    Equals rnea(model, q, 0, 0), physai.dynamics.gravity and pin.computeGeneralizedGravity.
    """
    model = _model(model)
    def compute(d, q):
        _position(model, d, q)
        return rne(model, d, None, None)
    arrays = dict(q=(q, model.nq))
    return _out(*_batched(model, data, arrays, compute), "gravity")


@native.dispatch(native.MASS_MATRIX, "q")
def mass_matrix(model: Model, q, *, data: Data | None = None) -> np.ndarray:
    """Joint-space inertia M(q) by composite rigid bodies, armature on the diagonal, symmetric.

    (nv, nv) for q (nq,), (N, nv, nv) for q (N, nq) [kg m^2 | kg m | kg]. Equals physai.dynamics.mass_matrix,
    MuJoCo's mj_fullM and pin.crba (in MuJoCo's velocity coordinates).
    """
    model = _model(model)
    def compute(d, q):
        _position(model, d, q)
        return crb(model, d)
    arrays = dict(q=(q, model.nq))
    return _out(*_batched(model, data, arrays, compute), "the mass matrix")


crba = mass_matrix


def _solve(M: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x with M x = b for M (nv, nv, n) symmetric positive definite and b (nv, n): one LAPACK solve per state."""
    return linalg.solve(np.moveaxis(M, -1, 0), b.T).T


@native.dispatch(native.FORWARD_DYNAMICS, "q qd tau")
def forward_dynamics(model: Model, q, qd, tau, *, data: Data | None = None) -> np.ndarray:
    """Joint accelerations qdd for total applied joint forces tau: M(q) qdd = tau - c(q, qd), M from CRBA.

    Equals physai.dynamics.forward_dynamics, aba, pin.aba, and MuJoCo's qacc when tau is qfrc_applied +
    qfrc_actuator + qfrc_passive on a model without constraints.

    Args:
        q: joint positions (nq,) or (N, nq); qd: joint velocities (nv,) or (N, nv) [rad, rad/s | m, m/s].
        tau: applied joint forces, shapes as qd [N m | N].

    Returns:
        qdd (nv,) or (N, nv) [rad/s^2 | m/s^2].
    Raises InvalidModelError when M is singular (a massless dof without armature).
    """
    model = _model(model)
    def compute(d, q, qd, tau):
        _velocity(model, d, q, qd)
        c = rne(model, d, qd, None)
        return _solve(crb(model, d), tau - c)
    arrays = dict(q=(q, model.nq), qd=(qd, model.nv), tau=(tau, model.nv))
    return _out(*_batched(model, data, arrays, compute), "forward dynamics")


@native.dispatch(native.ABA, "q qd tau")
def aba(model: Model, q, qd, tau, *, data: Data | None = None) -> np.ndarray:
    """Forward dynamics by the articulated-body algorithm (RBDA table 7.1): the qdd of forward_dynamics.

    Works about the centres in the world frame, so no coordinate changes between links are needed; a link's
    dofs form one block (1 x 1 for hinges and slides, 3 x 3 for balls). Shapes and units as forward_dynamics;
    equals pin.aba.
    """
    model = _model(model)
    arrays = dict(q=(q, model.nq), qd=(qd, model.nv), tau=(tau, model.nv))
    return _out(*_batched(model, data, arrays, lambda d, q, qd, tau: _aba(model, d, q, qd, tau)), "aba")


def _inverse(D: np.ndarray) -> np.ndarray:
    """Inverse of k x k blocks (k, k, n); InvalidModelError when one is singular."""
    if D.shape[0] == 1:
        if (D == 0).any():
            raise InvalidModelError(linalg.SINGULAR)
        return 1.0 / D
    return np.moveaxis(linalg.inverse(np.moveaxis(D, -1, 0)), 0, -1)


def _aba(model: Model, d: Data, q: np.ndarray, qd: np.ndarray, tau: np.ndarray) -> np.ndarray:
    _velocity(model, d, q, qd)
    arm, parents, adr, num = model.dof_armature, model._parents, model.link_dofadr, model.link_dofnum
    c = list(_per_link(model, d.cdof_dot * qd[:, None, :]))           # velocity-product accelerations (6, n)
    IA = list(d.cinert.copy())                                         # articulated inertias (6, 6, n)
    # pA = v x* (I v): bias forces
    pA = list(cross_force(d.cvel[:-1], _inertia_times(d.cinert, d.cvel[:-1])))
    S, U, Dinv, u = [None] * model.nlink, [None] * model.nlink, [None] * model.nlink, [None] * model.nlink
    # backward pass over links: U = IA S, D = S^T U + armature, u = tau - S^T pA;
    # the parent gets Ia = IA - U D^-1 U^T and pA + Ia c + U D^-1 u
    for i in reversed(range(model.nlink)):
        k = slice(adr[i], adr[i] + num[i])
        S[i] = d.cdof[k]                                               # (k, 6, n)
        U[i] = np.einsum("ijn,ajn->ain", IA[i], S[i])
        D = np.einsum("ain,bin->abn", S[i], U[i])
        D[np.arange(num[i]), np.arange(num[i])] += arm[k, None]
        Dinv[i] = _inverse(D)
        u[i] = tau[k] - np.einsum("ain,in->an", S[i], pA[i])
        p = parents[i]
        if p >= 0:
            UD = np.einsum("ain,abn->bin", U[i], Dinv[i])              # (U D^-1)^T rows
            Ia = IA[i] - np.einsum("bin,bjn->ijn", UD, U[i])
            np.add(IA[p], Ia, out=IA[p])
            np.add(pA[p], pA[i] + np.einsum("ijn,jn->in", Ia, c[i]) + np.einsum("bin,bn->in", UD, u[i]), out=pA[p])
    a, qdd = np.empty((model.nlink + 1, 6, d.n)), np.empty((model.nv, d.n))
    a[-1] = model._a_g
    As = list(a)
    # forward pass over links: a' = a_parent + c, qdd = D^-1 (u - U^T a'), a = a' + S^T qdd
    for i, p in enumerate(parents):
        k = slice(adr[i], adr[i] + num[i])
        np.add(As[p], c[i], out=As[i])
        qdd[k] = np.einsum("abn,bn->an", Dinv[i], u[i] - np.einsum("ain,in->an", U[i], As[i]))
        As[i] += np.einsum("ain,an->in", S[i], qdd[k])
    d.cacc = a
    return qdd


@native.dispatch(native.KINETIC_ENERGY, "q qd")
def kinetic_energy(model: Model, q, qd, *, data: Data | None = None):
    """Kinetic energy 1/2 qd^T M(q) qd [J], armature included: a float, or (N,) for a batch (MuJoCo's energy[1]).

    Computed link by link as 1/2 sum_l v_l . (cinert_l v_l) + 1/2 sum_i armature_i qd_i^2, without forming M.
    """
    model = _model(model)
    def compute(d, q, qd):
        _velocity(model, d, q, qd)
        return _kinetic(model, d, qd)
    arrays = dict(q=(q, model.nq), qd=(qd, model.nv))
    return _energy_out(*_batched(model, data, arrays, compute))


@native.dispatch(native.POTENTIAL_ENERGY, "q")
def potential_energy(model: Model, q, *, data: Data | None = None):
    """Potential energy [J] of gravity (zero at the world origin) plus joint springs; float or (N,) (MuJoCo's energy[0]).

    U = -sum_b m_b gravity . com_b + 1/2 sum_j k_j (q_j - springref_j)^2, bodies welded to the world included.
    """
    model = _model(model)
    def compute(d, q):
        _position(model, d, q)
        return _potential(model, d, q)
    arrays = dict(q=(q, model.nq))
    return _energy_out(*_batched(model, data, arrays, compute))


@native.dispatch(native.ENERGY, "q qd")
def energy(model: Model, q, qd, *, data: Data | None = None):
    """Kinetic plus potential energy [J]; float or (N,) (MuJoCo's energy[0] + energy[1], physai.dynamics.energy)."""
    model = _model(model)
    def compute(d, q, qd):
        _velocity(model, d, q, qd)
        return _kinetic(model, d, qd) + _potential(model, d, q)
    arrays = dict(q=(q, model.nq), qd=(qd, model.nv))
    return _energy_out(*_batched(model, data, arrays, compute))


def _kinetic(model: Model, d: Data, qd: np.ndarray) -> np.ndarray:
    # T = 1/2 sum_l v . (cinert v) + 1/2 sum_i armature qd^2
    v = d.cvel[:-1]
    return 0.5 * (np.einsum("bin,bin->n", v, _inertia_times(d.cinert, v)) + np.einsum("i,in->n", model.dof_armature, qd**2))


def _potential(model: Model, d: Data, q: np.ndarray) -> np.ndarray:
    # U = -g . (sum_l m_l (center_l + cipos_l) + static mass moment) + 1/2 k (q - springref)^2
    moment = np.einsum("b,bin->in", model.link_mass, d.cipos + d.center) + (model.static_mass * model.static_com)[:, None]
    springs = 0.5 * np.einsum("i,in->n", model._spring_k, (q[model._spring_q] - model._spring_ref[:, None]) ** 2)
    return springs - np.einsum("i,in->n", model.gravity, moment)


def _energy_out(e: np.ndarray, batch):
    out = _out(e, batch, "the energy")
    return float(out) if batch is None else out

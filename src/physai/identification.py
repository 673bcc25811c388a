"""Inertial parameters: the regressor that makes inverse dynamics linear in them, and the identifiable combinations.

    regressor(model, q, qd, qdd)       Y (nv, 10 nlink): rnea(q, qd, qdd) = Y pi + armature * qdd
    joint_regressor(...)               Y with armature (and damping) columns appended
    parameters(model)                  pi (10 nlink,) of the model
    from_parameters(model, pi)         a new Model with those inertial parameters
    base_parameters(model, ...)        the identifiable (base) combinations beta = K pi, by QR of stacked regressors
    pseudo_inertia / from_pseudo_inertia / is_physical     the 4x4 pseudo-inertia and physical consistency

Per link, not per body. The parameters belong to the engine's links (physai.engine.model): its rigid units, with
every welded body fused into the link that carries it (MuJoCo's fusestatic, Pinocchio's fixed joints), so there
is no column for a mass the dynamics cannot tell apart. A body with k joints has k links, of which the last
carries its mass (the others are massless intermediate frames, with zero parameters but real columns); a free
joint is 3 massless slide links and a ball link that carries the body. For robots with one joint per body
(the Panda, arm7, H1's legs) links and moving bodies are the same, in the same order as Pinocchio's joints.

Each link's 10 parameters are in Pinocchio's order (pin.Inertia.toDynamicParameters):

    [m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz]     [kg, kg m, kg m^2]

with c the centre of mass and I the rotational inertia ABOUT THE LINK FRAME'S ORIGIN, both in link-frame axes,
and I_xy etc. tensor entries (I_xy = -int x y dm, the sign of URDF's ixy and MJCF's fullinertia). The link frame
of a body with joints is the body frame (physai.engine.model), so these equal Pinocchio's where its joint frame
is the body frame (MJCF joints with pos = 0). Armature is not among them: rnea = Y pi + armature * qdd.
"""

from dataclasses import dataclass, replace

import numpy as np

from physai import engine, validation
from physai.engine import batching
from physai.engine.smooth import cross_force, rne, velocity_stages
from physai.engine.model import Model
from physai.engine.model_checks import label
from physai.exceptions import InvalidArgumentError, InvalidInertiaError, ShapeError
from physai.spatial import skew

__all__ = ["regressor", "joint_regressor", "parameters", "from_parameters", "base_parameters", "BaseParameters", "parameter_names",
           "pseudo_inertia", "from_pseudo_inertia", "is_physical", "NAMES"]

#: the 10 parameters of a link, in order
NAMES = ("m", "mcx", "mcy", "mcz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")

# spatial inertia about the link origin, [[I, skew(h)], [-skew(h), m 1]], as a linear map of the 10 parameters
_PHI = np.zeros((6, 6, 10))
_PHI[3:, 3:, 0] = np.eye(3)
for _k in range(3):
    _S = skew(np.eye(3)[_k])
    _PHI[:3, 3:, 1 + _k], _PHI[3:, :3, 1 + _k] = _S, -_S
for _p, (_i, _j) in zip(range(4, 10), ((0, 0), (0, 1), (1, 1), (0, 2), (1, 2), (2, 2))):
    _PHI[_i, _j, _p] = _PHI[_j, _i, _p] = 1.0


def _link_ancestors(model: Model) -> np.ndarray:
    """(nlink, nlink) bool: [a, i] true when link a is link i or one of its ancestors."""
    anc = np.zeros((model.nlink, model.nlink), dtype=bool)
    for i in range(model.nlink):
        a = i
        while a >= 0:
            anc[a, i] = True
            a = model.link_parentid[a]
    return anc


def _regressor(model: Model, d: engine.Data, q, qd, qdd) -> np.ndarray:
    """Y (nv, 10 nlink, n) in the engine's layout."""
    velocity_stages(model, d, q, qd)
    rne(model, d, qd, qdd)                               # d.cacc: accelerations with gravity as -g at the base
    R, p = d.xmat, d.cpos                               # link frame in the world, its origin about the centre
    Rt = np.swapaxes(R, 1, 2)

    def local(x):                                        # motion vector about the centre (world) -> link frame, about its origin
        w = x[:, :3]
        lin = x[:, 3:] - (p[:, [1, 2, 0]] * w[:, [2, 0, 1]] - p[:, [2, 0, 1]] * w[:, [1, 2, 0]])
        return np.concatenate([np.einsum("kijn,kjn->kin", Rt, w), np.einsum("kijn,kjn->kin", Rt, lin)], axis=1)

    v, a = local(d.cvel[:-1]), local(d.cacc[:-1])
    n, L = d.n, model.nlink
    # body regressor: f = I(e_p) a + v x* I(e_p) v for each parameter p, in the link frame
    Ia = np.einsum("ijp,kjn->kpin", _PHI, a).reshape(L * 10, 6, n)
    Iv = np.einsum("ijp,kjn->kpin", _PHI, v).reshape(L * 10, 6, n)
    f = Ia + cross_force(np.repeat(v, 10, axis=0), Iv)  # (L*10, 6, n)
    # to world axes about the centre: n = R n_l + p x (R f_l), f = R f_l
    Rr, pr = np.repeat(R, 10, axis=0), np.repeat(p, 10, axis=0)
    fw = np.einsum("kijn,kjn->kin", Rr, f[:, 3:])
    nw = np.einsum("kijn,kjn->kin", Rr, f[:, :3]) + pr[:, [1, 2, 0]] * fw[:, [2, 0, 1]] - pr[:, [2, 0, 1]] * fw[:, [1, 2, 0]]
    F = np.concatenate([nw, fw], axis=1).reshape(L, 10, 6, n)
    # Y[k, (i, p)] = S_k . F[i, p] for dof k on link i or one of its ancestors
    mask = _link_ancestors(model)[model.dof_linkid].astype(float)     # (nv, nlink)
    Y = np.einsum("kjn,ipjn->kipn", d.cdof, F) * mask[:, :, None, None]
    return Y.reshape(model.nv, L * 10, n)


def regressor(model, q, qd, qdd, *, data: engine.Data | None = None) -> np.ndarray:
    """The joint-torque regressor Y with rnea(q, qd, qdd) = Y pi + armature * qdd (pi = parameters(model)).

    Args: model (a physai.engine.Model or what engine.as_model takes); q (nq,) or (N, nq); qd, qdd (nv,) or (N, nv).
    Returns: Y (nv, 10 nlink) or (N, nv, 10 nlink) [units of tau per unit parameter]; column 10 i + p belongs to
        link i's parameter NAMES[p] (see the module docstring: link frame, Pinocchio's order, gravity included).
        Equals pin.computeJointTorqueRegressor where links are Pinocchio's joints and the frames agree.
    """
    model = engine.as_model(model)

    def compute(d, q, qd, qdd):
        return _regressor(model, d, q, qd, qdd)

    arrays = dict(q=(q, model.nq), qd=(qd, model.nv), qdd=(qdd, model.nv))
    return batching.result(*batching.run(model, data, arrays, compute), "the regressor")


def joint_regressor(model, q, qd, qdd, armature: bool = True, damping: bool = False) -> np.ndarray:
    """The regressor with joint columns appended: [Y, diag(qdd) if armature, diag(qd) if damping], so that
    Y_joint @ parameters(model, armature, damping) = rnea + damping qd (armature=True), i.e. MuJoCo's qfrc_inverse
    of a model without springs, limits or contacts when damping=True. Shapes as regressor, plus nv columns each."""
    model = engine.as_model(model)
    Y = regressor(model, q, qd, qdd)
    parts = [Y]
    for flag, x in ((armature, qdd), (damping, qd)):
        if flag:
            x = np.asarray(x, dtype=float).reshape(Y.shape[:-1])
            parts.append(x[..., :, None] * np.eye(model.nv))
    return np.concatenate(parts, axis=-1)


def parameters(model, armature: bool = False, damping: bool = False) -> np.ndarray:
    """pi (10 nlink,): each link's [m, m c, I about the link origin] in Pinocchio's order (module docstring);
    armature=True / damping=True append dof_armature [kg m^2 | kg] / dof_damping (nv,) each (joint_regressor)."""
    model = engine.as_model(model)
    if armature or damping:
        return np.concatenate([parameters(model)] + [x for f, x in ((armature, model.dof_armature),
                                                                    (damping, model.dof_damping)) if f])
    m, c, Ic = model.link_mass, model.link_ipos, model.link_inertia
    Io = Ic + m[:, None, None] * (np.einsum("ki,ki->k", c, c)[:, None, None] * np.eye(3) - np.einsum("ki,kj->kij", c, c))
    out = np.empty((model.nlink, 10))
    out[:, 0], out[:, 1:4] = m, m[:, None] * c
    out[:, 4:] = Io[:, [0, 0, 1, 0, 1, 2], [0, 1, 1, 2, 2, 2]]
    return out.reshape(-1)


def _per_link(model: Model, pi) -> np.ndarray:
    p = validation.to_float("pi", pi, f"an array of shape ({10 * model.nlink},)")
    if p.shape != (10 * model.nlink,):
        raise ShapeError(f"pi has shape {p.shape}, the model has {model.nlink} links: it needs ({10 * model.nlink},) "
                         "(10 parameters per link)")
    if not np.isfinite(p).all():
        raise InvalidArgumentError("pi must be finite")
    return p.reshape(model.nlink, 10)


def pseudo_inertia(pi10) -> np.ndarray:
    """The 4x4 pseudo-inertia J = [[Sigma, h], [h^T, m]] of one link's 10 parameters, Sigma = tr(I)/2 1 - I
    (the second moment of the mass about the origin, int r r^T dm). J >= 0 (positive semidefinite) exactly when
    the parameters are those of a real mass distribution (Wensing, Kim and Slotine 2017)."""
    pi10 = validation.vector("pi10", pi10, 10)
    m, h, (xx, xy, yy, xz, yz, zz) = pi10[0], pi10[1:4], pi10[4:]
    Io = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    J = np.empty((4, 4))
    J[:3, :3] = 0.5 * np.trace(Io) * np.eye(3) - Io
    J[:3, 3] = J[3, :3] = h
    J[3, 3] = m
    return J


def from_pseudo_inertia(J: np.ndarray) -> np.ndarray:
    """The 10 parameters of a 4x4 pseudo-inertia (inverse of pseudo_inertia): I = tr(Sigma) 1 - Sigma."""
    J = validation.as_array("J", J, (4, 4))
    S = J[:3, :3]
    Io = np.trace(S) * np.eye(3) - S
    return np.r_[J[3, 3], J[:3, 3], Io[[0, 0, 1, 0, 1, 2], [0, 1, 1, 2, 2, 2]]]


def is_physical(pi10, tol: float = 1e-12) -> bool:
    """Whether one link's 10 parameters are physical: pseudo-inertia >= -tol * its size (mass >= 0, centre of mass
    inside the mass, inertia about it positive with the triangle rule)."""
    J = pseudo_inertia(pi10)
    tol = validation.number("tol", tol, "relative")
    return bool(np.linalg.eigvalsh(J).min() >= -tol * max(1.0, np.abs(J).max()))


def from_parameters(model, pi, check: bool = True) -> Model:
    """A new Model with link inertial parameters pi (10 nlink,) (parameters' layout), everything else the same.

    Sets link_mass, link_ipos (c = h / m) and link_inertia (about c, I_c = I_o - m (c.c 1 - c c^T)); body_mass and
    body_ipos, which only describe the source bodies, are left as they were. A link with m = 0 must have h = 0.
    check=True raises InvalidInertiaError naming the link unless its parameters are physical (is_physical);
    check=False accepts any with m > 0 or (m, h) = 0, e.g. a least-squares estimate, which rnea uses linearly.
    """
    model = engine.as_model(model)
    P = _per_link(model, pi)
    mass, ipos, inertia = P[:, 0].copy(), np.zeros((model.nlink, 3)), np.zeros((model.nlink, 3, 3))
    for i, row in enumerate(P):
        name = link_names(model)[i]
        m, h = row[0], row[1:4]
        if m < 0 or (m == 0 and np.any(h != 0)):
            raise InvalidInertiaError(f"link {i} ({name!r}) has mass {m:g} and first moment {h}: a mass must be >= 0, "
                                      "and a massless link has no first moment")
        if check and not is_physical(row):
            raise InvalidInertiaError(f"link {i} ({name!r}): its parameters are not those of a real body (the pseudo-"
                                      "inertia is not positive semidefinite: a negative mass or inertia, or the triangle "
                                      "rule broken); pass check=False to use them anyway")
        c = h / m if m > 0 else np.zeros(3)
        J = pseudo_inertia(row)
        Io = np.trace(J[:3, :3]) * np.eye(3) - J[:3, :3]
        ipos[i], inertia[i] = c, Io - m * (c @ c * np.eye(3) - np.outer(c, c))
    return engine.set_const(replace(model, link_mass=mass, link_ipos=ipos,
                                    link_inertia=0.5 * (inertia + inertia.transpose(0, 2, 1))))


def link_names(model) -> list[str]:
    """A name per link: its joint's name (a free joint's links: name.x, name.y, name.z, name.rot)."""
    model = engine.as_model(model)
    names = []
    for i in range(model.nlink):
        dof = model.link_dofadr[i]
        j = int(np.searchsorted(model.jnt_dofadr, dof, side="right") - 1)
        name = label(model.jnt_name[j], j, "joint")
        if model.jnt_type[j] == 0:                                   # free joint
            name += (".x", ".y", ".z", ".rot", ".rot", ".rot")[dof - model.jnt_dofadr[j]]
        names.append(name)
    return names


def parameter_names(model, armature: bool = False, damping: bool = False) -> list[str]:
    """'link:param' for each entry of pi (10 nlink), then 'link:armature' and 'link:damping' per dof if asked
    ('link[k]:...' for the k-th dof of a ball link)."""
    model = engine.as_model(model)
    links = link_names(model)
    dofs = [links[lk] + (f"[{k - model.link_dofadr[lk]}]" if model.link_dofnum[lk] > 1 else "")
            for k, lk in enumerate(model.dof_linkid)]
    return ([f"{link}:{p}" for link in links for p in NAMES] + [f"{d}:armature" for d in dofs if armature]
            + [f"{d}:damping" for d in dofs if damping])


@dataclass(frozen=True)
class BaseParameters:
    """The identifiable combinations of the inertial parameters: beta = K pi, with Y pi = Y[:, columns] beta.

    count:   number of base parameters (the rank of stacked regressors)
    columns: (count,) the regressor columns kept (independent, by QR with column pivoting)
    K:       (count, 10 nlink [+ nv + nv]) beta = K pi: each kept parameter plus the combination of the dropped ones that
             cannot be told apart from it
    names:   (count,) the kept parameters' names (parameter_names)
    """

    count: int
    columns: np.ndarray
    K: np.ndarray
    names: tuple

    def of(self, pi) -> np.ndarray:
        """beta = K pi (count,)."""
        return self.K @ validation.vector("pi", pi, self.K.shape[1])

    def regressor(self, Y: np.ndarray) -> np.ndarray:
        """The base regressor Y[..., columns] of a full regressor (..., nv, 10 nlink)."""
        return Y[..., self.columns]


def _pivoted_qr(A: np.ndarray):
    """(R, perm) of the Householder QR with column pivoting A[:, perm] = Q R (Businger and Golub 1965): at each step
    the remaining column of largest norm comes next, so |R_ii| decreases and its first r columns are independent.
    Columns whose norms tie to 1e-9 relative (a model's symmetries make exact ties, which rounding would break one way
    on one CPU and the other way on another) go in their original order, so the basis is the same on every machine."""
    A = np.array(A, dtype=float)
    m, n = A.shape
    perm = np.arange(n)
    for j in range(min(m, n)):
        norms = np.einsum("ij,ij->j", A[j:, j:], A[j:, j:])
        ties = np.flatnonzero(norms >= (1.0 - 1e-9) * norms.max())
        p = j + int(ties[np.argmin(perm[j + ties])])
        A[:, [j, p]], perm[[j, p]] = A[:, [p, j]], perm[[p, j]]
        x = A[j:, j]
        norm = np.linalg.norm(x)
        if norm == 0:
            break
        v = x.copy()
        v[0] += np.copysign(norm, x[0])
        v /= np.linalg.norm(v)
        A[j:, j:] -= 2.0 * np.outer(v, v @ A[j:, j:])
    return np.triu(A[:min(m, n)]), perm


def base_parameters(model, n: int = 200, seed=0, tol: float = 1e-8, states=None, armature: bool = False,
                    damping: bool = False) -> BaseParameters:
    """The base parameters of a model from the QR decomposition with column pivoting of stacked regressors.

    W = [Y(x_1); ...; Y(x_n)] at n random states (engine.random_states, accelerations uniform in [-1, 1]) or at the
    given states (q (N, nq), qd (N, nv), qdd (N, nv)). W P = Q R; the rank r counts |R_ii| > tol |R_00|; the first
    r pivoted columns are kept, and beta = pi_kept + R_11^-1 R_12 pi_dropped (Gautier 1990). armature / damping:
    include the joint columns of joint_regressor (a joint's armature can be confounded with its link's inertia
    about the axis, e.g. at the first joint), so that K acts on parameters(model, armature, damping).
    """
    model = engine.as_model(model)
    tol = validation.number("tol", tol, "relative to the largest |R_ii|", positive=True)
    if model.nv == 0:
        raise InvalidArgumentError("base_parameters: the model has no joints (nv = 0), so no parameter acts on its "
                                   "dynamics; expected a model with at least one joint")
    if states is None:
        q, qd = engine.random_states(model, n, seed)
        qdd = np.random.default_rng(seed).uniform(-1, 1, (n, model.nv))
    elif isinstance(states, (tuple, list)) and len(states) == 3:
        q, qd, qdd = states
    else:
        raise InvalidArgumentError(f"states is {states!r:.60}; expected a tuple (q (N, nq), qd (N, nv), qdd (N, nv))")
    W = joint_regressor(model, q, qd, qdd, armature, damping)
    W = W.reshape(-1, W.shape[-1])
    R, P = _pivoted_qr(np.linalg.qr(W, mode="r"))       # W's R first: the same pivots and R, on a square matrix
    diag = np.abs(np.diag(R))
    r = int(np.sum(diag > tol * diag[0])) if diag.size and diag[0] > 0 else 0
    K = np.zeros((r, W.shape[1]))
    K[:, P[:r]] = np.eye(r)
    K[:, P[r:]] = np.linalg.solve(R[:r, :r], R[:r, r:])
    names = parameter_names(model, armature, damping)
    return BaseParameters(r, P[:r].copy(), K, tuple(names[c] for c in P[:r]))


"""Operational-space (task-space) dynamics of a task Jacobian J (m, nv): the inertia the task sees, the dynamically
consistent pseudo-inverse and the task-space bias, for one state or N (Khatib 1987).

    Lam = task_space.inertia(model, q, J)                  # (m, m): (J M^-1 J^T)^-1 [kg | kg m^2]
    Jbar = task_space.pseudo_inverse(model, q, J)          # (nv, m): M^-1 J^T Lam
    mu = task_space.bias(model, q, qd, J, J_dot)           # (m,): Lam (J M^-1 c - J_dot qd)

With these, the joint forces tau = J^T (Lam xdd + mu) give the task the acceleration xdd = J qdd + J_dot qd when
nothing else acts (c = C qd + g: engine.bias; add the other forces to c). damping > 0 gives the damped inverse
(J M^-1 J^T + damping^2 1)^-1, for a J that loses rank (a singular arm); then the task acceleration is approximate.
J and J_dot come from physai.jacobians (frame_jacobian, frame_jacobian_dot, centroidal.com_jacobian, ...); a batch
takes J (N, m, nv). M is engine.mass_matrix's (armature included); velocities are MuJoCo's coordinates.
"""

import numpy as np

from physai import validation
from physai.engine import as_model, bias as engine_bias, mass_matrix
from physai.validation import states
from physai.engine.model import Model
from physai.exceptions import InvalidArgumentError, InvalidStateError, ShapeError


def _task(model: Model, M: np.ndarray, batch: bool, J, name: str = "J") -> np.ndarray:
    """J (n, m, nv), checked against M (n, nv, nv): real finite numbers, at least one row, one state's or each state's."""
    try:
        J = np.asarray(J)
        ok = J.dtype.kind in "iuf"
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise InvalidArgumentError(f"{name} must be an array of real numbers, got {type(J).__name__}"
                                   + (f" of {J.dtype}" if isinstance(J, np.ndarray) else ""))
    J = J.astype(float)
    if J.ndim != (3 if batch else 2) or J.shape[-1] != model.nv or J.shape[-2] < 1 or (batch and len(J) != len(M)):
        wanted = f"({len(M)}, m, {model.nv})" if batch else f"(m, {model.nv})"
        raise ShapeError(f"{name} has shape {J.shape}; for {'these states' if batch else 'one state'} it must be {wanted} "
                         "with m >= 1 task rows")
    if not np.isfinite(J).all():
        raise InvalidArgumentError(f"{name} has entries that are not finite")
    return J if batch else J[None]


def _mass(model, q) -> tuple[Model, np.ndarray, bool]:
    """(the Model, M (n, nv, nv), batch)."""
    model = model if type(model) is Model else as_model(model)
    M = mass_matrix(model, q)
    return model, (M if M.ndim == 3 else M[None]), M.ndim == 3


#: J M^-1 J^T is taken as singular when its smallest eigenvalue is below this fraction of its largest
SINGULAR = 1e-12


def _inertia(M: np.ndarray, J: np.ndarray, damping: float) -> tuple[np.ndarray, np.ndarray]:
    """(Lam (n, m, m), M^-1 J^T (n, nv, m)); InvalidStateError when J M^-1 J^T (+ damping^2 1) is singular."""
    MinvJt = np.linalg.solve(M, np.swapaxes(J, -1, -2))
    A = J @ MinvJt + damping**2 * np.eye(J.shape[-2])
    A = 0.5 * (A + np.swapaxes(A, -1, -2))
    eig = np.linalg.eigvalsh(A)
    bad = np.flatnonzero(~(eig[:, 0] > SINGULAR * np.maximum(eig[:, -1], 1e-300)))
    if bad.size:
        where = f" (state {int(bad[0])})" if len(A) > 1 else ""
        raise InvalidStateError(f"J M^-1 J^T is singular{where}: the task Jacobian loses rank (eigenvalues "
                                f"{eig[bad[0], 0]:.3g} to {eig[bad[0], -1]:.3g}); pass damping > 0, or a task of fewer rows")
    return np.linalg.inv(A), MinvJt


def _damping(damping) -> float:
    value = validation.number("damping", damping, "task units")
    if value < 0:
        raise InvalidArgumentError(f"damping is {damping!r}; expected a finite number >= 0")
    return value


def inertia(model, q, J, damping: float = 0.0) -> np.ndarray:
    """The task-space inertia Lam = (J M^-1 J^T + damping^2 1)^-1 (m, m), or (N, m, m) for q (N, nq) and J (N, m, nv)."""
    model, M, batch = _mass(model, q)
    Lam = _inertia(M, _task(model, M, batch, J), _damping(damping))[0]
    return Lam if batch else Lam[0]


def pseudo_inverse(model, q, J, damping: float = 0.0) -> np.ndarray:
    """The dynamically consistent pseudo-inverse Jbar = M^-1 J^T Lam (nv, m), or (N, nv, m): J Jbar = 1 without damping,
    and the null-space projector 1 - J^T Jbar^T leaves the task's acceleration alone."""
    model, M, batch = _mass(model, q)
    Lam, MinvJt = _inertia(M, _task(model, M, batch, J), _damping(damping))
    Jbar = MinvJt @ Lam
    return Jbar if batch else Jbar[0]


def bias(model, q, qd, J, J_dot, damping: float = 0.0) -> np.ndarray:
    """The task-space bias mu = Lam (J M^-1 c - J_dot qd) (m,), or (N, m): c = engine.bias(model, q, qd) (Coriolis,
    centrifugal and gravity; passive and actuator forces are not in it). The joint forces J^T (Lam xdd + mu) give the task
    the acceleration xdd."""
    model, M, batch = _mass(model, q)
    (_, V), qd_batch = states(q=(q, model.nq), qd=(qd, model.nv))      # q and qd together
    if qd_batch is not None and not batch:
        raise ShapeError(f"qd has {qd_batch} states and q one: pass q (N, nq), J and J_dot (N, m, nv) for N states")
    J, J_dot = _task(model, M, batch, J), _task(model, M, batch, J_dot, "J_dot")
    if J_dot.shape != J.shape:
        raise ShapeError(f"J_dot has shape {J_dot.shape[1:] if not batch else J_dot.shape}; it must have J's, "
                         f"{J.shape[1:] if not batch else J.shape}")
    c = engine_bias(model, q, qd)
    c, V = (c, V.T) if batch else (c[None], V.T)
    Lam, MinvJt = _inertia(M, J, _damping(damping))
    task_c = np.einsum("nvm,nv->nm", MinvJt, c) - np.einsum("nmv,nv->nm", J_dot, V)           # J M^-1 c - J_dot qd
    mu = np.einsum("nij,nj->ni", Lam, task_c)
    return mu if batch else mu[0]

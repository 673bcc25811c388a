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
from physai.engine.model import Model
from physai.exceptions import InvalidArgumentError, InvalidStateError, ShapeError


def _task(model: Model, q, J, name: str = "J") -> tuple[np.ndarray, np.ndarray, bool]:
    """(M (n, nv, nv), J (n, m, nv), batch) with their shapes checked against each other."""
    M = mass_matrix(model, q)
    batch = M.ndim == 3
    M = M if batch else M[None]
    J = np.asarray(J, dtype=float)
    if J.ndim != (3 if batch else 2) or J.shape[-1] != model.nv or (batch and len(J) != len(M)):
        wanted = f"({len(M)}, m, {model.nv})" if batch else f"(m, {model.nv})"
        raise ShapeError(f"{name} has shape {J.shape}; for {'these states' if batch else 'one state'} it must be {wanted}")
    if not np.isfinite(J).all():
        raise InvalidArgumentError(f"{name} has entries that are not finite")
    return M, (J if batch else J[None]), batch


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
    model = model if type(model) is Model else as_model(model)
    M, J, batch = _task(model, q, J)
    Lam = _inertia(M, J, _damping(damping))[0]
    return Lam if batch else Lam[0]


def pseudo_inverse(model, q, J, damping: float = 0.0) -> np.ndarray:
    """The dynamically consistent pseudo-inverse Jbar = M^-1 J^T Lam (nv, m), or (N, nv, m): J Jbar = 1 without damping,
    and the null-space projector 1 - J^T Jbar^T leaves the task's acceleration alone."""
    model = model if type(model) is Model else as_model(model)
    M, J, batch = _task(model, q, J)
    Lam, MinvJt = _inertia(M, J, _damping(damping))
    Jbar = MinvJt @ Lam
    return Jbar if batch else Jbar[0]


def bias(model, q, qd, J, J_dot, damping: float = 0.0) -> np.ndarray:
    """The task-space bias mu = Lam (J M^-1 c - J_dot qd) (m,), or (N, m): c = engine.bias(model, q, qd) (Coriolis,
    centrifugal and gravity; passive and actuator forces are not in it). The joint forces J^T (Lam xdd + mu) give the task
    the acceleration xdd."""
    model = model if type(model) is Model else as_model(model)
    M, J, batch = _task(model, q, J)
    _, J_dot, _ = _task(model, q, J_dot, "J_dot")
    if J_dot.shape != J.shape:
        raise ShapeError(f"J_dot has shape {J_dot.shape[1:] if not batch else J_dot.shape}; it must have J's, "
                         f"{J.shape[1:] if not batch else J.shape}")
    c = engine_bias(model, q, qd)
    c, V = (c, np.asarray(qd, dtype=float)) if batch else (c[None], np.asarray(qd, dtype=float)[None])
    Lam, MinvJt = _inertia(M, J, _damping(damping))
    task_c = np.einsum("nvm,nv->nm", MinvJt, c) - np.einsum("nmv,nv->nm", J_dot, V)           # J M^-1 c - J_dot qd
    mu = np.einsum("nij,nj->ni", Lam, task_c)
    return mu if batch else mu[0]

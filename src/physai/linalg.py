"""Solving with mass matrices: one place that turns a singular M into a clear error."""

import numpy as np

from physai.exceptions import InvalidModelError, InvalidStateError

SINGULAR = "the mass matrix is singular at this state: a degree of freedom moves no mass and has no armature"


def pivot_error(pivots: np.ndarray) -> Exception:
    """The error of a Cholesky factorization whose pivots are not all > 0: InvalidStateError when one is NaN or infinite
    (the state or a step's stage overflowed: a divergence, not a model without mass), else InvalidModelError(SINGULAR)."""
    if not np.isfinite(pivots).all():
        return InvalidStateError("the mass matrix is not finite at this state: the state overflowed (a diverging step)")
    return InvalidModelError(SINGULAR)


def solve(M: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x with M x = b, for a mass matrix M (nv, nv) or a stack (..., nv, nv) and b (nv,) or (..., nv).

    Raises InvalidModelError when M is singular (np.linalg.solve's LU is as accurate as Cholesky on an SPD M).
    """
    try:
        return np.linalg.solve(M, b[..., None])[..., 0]
    except np.linalg.LinAlgError:
        raise InvalidModelError(SINGULAR) from None


def inverse(M: np.ndarray) -> np.ndarray:
    """M^-1 for a stack of square matrices (..., k, k); InvalidModelError when one is singular."""
    try:
        return np.linalg.inv(M)
    except np.linalg.LinAlgError:
        raise InvalidModelError(SINGULAR) from None

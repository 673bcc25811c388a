"""Argument checks at the library boundary: clear messages instead of numpy broadcasting errors."""

import numpy as np

from physai.exceptions import InvalidArgumentError, InvalidStateError, ShapeError


def as_array(name: str, x, shape: tuple[int, ...]) -> np.ndarray:
    """`x` as a float array of exactly `shape`, finite; raises ShapeError or InvalidStateError naming `name`."""
    a = to_float(name, x, f"an array of {_describe(shape)}")
    if a.shape != shape:
        if len(shape) == 1 and a.ndim == 1:
            count = "1 entry" if a.shape[0] == 1 else f"{a.shape[0]} entries"
            raise ShapeError(f"{name} has {count}, the model needs {shape[0]}")
        raise ShapeError(f"{name} must have shape {shape} ({_describe(shape)}), got shape {a.shape}")
    bad = ~np.isfinite(a)
    if bad.any():
        i = tuple(int(k) for k in np.argwhere(bad)[0])
        what = f"{name}[{', '.join(map(str, i))}]" if i else name
        raise InvalidStateError(f"{what} is {a[i]}; {name} must be finite")
    return a


def to_float(name: str, x, expected: str) -> np.ndarray:
    """x as a float array of any shape; ShapeError naming `name` and `expected` for complex or non-numeric input."""
    if np.iscomplexobj(x):
        raise ShapeError(f"{name} must be real numbers, got complex values")
    try:
        return np.asarray(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ShapeError(f"{name} must be {expected}, got {type(x).__name__}: {exc}") from None


def vector(name: str, x, n: int) -> np.ndarray:
    """`x` as a finite float vector of n entries, e.g. q with n = nv."""
    return as_array(name, x, (n,))


def number(name: str, x, unit: str, positive: bool = False) -> float:
    """x as a float: one real, finite number (> 0 if positive), not a bool, a string or an array.

    For options such as a timestep [s] or a tolerance; raises InvalidArgumentError naming `name` and `unit`.
    """
    what = "a finite number > 0" if positive else "a finite number"
    try:
        if isinstance(x, (bool, np.bool_, str, bytes)) or np.ndim(x) != 0 or np.iscomplexobj(x):
            raise TypeError
        value = float(x)
    except (TypeError, ValueError):
        value = None
    if value is None or not np.isfinite(value) or (positive and value <= 0):
        raise InvalidArgumentError(f"{name} is {x!r}; expected {what} [{unit}]")
    return value


def _describe(shape: tuple[int, ...]) -> str:
    if not shape:
        return "one number"
    return f"{shape[0]} numbers" if len(shape) == 1 else "x".join(map(str, shape)) + " numbers"

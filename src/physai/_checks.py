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
    """x as a float array of any shape; ShapeError naming `name` and `expected` for complex or non-numeric input.

    Strings ("0.3") and booleans (True, np.array([True])) are refused, not converted: numpy would parse the one
    and read the other as 1.0 and 0.0, and either is more likely a mistake than a number.
    """
    found = _text_or_bool(x)
    if found is not None:
        what, example = found
        if what == "strings":
            raise ShapeError(f"{name} must be {expected}, got strings ({example!r}); physai does not parse text, "
                             "convert it with float() first")
        raise ShapeError(f"{name} must be {expected}, got booleans ({example!r}); physai does not read True/False as "
                         "1/0, convert them with float() or .astype(float) first if that is meant")
    if np.iscomplexobj(x):
        raise ShapeError(f"{name} must be real numbers, got complex values")
    try:
        return np.asarray(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ShapeError(f"{name} must be {expected}, got {type(x).__name__}: {exc}") from None


def _text_or_bool(x):
    """("strings" or "booleans", the first such value) when x is or holds a str, bytes or bool; None otherwise.

    An array is judged by its dtype (no loop); lists and tuples are looked through, since numpy would turn
    [0.5, True] into [0.5, 1.0] without a trace.
    """
    if isinstance(x, (str, bytes)):
        return "strings", x.item() if isinstance(x, np.generic) else x
    if isinstance(x, (bool, np.bool_)):
        return "booleans", bool(x)
    if isinstance(x, np.ndarray):
        if x.dtype.kind in "USb":
            return ("booleans" if x.dtype.kind == "b" else "strings"), (x.flat[0].item() if x.size else x)
        if x.dtype.kind != "O":
            return None
        items = x.flat
    elif isinstance(x, (list, tuple)):
        items = x
    else:
        return None
    for item in items:
        found = _text_or_bool(item)
        if found is not None:
            return found
    return None


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


def finite_result(what: str, x):
    """x if every entry is finite; InvalidStateError naming `what` otherwise (finite inputs that overflowed)."""
    if not np.all(np.isfinite(x)):
        raise InvalidStateError(f"{what} is not finite although the inputs are: the numbers overflow (velocities or "
                                "accelerations too large, e.g. 1e200) or a body moves without mass, inertia or armature")
    return x

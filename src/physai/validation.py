"""Argument validation at the library boundary: named errors with Pinocchio-style messages, never numpy's.

    as_array(name, x, shape)     a finite float array of exactly that shape
    vector(name, x, n)           a finite float vector of n entries
    states(q=(x, nq), ...)       one state (size,) or a batch (N, size) of joint arrays, in the engine's layout
    number(name, x, unit)        one finite number (a timestep, a tolerance)
    flag(name, x)                True or False
    mass(who, m)                 a body's mass, finite and >= 0
    inertia(who, I)              a physical 3x3 rotational inertia
    finite_result(what, x)       a result that overflowed from finite inputs

Each raises physai.exceptions.ShapeError, InvalidStateError, InvalidArgumentError or InvalidInertiaError naming the
argument and what was expected.
"""

import math
import os

import numpy as np

from physai.exceptions import InvalidArgumentError, InvalidInertiaError, InvalidStateError, ShapeError


def as_array(name: str, x, shape: tuple[int, ...]) -> np.ndarray:
    """`x` as a float array of exactly `shape`, finite; raises ShapeError or InvalidStateError naming `name`."""
    a = to_float(name, x, lambda: f"an array of {_describe(shape)}")
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


def to_float(name: str, x, expected) -> np.ndarray:
    """x as a float array of any shape; ShapeError naming `name` and `expected` for complex or non-numeric input.

    `expected`: the text ("an array of 7 entries"), or a function making it (not called for a float64 array).

    Strings ("0.3") and booleans (True, np.array([True])) are refused, not converted: numpy would parse the one
    and read the other as 1.0 and 0.0, and either is more likely a mistake than a number.
    """
    if type(x) is np.ndarray and x.dtype == np.float64:    # already what is returned: nothing to refuse or convert
        return x
    expected = expected if isinstance(expected, str) else expected()
    found = _text_or_bool(x)
    if found is not None:
        what, example = found
        if what == "strings":
            raise ShapeError(f"{name} must be {expected}, got strings ({example!r}); physai does not parse text, "
                             "convert it with float() first")
        raise ShapeError(f"{name} must be {expected}, got booleans ({example!r}); physai does not read True/False as "
                         "1/0, convert them with float() or .astype(float) first if that is meant")
    try:                                                   # both read x as an array: ragged lists fail in either
        complex_values = np.iscomplexobj(x)
        a = None if complex_values else np.asarray(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ShapeError(f"{name} must be {expected}, got {type(x).__name__}: {exc}") from None
    if complex_values:
        raise ShapeError(f"{name} must be real numbers, got complex values")
    return a


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
    if type(x) is float:                               # the common case, without numpy's checks
        value = x
    else:
        try:
            if isinstance(x, (bool, np.bool_, str, bytes)) or np.ndim(x) != 0 or np.iscomplexobj(x):
                raise TypeError
            value = float(x)
        except (TypeError, ValueError, OverflowError):
            value = None
    if value is None or not math.isfinite(value) or (positive and value <= 0):
        raise InvalidArgumentError(f"{name} is {x!r}; expected {what} [{unit}]")
    return value


def _describe(shape: tuple[int, ...]) -> str:
    if not shape:
        return "one number"
    return f"{shape[0]} numbers" if len(shape) == 1 else "x".join(map(str, shape)) + " numbers"


def machine_memory() -> int:
    """This machine's physical memory [bytes] (os.sysconf), or 1 TB where it cannot be read (Windows): the bound of an
    output that is refused before it is allocated."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return 2 ** 40


def finite_result(what: str, x, state_axis: int | None = None):
    """x if every entry is finite; InvalidStateError otherwise: finite inputs whose result overflowed.

    The error names `what`, the first state holding a NaN or an infinity (x's axis state_axis, when x holds several
    states) and that entry's index within the state."""
    bad = ~np.isfinite(x)
    if not bad.any():
        return x
    if state_axis is None:
        at, index = [], np.argwhere(bad)[0]
    else:
        first = np.argwhere(np.moveaxis(bad, state_axis, 0))[0]
        at, index = [f"state {int(first[0])}"], first[1:]
    at += [f"index {tuple(int(i) for i in index)}"] if len(index) else []
    raise InvalidStateError(f"{what} is not finite{' at ' + ', '.join(at) if at else ''} although the inputs are: the "
                            "numbers overflow double precision (positions, velocities or forces too large, e.g. 1e200: "
                            "bring q, qd and the inputs within range) or a body moves without mass, inertia or armature")


def matrix(name: str, x, shape: str) -> np.ndarray:
    """x as a finite 2-D float array: ShapeError if it is ragged or not 2-D, InvalidStateError for NaN or infinity."""
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ShapeError(f"{name} must be an {shape} array, got {type(x).__name__}: {exc}") from None
    if a.ndim != 2:
        raise ShapeError(f"{name} must be an {shape} array, got shape {a.shape}")
    return as_array(name, a, a.shape)


def flags(name: str, x, nu: int) -> np.ndarray:
    """x as a boolean array (nu,), one flag per actuator; ShapeError naming `name` otherwise."""
    a = np.asarray(x)
    if a.shape != (nu,):
        raise ShapeError(f"{name} must have one entry per actuator, shape ({nu},), got shape {a.shape}")
    return a.astype(bool)


def flag(name: str, value) -> bool:
    """value as a bool: True or False only (1, 0 and strings are refused with InvalidArgumentError naming `name`)."""
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidArgumentError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def mass(who: str, m: float) -> float:
    """m as a float, a body's mass [kg]: finite and >= 0 (InvalidInertiaError naming `who` otherwise)."""
    m = float(m)
    if not m >= 0 or not np.isfinite(m):
        raise InvalidInertiaError(f"{who}: mass {m} kg, expected a finite number >= 0")
    return m


def inertia(who: str, I: np.ndarray) -> None:
    """Refuse a 3x3 rotational inertia [kg m^2] that no rigid body has: asymmetric, a negative principal moment, or
    principal moments that break the triangle rule A + B >= C, or entries that are not finite (InvalidInertiaError
    naming `who`)."""
    if not np.isfinite(I).all():
        raise InvalidInertiaError(f"{who}: inertia has entries that are not finite (its principal moments and their "
                                  f"axes, MuJoCo's body_inertia and body_iquat, must be finite):\n{I}")
    scale = max(1.0, np.abs(I).max())
    if np.abs(I - I.T).max() > 1e-12 * scale:
        raise InvalidInertiaError(f"{who}: inertia is not symmetric:\n{I}")
    a, b, c = np.linalg.eigvalsh(I)
    if a < -1e-12 * scale:
        raise InvalidInertiaError(f"{who}: inertia has a negative principal moment {a:.6g} kg m^2")
    if a + b < c - 1e-9 * scale:
        raise InvalidInertiaError(f"{who}: principal moments {a:.6g}, {b:.6g}, {c:.6g} break the triangle rule A + B >= C")


def states(**arrays):
    """Check joint-space arrays given by name with their sizes (q=(x, nq), qd=(x, nv), ...) and bring them to the
    engine's layout.

    Each must be one state (size,) or a batch (N, size) with the same N as the other batched ones; a single
    state is shared by every state of the batch. Returns (list of the arrays in order, each (size, n) with the
    state index last, n = N or 1; batch: N, or None when every input was a single state).
    Raises ShapeError for wrong shapes, InvalidStateError for NaN or infinity.
    """
    out, batch, first = [], None, None
    for name, (x, size) in arrays.items():
        a = to_float(name, x, f"an array of shape ({size},) or (N, {size})")
        if a.ndim == 1:
            if a.shape[0] != size:
                count = "1 entry" if a.shape[0] == 1 else f"{a.shape[0]} entries"
                raise ShapeError(f"{name} has {count}, the model needs {size}")
        elif a.ndim == 2:
            if a.shape[1] != size:
                raise ShapeError(f"{name} has shape {a.shape}, the model needs ({a.shape[0]}, {size}) or ({size},)")
            if batch is None:
                batch, first = a.shape[0], name
            elif a.shape[0] != batch:
                raise ShapeError(f"{name} has {a.shape[0]} states but {first} has {batch}; batched inputs need the same "
                                 f"number of states (a single ({size},) state is shared by the whole batch)")
        else:
            raise ShapeError(f"{name} must have shape ({size},) or (N, {size}), got shape {a.shape}")
        if not np.isfinite(a).all():
            i = tuple(int(k) for k in np.argwhere(~np.isfinite(a))[0])
            raise InvalidStateError(f"{name}[{', '.join(map(str, i))}] is {a[i]}; {name} must be finite")
        out.append(a)
    if batch == 0:
        raise ShapeError(f"{first} holds 0 states; a batch needs at least one")
    if batch is None:                                          # one state: each a column (a view where it can be)
        return [np.ascontiguousarray(a.reshape(-1, 1)) for a in out], None
    cols = [np.ascontiguousarray(np.broadcast_to(a.reshape(-1, 1), (a.shape[0], batch)) if a.ndim == 1 else a.T)
            for a in out]
    return cols, batch

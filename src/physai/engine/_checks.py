"""Argument checks of the engine's boundary: one state or a batch of N states, with Pinocchio-style messages."""

import numpy as np

from physai._checks import to_float
from physai.exceptions import InvalidStateError, ShapeError


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
    n = 1 if batch is None else batch
    cols = [np.ascontiguousarray(np.broadcast_to(a.reshape(-1, 1), (a.shape[0], n)) if a.ndim == 1 else a.T)
            for a in out]
    return cols, batch

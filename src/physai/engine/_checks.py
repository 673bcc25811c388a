"""Argument checks of the engine's boundary: one state (nv,) or a batch (N, nv), with Pinocchio-style messages."""

import numpy as np

from physai._checks import to_float
from physai.exceptions import InvalidStateError, ShapeError


def states(nv: int, **arrays):
    """Check joint-space arrays given by name (q=..., qd=...) and bring them to the engine's layout.

    Each must be one state (nv,) or a batch (N, nv) with the same N as the other batched ones; a single
    state is shared by every state of the batch. Returns (list of the arrays in order, each (nv, n) with the
    state index last, n = max(N, 2); batch: N, or None when every input was a single state).
    Raises ShapeError for wrong shapes, InvalidStateError for NaN or infinity.
    """
    out, batch, first = [], None, None
    for name, x in arrays.items():
        a = to_float(name, x, f"an array of shape ({nv},) or (N, {nv})")
        if a.ndim == 1:
            if a.shape[0] != nv:
                count = "1 entry" if a.shape[0] == 1 else f"{a.shape[0]} entries"
                raise ShapeError(f"{name} has {count}, the model needs {nv}")
        elif a.ndim == 2:
            if a.shape[1] != nv:
                raise ShapeError(f"{name} has shape {a.shape}, the model needs ({a.shape[0]}, {nv}) or ({nv},)")
            if batch is None:
                batch, first = a.shape[0], name
            elif a.shape[0] != batch:
                raise ShapeError(f"{name} has {a.shape[0]} states but {first} has {batch}; batched inputs need the same "
                                 f"number of states (a single ({nv},) state is shared by the whole batch)")
        else:
            raise ShapeError(f"{name} must have shape ({nv},) or (N, {nv}), got shape {a.shape}")
        if not np.isfinite(a).all():                                     # (no BLAS here: its threads stall large batches)
            i = tuple(int(k) for k in np.argwhere(~np.isfinite(a))[0])
            raise InvalidStateError(f"{name}[{', '.join(map(str, i))}] is {a[i]}; {name} must be finite")
        out.append(a)
    # one state runs as two identical columns: numpy sums a lone column in a different order, and
    # this way a state gives bit-for-bit the same result alone or inside any batch
    n = 2 if batch is None or batch == 1 else batch
    cols = []
    for a in out:
        if a.ndim == 1 or a.shape[0] == 1:
            c = np.empty((nv, n))
            c[:] = a.reshape(nv, 1)
        else:
            c = np.ascontiguousarray(a.T)
        cols.append(c)
    return cols, batch

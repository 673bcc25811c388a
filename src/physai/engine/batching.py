"""One state or a batch: how the engine's public functions take their arrays and return their results.

    run(model, data, arrays, compute)    check the arrays (validation.states), then compute(d, *arrays) on a Data,
                                         chunk by chunk for a large batch; returns (result, batch)
    result(x, batch, what)               the engine's layout (..., n) back to the caller's: (N, ...) or (...)
    scalar_result(x, batch, what)        the same for one number per state: a float, or (N,)
    workspace(model, data, batch)        the Data to compute in: the caller's (checked) or a new one
"""

import numpy as np

from physai.engine.data import Data
from physai.engine.model import Model
from physai.exceptions import InvalidModelError, ShapeError
from physai.validation import finite_result, states

#: states per chunk of a large batch: arrays stay a few MB (cache-sized, reused by malloc instead of page-faulted)
CHUNK = 1024


def workspace(model: Model, data, batch) -> Data:
    """data if it is a Data of this model for the batch's number of states (ShapeError, InvalidModelError otherwise);
    a new Data when data is None."""
    n = 1 if batch is None else batch
    if data is None:
        return Data(model, n)
    if not isinstance(data, Data) or data.n != n:
        got = f"a Data for {data.n} states" if isinstance(data, Data) else type(data).__name__
        raise ShapeError(f"data must be a physai.engine.Data for {n} states (Data(model, {n})), got {got}")
    if data.model is not model:
        raise InvalidModelError("data was made for another Model; use Data(model, n) with the model you pass")
    return data


def run(model: Model, data, arrays: dict, compute):
    """Check the arrays (name -> (value, size)), run compute(d, *arrays) on the states, chunk by chunk.

    Returns (result, batch). A large batch runs in near-equal chunks of at most CHUNK states; with data given,
    everything runs at once in it. A state's result does not depend on the chunking or the batch size beyond
    rounding (numpy may sum in another order for other shapes): compare across batch sizes with a bound.
    """
    cols, batch = states(**arrays)
    n = cols[0].shape[1]
    with np.errstate(over="ignore", invalid="ignore"):                # an overflow is reported by result, by name
        if data is not None or n <= CHUNK:
            return compute(workspace(model, data, batch), *cols), batch
        bounds = np.linspace(0, n, -(-n // CHUNK) + 1).astype(int)
        parts = [compute(Data(model, int(hi - lo)), *(np.ascontiguousarray(c[:, lo:hi]) for c in cols))
                 for lo, hi in zip(bounds[:-1], bounds[1:])]
    return np.concatenate(parts, axis=-1), batch


def result(x: np.ndarray, batch, what: str):
    """Engine layout (..., n) to the caller's: (N, ...) for a batch, (...) for a single state.

    Finite inputs that give a non-finite result (an overflow, a massless link) raise InvalidStateError naming `what`.
    """
    finite_result(what, x, state_axis=-1)
    if batch is None:
        return x[..., 0].copy()
    return np.ascontiguousarray(np.moveaxis(x, -1, 0))


def scalar_result(x: np.ndarray, batch, what: str):
    """result for one number per state (n,): a float for a single state, (N,) for a batch."""
    out = result(x, batch, what)
    return float(out) if batch is None else out

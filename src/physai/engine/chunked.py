"""The engine's public functions over Dask arrays of states: one engine call per chunk of states (map_blocks).

    import dask.array as da
    from physai import engine
    model = engine.from_mujoco("franka_emika_panda")
    q = da.from_array(Q, chunks=(100_000, model.nq))       # (N, nq), chunked along N only
    tau = engine.map_states(engine.rnea, model, q, qd, qdd)  # a lazy (N, nv) Dask array
    tau.to_zarr("tau.zarr")                                  # or .compute(); on a distributed.Client, its workers

Each chunk of N states is one batched call of the engine (the compiled backend when built: its threads work
inside each task), so the result equals the direct call on the whole array (the compiled backend runs the
same operations whatever the chunking; the NumPy one agrees within 1e-13 relative). The same code runs on a
cluster: create a distributed.Client (LocalCluster, or a scheduler address) before .compute(); the Model is
sent to the workers with the task graph. Dask is physai's dask extra (pip install 'physai[dask]': dask[array] and
distributed), imported on the first call.
"""

import numpy as np

from physai.engine.loaders import as_model
from physai.engine.model import Model
from physai.exceptions import InvalidArgumentError, ShapeError
from physai.extras import require

# the output's per-state shape of each public function: "v" (nv,), "M" (nv, nv), "s" scalar
_OUTPUT = {"rnea": "v", "bias": "v", "gravity": "v", "mass_matrix": "M", "crba": "M", "forward_dynamics": "v",
           "aba": "v", "kinetic_energy": "s", "potential_energy": "s", "energy": "s"}


def map_states(function, model, *arrays):
    """function(model, *arrays) (a public physai.engine function) over Dask arrays of states, lazily.

    arrays: the function's joint arrays in order (q, qd, ...): Dask arrays (N, size) chunked along N (the second
    axis is brought to one chunk), or NumPy/Dask single states (size,) shared by every state. The batched ones
    must have the same N and the same chunks along it. Returns a Dask array (N, nv), (N, nv, nv) or (N,).
    """
    da = require("dask.array", "dask", "physai.engine.map_states")
    name = getattr(function, "__name__", "")
    if name not in _OUTPUT:
        raise InvalidArgumentError(f"map_states takes a public physai.engine function ({', '.join(sorted(_OUTPUT))}), "
                                   f"got {function!r}")
    model = model if isinstance(model, Model) else as_model(model)
    batched = [a for a in arrays if isinstance(a, da.Array) and a.ndim == 2]
    if not batched:
        raise ShapeError("map_states needs at least one Dask array of states (N, size); for single states call "
                         f"engine.{name} directly")
    chunks = batched[0].chunks[0]
    args, letters = [], iter("jklmnop")
    for a in arrays:
        if isinstance(a, da.Array) and a.ndim == 2:
            if a.shape[0] != batched[0].shape[0]:
                raise ShapeError(f"the Dask arrays hold {batched[0].shape[0]} and {a.shape[0]} states; they need the same N")
            args += [a.rechunk({0: chunks, 1: -1}), "i" + next(letters)]
        else:
            args += [np.asarray(a), None]                                 # a single state, shared
    kind, nv = _OUTPUT[name], model.nv
    out, new_axes = {"v": ("ia", {"a": nv}), "M": ("iab", {"a": nv, "b": nv}), "s": ("i", {})}[kind]

    def block(*xs):
        return np.asarray(function(model, *xs), dtype=float)

    return da.blockwise(block, out, *args, new_axes=new_axes, dtype=float, concatenate=True)

"""examples/dask_rnea.py on a small N: generated states through engine.map_states on a distributed.LocalCluster
(in one process, to stay quick), written to Zarr, equal to the direct engine.rnea call on the same states.

Bound: 1e-13 times the largest |tau| (the compiled backend runs the same operations whatever the chunking; the
NumPy backend, or a worker on another instruction set, differs at rounding level). The Model goes to the
workers by pickle, which drops the compiled backend's cache: tested here too.
"""

import importlib.util
import pickle
from pathlib import Path

import distributed  # noqa: F401  the example's cluster: a dev dependency, so a missing one fails here rather than skipping
import numpy as np
import zarr

from physai import engine
from physai.engine import native

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "dask_rnea.py"
REL = 1e-13


def load_example():
    spec = importlib.util.spec_from_file_location("dask_rnea_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_dask_rnea_example_writes_what_the_direct_call_gives(tmp_path, capsys):
    example = load_example()
    out = tmp_path / "tau.zarr"
    result = example.main(["--states", "2e4", "--chunk", "3000", "--in-process", "--out", str(out)])
    assert "states/s" in capsys.readouterr().out
    q, qd, qdd = (a.compute() for a in result["inputs"])
    assert q.shape == (20_000, result["model"].nq) and np.isfinite(q).all()
    assert len(np.unique(q[:, 0])) == len(q)                   # every chunk draws its own states
    direct = engine.rnea(result["model"], q, qd, qdd)
    written = zarr.open_array(str(out), mode="r")[:]
    assert written.shape == direct.shape
    assert np.abs(written - direct).max() <= REL * np.abs(direct).max()
    again = [a.compute() for a in example.generated_states(result["model"], 20_000, 3000, seed=0)]
    assert all(np.array_equal(a, b) for a, b in zip(again, (q, qd, qdd)))   # the same states from the same seed


def test_model_pickles_without_the_compiled_cache():
    model = engine.from_mujoco("double_pendulum")
    q, qd = engine.random_states(model, 50, 1)
    tau = engine.rnea(model, q, qd, qd)                          # builds the native cache where the backend is active
    copy = pickle.loads(pickle.dumps(model))
    assert model.compiled is not None or not native.on
    assert "compiled" not in copy.__dict__ and copy.compiled is None
    np.testing.assert_array_equal(engine.rnea(copy, q, qd, qd), tau)

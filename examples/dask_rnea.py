"""Inverse dynamics of 10 million generated Panda states on a Dask cluster, written to Zarr (issue F, Dask beyond one machine).

    uv run python examples/dask_rnea.py                          # 1e7 states, LocalCluster of 2 worker processes
    uv run python examples/dask_rnea.py --states 2e5 --out /tmp/tau.zarr
    uv run python examples/dask_rnea.py --scheduler tcp://host:8786   # the same code on a running cluster

The states never exist in one place: each chunk of `--chunk` states is generated inside the task graph from
(seed, chunk index) by physai.engine.random_states, so a chunk is the same whatever worker makes it. The
joint arrays are (N, nq) and (N, nv), chunked along N with the joint axis in one chunk; engine.map_states runs
one batched engine.rnea per chunk and the (N, nv) torques go straight from the workers to a Zarr store.
Prints the states per second of the whole pipeline (generate, rnea, write). main(argv) returns what it measured
(tests/test_dask_example.py runs it on 2e4 states in one process).
"""

import argparse
import os
import time
from pathlib import Path

import dask.array as da
import numpy as np

from physai import engine


def generated_states(model: engine.Model, n: int, chunk: int, seed: int = 0):
    """Lazy Dask arrays q (n, nq), qd (n, nv), qdd (n, nv), chunked along N by `chunk` states.

    Chunk i is drawn from numpy's default_rng([seed, i]): q and qd by engine.random_states (q in the joint ranges,
    qd in [-1, 1]), qdd uniform in [-1, 1]. Nothing is computed until the arrays are.
    """
    sizes = tuple(min(chunk, n - start) for start in range(0, n, chunk))
    nq, nv = model.nq, model.nv

    def block(index: np.ndarray) -> np.ndarray:      # index: the chunk's number, a (1,) block of `blocks`
        i = int(index[0])
        rng = np.random.default_rng([seed, i])
        q, qd = engine.random_states(model, sizes[i], rng)
        return np.hstack([q, qd, rng.uniform(-1.0, 1.0, (sizes[i], nv))])

    blocks = da.arange(len(sizes), chunks=1)
    X = blocks.map_blocks(block, chunks=(sizes, (nq + 2 * nv,)), new_axis=1, dtype=float)
    return X[:, :nq], X[:, nq:nq + nv], X[:, nq + nv:]


def parse(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--states", type=float, default=1e7, help="number of states N (default 1e7)")
    parser.add_argument("--chunk", type=int, default=100_000, help="states per chunk (default 100000)")
    parser.add_argument("--robot", default="franka_emika_panda", help="a Menagerie name or an MJCF path")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("tau.zarr"), help="the Zarr store to write (replaced)")
    parser.add_argument("--workers", type=int, default=2, help="LocalCluster workers (default 2)")
    parser.add_argument("--in-process", action="store_true",
                        help="LocalCluster(processes=False): workers as threads of this process (quick, for tests)")
    parser.add_argument("--scheduler", help="address of a running scheduler (tcp://host:8786) instead of a LocalCluster")
    return parser.parse_args(argv)


def main(argv=None) -> dict:
    from distributed import Client, LocalCluster

    args = parse(argv)
    n = int(args.states)
    model = engine.from_mujoco(args.robot)
    if args.scheduler:
        cluster, client = None, Client(args.scheduler)
    else:
        # one thread per worker process, and one engine thread per call in it: the workers share the cores
        processes = {"env": {"PHYSAI_NUM_THREADS": os.environ.get("PHYSAI_NUM_THREADS", "1")}} if not args.in_process else {}
        cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=not args.in_process,
                               dashboard_address=None, **processes)
        client = Client(cluster)
    try:
        q, qd, qdd = generated_states(model, n, args.chunk, args.seed)
        tau = engine.map_states(engine.rnea, model, q, qd, qdd)       # lazy (N, nv), chunked like q
        start = time.perf_counter()
        tau.to_zarr(str(args.out), overwrite=True)
        seconds = time.perf_counter() - start
        workers = len(client.scheduler_info()["workers"])
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    rate = n / seconds
    print(f"{args.robot}: engine.rnea over {n:.3g} generated states in {len(q.chunks[0])} chunks of up to {args.chunk} "
          f"on {workers} Dask workers ({engine.backend} backend) -> {args.out}: {seconds:.2f} s, {rate:.3g} states/s")
    return {"states": n, "seconds": seconds, "states_per_s": rate, "out": args.out, "model": model,
            "inputs": (q, qd, qdd)}


if __name__ == "__main__":
    main()

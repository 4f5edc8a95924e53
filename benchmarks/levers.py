"""One gpcore lever at a time, for the tables in benchmarks/RESULTS.md.

    python benchmarks/levers.py speed [--count N] [--intra T] [--inter T]
                                      [--batch-size B] [--restarts R] [--grid G:r1,r2,...]
    python benchmarks/levers.py quality [--restarts R] [--grid G:r1,r2,...]

speed: GPFitter.fit over the first N series of workload a in this process
(TF threads set first); prints series/s, CPU ms per series, Newton
evaluations and grid values per series. quality: the real-data check of
realdata.py with these settings (the peer's results are reused from
benchmarks/results/realdata-sklearn.json when present). --grid G:r1,...
sets the search grid: G length scales, noise ratios r1, ... (the default
is gpcore/starts.py's).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))


def _grid(text: str | None, piece: int | None = None, rescored: int | None = None) -> None:
    """Sets the grid's constants (gpcore.kernels' length scales, gpcore.starts'
    noise ratios) from "G:r1,r2,..." and the grid's piece length and
    rescored points (before a fitter is built)."""
    from gpcore import kernels, starts
    if piece:
        starts.GRID_PIECE_POINTS = piece
    if rescored is not None:
        starts.GRID_RESCORED = rescored
    if text:
        rows, noise = text.split(":")
        kernels.LENGTH_GRID_SIZE = int(rows)
        starts.NOISE_GRID = tuple(float(r) for r in noise.split(","))


def speed(args) -> str:
    from gpcore.threads import configure_threads, skip_graph_rewrites
    configure_threads(args.intra, args.inter)  # before TensorFlow runs any op
    skip_graph_rewrites()  # as the pipeline does
    _grid(args.grid, args.piece, args.rescored)
    import numpy as np
    import workloads
    from gpcore import FitConfig, GPFitter

    series = workloads.workload("a", args.count)
    config = FitConfig(restarts=args.restarts, batch_size=args.batch_size)
    fitter = GPFitter(config)
    fitter.fit(series[:2])  # build and trace apart
    before = dict(fitter.work)
    wall, cpu = time.perf_counter(), time.process_time()
    results = fitter.fit(series)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    work = {k: fitter.work[k] - before[k] for k in before}
    return (f"{len(series)} series, threads {args.intra}/{args.inter}, batch {args.batch_size}, "
            f"R={config.restarts}: {len(series) / wall:.1f} series/s, "
            f"{1e3 * cpu / len(series):.1f} CPU ms/series, "
            f"{work['member_evaluations'] / len(series):.2f} Newton evaluations and "
            f"{work['grid_evaluations'] / len(series):.0f} grid values per series, "
            f"iterations {np.mean([r.iterations for r in results]):.2f}")


def quality(args) -> str:
    import quality as q
    import realdata

    series = realdata.real_series()
    reference = q.reference(series, cache=os.path.join(HERE, "results", "realdata-sklearn.json"))
    _grid(args.grid, args.piece, args.rescored)
    return q.summary(q.compare(series, restarts=args.restarts, reference_nll=reference), k=5)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/levers.py", description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=("speed", "quality"))
    parser.add_argument("--count", type=int, default=400, help="series of workload a (speed)")
    parser.add_argument("--intra", type=int, default=2, help="TF intra-op threads (speed)")
    parser.add_argument("--inter", type=int, default=2, help="TF inter-op threads (speed)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--restarts", type=int, default=None,
                        help="most starts per series (default: FitConfig's)")
    parser.add_argument("--piece", type=int, default=None,
                        help="grid scored on pieces of at most this many points")
    parser.add_argument("--rescored", type=int, default=None,
                        help="best piece-scored grid points scored again on the whole series")
    parser.add_argument("--grid", default=None, help="G:r1,r2,... length scales and noise ratios")
    args = parser.parse_args(argv)
    print({"speed": speed, "quality": quality}[args.what](args))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The default fit's search levers on the real tuning sets, one setting at a time.

    python benchmarks/search_levers.py [--set tuning|realdata|heldout_real|heldout_real2|heldout_real3|heldout_real4|heldout_real6|heldout_real7|heldout_real8|heldout_real9|both|all|workload_a]
        [--search thorough|balanced|quick] [NAME=VALUE ...]

Each NAME=VALUE sets a constant of gpcore/starts.py (kernels.NAME: of
gpcore/kernels.py) before the fitter is built (a tuple as comma-separated numbers, e.g. PROBE_LENGTHS=0.45,0.6,1.33,1.66),
so a lever is measured without editing the code (NAME= is the empty tuple). Prints, per set, the share
within 0.01 nats of the scikit-learn peer with 4 starts, the count worse by
> 1 nat, Newton evaluations per series and the worst series. Sets:
benchmarks/realdata_tuning.py (the failure modes of the held-out set, from
other sources), benchmarks/realdata.py (the quality set; `both` is these
two), and the held-out real sets that are tuning sets since they were
scored and their misses named (benchmarks/heldout_real.py,
heldout_real2.py, heldout_real3.py, heldout_real4.py, heldout_real6.py,
heldout_real7.py, heldout_real8.py, heldout_real9.py; `all` is the ten); never
benchmarks/heldout_real5.py, heldout_real10.py, heldout_real11.py,
heldout_real12.py, heldout_real13.py, heldout_real14.py or heldout_real15.py,
held out still (scored, no lever tuned on them: heldout_pooled.PROOF_SETS).
`--set workload_a` prints the cost instead: Newton evaluations and CPU
seconds per series on --count series of workload a (drawn from the model).
"""
from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# The held-out real sets that are tuning sets now (never heldout_pooled.PROOF_SETS).
STUDIED = ("heldout_real", "heldout_real2", "heldout_real3", "heldout_real4", "heldout_real6",
           "heldout_real7", "heldout_real8", "heldout_real9")
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))


def _constants(pairs) -> list:
    """[(module, NAME, value)] of each NAME=VALUE; a NAME gpcore.starts (or,
    as kernels.NAME, gpcore.kernels) lacks, or a VALUE of the wrong type, is
    refused naming the pair, before any set is loaded or fitted."""
    from gpcore import kernels, starts

    out = []
    for pair in pairs:
        name, sep, value = pair.partition("=")
        module = starts
        if name.startswith("kernels."):  # the grids' sizes are the kernels' own
            module, name = kernels, name.split(".", 1)[1]
        if not sep or not hasattr(module, name):
            raise SystemExit(f"{pair!r}: give NAME=VALUE with NAME a constant of gpcore/starts.py "
                             "(kernels.NAME: of gpcore/kernels.py)")
        old = getattr(module, name)
        try:
            out.append((module, name, tuple(float(v) for v in value.split(",") if v)
                        if isinstance(old, tuple) else type(old)(value)))
        except (TypeError, ValueError):
            kind = "comma-separated numbers" if isinstance(old, tuple) else type(old).__name__
            raise SystemExit(f"{pair!r}: VALUE must be {kind}, as in {name} = {old!r}") from None
    return out


def _set_constants(pairs) -> None:
    for module, name, value in _constants(pairs):
        setattr(module, name, value)


def main(argv=None) -> int:
    from gpcore.config import SEARCHES, THOROUGH, at_search

    parser = argparse.ArgumentParser(prog="benchmarks/search_levers.py",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--set", default="both", choices=(
        "tuning", "realdata", *STUDIED, "both", "all", "workload_a"))
    parser.add_argument("--count", type=int, default=500, help="series of workload a")
    parser.add_argument("--search", choices=SEARCHES, default=THOROUGH,
                        help="the fits' search (the command's --search; default %(default)s)")
    parser.add_argument("constants", nargs="*", help="NAME=VALUE of gpcore.starts")
    args = parser.parse_args(argv)
    _constants(args.constants)  # a wrong NAME=VALUE refused before the sets' peers load
    import quality
    import realdata
    import realdata_tuning

    if args.set == "workload_a":
        return _cost(args)
    peers = {}
    import heldout_oracle

    if args.set in ("tuning", "both", "all"):
        series = realdata_tuning.tuning_series()
        peers["tuning"] = (series, heldout_oracle.oracle_fits(series, "rbf", realdata_tuning.CACHE))
    if args.set in ("realdata", "both", "all"):
        series = realdata.real_series()
        peers["realdata"] = (series, quality.reference(series, os.path.join(
            HERE, "results", "realdata-sklearn.json")))
    for name in STUDIED:
        if args.set in (name, "all"):
            module = __import__(name)
            series = module.real_series()
            peers[name] = (series, heldout_oracle.oracle_fits(series, "rbf", module.CACHE))
    _set_constants(args.constants)  # before TensorFlow builds a fitter
    import gpcore

    print("settings:", " ".join(args.constants) or "defaults", "search", args.search)
    for name, (series, peer) in peers.items():
        fitter = gpcore.build_fitter(at_search(args.search))
        results = fitter.fit(series)
        evaluations = fitter.work["member_evaluations"] / len(series)
        if name != "realdata":
            g = heldout_oracle.gaps(series, results, peer["fits"])
            share, bad, worst = g.share_within, g.worse_than_bad_gap, g.worst(12)
        else:
            gaps = quality.gaps(results, peer)
            c = quality.Comparison([s.series_id for s in series], gaps, 0, 0, 0, 0, None)
            share, bad, worst = c.share_within, c.worse_than_bad_gap, c.worst(12)
        print(f"{name}: {len(series)} series, {100 * share:.1f} % within 0.01 nats, {bad} worse "
              f"by > 1 nat, {evaluations:.2f} Newton evaluations / series")
        print("  worst: " + ", ".join(f"{i} ({v:+.3f})" for i, v in worst))
        sys.stdout.flush()
    return 0


def _cost(args) -> int:
    import time

    import workloads

    series = workloads.workload("a", args.count)
    _set_constants(args.constants)
    import gpcore
    from gpcore.config import at_search

    fitter = gpcore.build_fitter(at_search(args.search))
    fitter.fit(series[:2])  # the trace, off the clock
    before = dict(fitter.work)
    start = time.process_time()
    fitter.fit(series)
    cpu = time.process_time() - start
    evaluations = fitter.work["member_evaluations"] - before["member_evaluations"]
    print("settings:", " ".join(args.constants) or "defaults", "search", args.search)
    print(f"workload a: {len(series)} series, {evaluations / len(series):.2f} Newton evaluations "
          f"/ series, {1000 * cpu / len(series):.1f} CPU ms / series")
    return 0


if __name__ == "__main__":
    sys.exit(main())

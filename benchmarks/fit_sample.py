"""A kernel's cost and fits on a sample of a seasonal set, to compare two
trees (or two settings) of gpcore exactly: CPU seconds of one fit call,
Newton evaluations, and every series' nll, written to JSON; `--compare`
reads an earlier run's file and prints how far each nll moved.

    python benchmarks/fit_sample.py --kernel rbf+periodic --every 4 --out before.json
    (change gpcore)
    python benchmarks/fit_sample.py --kernel rbf+periodic --every 4 --compare before.json

One process, one TensorFlow thread (the fitter traced before the clock
starts, on two series); run the two sides in one sitting, interleaved where
the machine is shared: CPU seconds move with the load.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/fit_sample.py",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--kernel", default="rbf+periodic")
    parser.add_argument("--set", default="seasonal", help="a set of seasonal_quality.SETS")
    parser.add_argument("--every", type=int, default=4, help="every k-th seasonal series")
    parser.add_argument("--out", default=None, help="JSON file for this run")
    parser.add_argument("--compare", default=None, help="an earlier run's JSON file")
    args = parser.parse_args(argv)

    from gpcore.threads import set_process_env
    set_process_env()
    import seasonal_quality as sq
    if args.set not in sq.SETS:  # known only now: seasonal_quality loads numpy
        parser.error(f"argument --set: no set {args.set!r}; give one of {', '.join(sq.SETS)}")
    from pipeline import fitters
    fitters.configure_threads(1)  # one fitter, one intra- and inter-op thread

    from gpcore import FitConfig

    cases, _, _ = sq.set_cases(args.set)
    series = [c.series for c in cases if c.seasonal][::args.every]
    work: dict = {}
    results, wall = sq.timed_fit(FitConfig(kernel=args.kernel), series, work)
    cpu = work["cpu_s"]
    run = {"kernel": args.kernel, "set": args.set, "every": args.every, "series": len(series),
           "cpu_s": round(cpu, 2), "wall_s": round(wall, 2),
           "evaluations": work.get("member_evaluations", 0),
           "nll": {r.series_id: r.nll for r in results}}
    print(f"{args.kernel} on {len(series)} series of {args.set}: {cpu:.2f} CPU s "
          f"({wall:.2f} s wall), {run['evaluations']} Newton evaluations")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(run, f, indent=1)
    if args.compare:
        with open(args.compare) as f:
            before = json.load(f)
        moved = [abs(run["nll"][k] - v) for k, v in before["nll"].items()
                 if k in run["nll"] and v is not None and run["nll"][k] is not None]
        print(f"before: {before['cpu_s']:.2f} CPU s, {before['evaluations']} evaluations; "
              f"now {cpu / before['cpu_s']:.3f}x the CPU; nll moved by at most "
              f"{max(moved, default=0.0):.3g} nats over {len(moved)} series "
              f"({sum(m > 0.01 for m in moved)} by > 0.01)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

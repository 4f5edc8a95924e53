"""Do warm starts ever end above a cold fit? A nightly chain's data, fitted
cold and warm-started from the night before.

    python benchmarks/warm_starts.py [--kernels rbf+periodic,...] [--count N]
        [--seed S]

Each of N series (`appended_nights`: tests/pipeline/nightly_chain.py's new
series, 8-200 whole days, smooth, some with a weekly or monthly cycle, then
1-3 days appended at another level, as the chain's nights append them) is
fitted on its first night; its second night is then fitted cold and
warm-started from that fit, by one GPFitter per kernel (the command's
fitter, its default settings). A warm start runs beside the usual starts and the best is kept
(docs/design.md, "Warm starts"), so warm - cold should never be above
Newton's tolerance; below it is a basin the cold search missed. Prints a
table per kernel: series above cold by > 0.01 and > 1 nat, below by
> 0.01, the extremes, and CPU seconds of the cold and warm fits.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

ABOVE = 0.01  # nats: a warm fit above its cold one by more than Newton's tolerance


def appended_nights(seed: int, count: int) -> list[tuple]:
    """[(first night, second night)] Series pairs, ids s0, s1, ...: each a
    nightly chain's new series (tests/pipeline/nightly_chain.py), then its
    points with 1-3 days appended at 10 + N(0, 1), as the chain's nights
    append them."""
    import os
    import sys

    from gpcore import Series

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                    "tests", "pipeline"))
    from nightly_chain import new_series

    rng = np.random.default_rng(seed)
    nights = []
    for i in range(count):
        t, y = new_series(rng)
        k = int(rng.integers(1, 4))
        t2 = np.append(t, t.max() + np.arange(1.0, k + 1))
        y2 = np.append(y, 10.0 + rng.standard_normal(k))
        nights.append((Series(f"s{i}", t, y), Series(f"s{i}", t2, y2)))
    return nights


def compare(kernel: str, nights: list[tuple]) -> dict:
    """Fits of one kernel: {gaps [N] warm - cold nll, cpu_cold, cpu_warm s}."""
    import dataclasses

    from gpcore import FitConfig, GPFitter

    fitter = GPFitter(FitConfig(kernel=kernel))
    previous = fitter.fit([first for first, _ in nights])
    start = time.process_time()
    cold = fitter.fit([second for _, second in nights])
    middle = time.process_time()
    warm = fitter.fit([dataclasses.replace(second, warm_start=p.params)
                       for (_, second), p in zip(nights, previous)])
    end = time.process_time()
    gaps = np.array([w.nll - c.nll for w, c in zip(warm, cold)])
    return {"gaps": gaps, "cpu_cold": middle - start, "cpu_warm": end - middle}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernels", default="rbf+periodic,matern52+periodic,rbf,matern52")
    parser.add_argument("--count", type=int, default=60)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    nights = appended_nights(args.seed, args.count)
    print(f"{args.count} series (seed {args.seed}), second night warm - cold nll\n")
    print("| kernel | above > 0.01 | above > 1 | below < -0.01 | highest | lowest "
          "| CPU s cold | CPU s warm |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|")
    for kernel in args.kernels.split(","):
        got = compare(kernel, nights)
        gaps = got["gaps"]
        print(f"| {kernel} | {np.sum(gaps > ABOVE)} | {np.sum(gaps > 1)} | "
              f"{np.sum(gaps < -ABOVE)} | {gaps.max():+.3f} | {gaps.min():+.3f} | "
              f"{got['cpu_cold']:.1f} | {got['cpu_warm']:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

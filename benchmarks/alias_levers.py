"""Prototype levers for the alias basins of sums with a periodic part
(branch alias-probes): sets gpcore.starts' constants for a named variant,
then runs a benchmark script as __main__ in this process.

    python benchmarks/alias_levers.py VARIANT SCRIPT [ARGS...]

VARIANT: base (the tree's constants), clip (one clipped jump run), alias
(ALIAS_PROBES_SET), echo (ECHO_PROBES_SET), any of them joined by "+", or "alias=k:L:q:f,..." / "clip+alias=..."
for other probe rows. Prints gpcore.__file__ first and, for the held-out
sets, the timed fit's process CPU seconds (heldout_oracle.fit_gpcore
wrapped).
"""
from __future__ import annotations

import os
import runpy
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

# (k, L spacings, variance x the noise's, smooth length factor)
ALIAS_PROBES_SET = ((1, 3.0, 1.0, 1.0), (1, 3.0, 3.0, 1.0), (1, 5.0, 1.0, 1.0), (1, 5.0, 3.0, 1.0),
                    (1, 3.0, 1.0, 2.0), (1, 3.0, 3.0, 2.0), (1, 5.0, 1.0, 2.0), (1, 5.0, 3.0, 2.0),
                    (2, 3.0, 0.3, 1.0), (2, 3.0, 1.0, 1.0), (2, 5.0, 0.3, 1.0), (2, 5.0, 1.0, 1.0))


# echo at these fractions of the span
ECHO_PROBES_SET = tuple(round(0.6 + 0.025 * i, 3) for i in range(17))


def _rows(text: str):
    return tuple(tuple(float(v) for v in row.split(":")) for row in text.split(","))


def apply(variant: str) -> None:
    from gpcore import starts

    name, _, rows = variant.partition("=")
    parts = set(name.split("+"))
    unknown = parts - {"base", "clip", "alias", "echo"}
    if unknown:
        raise SystemExit(f"unknown variant part(s): {sorted(unknown)}")
    if "clip" in parts:
        starts.CLIPPED_JUMP_RUNS = 1
    if "echo" in parts:
        starts.ECHO_PROBES = ECHO_PROBES_SET
    if "alias" in parts:
        starts.ALIAS_PROBES = _rows(rows) if rows else ALIAS_PROBES_SET


def _timed_fit_gpcore():
    """heldout_oracle.fit_gpcore, also printing the timed fit's process CPU
    seconds (the build and the two-series trace fit excluded, as its wall)."""
    import heldout_oracle

    def fit_gpcore(config, series, work=None):
        import gpcore

        fitter = gpcore.build_fitter(config)
        fitter.fit(series[:2])
        before = dict(getattr(fitter, "work", {}))
        start, cpu = time.perf_counter(), time.process_time()
        results = fitter.fit(series)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        if work is not None:
            work.update({k: v - before.get(k, 0) for k, v in getattr(fitter, "work", {}).items()})
        print(f"alias_levers: timed fit {len(series)} series, wall {seconds:.1f} s, "
              f"process CPU {cpu:.1f} s", flush=True)
        return results, seconds

    heldout_oracle.fit_gpcore = fit_gpcore


def main(argv) -> int:
    variant, script, *args = argv
    apply(variant)
    import gpcore
    from gpcore import starts

    print(f"alias_levers: {variant}; gpcore {gpcore.__file__}; ALIAS_PROBES {starts.ALIAS_PROBES}; "
          f"CLIPPED_JUMP_RUNS {starts.CLIPPED_JUMP_RUNS}", flush=True)
    _timed_fit_gpcore()
    sys.argv = [script, *args]
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

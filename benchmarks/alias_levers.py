"""The alias levers of sums with a periodic part, each alone: sets
gpcore.starts' constants for a named variant, then runs a benchmark script
as __main__ in this process (docs/design.md, "Periods the data can support").

    python benchmarks/alias_levers.py VARIANT SCRIPT [ARGS...]

VARIANT: "off" (none of the three), or any of "clip" (one clipped jump
run), "alias" (the alias probes) and "echo" (the echo probes) joined by
"+", the others off; "all" is what ships. "alias=k:L:q:f,..." sets other
alias probe rows. Prints gpcore.__file__ first and, for the held-out sets,
the timed fit's process CPU seconds (heldout_oracle.fit_gpcore wrapped).
"""
from __future__ import annotations

import argparse
import os
import runpy
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))


def _rows(text: str):
    return tuple(tuple(float(v) for v in row.split(":")) for row in text.split(","))


def apply(variant: str) -> None:
    from gpcore import starts

    name, _, rows = variant.partition("=")
    if name == "all":
        return
    parts = set(name.split("+")) - {"off"}
    unknown = parts - {"clip", "alias", "echo"}
    if unknown:
        raise SystemExit(f"unknown variant part(s): {sorted(unknown)}")
    if "clip" not in parts:
        starts.CLIPPED_JUMP_RUNS = 0
    if "echo" not in parts:
        starts.ECHO_PROBES = ()
    if "alias" not in parts:
        starts.ALIAS_PROBES = ()
    elif rows:
        starts.ALIAS_PROBES = _rows(rows)


def _timed_fit_gpcore():
    """heldout_oracle.fit_gpcore, also printing the timed fit's process CPU
    seconds (the build and the two-series trace fit excluded, as its wall)."""
    import heldout_oracle

    shipped = heldout_oracle.fit_gpcore

    def fit_gpcore(config, series, work=None):
        work = {} if work is None else work
        results, seconds = shipped(config, series, work)
        print(f"alias_levers: timed fit {len(series)} series, wall {seconds:.1f} s, "
              f"process CPU {work['process_cpu_s']:.1f} s", flush=True)
        return results, seconds

    heldout_oracle.fit_gpcore = fit_gpcore


def main(argv) -> int:
    parser = argparse.ArgumentParser(
        prog="benchmarks/alias_levers.py", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 2)[2])
    parser.add_argument("variant", help='"off", "all", or parts of clip+alias+echo')
    parser.add_argument("script", help="the benchmark script to run, e.g. benchmarks/heldout_seasonal.py")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments")
    args = parser.parse_args(argv)
    if not os.path.isfile(args.script):
        parser.error(f"no script {args.script!r}: give a benchmark script's path, "
                     "e.g. benchmarks/heldout_seasonal.py")
    variant, script, args = args.variant, args.script, args.args
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

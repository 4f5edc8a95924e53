"""What a nightly run costs when little changed: cold against next night.
`make bench-nightly` runs it; `--help` lists the options.

Night 1 is workload (a) of benchmarks/workloads.py (4,000 series of 64-256
points) fitted cold by the `gpfit` command. For each fraction (1 %, 5 %,
20 % by default), night 2 is the same data where that fraction of the
series (a fixed random choice) got --new-points new points past their end;
it is fitted with `--previous_output` night 1's folder. Each run is the
whole command (start-up included), timed from the outside, one at a time.

Quality: each changed series' nll in night 2 against a cold fit of the same
new data (GPFitter with FitConfig's defaults, in this process, after the
timed runs); the target is a gap <= 0.01 nats on >= 99 % of changed series.
Cost: the target is night 2's wall time <= 20 % of the cold run's at 5 %.

Prints a markdown table and writes it to RESULTS_DIR/nightly.md, with
nightly.json; commands' logs under RESULTS_DIR/logs/nightly-*.log.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)

# gpfit's process settings before numpy loads: this process draws the
# workload and fits the quality references, with one BLAS thread.
from gpcore.threads import PROCESS_ENV, set_process_env  # noqa: E402

set_process_env()

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from gpcore.config import SEARCHES, THOROUGH, at_search  # noqa: E402
from measure import run_measured  # noqa: E402
from workloads import workload  # noqa: E402

QUALITY_GAP, QUALITY_SHARE, COST_SHARE = 0.01, 0.99, 0.20
SEED = 17


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="benchmarks/nightly.py",
        description="Cold run against next night's run with a fraction of the series changed.")
    parser.add_argument("--count", type=int, default=4000,
                        help="series of workload a (default %(default)s)")
    parser.add_argument("--fractions", default="0.01,0.05,0.2",
                        help="comma-separated fractions of series changed (default %(default)s)")
    parser.add_argument("--new-points", type=int, default=8,
                        help="points added to each changed series (default %(default)s)")
    parser.add_argument("--results-dir", default=os.path.join(HERE, "results"),
                        help="where nightly.md, nightly.json and logs go (default %(default)s)")
    parser.add_argument("--timeout", type=float, default=3600.0,
                        help="seconds before a run is killed (default %(default)s)")
    parser.add_argument("--search", choices=SEARCHES, default=THOROUGH,
                        help="every run's --search, and the cold references' (default %(default)s)")
    args = parser.parse_args(argv)
    try:
        args.fractions = [float(f) for f in args.fractions.split(",")]
    except ValueError:
        parser.error(f"--fractions: expected numbers like 0.01,0.05; got {args.fractions!r}")
    if not all(0.0 < f <= 1.0 for f in args.fractions):
        parser.error("--fractions: each must be in (0, 1]")
    return args


def write_long(folder: str, series: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
    """Long layout, 4 files, one row per point."""
    os.makedirs(folder, exist_ok=True)
    ids = list(series)
    for part, chunk in enumerate(np.array_split(np.arange(len(ids)), 4)):
        names = [ids[i] for i in chunk]
        pq.write_table(pa.table({
            "series_id": pa.array([n for n in names for _ in series[n][0]], pa.string()),
            "t": np.concatenate([series[n][0] for n in names]),
            "y": np.concatenate([series[n][1] for n in names])}),
            os.path.join(folder, f"part-{part}.parquet"))


def changed_night(series: dict, fraction: float, new_points: int
                  ) -> tuple[dict, list[str]]:
    """(night 2's series, the ids changed): a fixed random `fraction` of the
    series get `new_points` points past their end, at their median spacing,
    continuing with a small random walk."""
    rng = np.random.default_rng(SEED)
    ids = sorted(series)
    changed = sorted(rng.permutation(ids)[:max(1, round(fraction * len(ids)))].tolist())
    night = dict(series)
    for sid in changed:
        t, y = series[sid]
        step = float(np.median(np.diff(t)))
        new_t = t[-1] + step * np.cumsum(rng.uniform(0.5, 1.5, new_points))
        new_y = y[-1] + 0.1 * np.std(y) * np.cumsum(rng.standard_normal(new_points))
        night[sid] = (np.append(t, new_t), np.append(y, new_y))
    return night, changed


class Nights:
    """The runs of one benchmark: scratch folder, environment, logs."""

    def __init__(self, args):
        self.args = args
        self.scratch = tempfile.mkdtemp(prefix="gpfit-nightly-")
        self.logs = os.path.join(args.results_dir, "logs")
        os.makedirs(self.logs, exist_ok=True)
        # gpfit's process settings (gpcore/threads.py), over any in the environment.
        # A trace cache of the benchmark's own, empty at the start: the cold
        # run traces and keeps its fit, the nights load it, as a nightly job
        # on one machine does (gpcore/trace_cache.py); the user's cache would
        # make the cold run's cost depend on what ran before.
        self.env = dict(os.environ, **PROCESS_ENV,
                        GPFIT_TRACE_CACHE=os.path.join(self.scratch, "traces"),
                        PYTHONPATH=os.pathsep.join(
                            p for p in (ROOT, os.environ.get("PYTHONPATH")) if p))

    def gpfit(self, name: str, folder: str, *extra: str) -> tuple[float, dict]:
        """Runs the gpfit command; (wall seconds, its _SUCCESS.json)."""
        output = os.path.join(self.scratch, f"{name}-out")
        command = [sys.executable, "-m", "pipeline", "--input", folder, "--output", output,
                   "--search", self.args.search, *extra]
        log = os.path.join(self.logs, f"nightly-{name}.log")
        measured = run_measured(command, self.env, ROOT, log, self.args.timeout)
        if measured.returncode != 0:
            raise SystemExit(f"gpfit {name} exited {measured.returncode}; see {log}")
        with open(os.path.join(output, "_SUCCESS.json")) as f:
            return measured.wall_s, {**json.load(f), "folder": output}


def nll_by_id(folder: str) -> dict[str, float]:
    table = pq.read_table(folder, columns=["series_id", "status", "nll"]).to_pydict()
    return {i: (v if s == "ok" else np.inf)
            for i, s, v in zip(table["series_id"], table["status"], table["nll"])}


def cold_fits(night: dict, ids: list[str], search: str = THOROUGH) -> dict[str, float]:
    """nll of a cold gpcore fit (FitConfig's defaults at `search`) of each of `ids`."""
    from gpcore import GPFitter, Series

    results = GPFitter(at_search(search)).fit([Series(sid, *night[sid]) for sid in ids])
    return {r.series_id: (r.nll if r.status == "ok" else np.inf) for r in results}


def table(rows: list[dict]) -> str:
    lines = ["| night | changed | series | wall s | × cold | reused | fitted | warm-started "
             f"| within {QUALITY_GAP} nats of cold | worst gap (nats) |",
             "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for row in rows:
        quality = ("–" if row["within"] is None else
                   f"{100 * row['within']:.1f} % {'✓' if row['within'] >= QUALITY_SHARE else '✗'}")
        cost = ("–" if row["ratio"] is None else
                f"{row['ratio']:.2f}" + ("" if row["changed"] != 0.05 else
                                         (" ✓" if row["ratio"] <= COST_SHARE else " ✗")))
        worst = "–" if row["worst"] is None else f"{row['worst']:.3g}"
        lines.append(f"| {row['night']} | {100 * row['changed']:g} % | {row['series']} | "
                     f"{row['wall_s']:.1f} | {cost} | {row['reused']} | {row['fitted']} | "
                     f"{row['warm_started']} | {quality} | {worst} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    load_before = os.getloadavg()
    nights = Nights(args)
    series = {s.series_id: (np.asarray(s.t), np.asarray(s.y))
              for s in workload("a", args.count)}
    write_long(os.path.join(nights.scratch, "night1"), series)
    print(f"== cold: {len(series)} series", flush=True)
    cold_s, cold = nights.gpfit("cold", os.path.join(nights.scratch, "night1"))
    rows = [{"night": "cold (night 1)", "changed": 0.0, "series": len(series), "wall_s": cold_s,
             "ratio": 1.0, "reused": cold["reuse"]["reused"], "fitted": cold["reuse"]["fitted"],
             "warm_started": 0, "within": None, "worst": None}]
    for fraction in args.fractions:
        night, changed = changed_night(series, fraction, args.new_points)
        folder = os.path.join(nights.scratch, f"night2-{fraction:g}")
        write_long(folder, night)
        print(f"== next night, {100 * fraction:g} % changed ({len(changed)} series)", flush=True)
        wall_s, found = nights.gpfit(f"next-{fraction:g}", folder,
                                     "--previous_output", cold["folder"])
        ours, reference = nll_by_id(found["folder"]), cold_fits(night, changed, args.search)
        gaps = np.array([ours[sid] - reference[sid] for sid in changed])
        reuse = found["reuse"]
        rows.append({"night": "next night", "changed": fraction, "series": len(night),
                     "wall_s": wall_s, "ratio": wall_s / cold_s, "reused": reuse["reused"],
                     "fitted": reuse["fitted"], "warm_started": reuse["warm_started"],
                     "warm_starts_offered": reuse["warm_starts_offered"],
                     "within": float(np.mean(gaps <= QUALITY_GAP)),
                     "worst": float(np.max(gaps))})
        shutil.rmtree(folder, ignore_errors=True)
    load_after = os.getloadavg()
    fmt = lambda load: " / ".join(f"{x:.2f}" for x in load)  # noqa: E731
    text = "\n".join([
        f"Measured {datetime.datetime.now().isoformat(timespec='seconds')} with "
        f"`python benchmarks/nightly.py {shlex.join(argv)}`",
        "",
        f"- {os.cpu_count()} CPUs; load average (1 / 5 / 15 min) before: {fmt(load_before)}; "
        f"after: {fmt(load_after)} (other work on this machine slows every run)",
        f"- each run is the whole `gpfit` command (default options but `--search "
        f"{args.search}`, one process); changed "
        f"series got {args.new_points} new points; quality is each changed series' nll "
        f"against a cold gpcore fit of its new data",
        "",
        table(rows), ""])
    print(text)
    os.makedirs(args.results_dir, exist_ok=True)
    with open(os.path.join(args.results_dir, "nightly.md"), "w") as f:
        f.write(text)
    with open(os.path.join(args.results_dir, "nightly.json"), "w") as f:
        json.dump({"argv": argv, "rows": rows, "load_before": load_before,
                   "load_after": load_after}, f, indent=1)
    shutil.rmtree(nights.scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

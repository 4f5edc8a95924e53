"""`python -m pipeline.demo`: gpfit on synthetic series whose truth is known.

Generates demo/data/ if absent: 300 series drawn from an RBF Gaussian
process with known parameters (times are timestamps over 100 days, so
fitted length scales come out in days), some with gaps and missing values,
a few too short to fit; and 12 seasonal series over three years (a trend
plus a yearly cycle, drawn from rbf+periodic; two with the trend alone).
Runs gpfit on the local runner into demo/output/ and prints true against
fitted parameters for a few series, plus the counts; then fits the seasonal
series with `--kernel auto --candidates rbf,rbf+periodic` into
demo/output-seasonal/ and prints the kernel each chose, its period and trend.
Extra arguments go to both gpfit runs, e.g. `--direct_num_workers 2
--direct_running_mode multi_processing`.
"""
from __future__ import annotations

import collections
import csv
import json
import os
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from gpcore.result import OK
from pipeline import cli, logs
from pipeline.io import streams
from pipeline.io.errors import EXIT_USAGE
from pipeline.io.outputs import SUCCESS_MARKER, table_folder

DATA = os.path.join("demo", "data")
SERIES = os.path.join(DATA, "series")
TRUTH = os.path.join(DATA, "truth.csv")
OUTPUT = os.path.join("demo", "output")
SEASONAL = os.path.join(DATA, "seasonal")
SEASONAL_TRUTH = os.path.join(DATA, "seasonal_truth.csv")
SEASONAL_OUTPUT = os.path.join("demo", "output-seasonal")
# A sum starts three times by default (gpcore.config.SUM_RESTARTS): a yearly cycle
# has a half-year basin beside the yearly one, and one start may settle there
# (seasonal-00: nll 12.87 at a 183-day period with one start, 9.63 at 367 days
# with two).
SEASONAL_OPTIONS = ("--kernel", "auto", "--candidates", "rbf,rbf+periodic")

N_SERIES = 300
SPAN_DAYS = 100.0
START = np.datetime64("2024-01-01T00:00:00", "s")
TRUTH_COLUMNS = ("series_id", "n_points", "mean", "amplitude", "length_scale",
                 "noise_variance", "gap", "missing")
N_SEASONAL, TREND_ONLY = 12, 2  # the last TREND_ONLY have no yearly cycle
YEAR_DAYS = 365.25
# The periodic kernel's (unitless) length scale of the yearly cycle: one
# smooth bump a year, without the sharp half- and third-year harmonics that
# shorter ones draw.
SEASON_LENGTH_SCALE = 1.5
SEASONAL_COLUMNS = ("series_id", "n_points", "mean", "trend_amplitude", "trend_length_scale",
                    "season_amplitude", "season_length_scale", "period", "noise_variance")


def generate(folder: str = DATA, n_series: int = N_SERIES, seed: int = 0) -> None:
    """Writes <folder>/series/part-{0,1}.parquet (long layout: series_id,
    t timestamp[s], y) and <folder>/truth.csv (the parameters drawn)."""
    rng = np.random.default_rng(seed)
    ids, times, values, truth = [], [], [], []
    for i in range(n_series):
        series_id = f"demo-{i:04d}"
        # The last few are too short to fit: they come back "skipped".
        n = 2 if i >= n_series - 3 else int(rng.integers(64, 257))
        p = dict(mean=rng.uniform(-5, 5), amplitude=np.exp(rng.uniform(np.log(0.5), np.log(3))),
                 length_scale=np.exp(rng.uniform(np.log(2), np.log(20))))
        p["noise_variance"] = (p["amplitude"] * rng.uniform(0.05, 0.3)) ** 2
        t = np.sort(rng.uniform(0, SPAN_DAYS, n))
        y = p["mean"] + _rbf_sample(t, p, rng)
        gap = n > 2 and i % 4 == 1
        if gap:  # a stretch of 20% of the span with no observations
            lo = rng.uniform(0, 0.8 * SPAN_DAYS)
            keep = (t < lo) | (t > lo + 0.2 * SPAN_DAYS)
            t, y = t[keep], y[keep]
        missing = n > 2 and i % 5 == 2
        if missing:  # 5% of the values missing (NaN)
            y[rng.random(y.size) < 0.05] = np.nan
        ids += [series_id] * t.size
        times.append(START + np.round(t * 86_400).astype("timedelta64[s]"))
        values.append(y)
        truth.append(dict(series_id=series_id, n_points=int(np.isfinite(y).sum()), gap=gap,
                          missing=missing, **p))
    table = _long_table(ids, times, values)
    os.makedirs(os.path.join(folder, "series"), exist_ok=True)
    half = table.num_rows // 2  # two files; one series may straddle them
    pq.write_table(table.slice(0, half), os.path.join(folder, "series", "part-0.parquet"))
    pq.write_table(table.slice(half), os.path.join(folder, "series", "part-1.parquet"))
    _write_csv(os.path.join(folder, "truth.csv"), TRUTH_COLUMNS, truth)


def generate_seasonal(folder: str = DATA, n_series: int = N_SEASONAL, seed: int = 1) -> None:
    """Writes <folder>/seasonal/part-0.parquet (long layout, as generate's)
    and <folder>/seasonal_truth.csv: three years of irregular, roughly
    weekly points each, drawn from rbf (a trend over months) plus periodic
    (a yearly cycle) plus noise; the last TREND_ONLY have no cycle."""
    rng = np.random.default_rng(seed)
    ids, times, values, truth = [], [], [], []
    for i in range(n_series):
        series_id = f"seasonal-{i:02d}"
        n = int(rng.integers(100, 161))
        p = dict(mean=rng.uniform(5, 20), trend_amplitude=rng.uniform(0.5, 2.0),
                 trend_length_scale=rng.uniform(200, 600), period=YEAR_DAYS,
                 season_amplitude=0.0 if i >= n_series - TREND_ONLY else rng.uniform(1.0, 3.0),
                 season_length_scale=SEASON_LENGTH_SCALE)
        p["noise_variance"] = (0.15 * max(p["trend_amplitude"], p["season_amplitude"])) ** 2
        t = np.sort(rng.uniform(0, 3 * YEAR_DAYS, n))
        d = t[:, None] - t[None, :]
        cov = (p["trend_amplitude"] ** 2 * np.exp(-0.5 * (d / p["trend_length_scale"]) ** 2)
               + p["season_amplitude"] ** 2 * np.exp(
                   -2 * np.sin(np.pi * d / YEAR_DAYS) ** 2 / SEASON_LENGTH_SCALE ** 2)
               + p["noise_variance"] * np.eye(n))
        ids += [series_id] * n
        times.append(START + np.round(t * 86_400).astype("timedelta64[s]"))
        values.append(p["mean"] + np.linalg.cholesky(cov) @ rng.standard_normal(n))
        truth.append(dict(series_id=series_id, n_points=n, **p))
    os.makedirs(os.path.join(folder, "seasonal"), exist_ok=True)
    pq.write_table(_long_table(ids, times, values),
                   os.path.join(folder, "seasonal", "part-0.parquet"))
    _write_csv(os.path.join(folder, "seasonal_truth.csv"), SEASONAL_COLUMNS, truth)


def _long_table(ids: list[str], times: list[np.ndarray], values: list[np.ndarray]) -> pa.Table:
    """series_id, t timestamp[s], y: the demo's long layout."""
    return pa.table({"series_id": pa.array(ids, pa.string()),
                     "t": pa.array(np.concatenate(times), pa.timestamp("s")),
                     "y": pa.array(np.concatenate(values), pa.float64())})


def _write_csv(path: str, columns: tuple[str, ...], rows: list[dict]) -> None:
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, columns)
        writer.writeheader()
        writer.writerows(rows)


def _rbf_sample(t: np.ndarray, p: dict, rng: np.random.Generator) -> np.ndarray:
    """One draw of a zero-mean GP: RBF kernel plus white noise, at times t (days)."""
    d = t[:, None] - t[None, :]
    k = p["amplitude"] ** 2 * np.exp(-0.5 * (d / p["length_scale"]) ** 2)
    k[np.diag_indices_from(k)] += p["noise_variance"]
    return np.linalg.cholesky(k) @ rng.standard_normal(t.size)


def report(output: str = OUTPUT, truth_path: str = TRUTH, shown: int = 8) -> str:
    """A table of true vs fitted parameters for a few series, and the counts."""
    fitted = pq.read_table(table_folder(output)).to_pylist()
    with open(truth_path, newline="") as f:
        truth = {row["series_id"]: row for row in csv.DictReader(f)}
    with open(os.path.join(output, SUCCESS_MARKER)) as f:
        manifest = json.load(f)
    fitted.sort(key=lambda row: row["series_id"])
    lines = [f"{'series':<10} {'n':>4}  {'length scale (d)':>17}  {'amplitude':>13}  "
             f"{'noise sd':>13}  {'mean':>13}",
             f"{'':<10} {'':>4}  {'true':>8} {'fit':>8}  {'true':>6} {'fit':>6}  "
             f"{'true':>6} {'fit':>6}  {'true':>6} {'fit':>6}"]
    ok = [row for row in fitted if row["status"] == OK]
    for row in ok[:shown]:
        true = truth[row["series_id"]]
        lines.append(
            f"{row['series_id']:<10} {row['n_points']:>4}  "
            f"{float(true['length_scale']):>8.2f} {_cell(row['length_scale'], 8, 2)}  "
            f"{float(true['amplitude']):>6.2f} {_cell(row['amplitude'], 6, 2)}  "
            f"{np.sqrt(float(true['noise_variance'])):>6.3f} {np.sqrt(row['noise_variance']):>6.3f}  "
            f"{float(true['mean']):>6.2f} {row['mean']:>6.2f}")
    for row in [r for r in fitted if r["status"] != OK][:3]:
        lines.append(f"{row['series_id']:<10} {row['n_points']:>4}  {row['status']}: {row['error']}")
    # A sum or linear (the demo's arguments may choose one) has no single
    # length scale: its rows show '-' and stay out of the ratio.
    ratio = [row["length_scale"] / float(truth[row["series_id"]]["length_scale"]) for row in ok
             if row["length_scale"] is not None]
    counts = manifest["counts"]
    lines += ["",
              f"median fitted/true length scale over {len(ratio)} fitted series: "
              f"{np.median(ratio):.3f} (middle half {np.percentile(ratio, 25):.2f}"
              f"-{np.percentile(ratio, 75):.2f})" if ratio else
              "no fitted series has a single length scale to compare with the truth",
              f"counts: {counts['series_read']} series read, {counts['ok']} ok, "
              f"{counts['skipped']} skipped, {counts['failed']} failed, "
              f"{counts['null_ids']} rows with a null id; {manifest['wall_time_s']:.1f} s",
              f"output: {output}/ ({', '.join(manifest['output_files'])}, {SUCCESS_MARKER})"]
    return "\n".join(lines)


def _cell(value, width: int, digits: int) -> str:
    """A fitted parameter right-aligned in width; '-' where the kernel has none."""
    return f"{'-':>{width}}" if value is None else f"{value:>{width}.{digits}f}"


def seasonal_report(output: str = SEASONAL_OUTPUT, truth_path: str = SEASONAL_TRUTH) -> str:
    """Per seasonal series: the kernel chosen, by how much, and the true
    against fitted period and trend (from `components`)."""
    fitted = sorted(pq.read_table(table_folder(output)).to_pylist(),
                    key=lambda row: row["series_id"])
    with open(truth_path, newline="") as f:
        truth = {row["series_id"]: row for row in csv.DictReader(f)}
    lines = [f"{'series':<12} {'n':>4}  {'kernel chosen':<13} {'bic margin':>10}  "
             f"{'period (d)':>15}  {'trend length scale (d)':>22}",
             f"{'':<12} {'':>4}  {'':<13} {'':>10}  {'true':>7} {'fit':>7}  "
             f"{'true':>11} {'fit':>10}"]
    for row in fitted:
        true = truth[row["series_id"]]
        parts = {c["kernel"]: c for c in row["components"] or []}
        true_period = f"{float(true['period']):>7.1f}" if float(true["season_amplitude"]) \
            else f"{'-':>7}"
        fit_period = f"{parts['periodic']['period']:>7.1f}" if "periodic" in parts \
            else f"{'-':>7}"
        trend = f"{parts['rbf']['length_scale']:>10.1f}" if "rbf" in parts else f"{'-':>10}"
        margin = row["bic_margin"]
        lines.append(f"{row['series_id']:<12} {row['n_points']:>4}  {row['kernel']:<13} "
                     f"{'-' if margin is None else f'{margin:.1f}':>10}  {true_period} "
                     f"{fit_period}  {float(true['trend_length_scale']):>11.1f} {trend}")
    chose = collections.Counter(row["kernel"] for row in fitted if row["status"] == OK)
    lines += ["", "kernels chosen: " + ", ".join(f"{k} {n}" for k, n in sorted(chose.items()))
              + f" (the last {TREND_ONLY} series have no yearly cycle)",
              f"output: {output}/"]
    return "\n".join(lines)


USAGE = "usage: python -m pipeline.demo [gpfit option ...]"


def refusal(argv: list[str]) -> str | None:
    """Why gpfit would refuse either of the demo's runs with argv, found
    before any work; None if neither. The seasonal run took the options
    after the first had fitted for seconds: `--kernel linear` (with its
    --candidates) was refused then, and `--output X` sent both runs to X,
    the table then reading demo/output/ (a FileNotFoundError traceback)."""
    from pipeline.builder import fit_config
    from pipeline.io.errors import UsageError
    from pipeline.options import GPFitOptions, check, parse_options

    given = {arg.split("=", 1)[0] for arg in argv}
    for flag in ("--input", "--output"):
        if flag in given:
            return (f"{flag} is the demo's own (it reads {SERIES} and {SEASONAL}, writes "
                    f"{OUTPUT} and {SEASONAL_OUTPUT}); run gpfit itself on other folders")
    seasonal = f"the seasonal run ({' '.join(SEASONAL_OPTIONS)}, then the options given): "
    for which, options in (("", ["--kernel", "rbf", *argv]),
                           (seasonal, [*SEASONAL_OPTIONS, *argv])):
        try:
            gp = parse_options(["--input", SERIES, "--output", OUTPUT, *options]).view_as(
                GPFitOptions)
            check(gp)
            fit_config(gp)
        except UsageError as err:
            return (f"{which}{err}" if not which else
                    f"{which}{err}; the demo's options go to both its runs: run gpfit itself "
                    "for this one")
    return None


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if {"-h", "--help", "--version"} & set(argv):
        # gpfit answers these and runs nothing, so there is no run to report
        # on: the report read demo/output/, a traceback where it was absent.
        if "--version" not in argv or {"-h", "--help"} & set(argv):
            print(f"{USAGE}\n\n{__doc__.strip()}\n\ngpfit's options:")
        return cli.run(argv)
    # gpfit's log lines as the command prints them: refusal() parses the
    # options with Beam's PipelineOptions, whose constructor calls
    # logging.basicConfig() and so would set Python's default format first.
    logs.configure_logs(logs.log_level_in(argv))
    refused = refusal(argv)
    if refused is not None:
        print(f"demo: error: {refused}", file=sys.stderr)
        return EXIT_USAGE
    if not os.path.exists(TRUTH):
        print(f"demo: generating {N_SERIES} synthetic series into {DATA}/")
        generate()
    if not os.path.exists(SEASONAL_TRUTH):
        print(f"demo: generating {N_SEASONAL} seasonal series into {SEASONAL}/")
        generate_seasonal()
    code = cli.run(["--input", SERIES, "--output", OUTPUT, "--kernel", "rbf", *argv])
    if code != cli.EXIT_OK:
        return code
    print()
    print(report())
    print()
    print("demo: the seasonal series, each fitted with rbf and with rbf+periodic; "
          "the lower BIC is kept")
    code = cli.run(["--input", SEASONAL, "--output", SEASONAL_OUTPUT, *SEASONAL_OPTIONS, *argv])
    if code == cli.EXIT_OK:
        print()
        print(seasonal_report())
    return code


if __name__ == "__main__":
    streams.leave(main())  # as gpfit does: Python's finalisation adds seconds to `make run`

"""`python -m pipeline.demo`: gpfit on synthetic series whose truth is known.

Generates demo/data/ if absent: 300 series drawn from an RBF Gaussian
process with known parameters (times are timestamps over 100 days, so
fitted length scales come out in days), some with gaps and missing values,
a few too short to fit. Runs gpfit on the local runner into demo/output/ and
prints true against fitted parameters for a few series, plus the counts.
Extra arguments go to gpfit, e.g. `--direct_num_workers 2
--direct_running_mode multi_processing`.
"""
from __future__ import annotations

import csv
import json
import os
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from gpcore.result import OK
from pipeline import cli
from pipeline.io.outputs import SUCCESS_MARKER

DATA = os.path.join("demo", "data")
SERIES = os.path.join(DATA, "series")
TRUTH = os.path.join(DATA, "truth.csv")
OUTPUT = os.path.join("demo", "output")

N_SERIES = 300
SPAN_DAYS = 100.0
START = np.datetime64("2024-01-01T00:00:00", "s")
TRUTH_COLUMNS = ("series_id", "n_points", "mean", "amplitude", "length_scale",
                 "noise_variance", "gap", "missing")


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
    table = pa.table({"series_id": pa.array(ids, pa.string()),
                      "t": pa.array(np.concatenate(times), pa.timestamp("s")),
                      "y": pa.array(np.concatenate(values), pa.float64())})
    os.makedirs(os.path.join(folder, "series"), exist_ok=True)
    half = table.num_rows // 2  # two files; one series may straddle them
    pq.write_table(table.slice(0, half), os.path.join(folder, "series", "part-0.parquet"))
    pq.write_table(table.slice(half), os.path.join(folder, "series", "part-1.parquet"))
    with open(os.path.join(folder, "truth.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, TRUTH_COLUMNS)
        writer.writeheader()
        writer.writerows(truth)


def _rbf_sample(t: np.ndarray, p: dict, rng: np.random.Generator) -> np.ndarray:
    """One draw of a zero-mean GP: RBF kernel plus white noise, at times t (days)."""
    d = t[:, None] - t[None, :]
    k = p["amplitude"] ** 2 * np.exp(-0.5 * (d / p["length_scale"]) ** 2)
    k[np.diag_indices_from(k)] += p["noise_variance"]
    return np.linalg.cholesky(k) @ rng.standard_normal(t.size)


def report(output: str = OUTPUT, truth_path: str = TRUTH, shown: int = 8) -> str:
    """A table of true vs fitted parameters for a few series, and the counts."""
    fitted = pq.read_table(output).to_pylist()
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
            f"{float(true['length_scale']):>8.2f} {row['length_scale']:>8.2f}  "
            f"{float(true['amplitude']):>6.2f} {row['amplitude']:>6.2f}  "
            f"{np.sqrt(float(true['noise_variance'])):>6.3f} {np.sqrt(row['noise_variance']):>6.3f}  "
            f"{float(true['mean']):>6.2f} {row['mean']:>6.2f}")
    for row in [r for r in fitted if r["status"] != OK][:3]:
        lines.append(f"{row['series_id']:<10} {row['n_points']:>4}  {row['status']}: {row['error']}")
    ratio = [row["length_scale"] / float(truth[row["series_id"]]["length_scale"]) for row in ok]
    counts = manifest["counts"]
    lines += ["",
              f"median fitted/true length scale over {len(ok)} fitted series: "
              f"{np.median(ratio):.3f} (middle half {np.percentile(ratio, 25):.2f}"
              f"-{np.percentile(ratio, 75):.2f})",
              f"counts: {counts['series_read']} series read, {counts['ok']} ok, "
              f"{counts['skipped']} skipped, {counts['failed']} failed, "
              f"{counts['null_ids']} rows with a null id; {manifest['wall_time_s']:.1f} s",
              f"output: {output}/ ({', '.join(manifest['output_files'])}, {SUCCESS_MARKER})"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not os.path.exists(TRUTH):
        print(f"demo: generating {N_SERIES} synthetic series into {DATA}/")
        generate()
    code = cli.run(["--input", SERIES, "--output", OUTPUT, "--kernel", "rbf", *argv])
    if code in (cli.EXIT_OK,):
        print()
        print(report())
    return code


if __name__ == "__main__":
    sys.exit(main())

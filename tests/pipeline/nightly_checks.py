"""What a night of the chain must hold (test_nightly_chain.py): its rows
against the previous night's and a cold run's of the same input and
options, its manifest against its rows, its predictions against the
options. Each check returns the problems it found, as lines naming the
series, so that one run reports every one of them."""
from __future__ import annotations

import dataclasses

import numpy as np

from nightly_chain import Options

# A fitted row may end above a cold fit of the same data by at most this
# (nats): the fitter keeps the best of the warm start and its usual starts
# (docs/design.md, "Reuse"), so it ends at or below the cold fit's optimum
# but for Newton's tolerance (1e-4) and the float32 Hessian's round-off; a
# warm start may end lower. A sum's warm start runs apart from its cold
# starts for this (docs/design.md, "Warm starts").
NLL_SLACK = 0.01
# Columns a reused row copies from the previous night's row (all but these).
NOT_COPIED = ("reused", "warm_started")
# Prediction columns compared with the cold run's where the two rows hold
# the same parameters (relative, as float64 round-off of one computation).
PREDICTED = ("mean", "stddev", "stddev_observed")
LEVEL_RTOL = 1e-9


def fit_key(options: Options) -> tuple:
    """The options that change a row, as this test models them (README.md,
    "Nightly runs" and "Options"): the kernel (and under auto its
    candidates, a set), --restarts, --min_points, --max_points, --search
    for rbf and the Materns fitted alone, --transform, --holdout."""
    lone = options.kernel in ("rbf", "matern12", "matern32", "matern52")
    return (options.kernel,
            frozenset(options.candidates.split(",")) if options.kernel == "auto" else None,
            options.restarts, options.min_points, options.max_points,
            options.search if lone else None, options.transform, options.holdout)


def finite_points(t: np.ndarray, y: np.ndarray) -> list[tuple[float, float]]:
    keep = np.isfinite(t) & np.isfinite(y)
    return sorted(zip(t[keep].tolist(), y[keep].tolist()))


@dataclasses.dataclass
class Night:
    """One night: its series, options, and the rows and predictions read back."""

    series: dict
    options: Options
    rows: dict            # id -> params row
    predictions: dict     # id -> [prediction rows]
    manifest: dict


def check_rows(night: Night, previous: Night | None, cold: Night) -> list[str]:
    problems = []
    ids = sorted(night.series)
    if sorted(night.rows) != ids:
        problems.append(f"ids: missing {sorted(set(ids) - set(night.rows))}, "
                        f"extra {sorted(set(night.rows) - set(ids))}")
    for sid in sorted(set(ids) & set(night.rows)):
        row, ref = night.rows[sid], cold.rows[sid]
        say = lambda what: problems.append(f"{sid}: {what}")  # noqa: E731
        for name in ("status", "fingerprint", "n_points", "holdout_points"):
            if row[name] != ref[name]:
                say(f"{name} {row[name]!r}, cold {ref[name]!r}")
        if row["status"] != "ok":
            if row["error"] != ref["error"] or not row["error"]:
                say(f"error {row['error']!r}, cold {ref['error']!r}")
        elif row["status"] == ref["status"]:
            if row["kernel"] != ref["kernel"]:
                say(f"kernel {row['kernel']}, cold {ref['kernel']}")
            if not row["nll"] <= ref["nll"] + NLL_SLACK:
                say(f"nll {row['nll']:.4f} above cold's {ref['nll']:.4f} "
                    f"(reused {row['reused']}, warm {row['warm_started']})")
        old = previous.rows.get(sid) if previous else None
        unchanged = (old is not None and fit_key(previous.options) == fit_key(night.options)
                     and finite_points(*previous.series[sid]) == finite_points(*night.series[sid]))
        if row["reused"]:
            if not unchanged:
                say("reused, but its data or fit options changed")
            elif _copied(row) != _copied(old):
                say("reused, but not a copy of the previous row")
        elif unchanged and old["status"] == "ok":
            say("unchanged and ok last night, but not reused")
    return problems


def check_manifest(night: Night) -> list[str]:
    rows, found = list(night.rows.values()), night.manifest
    counts = {s: sum(r["status"] == s for r in rows) for s in ("ok", "skipped", "failed")}
    want = {"series_read": len(rows), **counts}
    got = {k: found["counts"][k] for k in want}
    problems = [] if got == want else [f"manifest counts {got}, rows {want}"]
    reused = sum(r["reused"] for r in rows)
    warm = sum(r["warm_started"] for r in rows)
    reuse = found["reuse"]
    if (reuse["reused"], reuse["warm_started"], reuse["fitted"]) != (
            reused, warm, len(rows) - reused):
        problems.append(f"manifest reuse {reuse}, rows: {reused} reused, {warm} warm")
    predicted = found.get("predictions")
    if night.options.predicts:
        with_rows = sum(1 for sid in night.rows if night.predictions.get(sid))
        if predicted is None or predicted["series"] != with_rows:
            problems.append(f"manifest predictions {predicted}, {with_rows} series with rows")
        ok = [sid for sid, row in night.rows.items() if row["status"] == "ok"]
        without = sum(1 for sid in ok if not any(
            r["kind"] == "forecast" for r in night.predictions.get(sid, [])))
        if night.options.steps and predicted and sum(predicted["no_step"].values()) != without:
            problems.append(f"manifest no_step {predicted['no_step']}, {without} ok series "
                            "without forecast rows")
    elif predicted is not None or night.predictions:
        problems.append(f"predictions not asked for, manifest {predicted}")
    backtested = [r for r in rows if r["holdout_coverage_95"] is not None]
    totals = found.get("holdout")
    want = ({"series": len(backtested), "points": sum(r["holdout_points"] for r in backtested)}
            if backtested else None)
    if (totals and {k: totals[k] for k in ("series", "points")}) != want:
        problems.append(f"manifest holdout {totals}, rows {want}")
    return problems


def level_columns(levels: str) -> set[str]:
    return {f"{side}_{float(level):g}" for level in levels.split(",")
            for side in ("lower", "upper")}


def check_predictions(night: Night, cold: Night) -> list[str]:
    """Every ok series (reused or fitted) has the rows the options ask for,
    as the cold run has them; no other series has any; where the row and
    the cold row hold the same parameters, the same values."""
    problems, options = [], night.options
    for sid, row in sorted(night.rows.items()):
        got, ref = night.predictions.get(sid, []), cold.predictions.get(sid, [])
        say = lambda what: problems.append(f"{sid} predictions: {what}")  # noqa: E731
        if row["status"] != "ok":
            if got:
                say(f"{len(got)} rows for a {row['status']} series")
            continue
        kinds = {r["kind"] for r in got}
        want = set()
        if options.points or options.steps:
            want.add("forecast")
        if options.observed:
            want.add("observed")
        if options.holdout:
            want.add("holdout")
        if not kinds <= want:
            say(f"kinds {sorted(kinds)}, options ask for {sorted(want)}")
        if options.points and sum(r["kind"] == "forecast" for r in got) != options.points:
            say(f"{sum(r['kind'] == 'forecast' for r in got)} forecast rows, "
                f"--predict_points {options.points}")
        if got and not level_columns(options.levels) <= set(got[0]):
            say(f"columns {sorted(got[0])} lack levels {options.levels}")
        extra = {k for k in (got[0] if got else {}) if k.startswith(("lower_", "upper_"))}
        if got and extra != level_columns(options.levels):
            say(f"level columns {sorted(extra)}, --predict_levels {options.levels}")
        held = sum(r["kind"] == "holdout" for r in got)
        if options.holdout and held != (row["holdout_points"] or 0):
            say(f"{held} holdout rows, holdout_points {row['holdout_points']}")
        key = lambda r: (r["kind"], str(r["t"]))  # noqa: E731
        if sorted(map(key, got)) != sorted(map(key, ref)):
            say(f"(kind, t) differ from the cold run's: {len(got)} rows, cold {len(ref)}")
            continue
        if _same_parameters(row, cold.rows[sid]):
            for a, b in zip(sorted(got, key=key), sorted(ref, key=key)):
                for name in PREDICTED + tuple(sorted(extra)):
                    if not np.isclose(a[name], b[name], rtol=LEVEL_RTOL, atol=0):
                        say(f"{name} at {a['kind']} {a['t']}: {a[name]!r}, cold {b[name]!r}")
                        break
    for sid in sorted(set(night.predictions) - set(night.rows)):
        problems.append(f"{sid}: predictions of a series not in the output")
    return problems


def _copied(row: dict) -> str:
    """The columns a reused row copies, as text that tells every float
    apart (repr: -0.0 from 0.0, and NaN equal to NaN)."""
    return repr({k: v for k, v in row.items() if k not in NOT_COPIED})


def _same_parameters(a: dict, b: dict) -> bool:
    names = ("kernel", "mean", "amplitude", "length_scale", "period", "noise_variance",
             "components")
    return all(a[n] == b[n] for n in names)

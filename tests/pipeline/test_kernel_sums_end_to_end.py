"""Kernel sums and the choice per series, end to end on the local runner.

Three runs over one small long-layout input of seasonal series (a trend
plus a yearly cycle): `--kernel rbf+periodic`, `--kernel auto --candidates
rbf,rbf+periodic`, and `--kernel auto --candidates
matern12,linear+rbf+periodic` (the kernels of the times and of a rough,
Markov process; the seasonal series choose the three-part sum, the flat one
matern12). The output is read back as users read it (pyarrow and
pandas), and every ok row's nll is recomputed from the row alone in numpy.
"""
from __future__ import annotations

import math
import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import gp_reference as ref

from gpcore import starts
from gpcore.config import PERIODIC_MARGIN
from gpcore.kernels import kernel as kernel_named
from gpcore.result import COMPONENT_FIELDS
from pipeline.io.schema import OUTPUT_SCHEMA
from pipeline_data import gpfit, write_long
from seasonal_data import YEAR, seasonal_series

SUM = "rbf+periodic"
CANDIDATES = ("rbf", SUM)
NEW = ("matern12", "linear+rbf+periodic")
# The row's nll against numpy's: both are float64 Cholesky computations of
# the same matrix, but gpcore's runs on standardised data (times scaled to
# [0, 1], values to unit variance) and converts back, and the two sum in
# different orders. With noise ratios down to 1e-8 the matrix's condition
# number reaches ~1e8, so ~1e-16 x 1e8 relative error per term: 1e-6 of
# max(|nll|, n) is far above that and far below any real disagreement.
NLL_RTOL = 1e-6
# Shape parameters per component kernel, from the formulas below (not from
# gpcore: the parameter count is what BIC's k is checked against).
SHAPE_PARAMETERS = {"rbf": 1, "matern12": 1, "matern32": 1, "matern52": 1, "periodic": 2,
                    "linear": 0}


@pytest.fixture(scope="module")
def series():
    return seasonal_series()


@pytest.fixture(scope="module")
def seasonal_input(tmp_path_factory, series):
    return write_long(str(tmp_path_factory.mktemp("seasonal")), series, null_id_rows=0)


@pytest.fixture(scope="module")
def sum_run(tmp_path_factory, seasonal_input):
    return gpfit(seasonal_input, str(tmp_path_factory.mktemp("out") / "sum"),
                 "--kernel", SUM, "--batch_size", "4")


@pytest.fixture(scope="module")
def candidates_alone(series, fitter_for):
    """{kernel: {series_id: FitResult}} of auto's candidates fitted by
    gpcore outside the pipeline: rbf as auto fits it, and rbf+periodic
    started as auto starts it, from rbf's fit (gpcore.choice.periodic_starts) and its
    grid's best point."""
    from gpcore import FitConfig, Series
    from gpcore.choice import periodic_starts
    from gpcore.config import fitted_configs

    given = [Series(sid, t, y) for sid, (t, y) in series.items()]
    # The configs as auto builds them (gpcore.config.fitted_configs): rbf
    # with one start, the sum without the jumps.
    smooth, started = fitted_configs(FitConfig(kernel="auto", candidates=("rbf", SUM)))
    rbf = fitter_for(smooth).fit(given)
    sums = fitter_for(started).fit(
        given, [periodic_starts(s, r, SUM) for s, r in zip(given, rbf)])
    return {k: {r.series_id: r for r in fits} for k, fits in (("rbf", rbf), (SUM, sums))}


@pytest.fixture(scope="module")
def auto_run(tmp_path_factory, seasonal_input):
    return gpfit(seasonal_input, str(tmp_path_factory.mktemp("out") / "auto"),
                 "--kernel", "auto", "--candidates", ",".join(CANDIDATES), "--batch_size", "4")


@pytest.fixture(scope="module")
def new_run(tmp_path_factory, seasonal_input):
    return gpfit(seasonal_input, str(tmp_path_factory.mktemp("out") / "new"),
                 "--kernel", "auto", "--candidates", ",".join(NEW), "--batch_size", "4")


@pytest.fixture(params=["sum", "auto", "new"])
def run(request, sum_run, auto_run, new_run):
    return {"sum": sum_run, "auto": auto_run, "new": new_run}[request.param]


def test_runs_succeed_and_record_the_kernel(sum_run, auto_run, new_run):
    for run_, kernel in ((sum_run, SUM), (auto_run, "auto"), (new_run, "auto")):
        assert run_.code == 0, run_.stderr
        assert run_.manifest["counts"]["ok"] == 6 and run_.manifest["counts"]["skipped"] == 1
        assert run_.manifest["kernel"] == run_.manifest["options"]["kernel"] == kernel
    assert auto_run.manifest["options"]["candidates"] == "rbf,rbf+periodic"
    assert sum_run.manifest["options"]["candidates"] is None
    # One fitter per worker; under auto it holds one compiled fit per candidate.
    assert sum_run.manifest["fitters_built"] == auto_run.manifest["fitters_built"] == 1
    assert sum_run.manifest["tracing_count_max"] == 1
    assert auto_run.manifest["tracing_count_max"] == len(CANDIDATES)
    assert new_run.manifest["tracing_count_max"] == len(NEW)


def test_the_manifest_counts_newton_evaluations_per_kernel(sum_run, auto_run):
    """Each kernel counts the series it fitted: the 6 of 7 not skipped
    (the short one), under auto by every candidate (every seasonal series
    passes the periodic one's screen)."""
    for run_, kernels in ((sum_run, [SUM]), (auto_run, sorted(CANDIDATES))):
        work = run_.manifest["work_per_kernel"]
        assert sorted(work) == kernels
        for figures in work.values():
            assert figures["series"] == run_.manifest["counts"]["ok"] == 6
            assert figures["newton_evaluations"] >= 6 and figures["grid_evaluations"] > 0
            assert figures["newton_evaluations_per_series"] == round(
                figures["newton_evaluations"] / 6, 2)
    # As a candidate the sum scores the same grid, and starts from its best
    # point and from rbf's fit (not the grid's restarts); without its far
    # probes (alias, short and smooth-length shape probes), which fitted
    # alone it scores once per fitted series.
    fitted, sum_ = sum_run.manifest["counts"]["ok"], kernel_named(SUM)
    far = (starts.far_probe_count(sum_) + starts.probe_count(sum_)
           - starts.probe_count(sum_, far_probes=False))
    assert (auto_run.manifest["work_per_kernel"][SUM]["grid_evaluations"] + fitted * far
            == sum_run.manifest["work_per_kernel"][SUM]["grid_evaluations"])
    # At most one call per candidate compiles its fit function: those are
    # left out of the ratio, the rest set against their estimates.
    calls = auto_run.manifest["fit_call_seconds"]
    if calls["count"] > len(CANDIDATES):
        assert calls["max_over_estimate"] > 0


def test_components_have_their_type_in_every_shard(run):
    expected = pa.list_(pa.struct([("kernel", pa.string()), ("amplitude", pa.float64()),
                                   ("length_scale", pa.float64()), ("period", pa.float64())]))
    for shard in run.shards():
        schema = pq.read_schema(os.path.join(run.output, shard))
        assert schema.remove_metadata().equals(OUTPUT_SCHEMA.remove_metadata())
        assert schema.field("components").type.equals(expected)
        # The Parquet spec's list layout (what BigQuery's list inference reads).
        physical = pq.ParquetFile(os.path.join(run.output, shard)).schema
        assert [physical.column(i).path for i in range(len(physical))
                if physical.column(i).path.startswith("components.")] == [
            f"components.list.element.{name}" for name in COMPONENT_FIELDS]


def test_components_say_what_the_kernel_is(run):
    """pyarrow: one component per kernel of the sum, in its order; the flat
    parameters only for a single kernel; nothing for a skipped series."""
    for row in run.rows():
        if row["status"] != "ok":
            assert row["series_id"] == "short"
            assert row["components"] is None and row["bic"] is None
            assert row["bic_margin"] is None and row["amplitude"] is None
            continue
        parts = row["kernel"].split("+")
        assert [c["kernel"] for c in row["components"]] == parts
        for c in row["components"]:
            # A line has a slope's amplitude and no length scale.
            assert c["amplitude"] > 0
            assert (c["length_scale"] is None) == (c["kernel"] == "linear")
            assert c["length_scale"] is None or c["length_scale"] > 0
            assert (c["period"] is not None) == (c["kernel"] == "periodic")
        flat = (row["amplitude"], row["length_scale"])
        if len(parts) > 1:
            assert flat == (None, None) and row["period"] is None
        else:
            (only,) = row["components"]
            assert flat == (only["amplitude"], only["length_scale"])
            assert row["period"] == only["period"]


def test_kernel_and_bic_margin_say_which_run_it_was(sum_run, auto_run, candidates_alone):
    assert {r["kernel"] for r in sum_run.rows()} == {SUM}  # skipped rows too
    assert all(r["bic_margin"] is None for r in sum_run.rows())
    sums = {sid: {"bic": r.bic} for sid, r in candidates_alone[SUM].items()}
    chosen = {r["series_id"]: r for r in auto_run.rows()}
    assert chosen["short"]["kernel"] == "auto"
    for sid, row in (item for item in chosen.items() if item[1]["status"] == "ok"):
        assert row["kernel"] in CANDIDATES, sid
        # A periodic part wins only by PERIODIC_MARGIN of BIC; below that rbf
        # is kept, and its margin is negative where the sum's BIC was lower.
        # auto's sum is fitted as candidates_alone fits it (from rbf's fit),
        # so its BIC is that fit's, to the optimiser's tolerance (1e-4 nats).
        if row["kernel"] == SUM:
            assert row["bic_margin"] >= PERIODIC_MARGIN, sid
        else:
            assert row["bic_margin"] > -PERIODIC_MARGIN, sid
            assert row["bic_margin"] == pytest.approx(sums[sid]["bic"] - row["bic"], abs=0.01), sid
    # A yearly cycle of amplitude >= 1.5 over noise of sd 0.2 is not a close call.
    for sid in (s for s in chosen if s.startswith("season-")):
        assert chosen[sid]["kernel"] == SUM, sid
        assert chosen[sid]["bic_margin"] > 10, sid
        (period,) = [c["period"] for c in chosen[sid]["components"] if c["period"]]
        assert period == pytest.approx(YEAR, rel=0.1), sid


def test_the_new_kernels_are_chosen_where_they_fit(new_run):
    """The seasonal series take the line, the wiggle and the yearly cycle;
    the flat one (noise only) the 4-parameter matern12 over the 8 of the
    sum. The line's amplitude is a slope: y per day, here under 1 a year."""
    chosen = {r["series_id"]: r for r in new_run.rows() if r["status"] == "ok"}
    assert chosen["flat"]["kernel"] == "matern12"
    for sid in (s for s in chosen if s.startswith("season-")):
        row = chosen[sid]
        assert row["kernel"] == "linear+rbf+periodic" and row["bic_margin"] > 10, sid
        line, _, cycle = row["components"]
        assert line["amplitude"] * YEAR < 1.0, sid
        assert cycle["period"] == pytest.approx(YEAR, rel=0.1), sid


def test_pandas_reads_components_as_dicts(run):
    """What the README shows: pd.read_parquet on the params folder, then one
    row per component."""
    params = pd.read_parquet(f"{run.output}/params/")
    assert len(params) == 7
    ok = params[params.status == "ok"]
    for components, kernel in zip(ok.components, ok.kernel):
        assert [c["kernel"] for c in components] == kernel.split("+")
        assert all(isinstance(c, dict) for c in components)
    assert params.loc[params.status != "ok", "components"].isna().all()
    parts = pd.DataFrame([{"series_id": s, **c} for s, cs in zip(params.series_id,
                                                                 params.components)
                          if cs is not None for c in cs])
    assert list(parts.columns) == ["series_id", "kernel", "amplitude", "length_scale", "period"]
    assert len(parts) == sum(len(k.split("+")) for k in ok.kernel)
    assert parts.loc[parts.kernel == "periodic", "period"].notna().all()
    assert parts.loc[parts.kernel != "periodic", "period"].isna().all()


def test_duckdb_unnests_components(run):
    """The README's DuckDB query: one row per component of each ok series."""
    duckdb = pytest.importorskip("duckdb")  # a test extra (setup.py)
    found = duckdb.sql(
        "SELECT series_id, c.kernel, c.amplitude, c.length_scale, c.period "
        f"FROM read_parquet('{run.output}/params/*.parquet', hive_partitioning = false), "
        "UNNEST(components) AS t(c) "
        "ORDER BY series_id").fetchall()
    expected = [(r["series_id"], c["kernel"], c["amplitude"], c["length_scale"], c["period"])
                for r in run.rows() if r["status"] == "ok" for c in r["components"]]
    assert sorted(found) == sorted(expected) and len(found) >= 6


def test_nll_and_bic_recompute_from_the_row(run, series):
    """Independent of gpcore: the covariance built in numpy from the row's
    components and noise variance, around its constant mean."""
    checked = 0
    for row in run.rows():
        if row["status"] != "ok":
            continue
        t, y = series[row["series_id"]]
        keep = np.isfinite(y)
        t, y = t[keep], y[keep]
        assert row["n_points"] == t.size
        nll = ref.row_nll(row, t, y)
        assert abs(row["nll"] - nll) <= NLL_RTOL * max(abs(nll), t.size), row["series_id"]
        k = 2 + sum(1 + SHAPE_PARAMETERS[c["kernel"]] for c in row["components"])
        assert row["bic"] == pytest.approx(2 * row["nll"] + k * math.log(t.size), rel=1e-12)
        checked += 1
    assert checked == 6


def test_bic_margin_is_the_runner_ups_bic_minus_the_chosen(auto_run, sum_run,
                                                          candidates_alone):
    """Each candidate fitted on its own by gpcore (candidates_alone): auto
    keeps the lower bic, and the margin is the other's minus it."""
    rbf = {sid: r.bic for sid, r in candidates_alone["rbf"].items() if r.status == "ok"}
    sums = {sid: r.bic for sid, r in candidates_alone[SUM].items() if r.status == "ok"}
    for row in auto_run.rows():
        if row["status"] != "ok":
            continue
        bics = {"rbf": rbf[row["series_id"]], SUM: sums[row["series_id"]]}
        runner_up = bics.pop("rbf" if row["kernel"] == SUM else SUM)
        (chosen,) = bics.values()
        # Fitted in other batches: equal to within what batch companions change.
        np.testing.assert_allclose(row["bic"], chosen, rtol=1e-6)
        np.testing.assert_allclose(row["bic_margin"], runner_up - chosen, atol=1e-4)

"""gpfit.fit_frame's transform, holdout and forecast options: the command's
two tables (params, predictions) for the same data and options, and its
refusals of bad values, spelled as keywords."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import gpfit
from frame_data import RTOL, assert_same_rows, in_folder, rows_of
from gpfit_runs import gpfit_here
from pipeline import options
from pipeline.io.errors import UsageError
from pipeline_data import EPOCH_DAY0, write_long

# The command's flags and fit_frame's keywords for the same run: log scale,
# 3 points held out, 4 steps of each series' spacing, two levels, observed.
FLAGS = ("--kernel", "rbf", "--transform", "log", "--holdout", "3", "--predict_steps", "4",
         "--predict_levels", "80,95", "--predict_observed")
KEYWORDS = dict(kernel="rbf", transform="log", holdout=3, predict_steps=4,
                predict_levels=[80, 95], predict_observed=True)
# The parameters are the command's to round-off (frame_data.RTOL: the two
# batch the series differently), so the scores and predictions made from
# them are compared to it too; on these series all were equal to the bit.
SCORES = ("holdout_mase", "holdout_coverage_95", "holdout_scale")


def _series() -> dict:
    """{id: (t in days, y)}: three positive seasonal series of 24-32 points,
    one with a missing value, and one with a value log cannot take."""
    rng = np.random.default_rng(5)
    series = {}
    for i in range(3):
        n = 24 + 4 * i
        days = np.sort(rng.choice(60, size=n, replace=False)).astype(np.float64)
        y = np.exp(0.4 * np.sin(2 * np.pi * days / 20) + 0.05 * rng.standard_normal(n) + i)
        if i == 1:
            y[5] = np.nan
        series[f"s{i}"] = (EPOCH_DAY0 + days, y)
    series["zero"] = (EPOCH_DAY0 + np.arange(12.0), np.r_[0.0, np.ones(11)])
    # Skipped on the fitted scale: its reason quotes 10, as the command's
    # does, not log(10) or log(11).
    series["flat"] = (EPOCH_DAY0 + np.arange(20.0), np.full(20, 10.0))
    return series


@pytest.fixture(scope="module")
def command(tmp_path_factory):
    """(the input as one table, the command's params and predictions)."""
    folder = tmp_path_factory.mktemp("forecasts")
    data = write_long(in_folder(folder, "in"), _series(), time_type=pa.timestamp("ms"),
                      null_id_rows=0)
    run = gpfit_here(data, in_folder(folder, "out"), *FLAGS)
    assert run.code == 0, run.stderr
    table = pa.concat_tables(pa.parquet.read_table(f"{data}/part-{i}.parquet") for i in (0, 1))
    return table, run.rows(), run.predictions()


def test_a_frame_gets_the_commands_params_and_predictions(command):
    table, want_params, want_predictions = command
    got = gpfit.fit_frame(table.to_pandas(), **KEYWORDS)
    assert isinstance(got, gpfit.Tables)
    params, predictions = rows_of(got.params), rows_of(got.predictions)
    statuses = {r["series_id"]: r["status"] for r in params}
    assert statuses == {"s0": "ok", "s1": "ok", "s2": "ok", "zero": "skipped", "flat": "skipped"}
    assert "are equal (10);" in next(r["error"] for r in params if r["series_id"] == "flat")
    _assert_same_scores(params, want_params)
    assert_same_rows([_without(r, SCORES) for r in params],
                     [_without(r, SCORES) for r in want_params])
    assert got.predictions.dtypes["t"] == "datetime64[us, UTC]"
    assert pa.Table.from_pandas(got.predictions, preserve_index=False).schema.names == \
        gpfit.predictions_schema(dates=True, predict_levels="80,95").names
    _assert_same_predictions(predictions, want_predictions)


def test_a_horizon_grid_on_numbers_under_log1p_is_the_commands(tmp_path):
    series = {k: (t - EPOCH_DAY0, y) for k, (t, y) in _series().items()}
    data = write_long(in_folder(tmp_path, "in"), series, null_id_rows=0)
    flags = ("--transform", "log1p", "--predict_horizon", "6", "--predict_points", "3")
    run = gpfit_here(data, in_folder(tmp_path, "out"), *flags)
    assert run.code == 0, run.stderr
    table = pa.concat_tables(pa.parquet.read_table(f"{data}/part-{i}.parquet") for i in (0, 1))
    got = gpfit.fit_frame(table, transform="log1p", predict_horizon=6, predict_points=3)
    assert got.predictions.schema.equals(gpfit.predictions_schema())
    assert_same_rows(got.params.to_pylist(), run.rows())
    _assert_same_predictions(got.predictions.to_pylist(), run.predictions())
    assert {r["kind"] for r in got.predictions.to_pylist()} == {"forecast"}


def test_without_predictions_asked_for_the_result_is_the_params_alone(command):
    table, want, _ = command
    got = gpfit.fit_frame(table, transform="log")
    assert isinstance(got, pa.Table)
    (zero,) = [r for r in got.to_pylist() if r["series_id"] == "zero"]
    (said,) = [r for r in want if r["series_id"] == "zero"]
    assert zero["error"] == said["error"] and "--transform log needs y > 0" in zero["error"]


def test_the_empty_results_are_dasks_meta_and_the_spark_schema_has_the_timestamps(command):
    """The recipes' meta is fit_frame of no rows: each table's dtypes are a
    partition's; Spark's DDL of the predictions of dates has t a timestamp."""
    frame = command[0].to_pandas()
    meta, got = (gpfit.fit_frame(f, **KEYWORDS) for f in (frame.head(0), frame))
    for empty, full in zip(meta, got):
        assert len(empty) == 0 and empty.dtypes.to_dict() == full.dtypes.to_dict()
    ddl = gpfit.spark_schema(gpfit.predictions_schema(dates=True, predict_levels=[80, 95]))
    assert ddl.startswith("series_id string, kind string, t timestamp, mean double")
    assert "lower_80 double" in ddl and "upper_95 double" in ddl


def _predictions(part: pd.DataFrame) -> pd.DataFrame:
    return gpfit.fit_frame(part, **KEYWORDS).predictions


def test_dasks_partitions_write_the_commands_predictions_with_their_schema(command, tmp_path):
    """The recipe for the second table: a partition's predictions, meta
    those of no rows, written with gpfit.predictions_schema()."""
    dd = pytest.importorskip("dask.dataframe")
    import dask
    import pyarrow.dataset as ds

    table, _, want = command
    frame = table.to_pandas()
    schema = gpfit.predictions_schema(dates=True, predict_levels=KEYWORDS["predict_levels"])
    ddf = dd.from_pandas(frame, npartitions=1).shuffle(on="series_id", npartitions=2)
    got = ddf.map_partitions(_predictions, meta=_predictions(frame.head(0)))
    with dask.config.set(scheduler="synchronous"):
        got.to_parquet(str(tmp_path / "predictions"), schema=schema, write_index=False)
    written = ds.dataset(str(tmp_path / "predictions"), format="parquet").to_table()
    assert written.schema.remove_metadata().equals(schema.remove_metadata())
    order = {"forecast": 0, "observed": 1, "holdout": 2}
    _assert_same_predictions(
        sorted(written.to_pylist(), key=lambda r: (r["series_id"], order[r["kind"]], r["t"])),
        want)


def test_series_without_forecast_rows_or_with_a_coarse_grid_are_warned_of(caplog):
    """The command warns after its run, from the manifest's counts, of ok
    series that got no forecast rows and of grids coarser than a quarter
    of a fitted period; fit_frame had left those series out silently. It
    logs the command's lines, spelled as keywords."""
    t = np.arange(40.0)
    irregular = np.cumsum(np.r_[0.0, np.tile([0.2, 1.0, 3.0], 13)])
    frame = pd.DataFrame({"series_id": np.repeat(["irregular", "regular"], 40),
                          "t": np.r_[irregular, t],
                          "y": np.sin(2 * np.pi * np.r_[irregular, t] / 8) + 2})
    with caplog.at_level("WARNING"):
        got = gpfit.fit_frame(frame, kernel="periodic", predict_steps=2)
    assert set(got.predictions["series_id"]) == {"regular"}
    said = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert said == ["gpfit: 1 ok series got no forecast rows (1 too irregular to have a step); "
                    "see README.md, \"Where the forecast goes\": under predict_steps= a series "
                    "needs a regular spacing, predict_horizon=H predict_points=K gives every "
                    "series one grid"], said
    caplog.clear()
    with caplog.at_level("WARNING"):
        gpfit.fit_frame(frame, kernel="periodic", predict_horizon=16, predict_points=2)
    said = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert said == ["gpfit: 2 series have a forecast spacing coarser than a quarter of a fitted "
                    "period, so their forecasts cannot show that cycle; use a finer grid: "
                    "predict_steps=, or more predict_points="], said


def test_a_series_whose_forecast_passes_float64_on_ys_scale_is_named_and_counted(caplog):
    """As the command (test_forecast_interface.py): a series growing by
    e^17.5 a step is fitted on the log scale, its forecast mapped back is
    inf; it gets no predictions, a warning naming it, and the count."""
    t = np.arange(40.0)
    frame = pd.DataFrame({"series_id": np.repeat(["growing", "plain"], 40),
                          "t": np.tile(t, 2),
                          "y": np.r_[np.exp(17.5 * t), 50 + 10 * np.sin(t)]})
    with caplog.at_level("WARNING"):
        got = gpfit.fit_frame(frame, transform="log", predict_steps=5)
    assert set(got.params["status"]) == {"ok"}
    assert set(got.predictions["series_id"]) == {"plain"}
    said = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(said) == 2, said
    assert "series growing" in said[0] and "is inf on y's scale" in said[0]
    assert said[1].startswith("gpfit: 1 ok series got no predictions") and \
        "under transform= passed float64's largest" in said[1]


def _without(row: dict, names) -> dict:
    return {k: v for k, v in row.items() if k not in names}


def _assert_same_scores(got: list[dict], want: list[dict]) -> None:
    for a, b in zip(got, want):
        for name in SCORES:
            if a[name] is None or b[name] is None:
                assert a[name] is b[name], (a["series_id"], name)
            else:
                assert np.isclose(a[name], b[name], rtol=RTOL, atol=0.0), (a["series_id"], name)


def _assert_same_predictions(got: list[dict], want: list[dict]) -> None:
    """Equal rows, the command's in file order sorted as fit_frame's (by
    series, each series' rows in the order written); floats to RTOL."""
    order = {"forecast": 0, "observed": 1, "holdout": 2}
    key = lambda r: (r["series_id"], order[r["kind"]], r["t"])  # noqa: E731
    assert sorted(got, key=key) == got
    want = sorted(want, key=key)
    assert [(r["series_id"], r["kind"], r["t"]) for r in got] == \
        [(r["series_id"], r["kind"], r["t"]) for r in want]
    for a, b in zip(got, want):
        assert set(a) == set(b)
        for name, value in a.items():
            if isinstance(value, float):
                assert np.isclose(value, b[name], rtol=RTOL, atol=0.0, equal_nan=True), \
                    (a["series_id"], a["kind"], name, value, b[name])


def _small_frame() -> pd.DataFrame:
    t = np.arange(8.0)
    return pd.DataFrame({"series_id": "a", "t": t, "y": np.exp(np.sin(t))})


# Each bad value as the command's flags and as fit_frame's keywords.
BAD = [
    (("--predict_horizon", "7"), dict(predict_horizon=7)),
    (("--predict_points", "3"), dict(predict_points=3)),
    (("--predict_steps", "2", "--predict_horizon", "7", "--predict_points", "3"),
     dict(predict_steps=2, predict_horizon=7, predict_points=3)),
    (("--predict_steps", "-1"), dict(predict_steps=-1)),
    (("--predict_horizon", "-1", "--predict_points", "3"),
     dict(predict_horizon=-1, predict_points=3)),
    (("--holdout", "100001"), dict(holdout=100_001)),
    (("--predict_levels", "95,100"), dict(predict_levels="95,100")),
    (("--predict_levels", "99.99999"), dict(predict_levels=99.99999)),
    (("--predict_levels", "95,95.0000001"), dict(predict_levels=[95, 95.0000001])),
]


@pytest.mark.parametrize("flags, keywords", BAD)
def test_bad_forecast_options_are_refused_with_the_commands_words(flags, keywords):
    argv = ["--input", "i", "--output", "o", *flags]
    with pytest.raises(UsageError) as said:
        options.check(options.parse_options(argv).view_as(options.GPFitOptions))
    # "--flag VALUE" reads "flag=VALUE", "--flag must..." "flag= must...".
    keyword = re.sub(r"--(\w+)( (?=[A-Z0-9]))?", r"\1=", str(said.value))
    with pytest.raises(ValueError) as err:
        gpfit.fit_frame(_small_frame(), **keywords)
    assert str(err.value) == keyword


@pytest.mark.parametrize("levels", ["95,80", 80.0, [95, 80], np.array([80, 95]),
                                    pd.Series([80.0, 95.0]), {95, 80}])
def test_levels_are_taken_as_text_a_number_or_any_collection_of_numbers(levels):
    """A numpy array or a pandas Series of levels (a notebook's) was read as
    its printed text ('[80 95]') and refused; only lists and tuples were taken."""
    got = gpfit.fit_frame(_small_frame(), predict_observed=True, predict_levels=levels)
    bounds = [c for c in got.predictions.columns if c.startswith(("lower", "upper"))]
    want = ["lower_80", "upper_80"] + ([] if isinstance(levels, float) else ["lower_95", "upper_95"])
    assert bounds == want


@pytest.mark.parametrize("keywords, words", [
    (dict(transform="sqrt"), "transform= must be one of none, log, log1p; got 'sqrt'"),
    (dict(predict_observed="false"), "predict_observed= must be True or False; got 'false'"),
    (dict(predict_horizon="7", predict_points=3), "predict_horizon= must be a number; got '7'"),
    (dict(predict_points=2.5, predict_horizon=7), "predict_points= must be a whole number"),
    (dict(holdout=True), "holdout= must be a whole number; got True"),
])
def test_values_of_the_wrong_type_are_refused_naming_the_keyword(keywords, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        gpfit.fit_frame(_small_frame(), **keywords)

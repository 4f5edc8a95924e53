"""Calendar times in and out: dates and timestamps (any unit, zoned or
naive, any century) as the command writes them back in the predictions,
read with pandas and compared with the input's own instants (README's
units of t and Output; docs/design.md, "Contracts")."""
from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline_data import forecast_steps, gpfit


def test_calendar_series_are_forecast_on_the_days_the_readme_says(tmp_path):
    """The step is a length of days, not a calendar unit: the README's
    examples of monthly, quarterly and business-day dates, as the command
    writes them."""
    calendars = {"monthly": pd.date_range("2022-01-01", "2025-01-01", freq="MS"),
                 "quarterly": pd.date_range("2015-01-01", "2024-10-01", freq="QS"),
                 "business": pd.bdate_range("2024-01-01", "2024-03-22")}
    os.makedirs(tmp_path / "in")
    for sid, days in calendars.items():
        y = np.sin(np.arange(days.size) / 4.0)
        pq.write_table(pa.table({"series_id": [sid] * days.size,
                                 "t": pa.array(days.date, pa.date32()), "y": y}),
                       str(tmp_path / "in" / f"{sid}.parquet"))
    run = gpfit(str(tmp_path / "in"), str(tmp_path / "out"), "--kernel", "rbf",
                "--predict_steps", "12")
    assert run.code == 0, run.stderr
    got = pd.read_parquet(tmp_path / "out" / "predictions")
    assert set(got.t.dt.time) == {pd.Timestamp(0).time()}  # midnight UTC, as the dates
    want = {"monthly": ["2025-02-01", "2025-03-04", "2025-04-04", "2025-05-05", "2025-06-05",
                        "2025-07-06", "2025-08-06", "2025-09-06", "2025-10-07", "2025-11-07",
                        "2025-12-08", "2026-01-08"],
            "quarterly": ["2024-12-31", "2025-04-01", "2025-07-01", "2025-09-30"],
            "business": ["2024-03-23", "2024-03-24", "2024-03-25"]}
    for sid, days in want.items():
        shown = [str(t.date()) for t in got[got.series_id == sid].t]
        assert shown[:len(days)] == days, sid


def test_predictions_t_reads_back_as_the_input_the_way_the_readme_says(tmp_path):
    """Dates, zoned times and naive wall-clock times (Berlin's, across the
    October fall-back, whose 02:00 comes twice): the observed rows' t, read
    back as the README's Output table says (.dt.date, .dt.tz_convert,
    .dt.tz_localize(None)), are the input's values."""
    zoned = pd.date_range("2024-10-26 12:00", periods=30, freq="h", tz="Europe/Berlin")
    given = {"dates": pa.array(pd.date_range("2024-02-20", periods=30).date, pa.date32()),
             "zoned": pa.array(zoned),
             "naive": pa.array(zoned.tz_localize(None))}  # 02:00 twice, as a wall clock
    os.makedirs(tmp_path / "in")
    for sid, times in given.items():
        pq.write_table(pa.table({"series_id": [sid] * 30, "t": times,
                                 "y": np.sin(np.arange(30) / 4.0)}),
                       str(tmp_path / "in" / f"{sid}.parquet"))
    run = gpfit(str(tmp_path / "in"), str(tmp_path / "out"), "--kernel", "rbf",
                "--predict_observed")
    assert run.code == 0, run.stderr
    got = pd.read_parquet(tmp_path / "out" / "predictions").groupby("series_id").t
    assert str(got.get_group("dates").dtype) == "datetime64[us, UTC]"
    assert list(got.get_group("dates").dt.date) == given["dates"].to_pylist()
    assert list(got.get_group("zoned").dt.tz_convert("Europe/Berlin")) == list(zoned)
    naive = sorted(given["naive"].to_pandas())
    assert list(got.get_group("naive").dt.tz_localize(None)) == naive


def test_steps_of_hourly_timestamps_land_on_the_hour_before_1790_and_after_2149(tmp_path):
    """Hourly times of 1700 and 2200 (s, and us with a zone): forecasts
    are the last time plus whole hours, exactly, as pandas reads them
    back. There (2^16 days from 1970) an ulp of float64 days is 1.3 us,
    and t_last + k step written as round(days * 86,400e6) put 333 of 500
    forecasts of each 1 us off the hour (grid.written_micros)."""
    steps, rng = 500, np.random.default_rng(12)
    os.makedirs(tmp_path / "in")
    for sid, start, unit, zone in (("1700", "1700-01-01", "s", None),
                                   ("2200", "2200-01-01", "us", "Europe/Berlin")):
        times = pd.date_range(start, periods=48, freq="h", tz=zone).as_unit(unit)
        y = np.sin(np.arange(48) / 6.0) + 0.1 * rng.standard_normal(48)
        pq.write_table(pa.table({"series_id": [sid] * 48, "t": pa.array(times), "y": y}),
                       str(tmp_path / "in" / f"{sid}.parquet"))
    given, forecast = forecast_steps(tmp_path, steps)
    for sid in ("1700", "2200"):
        last = pd.Timestamp(given[given.series_id == sid].t.max(), tz="UTC")
        want = last + pd.Timedelta(hours=1) * np.arange(1, steps + 1)
        assert list(forecast[forecast.series_id == sid].t) == list(want), sid


def test_observed_and_held_out_times_are_written_back_as_the_input_gave_them(tmp_path):
    """Times at any microsecond of 2080 and any second of 2120 (s, us, a
    zone) come back in the observed and holdout rows as the input's
    instants, as pandas reads both: as float64 days they carry an ulp of
    0.3-0.6 us, and rounding days * 86,400e6 wrote 12 of 64 and 4 of 64 of
    them 1 us off, joining no input row by time (pipeline.io.columns.as_micros)."""
    rng = np.random.default_rng(5)
    os.makedirs(tmp_path / "in")
    micros = pd.Timestamp("2080-01-01", tz="Europe/Berlin") + pd.to_timedelta(
        np.sort(rng.integers(0, 10**12, 64)), unit="us")
    seconds = pd.Timestamp("2120-01-01", tz="UTC") + pd.to_timedelta(
        np.sort(rng.integers(0, 10**7, 64)), unit="s")
    for sid, times in (("micros", micros.as_unit("us")), ("seconds", seconds.as_unit("s"))):
        y = np.sin(np.arange(64) / 6.0) + 0.1 * rng.standard_normal(64)
        pq.write_table(pa.table({"series_id": [sid] * 64, "t": pa.array(times), "y": y}),
                       str(tmp_path / "in" / f"{sid}.parquet"))
    run = gpfit(str(tmp_path / "in"), str(tmp_path / "out"), "--kernel", "rbf",
                "--predict_observed", "--holdout", "4")
    assert run.code == 0, run.stderr
    given = pd.read_parquet(tmp_path / "in")
    written = pd.read_parquet(tmp_path / "out" / "predictions")
    for sid in ("micros", "seconds"):
        want = list(given[given.series_id == sid].t.sort_values().dt.tz_convert("UTC"))
        got = written[written.series_id == sid]
        assert list(got[got.kind == "observed"].t) == want, sid
        assert list(got[got.kind == "holdout"].t) == want[-4:], sid

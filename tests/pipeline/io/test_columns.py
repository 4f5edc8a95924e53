"""Input column types and their conversion to float64 (pipeline.io.columns)."""
from __future__ import annotations

import datetime as dt
import decimal
import uuid

import numpy as np
import pyarrow as pa
import pytest

from pipeline.io import columns


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
def test_timestamps_become_days_since_epoch(unit):
    stamps = pa.array([dt.datetime(1970, 1, 2, 12), None, dt.datetime(2024, 1, 1, 6)],
                      pa.timestamp(unit, tz="UTC"))
    days = columns.as_float(stamps)
    np.testing.assert_allclose(days[[0, 2]], [1.5, 19723.25], rtol=0, atol=1e-9)
    assert np.isnan(days[1])


def test_dates_become_days_since_epoch():
    dates = [dt.date(1970, 1, 11), None]
    for type_ in (pa.date32(), pa.date64()):
        days = columns.as_float(pa.array(dates, type_))
        assert days[0] == 10.0 and np.isnan(days[1])


def test_numbers_keep_their_units_and_null_is_nan():
    assert columns.as_float(pa.array([1, None, 3])).tolist()[::2] == [1.0, 3.0]
    assert columns.as_float(pa.array([2**62 + 1])).tolist() == [2.0**62]  # rounded, not refused
    assert columns.as_float(pa.array([decimal.Decimal("2.5")])).tolist() == [2.5]
    assert np.isnan(columns.as_float(pa.chunked_array([[None, 1.0]]))[0])


@pytest.mark.parametrize("type_", [pa.decimal128(38, 18), pa.decimal128(10, 4),
                                   pa.decimal256(76, 40)])
def test_decimals_become_the_float64_nearest_them(type_):
    """Decimals (Spark's DecimalType(38, 18), DuckDB's DECIMAL) as the
    float64 nearest their value, as Python's float(Decimal) rounds it: the
    reference, correctly rounded. Arrow's cast to float64 was up to 2 steps
    off it, for 1 % to 30 % of values (Decimal("0.3") of decimal128(38, 18)
    read as 0.30000000000000004), so the same numbers as float64 gave
    other fingerprints."""
    rng = np.random.default_rng(5)
    digits = min(type_.scale, 15)
    values = [decimal.Decimal(f"{v:.{digits}f}") for v in rng.standard_normal(2000) * 100]
    values += [decimal.Decimal("0.3"), decimal.Decimal("-0.3"), None]
    got = columns.as_float(pa.array(values, type_))
    want = np.array([float(v) for v in values[:-1]])
    np.testing.assert_array_equal(got[:-1], want)
    assert np.isnan(got[-1])


def test_the_same_instants_in_another_unit_are_days_at_most_one_step_apart():
    """What the README says of units of t: hourly times of 2024 as s and ms
    are the same days (seconds are read as the ms Parquet stores them as,
    so a frame's and its file's agree); as us a third of them are one
    float64 step off, as ns 2 %, so their fingerprints differ. Integers past
    2^53 are rounded (epoch ns to steps of 256)."""
    seconds = 1_704_067_200 + 3600 * np.arange(24 * 366, dtype=np.int64)
    days = {unit: columns.as_float(pa.array(seconds * scale).cast(pa.timestamp(unit)))
            for unit, scale in (("s", 1), ("ms", 10**3), ("us", 10**6), ("ns", 10**9))}
    assert np.array_equal(days["ms"], days["s"])
    for unit, (low, high) in (("us", (0.3, 0.34)), ("ns", (0.01, 0.03))):
        steps = np.abs(days[unit] - days["s"]) / np.spacing(days["s"])
        assert steps.max() == 1 and low < np.mean(steps > 0) < high, unit
    nanoseconds = seconds[:1] * 10**9 + np.arange(256)
    assert np.unique(columns.as_float(pa.array(nanoseconds))).size == 2  # steps of 256


@pytest.mark.parametrize("unit,start,grain", [
    ("us", 1900, 1), ("us", 2045, 1), ("ms", 1800, 1), ("s", 1800, 1), ("s", 2130, 1),
    ("us", 2200, 10**6), ("ms", 2251, 10**3), ("s", 2251, 1), ("ns", 2060, 10**6),
    # Hourly and whole seconds and ms far from 1970, where an ulp of days is
    # 2-40 us: a third of them came back 4-32 us off, and forecasts with them.
    ("us", 1000, 3_600_000_000), ("s", 3000, 3600), ("s", 9000, 1), ("ms", 5000, 1),
    ("s", 1, 60)])
def test_as_micros_gives_back_the_instants_as_float_read(unit, start, grain):
    """as_micros(as_float(t)) is t in microseconds, as Arrow casts it, for
    20,000 times from `start` on (ten years, at multiples of `grain` units):
    any time of 1880-2059 in us, of 1790-2149 in s and ms; whole ms and
    seconds of any year; dates always. round(days * 86,400e6) was off for
    up to a third of them (2 % of the us of 2045-2055)."""
    rng = np.random.default_rng(start)
    first = (np.datetime64(f"{start}-01-01", unit) - np.datetime64("1970-01-01", unit)).astype(
        np.int64)
    span = 3650 * 86_400 * {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}[unit] // grain
    given = pa.array(first + grain * rng.integers(0, span, 20_000)).cast(pa.timestamp(unit, "UTC"))
    want = given.cast(pa.timestamp("us", "UTC")).cast(pa.int64()).to_numpy()
    days = columns.as_float(given)
    assert np.array_equal(columns.as_micros(days), want)
    dates = pa.array(rng.integers(-700_000, 2_900_000, 1000).astype(np.int32)).cast(pa.date32())
    assert np.array_equal(columns.as_micros(columns.as_float(dates)),
                          dates.cast(pa.int32()).to_numpy().astype(np.int64) * 86_400_000_000)


def test_ids_become_strings():
    assert columns.as_str(pa.array([7, 8])).tolist() == ["7", "8"]
    assert columns.as_str(pa.array(["a", "b"]).dictionary_encode()).tolist() == ["a", "b"]


@pytest.mark.parametrize("ids", [
    pa.chunked_array([["b", "a", "c"], ["a", "b", "é"]]),
    pa.chunked_array([[3, 1, 2], [1, 3, 10]]),
    pa.chunked_array([pa.array(["b", "a", "c"]).dictionary_encode(),
                      pa.array(["a", "b", "é"]).dictionary_encode()]),
    pa.chunked_array([[b"\xff", b"a", b"\\xff"], [b"a", b"\xff", b"z"]], pa.binary_view()),
    pa.chunked_array([[dt.date(2020, 1, 3), dt.date(2020, 1, 1)]] * 3),
    pa.chunked_array([[b"\x6f" * 16, b"\x00" * 16], [b"\x00" * 16, b"\xff" * 16]], pa.uuid()),
], ids=["string", "int", "dictionary", "bytes", "date", "uuid"])
def test_id_codes_name_each_row_as_as_str_does(ids):
    """Codes into the distinct ids, hashed by Arrow: each row's name is the
    string as_str gives that row (bytes that are not UTF-8 included)."""
    codes, names = columns.as_codes(ids)
    assert names[codes].tolist() == columns.as_str(ids).tolist()
    assert len(set(codes.tolist())) == len(names)


def test_uuid_ids_are_their_canonical_text():
    """Arrow's UUID type (Parquet's UUID: DuckDB's, Spark's, pandas' uuid
    objects) is an id; as its 36-character lowercase text, so that the same
    ids given as text name the same series (docs/design.md, "Contracts")."""
    values = [uuid.UUID("6F1C0A5E-0000-4000-8000-00000000000A"), uuid.UUID(int=0)]
    ids = pa.array([v.bytes for v in values], pa.uuid())
    assert columns.is_id(pa.uuid())
    assert columns.as_str(ids).tolist() == ["6f1c0a5e-0000-4000-8000-00000000000a",
                                            "00000000-0000-0000-0000-000000000000"]
    # Other extension types stay refused: Arrow cannot group them.
    assert not columns.is_id(pa.json_())


@pytest.mark.parametrize("type_,zone", [
    (pa.timestamp("us", tz="US/Pacific-New"), "US/Pacific-New"),  # dropped from tzdata 2020b
    (pa.timestamp("ns", tz="Mars/Olympus_Mons"), "Mars/Olympus_Mons"),
    (pa.timestamp("us", tz="UTC"), None),
    (pa.timestamp("ms", tz="America/Los_Angeles"), None),
    (pa.timestamp("s", tz="+05:30"), None),  # a fixed offset needs no database
    (pa.timestamp("us"), None),
    (pa.string(), None),
])
def test_a_zone_is_unknown_where_arrow_cannot_write_its_times_as_text(type_, zone):
    assert columns.unknown_zone(type_) == zone
    if zone is None and pa.types.is_timestamp(type_):  # ids as_str writes in their zone
        assert columns.as_str(pa.array([0], type_))[0][:4] in ("1969", "1970")


def test_times_in_an_unknown_zone_are_days_since_epoch_all_the_same():
    # Why only ids are refused: a time counts from the epoch in UTC.
    stamps = pa.array([129_600_000_000], pa.timestamp("us", tz="US/Pacific-New"))
    assert columns.as_float(stamps).tolist() == [1.5]

"""Input column types: which are accepted, and their conversion to float64.

Times may be numbers (any units; results use the same units) or dates and
timestamps, which become days since 1970-01-01 UTC, so that time-like
parameters (length scale, period) come out in days; as_micros gives the
instants back.
"""
from __future__ import annotations

from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.io.schema import MICROSECONDS_PER_DAY

DAYS_PER_UNIT = {"s": 1 / 86_400, "ms": 1 / 86_400_000, "us": 1 / 86_400_000_000,
                 "ns": 1 / 86_400_000_000_000}


def is_list(type_: pa.DataType) -> bool:
    return (pa.types.is_list(type_) or pa.types.is_large_list(type_)
            or pa.types.is_fixed_size_list(type_) or pa.types.is_list_view(type_)
            or pa.types.is_large_list_view(type_))


def is_number(type_: pa.DataType) -> bool:
    """Integers, floats and decimals; an all-null column counts too."""
    return (pa.types.is_integer(type_) or pa.types.is_floating(type_)
            or pa.types.is_decimal(type_) or pa.types.is_null(type_))


def is_calendar(type_: pa.DataType) -> bool:
    """Dates and timestamps (any unit, with or without time zone)."""
    return pa.types.is_date(type_) or pa.types.is_timestamp(type_)


def decoded(type_: pa.DataType) -> pa.DataType:
    """The type of a column's values: a dictionary's value type (pandas'
    category dtype arrives as one), else type_ itself."""
    return type_.value_type if pa.types.is_dictionary(type_) else type_


def is_id(type_: pa.DataType) -> bool:
    """Any scalar type can name a series (it is reported as a string) that
    as_codes can group: not float16 or an extension type, which Arrow
    cannot hash, but for arrow.uuid (as_codes groups its 16 bytes). Asked
    of an empty array, so that the launcher refuses what would fail the job
    on its workers."""
    if pa.types.is_nested(type_) or pa.types.is_null(type_):
        return False
    try:
        as_codes(_empty(type_))
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError, pa.ArrowInvalid):
        return False
    return True


def _empty(type_: pa.DataType) -> pa.Array:
    """An empty array of type_. A dictionary's is built from its parts:
    pa.array([], type_) has no converter for a dictionary of dates or
    timestamps (pandas' category of dates), which is_id then refused."""
    if pa.types.is_dictionary(type_):
        return pa.DictionaryArray.from_arrays(pa.array([], type_.index_type),
                                              pa.array([], type_.value_type))
    return pa.array([], type_)


def is_uuid(type_: pa.DataType) -> bool:
    """Arrow's UUID type (fixed_size_binary(16) storage): Parquet's UUID, as
    DuckDB writes its UUID and pyarrow pandas' uuid.UUID objects."""
    return getattr(type_, "extension_name", None) == "arrow.uuid"


def _uuid_text(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """UUIDs (nulls removed) -> [n] object array of their canonical text,
    36 lowercase characters (str(uuid.UUID)): the same ids given as text
    name the same series (docs/design.md, "Contracts")."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks else pa.array([], array.type)
    storage = array.storage if is_uuid(array.type) else array
    if len(storage) == 0:  # may have no data buffer
        return np.array([], dtype=object)
    raw = np.frombuffer(storage.buffers()[1], np.uint8)[
        storage.offset * 16:(storage.offset + len(storage)) * 16]
    # The hex digits made at once: str(uuid.UUID) a value took about ten
    # times as_codes of the same ids as text (0.5 s for 160,000).
    digits = np.frombuffer(raw.tobytes().hex().encode("ascii"), np.uint8).reshape(-1, 32)
    text = np.full((len(storage), 36), ord("-"), np.uint8)
    text[:, _UUID_DIGITS] = digits
    return text.view("S36").ravel().astype(str).astype(object)


# Where str(uuid.UUID) puts the 32 hex digits among its 36 characters.
_UUID_DIGITS = [i for i in range(36) if i not in (8, 13, 18, 23)]


def unknown_zone(type_: pa.DataType) -> Optional[str]:
    """The time zone of a timestamp type that the tz database Arrow reads
    lacks (US/Pacific-New, dropped in 2020), else None. Ids are written as
    text in their zone (as_str), which then fails on the workers; times
    need no zone (as_float counts from the epoch, UTC)."""
    if not pa.types.is_timestamp(type_) or not type_.tz:
        return None
    try:  # Arrow's own lookup, the one as_str makes
        pc.cast(pa.array([0], type_), pa.string())
    except pa.ArrowInvalid:
        return type_.tz
    return None


# Parquet has no timestamp unit of seconds: Arrow writes seconds as ms, and
# the command reads them so. x s * (1/86,400) and 1000 x ms * (1/86,400,000)
# round to days one float64 step apart for a third of hourly times, and ids
# are written "00:00:00" and "00:00:00.000", so seconds are read as those ms,
# and fit_frame's timestamps in seconds give the days, fingerprints and ids
# of their Parquet file (docs/design.md, "DataFrame API").
_AS_STORED = {"s": "ms"}


def as_float(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Numbers, dates or timestamps -> [n] float64; null -> NaN.

    Dates and timestamps become days since 1970-01-01 UTC (fractional days
    for timestamps). A dictionary is read as its values.
    """
    if pa.types.is_dictionary(array.type):
        array = pc.cast(array, array.type.value_type)
    type_ = array.type
    if pa.types.is_timestamp(type_):
        scale = DAYS_PER_UNIT[_AS_STORED.get(type_.unit, type_.unit)]
        array = pc.cast(array, pa.int64())
        if type_.unit in _AS_STORED:  # exact: x * 1000 below 2**53 is an integer float64 holds
            array = pc.multiply(pc.cast(array, pa.float64()), 1000.0)
    elif pa.types.is_date32(type_):
        scale = 1.0
        array = pc.cast(array, pa.int32())
    elif pa.types.is_date64(type_):
        scale = DAYS_PER_UNIT["ms"]
        array = pc.cast(array, pa.int64())
    elif pa.types.is_decimal(type_):
        # Arrow's cast scales the unscaled integer by a power of ten in
        # float64, up to 2 steps off the decimal's value (Decimal("0.3") of
        # decimal128(38, 18) read as 0.30000000000000004): its text parses
        # to the float64 nearest it, as the same numbers given as float64
        # (docs/design.md, "Contracts").
        scale = None
        array = pc.cast(array, pa.string())
    else:
        scale = None
    # Unsafe: rounding big integers (epoch nanoseconds) to float64 is the point.
    values = _to_numpy(pc.cast(array, pa.float64(), safe=False))
    return values * scale if scale is not None else values


# (microseconds per unit, as_float's days per unit), coarsest first: a
# date32's days are as_float's as they are (ns: _rank's own case).
_UNITS = ((MICROSECONDS_PER_DAY, 1.0), (1_000_000, DAYS_PER_UNIT["s"]),
          (1_000, DAYS_PER_UNIT["ms"]), (1, DAYS_PER_UNIT["us"]))


def as_micros(days: np.ndarray) -> np.ndarray:
    """Days since 1970 that as_float made of dates or timestamps [n] ->
    int64 microseconds since 1970: the instants they were read from.

    round(days * 86,400e6) alone can be 1 us off: as_float's scale and
    product each round, and an ulp of days is 0.3 us from 2011 and 0.6 us
    from 2059, so times at any microsecond from 2042, and some whole
    seconds from 2090, came back off the input's. The candidates are the
    integers within 2 us of that product, and the whole day, second and ms
    nearest it, that as_float makes into `days` in some unit; the coarsest
    (a whole day, second, ms, us; last, as ns), then the nearest, is taken.
    In 1880-2059 only the input's own instant is a candidate; in 1790-2149
    a us time within 1 us of a whole ms can have that ms as one too (about
    1 in 100,000), which is taken; outside them an ulp is 1.3 us (40 us by
    9999) and neighbouring microseconds give the same days, of which the
    roundest is written (whole seconds and ms come back exactly in any
    year: the ±2 us alone missed a third of hourly times before 1100 and
    after 2700; ns, which float64 resolves to 256 ns or coarser, the
    nearest us or one next to it).
    """
    days = np.asarray(days, dtype=np.float64)
    product = np.round(days * MICROSECONDS_PER_DAY)
    usable = np.isfinite(product) & (np.abs(product) < 2.0**62)
    product = np.where(usable, product, 0.0)
    nearest = product.astype(np.int64)
    # [8, n] candidates, nearest first: argmax takes the first of equal ranks.
    micros = np.vstack([nearest + np.array([0, -1, 1, -2, 2], dtype=np.int64)[:, None]]
                       + [np.round(product / length).astype(np.int64)[None] * length
                          for length, _ in _UNITS[:3]])
    best = np.argmax(_rank(micros, days), axis=0)
    return np.where(usable, np.take_along_axis(micros, best[None], axis=0)[0], nearest)


def _rank(micros: np.ndarray, days: np.ndarray) -> np.ndarray:
    """[c, n] how likely micros [c, n] int64 is the instant as_float read as
    `days` [n]: 0 where it reads as other days in every unit; else the
    coarsest unit it is whole in (a day's length in us, 1e6, 1e3 or 1),
    plus a half where a unit it is whole in reads it so (ns, which float64
    rounds to 256 ns or coarser, give days to several microseconds)."""
    coarsest = np.ones(micros.shape)
    read = np.zeros(micros.shape, dtype=bool)
    for length, scale in reversed(_UNITS):
        whole = micros % length == 0
        coarsest[whole] = length
        read |= whole & ((micros // length).astype(np.float64) * scale == days)
    small = np.abs(micros) < 2**63 // 1000  # as ns, within int64
    nanos = np.where(small, micros, 0) * 1000
    as_nanos = small & (nanos.astype(np.float64) * DAYS_PER_UNIT["ns"] == days)
    return np.where(read, coarsest + 0.5, np.where(as_nanos, coarsest, 0.0))


def as_str(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Series ids -> [n] object array of str (nulls must be removed first).

    Bytes ids need not be UTF-8: bytes that are not are kept as \\xNN escapes
    (a cast to string would fail the whole read on the worker). UUIDs are
    their canonical text (_uuid_text), which a cast to string is not.
    """
    if pa.types.is_dictionary(array.type):
        array = pc.cast(array, array.type.value_type)
    if is_uuid(array.type):
        return _uuid_text(array)
    if is_bytes(array.type):
        return np.asarray([value.decode("utf-8", "backslashreplace")
                           for value in array.to_pylist()], dtype=object)
    if pa.types.is_timestamp(array.type) and array.type.unit in _AS_STORED:
        # Named as their Parquet file names them ("... 00:00:00.000"):
        # fit_frame's seconds and the command's ms are one series.
        array = pc.cast(array, pa.timestamp(_AS_STORED[array.type.unit], array.type.tz))
    if not (pa.types.is_string(array.type) or pa.types.is_large_string(array.type)):
        array = pc.cast(array, pa.string())
    return np.asarray(array.to_pylist(), dtype=object)


def as_codes(array: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """Series ids (nulls removed first) -> (codes [n] int, names [u] object
    array of str): row i has id names[codes[i]]; names as `as_str` gives them.

    Arrow hashes the raw values and only the u distinct ones become Python
    strings: np.unique sorted 160,000 id strings of a row group in 50 ms,
    this takes 3 ms (docs/design.md, "What a small night costs"). Two raw
    values may give one string (bytes that are not UTF-8); callers group by
    the string.
    """
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if pa.types.is_dictionary(array.type):
        array = pc.cast(array, array.type.value_type)
    if is_uuid(array.type):  # Arrow hashes the storage, not the extension
        encoded = array.storage.dictionary_encode()
        return _to_numpy(encoded.indices).astype(np.intp), _uuid_text(encoded.dictionary)
    encoded = array.dictionary_encode()
    return _to_numpy(encoded.indices).astype(np.intp), as_str(encoded.dictionary)


def is_bytes(type_: pa.DataType) -> bool:
    return (pa.types.is_binary(type_) or pa.types.is_large_binary(type_)
            or pa.types.is_fixed_size_binary(type_) or pa.types.is_binary_view(type_))


def is_text(type_: pa.DataType) -> bool:
    return (pa.types.is_string(type_) or pa.types.is_large_string(type_)
            or pa.types.is_string_view(type_))


def without_views(array: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """string_view and binary_view as large_string and large_binary, the
    same values: Arrow keeps views through Parquet (polars' to_arrow()
    gives them) but has no kernel to filter or take them, and a null id
    failed the whole job. Other arrays as they are."""
    if pa.types.is_string_view(array.type):
        return pc.cast(array, pa.large_string())
    if pa.types.is_binary_view(array.type):
        return pc.cast(array, pa.large_binary())
    return array


def missing_ids(ids: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """[n] bool: whether each id is missing, null or a float's NaN (a
    dictionary's value too). Polars, Spark and Arrow write a missing float
    id as NaN, pandas' writer as null: both are rows without a series
    (docs/design.md, "Contracts"), where NaN's rows were one series "nan"."""
    if pa.types.is_dictionary(ids.type) and pa.types.is_floating(ids.type.value_type):
        ids = pc.cast(ids, ids.type.value_type)
    return pc.is_null(ids, nan_is_null=True)


def list_lengths(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """[rows] int64 length of each list; a null list has length 0."""
    lengths = pc.fill_null(pc.list_value_length(array), 0)
    return _to_numpy(pc.cast(lengths, pa.int64())).astype(np.int64)


def list_values(array: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """The concatenated elements of all non-null lists, in row order."""
    return pc.list_flatten(array)


def _to_numpy(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks else pa.array([], array.type)
    return array.to_numpy(zero_copy_only=False)

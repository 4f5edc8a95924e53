"""Reads a few named series from the input, and nothing else.

Each file is read with a filter on the id column, so Parquet row groups
whose id statistics exclude the wanted ids are skipped and only the wanted
rows are kept in memory. Times are converted as gpfit converts them
(pipeline.io.columns: dates and timestamps become days since 1970-01-01).
"""
from __future__ import annotations

import re
from typing import Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from gpcore.series import Series
from pipeline.io import columns as col
from pipeline.io.errors import UsageError, first_line
from pipeline.io.files import map_files, open_for_scan
from pipeline.io.inputs import NESTED, InputSpec

# A Parquet file ends with its footer's length (4 bytes, little-endian) and PAR1.
FOOTER_TAIL = 8


def read_series(spec: InputSpec, ids: Sequence[str]) -> dict[str, Series]:
    """The series with these ids (as strings, as gpfit reports them).

    Returns:
      {series id: Series} for each id found in the input, with t [n] as
      float64 (sorted) and y [n] as float64 (NaN where null or missing).
      Ids not found in the input are absent.
    """
    ids = list(dict.fromkeys(str(i) for i in ids))
    if not ids:
        return {}
    parts = map_files(lambda path: _read_file(path, spec, ids), spec.files)
    keys = np.concatenate([p[0] for p in parts])
    t = np.concatenate([p[1] for p in parts])
    y = np.concatenate([p[2] for p in parts])
    found = {}
    wanted = set(ids)
    for key in dict.fromkeys(keys):  # ids in input order
        if key not in wanted:
            continue
        mine = keys == key
        order = np.argsort(t[mine], kind="stable")
        found[key] = Series(key, t[mine][order], y[mine][order])
    return found


def _read_file(path: str, spec: InputSpec, ids: list[str]
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """-> (ids [k] str, t [k], y [k]): the wanted observations of one file."""
    names = spec.columns
    with open_for_scan(path) as f:
        parquet = pq.ParquetFile(f)
        id_type = parquet.schema_arrow.field(names.id).type
        # Arrow's filter on a column encrypted behind a plaintext footer
        # waits forever; unfiltered, its read fails and says why.
        sealed = _signed_footer(f, parquet.metadata)
        f.seek(0)
        try:
            # INT96 times (Spark's legacy timestamps) as microseconds: as Arrow's
            # nanoseconds they wrap outside 1677-2262 (pipeline.io.inputs reads them so).
            table = pq.read_table(f, columns=[names.id, names.time, names.value],
                                  filters=None if sealed else id_filter(names.id, id_type, ids),
                                  coerce_int96_timestamp_unit="us")
        except OSError as err:
            if not sealed:
                raise
            raise UsageError(f"{path} holds columns encrypted with Parquet modular encryption "
                             f"({first_line(err)}), which the report cannot decrypt: write it "
                             "without encryption, or leave it out of --input") from err
    # Views (string_view, binary_view) as plain strings and bytes: Arrow
    # cannot filter them (columns.without_views).
    table = table.set_column(0, names.id, col.without_views(table.column(names.id)))
    table = table.filter(pc.is_valid(table.column(names.id)))
    keys, t, y = table.column(names.id), table.column(names.time), table.column(names.value)
    if spec.layout == NESTED:
        # One row per series: repeat its id once per listed point. A row
        # whose t and y lists differ in length cannot be paired: not drawn.
        n_t, n_y = col.list_lengths(t), col.list_lengths(y)
        same = pa.array(n_t == n_y)
        keys, t, y = keys.filter(same), t.filter(same), y.filter(same)
        repeats = n_t[n_t == n_y]
        keys = np.repeat(col.as_str(keys), repeats)
        t, y = col.list_values(t), col.list_values(y)
    else:
        keys = col.as_str(keys)
    return keys, col.as_float(t), col.as_float(y)


def _signed_footer(f, metadata: pq.FileMetaData) -> bool:
    """Whether the open file's footer is followed by a signature, as Parquet
    modular encryption's plaintext footer is (its columns encrypted): the
    footer's recorded length is then more than the footer's own."""
    f.seek(-FOOTER_TAIL, 2)
    return int.from_bytes(f.read(4), "little") > metadata.serialized_size


def id_filter(name: str, id_type: pa.DataType, ids: list[str]) -> Optional[ds.Expression]:
    """A filter keeping rows whose id, written as a string, is in ids (and
    maybe others: read_series keeps the wanted ones).

    Compared in the column's own type where possible (strings, integers,
    bytes), so that Parquet statistics can skip row groups; otherwise (other
    types) by casting the column to string, as gpfit names series. Bytes
    that are not UTF-8 fail that cast, so other bytes types (fixed size,
    dictionary, views) are read unfiltered (None), and so are string_view
    and UUIDs, which Arrow cannot filter (UUIDs are named by their text:
    columns.as_str).
    """
    field = ds.field(name)
    if pa.types.is_string(id_type) or pa.types.is_large_string(id_type):
        return field.isin(pa.array(ids, id_type))
    if pa.types.is_binary(id_type) or pa.types.is_large_binary(id_type):
        return field.isin(pa.array([b for text in ids for b in id_bytes(text)], id_type))
    if col.is_bytes(id_type) or col.is_uuid(id_type) or pa.types.is_string_view(id_type) or (
            pa.types.is_dictionary(id_type) and col.is_bytes(id_type.value_type)):
        return None
    if pa.types.is_integer(id_type):
        values = []
        for text in ids:
            try:
                value = int(text)
            except ValueError:
                continue  # not an integer: cannot name a row of this file
            if str(value) == text:  # "007" is not how gpfit writes id 7
                values.append(value)
        try:
            return field.isin(pa.array(values, id_type))
        except (OverflowError, pa.ArrowInvalid):
            pass  # a value out of the column's range; compare as strings
    return field.cast(pa.string()).isin(pa.array(ids, pa.string()))


_ESCAPE = re.compile(r"\\x([0-9a-f]{2})")


def id_bytes(text: str) -> set[bytes]:
    """The bytes ids gpfit names `text`: its UTF-8, and its \\xNN escapes
    read as those bytes (columns.as_str writes bytes that are not UTF-8 so)."""
    parts, at = [], 0
    for found in _ESCAPE.finditer(text):
        parts += [text[at:found.start()].encode("utf-8"), bytes([int(found.group(1), 16)])]
        at = found.end()
    return {text.encode("utf-8"), b"".join(parts) + text[at:].encode("utf-8")}

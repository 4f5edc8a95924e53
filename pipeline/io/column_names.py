"""Column names: each of the id, time and value columns once in a file, and
when one is missing, the column the user most likely meant (one in
another case, with spaces around it, in another Unicode normalisation, a
struct's field, a pandas MultiIndex's levels, a Hive folder name, or a
pandas index), named in the refusal (docs/design.md, "Contracts")."""
from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING, Optional

import pyarrow as pa

from pipeline.io.errors import InputError

if TYPE_CHECKING:
    from pipeline.io.inputs import Columns


# A refusal lists at most this many of a table's columns (docs/design.md,
# "Contracts"): a wide table (a column per series, 20,000 of them) made a
# refusal line of 380 KB.
COLUMNS_LISTED = 20


def listed(names: list[str]) -> str:
    """The column names for a refusal: the first COLUMNS_LISTED, and how
    many there are past them."""
    shown = ", ".join(names[:COLUMNS_LISTED])
    left = len(names) - COLUMNS_LISTED
    return f"{shown}, and {left:,} more" if left > 0 else shown


def check_names(path: str, names: list[str], columns: Columns, option: str = "--{}",
                schema: Optional[pa.Schema] = None) -> None:
    """InputError unless each of the columns is among `names` exactly once
    (the column names of a file, or table: `path` names it; its `schema`,
    where known, says which are structs)."""
    if not names:  # pandas' DataFrame().to_parquet()
        raise InputError(f"{path} has no columns (a table written without any); write it "
                         f"with the columns {columns.id!r}, {columns.time!r} and "
                         f"{columns.value!r}, or remove it")
    for name, column in ((columns.id, "id_column"), (columns.time, "time_column"),
                         (columns.value, "value_column")):
        if name not in names:
            raise InputError(f"{path} has no column {name!r} (its columns: {listed(names)}); "
                             f"{_missing(path, name, names, option.format(column), schema)}")
        if names.count(name) > 1:
            raise InputError(
                f"{path} has {names.count(name)} columns named {name!r}; give its "
                f"columns unique names, or name another with {option.format(column)}")


def _missing(path: str, name: str, names: list[str], option: str,
             schema: Optional[pa.Schema]) -> str:
    """What to do about a column `name` that the file at `path`, of columns
    `names` (and `schema`, where known), lacks."""
    # A name with spaces around it, or in another Unicode normalisation (a
    # header written on macOS: accents decomposed), reads as the name in the
    # list of columns.
    near = [other for other in names if _loosely(other) == _loosely(name)]
    if near and _nfc(near[0]) == _nfc(name):
        return (f"its column {ascii(near[0])} differs from {ascii(name)} only in Unicode "
                f"normalisation (accents composed or not): give {option} the name as the file "
                "spells it, or rename the column")
    if near and near[0].strip().casefold() != name.strip().casefold():
        # Also in normalisation: shown as it looks, the name typed again
        # (composed) was refused again.
        return (f"its column {ascii(near[0])} differs from {ascii(name)} in case or in spaces "
                "around the name and in Unicode normalisation (accents composed or not): give "
                f"{option} the name as the file spells it, or rename the column")
    if near:
        return (f"its column {near[0]!r} differs only in case or in spaces around the name: "
                f"give that name to {option}")
    found = _struct_field(name, schema)
    if found:
        # Spark's groupBy(window(...)) puts the time in window.start.
        struct, field = found
        return (f"it is the field {field!r} of the struct column {struct!r}, and gpfit reads "
                f"columns, not their fields: write it as a column of its own "
                f"{as_a_column(struct, field)} and give that name to {option}")
    level = next((other for other in names if _is_levels_of(other, name)), None)
    if level:
        # pandas names a column of a MultiIndex by its tuple, in the frame
        # and in its to_parquet file alike.
        return (f"its column {level!r} is a pandas MultiIndex's, named by its levels: flatten "
                f"the columns first (e.g. data.droplevel(0, axis=1)), or give that name to "
                f"{option}")
    partition = re.search(rf"^(.*)/({re.escape(name)}=[^/]*)/", path)
    if partition:
        # Hive partitioning (pyarrow's partition_cols, Spark's partitionBy)
        # leaves the column in the folder names alone.
        return (f"it is in the folder names ({partition.group(2)}/: Hive partitioning), which "
                "gpfit does not read: write the files with the column in them "
                f"(pyarrow.dataset.dataset({partition.group(1)!r}, partitioning='hive') reads "
                "them with it)")
    index = next((other for other in names if _UNNAMED_INDEX.fullmatch(other)), None)
    if index:
        # A time series' usual frame keeps its times in an unnamed index.
        return (f"its column {index!r} is a pandas frame's unnamed index, as to_parquet "
                f"writes it: if it holds this column, give that name to {option}, or name the "
                f"index before writing (data.rename_axis({name!r}))")
    return f"name the right one with {option}"


# How pandas' to_parquet names an unnamed index level (a DatetimeIndex).
_UNNAMED_INDEX = re.compile(r"__index_level_\d+__")


def _is_levels_of(column: str, name: str) -> bool:
    """Whether `column` is how pandas names a MultiIndex column whose last
    level is `name` (str of the tuple: "('k', 'series_id')")."""
    return column.startswith("(") and column.endswith(f", {name!r})")


def _struct_field(name: str, schema: Optional[pa.Schema]) -> Optional[tuple[str, str]]:
    """(struct column, field) where `name` is "column.field" or a field's
    own name, of a top-level struct column of `schema`; else None."""
    for field in schema or ():
        if pa.types.is_struct(field.type):
            for inner in field.type:
                if name in (inner.name, f"{field.name}.{inner.name}"):
                    return field.name, inner.name
    return None


def as_a_column(struct: str, field: str) -> str:
    return f"(Spark: .withColumn({field!r}, col('{struct}.{field}')))"


def _nfc(name: str) -> str:
    return unicodedata.normalize("NFC", name)


def _loosely(name: str) -> str:
    """A column name as a reader takes it in: case, spaces around it and
    Unicode normalisation left out."""
    return _nfc(name.strip().casefold())

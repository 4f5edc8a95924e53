"""The bad-input corpus: Parquet data sets of every kind of bad input that a
nightly gpfit job meets, and what gpfit must make of each.

    python tests/reliability/reliability_corpus.py FOLDER   # writes it, prints what to expect

Three runs that must succeed (exit 0), each with every series' expected
outcome:

  long        long layout over several files: NaN and +-inf values, no finite
              value, 1 and 2 points, all values equal, duplicate and unsorted
              timestamps, values near 1e12 and 1e-12, integer values, 5,000
              points, null ids, one series split over three files, ids given
              as bytes that are not UTF-8
  timestamps  t as timestamp[ns, UTC] and date32: series in 1970 (starting in
              1969) and in 2100
  nested      nested layout with duplicate ids (in one file and across files):
              the rows of one id are joined into one series

and the unusable inputs, each of which must exit 2 with one line naming the
file or column and saying what to do: a string value column, a missing
column, an empty (0-byte) file, a Parquet file with no rows, a file that is
not Parquet, a glob that matches nothing, a file with two columns named y.

Several series hold the same underlying data in another form (unsorted,
split over files, scaled by 1e12 or 1e-12, shifted to 1970 or 2100): their
fitted length scale and noise-to-signal ratio must equal the reference's.
"""
from __future__ import annotations

import dataclasses
import datetime
import json
import os
import sys
from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

OK, SKIPPED = "ok", "skipped"
N_REFERENCE = 40


@dataclasses.dataclass(frozen=True)
class Expected:
    """What one series must end as.

    Attributes:
      status: "ok" or "skipped".
      n_points: the finite points the row must report.
      reason: words the row's error must contain (None when ok): what was
        wrong and what to do about it.
      same_fit_as: the series whose fitted length scale and noise-to-signal
        ratio this one must share (same data in another form), or None.
      y_scale: this series' values are same_fit_as's times this factor.
    """

    status: str
    n_points: int
    reason: tuple[str, ...] = ()
    same_fit_as: Optional[str] = None
    y_scale: float = 1.0


@dataclasses.dataclass(frozen=True)
class GoodRun:
    """A corpus run that must exit 0: its input and every series' outcome."""

    name: str
    input: str
    expected: dict[str, Expected]
    null_ids: int
    layout: str
    time_units: str


@dataclasses.dataclass(frozen=True)
class UnusableInput:
    """An input that must be refused with exit code 2, before any fitting.

    Attributes:
      input: the --input given.
      names: what the one stderr line must name (a file or a column).
      advice: words of the line that say what to do.
    """

    name: str
    input: str
    names: str
    advice: str


@dataclasses.dataclass(frozen=True)
class Corpus:
    folder: str
    runs: dict[str, GoodRun]
    unusable: dict[str, UnusableInput]

    def summary(self) -> dict:
        return {"folder": self.folder,
                "runs": {name: dataclasses.asdict(run) for name, run in self.runs.items()},
                "unusable": {name: dataclasses.asdict(case)
                             for name, case in self.unusable.items()}}


def reference(seed: int = 11) -> tuple[np.ndarray, np.ndarray]:
    """(t [40] sorted whole days in 0..89, y [40]): a smooth series with noise,
    the data that several corpus series repeat in another form."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.choice(90, size=N_REFERENCE, replace=False)).astype(np.float64)
    y = 2.0 + np.sin(2 * np.pi * t / 25.0) + 0.1 * rng.standard_normal(t.size)
    return t, y


def write_corpus(folder: str) -> Corpus:
    """Writes every corpus data set under `folder`; returns what to expect."""
    os.makedirs(folder, exist_ok=True)
    runs = {run.name: run for run in (_long(folder), _timestamps(folder), _nested(folder))}
    return Corpus(folder, runs, _unusable(folder))


# ---- long layout ------------------------------------------------------------------

def _long(folder: str) -> GoodRun:
    """Long layout: three float files, one integer file, null ids."""
    base = os.path.join(folder, "long")
    os.makedirs(base, exist_ok=True)
    rng = np.random.default_rng(5)
    t_ref, y_ref = reference()
    n = t_ref.size
    rows: list[tuple[str, list[int], np.ndarray, np.ndarray]] = []  # id, files, t, y

    def add(series_id, t, y, files=(0,)):
        rows.append((series_id, list(files), np.asarray(t, float), np.asarray(y, float)))

    expected: dict[str, Expected] = {}
    add("reference", t_ref, y_ref)
    expected["reference"] = Expected(OK, n)

    # Missing values: NaN and +-inf in y, one NaN time; a null y comes from
    # the integer file below.
    y = y_ref.copy()
    y[[3, 9]] = np.nan
    y[14] = np.inf
    y[20] = -np.inf
    t = t_ref.copy()
    t[30] = np.nan
    add("nan_and_inf", t, y, files=(0, 1))
    expected["nan_and_inf"] = Expected(OK, n - 5)

    add("no_finite_value", np.arange(12.0), np.tile([np.nan, np.inf, -np.inf], 4))
    expected["no_finite_value"] = Expected(SKIPPED, 0, ("too few finite points: 0 ", "at least 3"))

    add("one_point", [5.0], [1.5])
    expected["one_point"] = Expected(SKIPPED, 1, ("too few finite points: 1 ", "at least 3"))
    add("two_points", [5.0, 6.0], [1.5, 2.5], files=(1, 2))
    expected["two_points"] = Expected(SKIPPED, 2, ("too few finite points: 2 ", "at least 3"))

    add("all_values_equal", t_ref[:30], np.full(30, 4.25), files=(0, 2))
    expected["all_values_equal"] = Expected(SKIPPED, 30, ("all 30 values are equal",))

    # Each time twice, with different values: repeated measurements.
    t = np.repeat(t_ref[:20], 2)
    y = np.repeat(y_ref[:20], 2) + 0.05 * rng.standard_normal(40)
    add("duplicate_times", t, y, files=(1,))
    expected["duplicate_times"] = Expected(OK, 40)

    order = rng.permutation(n)
    add("unsorted_times", t_ref[order], y_ref[order], files=(1,))
    expected["unsorted_times"] = Expected(OK, n, same_fit_as="reference")

    add("split_across_files", t_ref, y_ref, files=(0, 1, 2))
    expected["split_across_files"] = Expected(OK, n, same_fit_as="reference")

    add("values_near_1e12", t_ref, 1e12 * y_ref, files=(2,))
    expected["values_near_1e12"] = Expected(OK, n, same_fit_as="reference", y_scale=1e12)
    add("values_near_1e-12", t_ref, 1e-12 * y_ref, files=(2,))
    expected["values_near_1e-12"] = Expected(OK, n, same_fit_as="reference", y_scale=1e-12)

    t = np.arange(5000.0)
    add("five_thousand_points", t, np.sin(t / 50.0) + 0.1 * rng.standard_normal(t.size),
        files=(0, 1, 2))
    expected["five_thousand_points"] = Expected(
        SKIPPED, 5000, ("5000 finite points", "max_points=4096", "raise max_points"))

    # Spread each series' rows over its files, shuffled within each file.
    per_file: list[list[tuple[str, float, float]]] = [[], [], []]
    for series_id, files, t, y in rows:
        for i, (ti, yi) in enumerate(zip(t, y)):
            per_file[files[i % len(files)]].append((series_id, ti, yi))
    null_ids = 0
    for k, records in enumerate(per_file):
        if k == 1:  # rows with a null id, with plausible values
            records += [(None, 1.0, 2.0), (None, 2.0, 3.0), (None, np.nan, 1.0)]
            null_ids += 3
        records = [records[i] for i in rng.permutation(len(records))]
        table = pa.table({"series_id": pa.array([r[0] for r in records], pa.string()),
                          "t": pa.array([r[1] for r in records], pa.float64()),
                          "y": pa.array([r[2] for r in records], pa.float64())})
        pq.write_table(table, os.path.join(base, f"part-{k}.parquet"), row_group_size=500)

    # Integer values (and integer times) in a file of their own; one null y
    # (missing) and one null id.
    y_int = np.round(100 * y_ref).astype(np.int64)
    table = pa.table({
        "series_id": pa.array(["integer_values"] * n + [None], pa.string()),
        "t": pa.array(t_ref.astype(np.int64).tolist() + [3], pa.int64()),
        "y": pa.array(y_int.tolist()[:-1] + [None, 7], pa.int64()),
    })
    pq.write_table(table, os.path.join(base, "integers.parquet"))
    expected["integer_values"] = Expected(OK, n - 1)
    null_ids += 1
    # Ids as bytes, not all UTF-8: kept, with \xNN escapes for the rest.
    pq.write_table(pa.table({
        "series_id": pa.array([b"bytes-\xff"] * n, pa.binary()),
        "t": pa.array(t_ref, pa.float64()), "y": pa.array(y_ref, pa.float64())}),
        os.path.join(base, "bytes_ids.parquet"))
    expected["bytes-\\xff"] = Expected(OK, n, same_fit_as="reference")
    # Not data: a marker file that folders may hold.
    open(os.path.join(base, "_SUCCESS"), "w").close()
    return GoodRun("long", base, expected, null_ids, "long", "as given")


# ---- timestamps ---------------------------------------------------------------------

def _timestamps(folder: str) -> GoodRun:
    """t as timestamp[ns, UTC] (1969/70, 2020, 2100) and as date32 (1969/70)."""
    base = os.path.join(folder, "timestamps")
    os.makedirs(base, exist_ok=True)
    t_ref, y_ref = reference()
    n = t_ref.size
    starts = {"year_1970": datetime.datetime(1969, 12, 15, tzinfo=datetime.timezone.utc),
              "year_2020": datetime.datetime(2020, 2, 1, 6, tzinfo=datetime.timezone.utc),
              "year_2100": datetime.datetime(2100, 1, 1, tzinfo=datetime.timezone.utc)}
    ids, times, values = [], [], []
    for series_id, start in starts.items():
        ns0 = int(start.timestamp()) * 1_000_000_000
        ids += [series_id] * n
        times += [ns0 + int(day) * 86_400 * 1_000_000_000 for day in t_ref]
        values += y_ref.tolist()
    pq.write_table(pa.table({
        "series_id": pa.array(ids, pa.string()),
        "t": pa.array(times, pa.int64()).cast(pa.timestamp("ns", tz="UTC")),
        "y": pa.array(values, pa.float64())}), os.path.join(base, "timestamps.parquet"))
    day0 = (datetime.date(1969, 11, 20) - datetime.date(1970, 1, 1)).days  # negative
    pq.write_table(pa.table({
        "series_id": pa.array(["date_1970"] * n, pa.string()),
        "t": pa.array((day0 + t_ref).astype(np.int32), pa.int32()).cast(pa.date32()),
        "y": pa.array(y_ref, pa.float64())}), os.path.join(base, "dates.parquet"))
    expected = {sid: Expected(OK, n, same_fit_as="reference")
                for sid in list(starts) + ["date_1970"]}
    return GoodRun("timestamps", base, expected, 0, "long", "days")


# ---- nested layout with duplicate ids --------------------------------------------------

def _nested(folder: str) -> GoodRun:
    """Nested layout: one id in three rows over two files (joined into one
    series), the same data in one row under another id, a row whose lists
    differ in length (its whole id is skipped), a null id."""
    base = os.path.join(folder, "nested")
    os.makedirs(base, exist_ok=True)
    t_ref, y_ref = reference()
    n = t_ref.size
    first = [("duplicated", t_ref[25:], y_ref[25:]), ("whole", t_ref, y_ref),
             ("duplicated", t_ref[:10], y_ref[:10]), (None, t_ref[:5], y_ref[:5]),
             ("ragged", t_ref[:5], y_ref[:4]), ("duplicated", [], [])]
    second = [("duplicated", t_ref[10:25], y_ref[10:25]), ("ragged", t_ref[5:], y_ref[5:])]
    for name, rows in (("a.parquet", first), ("b.parquet", second)):
        pq.write_table(pa.table({
            "series_id": pa.array([r[0] for r in rows], pa.string()),
            "t": pa.array([list(map(float, r[1])) for r in rows], pa.list_(pa.float64())),
            "y": pa.array([list(map(float, r[2])) for r in rows], pa.list_(pa.float64())),
        }), os.path.join(base, name), row_group_size=2)
    expected = {
        "duplicated": Expected(OK, n, same_fit_as="whole"),
        "whole": Expected(OK, n, same_fit_as="reference"),
        "ragged": Expected(SKIPPED, 0, ("5 times but 4 values", "equal length")),
    }
    return GoodRun("nested", base, expected, 1, "nested", "as given")


# ---- unusable inputs ----------------------------------------------------------------

def _good_table(n: int = 8) -> pa.Table:
    return pa.table({"series_id": ["a"] * n, "t": np.arange(n, dtype=float),
                     "y": np.sin(np.arange(n, dtype=float))})


def _unusable(folder: str) -> dict[str, UnusableInput]:
    """Each case in its own folder, beside a good file where that matters."""
    base = os.path.join(folder, "unusable")
    cases = []

    def case_folder(name: str, good: bool = True) -> str:
        path = os.path.join(base, name)
        os.makedirs(path, exist_ok=True)
        if good:
            pq.write_table(_good_table(), os.path.join(path, "good.parquet"))
        return path

    path = case_folder("string_value_column")
    pq.write_table(pa.table({"series_id": ["b"] * 3, "t": [1.0, 2.0, 3.0],
                             "y": ["1.5", "2.0", "n/a"]}), os.path.join(path, "strings.parquet"))
    cases.append(UnusableInput("string_value_column", path,
                               "value column 'y' in " + os.path.join(path, "strings.parquet"),
                               "parse the text into numbers first (e.g. pandas.to_numeric) (or "
                               "name another with --value_column"))

    path = case_folder("missing_column")
    pq.write_table(_good_table().rename_columns(["series_id", "time", "y"]),
                   os.path.join(path, "renamed.parquet"))
    cases.append(UnusableInput("missing_column", path,
                               os.path.join(path, "renamed.parquet") + " has no column 't'",
                               "name the right one with --time_column"))

    path = case_folder("empty_file")
    open(os.path.join(path, "zero.parquet"), "wb").close()
    cases.append(UnusableInput("empty_file", path, os.path.join(path, "zero.parquet"),
                               "remove it or rewrite it"))

    path = case_folder("no_rows", good=False)
    pq.write_table(_good_table().slice(0, 0), os.path.join(path, "none.parquet"))
    cases.append(UnusableInput("no_rows", path, repr(path), "check the --input path"))

    path = case_folder("not_parquet")
    with open(os.path.join(path, "export.parquet"), "w") as f:
        f.write("series_id,t,y\na,1,2\na,2,3\n")
    cases.append(UnusableInput("not_parquet", path, os.path.join(path, "export.parquet"),
                               "remove it from the input or convert it to Parquet"))

    path = case_folder("duplicate_column")
    table = _good_table()
    pq.write_table(table.append_column("y", table.column("y")), os.path.join(path, "twice.parquet"))
    cases.append(UnusableInput("duplicate_column", path,
                               os.path.join(path, "twice.parquet") + " has 2 columns named 'y'",
                               "give its columns unique names"))

    pattern = os.path.join(case_folder("glob_matches_nothing"), "*.parq")
    cases.append(UnusableInput("glob_matches_nothing", pattern, repr(pattern),
                               "check the --input pattern"))
    return {c.name: c for c in cases}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: reliability_corpus.py FOLDER", file=sys.stderr)
        return 2
    print(json.dumps(write_corpus(argv[0]).summary(), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

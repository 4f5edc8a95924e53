"""What a nightly run changed: parameters against the previous run, and
the forecasts of the plotted series.

The previous run is the one the run's manifest names (`previous_output`).
Only series fitted again are compared (reused ones did not move); their
ids are collected from this run's shards, at most MAX_COMPARED of them (the
first in shard order), and the previous shards are read with a filter on
those ids, so memory stays bounded by that cap.
"""
from __future__ import annotations

import dataclasses
from typing import Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from gpcore.result import OK
from pipeline.io import shards
from pipeline.io.errors import InputError, first_line
from pipeline.io.files import map_files, open_for_scan
from pipeline.io.outputs import PREDICTIONS_PREFIX
from pipeline.io.schema import FORECAST, HOLDOUT, MICROSECONDS_PER_DAY, named
from pipeline.report import params as params_io
from pipeline.report.plots import Curve
from pipeline.report.summary import Histogram

# One histogram per parameter: each component's amplitude, length_scale and
# period (from `components`: the flat columns are null for a sum), and
# noise_variance.
MOVED = ("amplitude", "length_scale", "period", "noise_variance")
MAX_COMPARED = 200_000
BINS = 40
_COLUMNS = named("series_id", "status", "kernel", "reused", "components", "noise_variance")


def log10_ratio(after, before):
    """log10(after / before), elementwise, as a difference of logs: the
    ratio of parameters 1e-300 and 1e296 (fits of y near 1e-150 and 1e149)
    overflowed, and such a move was left out of the histogram and the
    table without a word. From or to 0 (or a value not finite): not finite."""
    return np.log10(after) - np.log10(before)


@dataclasses.dataclass
class Moved:
    """One series' largest move: parameter ("amplitude", or for a sum
    "amplitude (rbf)"), previous and new value."""

    series_id: str
    kernel: str
    parameter: str
    before: float
    after: float

    @property
    def log10_ratio(self) -> float:
        return float(log10_ratio(self.after, self.before))


@dataclasses.dataclass
class Moves:
    """Fitted parameters against the previous run.

    Attributes:
      previous: the previous output folder.
      compared: series ok in both runs, same kernel, fitted again tonight.
      capped: more series were fitted again than MAX_COMPARED.
      histograms: per parameter, log10(tonight / previous).
      top: the series that moved most (largest |log10 ratio|), largest first.
      problem: why nothing could be compared (the folder is gone...), or None.
    """

    previous: str
    compared: int = 0
    capped: bool = False
    histograms: Sequence[Histogram] = ()
    top: Sequence[Moved] = ()
    problem: Optional[str] = None


def compare(run: params_io.ParamsRun, previous: str, top: int = 10) -> Moves:
    """This run's refitted series against the previous run's rows."""
    tonight: dict[str, tuple[str, dict]] = {}
    capped = False
    for batch in params_io.iter_batches(run, columns=_COLUMNS):
        keep = pc.and_(pc.fill_null(pc.equal(batch.column("status"), OK), False),
                       pc.invert(pc.fill_null(batch.column("reused"), False)))
        for row in batch.filter(keep).to_pylist():
            if len(tonight) >= MAX_COMPARED:
                capped = True
                break
            tonight[row["series_id"]] = (row["kernel"], _values(row))
        if capped:  # the rest of the shards are not read
            break
    try:
        before = _previous_rows(previous, list(tonight))
    except (InputError, OSError, pa.ArrowException) as err:
        return Moves(previous, problem=f"cannot read the previous run: {first_line(err)}")
    ratios = {name: [] for name in MOVED}
    # Moves from or to 0 (or a value not finite): log10 of their ratio is
    # not a number; counted in their histogram's title, not binned.
    undefined = {name: 0 for name in MOVED}
    moved = []
    for sid, (kernel, old) in before.items():
        new_kernel, new = tonight[sid]
        if kernel != new_kernel:
            continue
        labels = [label for label in old if label in new]
        now = np.array([new[label] for label in labels])
        was = np.array([old[label] for label in labels])
        with np.errstate(divide="ignore", invalid="ignore"):
            logs = log10_ratio(now, was)
        finite = np.isfinite(logs)
        for label, value, ok, set_ in zip(labels, logs, finite,
                                          ~np.isnan(now) & ~np.isnan(was)):
            if ok:
                ratios[label.split(" ")[0]].append(value)
            elif set_:  # NaN: a null noise_variance, which has no move
                undefined[label.split(" ")[0]] += 1
        if finite.any():
            i = int(np.nanargmax(np.where(finite, np.abs(logs), np.nan)))
            moved.append(Moved(sid, kernel, labels[i], old[labels[i]], new[labels[i]]))
    # Equal moves by id: the previous run's row order is its workers'.
    moved.sort(key=lambda m: (-abs(m.log10_ratio), m.series_id))
    compared = sum(1 for sid, (kernel, _) in before.items() if kernel == tonight[sid][0])
    return Moves(previous, compared, capped,
                 [_histogram(name, np.asarray(v), undefined[name])
                  for name, v in ratios.items() if v],
                 moved[:top])


def listed_predictions(folder: str, listed) -> tuple[list[str], tuple[str, ...],
                                                     tuple[str, ...]]:
    """(the predictions shards of the folder its manifest lists, the names
    of those found that it does not, the names it lists that are missing),
    as the params' (shards.against_listed); listed: the manifest's
    prediction_files (every shard found where it lists none: an older
    manifest, or none). A stray copy of a shard had its series' rows drawn
    twice, another night's forecast interleaved with the run's."""
    return shards.against_listed(shards.list_shards(folder, PREDICTIONS_PREFIX), listed)


def read_predictions(folder: str, ids: Sequence[str], dates: bool, kind: str = FORECAST,
                     names: Optional[Sequence[str]] = None) -> dict[str, Curve]:
    """The rows of one kind (FORECAST, HOLDOUT) of these series in the run's
    predictions shards (`names`, listed_predictions'; default every one in
    the folder), as Curves in the units the plots use (days for
    dates), with a band per interval level the run wrote (lower_L,
    upper_L; widest first; none in older runs' shards: the plot then draws
    +-2 sd) and, for held-out rows, their values. Empty when the run wrote
    no predictions."""
    names = shards.list_shards(folder, PREDICTIONS_PREFIX) if names is None else list(names)
    if not names or not ids:
        return {}
    wanted = [("series_id", "in", list(ids)), ("kind", "=", kind)]

    def read(path: str) -> pa.Table:
        # A shard that is not Parquet (cut short by a copy, emptied) is
        # refused as a params shard is (shards.checked_rows), not a traceback.
        try:
            with open_for_scan(path) as f:
                return pq.read_table(f, filters=wanted)
        except PermissionError as err:
            raise InputError(f"{path} cannot be read: {err.strerror}; make it readable by "
                             "this user") from err
        except (pa.ArrowException, ValueError) as err:
            raise InputError(f"{path} is not a Parquet file of gpfit's predictions "
                             f"({first_line(err)}); copy the run's {PREDICTIONS_PREFIX}/ "
                             "folder again, or run gpfit again") from err

    table = pa.concat_tables(map_files(read, names))
    levels = sorted({name.split("_", 1)[1] for name in table.column_names
                     if name.startswith("lower_") and f"upper_{name[6:]}" in table.column_names},
                    key=float, reverse=True)
    found = {}
    for sid in dict.fromkeys(table.column("series_id").to_pylist()):
        part = table.filter(pc.equal(table.column("series_id"), sid))
        t = part.column("t")
        if pa.types.is_timestamp(t.type):
            t = pc.cast(pc.cast(t, pa.timestamp("us", tz="UTC")), pa.int64())
            t = t.to_numpy() / MICROSECONDS_PER_DAY if dates else t.to_numpy()
        else:
            t = t.to_numpy()
        order = np.argsort(t, kind="stable")
        column = lambda name: pc.fill_null(part.column(name), np.nan).to_numpy(  # noqa: E731
            zero_copy_only=False)[order]
        bands = tuple((f"{level} % interval", column(f"lower_{level}"), column(f"upper_{level}"))
                      for level in levels)
        found[sid] = Curve(t[order], column("mean"), column("stddev"), column("stddev_observed"),
                           bands, column("y") if kind == HOLDOUT else None)
    return found


def _values(row: dict) -> dict[str, float]:
    """{label: value} of a row's fitted parameters: each component's
    amplitude, length_scale and period that is set, labelled with its
    kernel in a sum ("amplitude (rbf)", "amplitude (rbf #2)" in rbf+rbf),
    and noise_variance (NaN where null)."""
    parts = row.get("components") or []
    kernels = [part["kernel"] for part in parts]
    found = {}
    for i, part in enumerate(parts):
        number = f" #{i + 1}" if kernels.count(kernels[i]) > 1 else ""
        for name in MOVED[:-1]:
            if part.get(name) is not None:
                found[name if len(parts) == 1 else f"{name} ({kernels[i]}{number})"] = \
                    float(part[name])
    noise = row.get("noise_variance")
    found["noise_variance"] = np.nan if noise is None else float(noise)
    return found


def _previous_rows(folder: str, ids: list[str]) -> dict[str, tuple[str, dict]]:
    """{id: (kernel, values)} of the previous run's ok rows among ids."""
    paths = shards.list_shards(folder)
    if not paths:
        raise InputError(f"no params shards in {folder}")
    found, wanted = {}, pa.array(ids, pa.string())
    for path in paths:
        for batch in shards.iter_batches(path, _COLUMNS):
            mine = pc.and_(pc.is_in(batch.column("series_id"), value_set=wanted),
                           pc.fill_null(pc.equal(batch.column("status"), OK), False))
            for row in batch.filter(mine).to_pylist():
                found[row["series_id"]] = (row["kernel"], _values(row))
    return found


def _histogram(name: str, values: np.ndarray, undefined: int = 0) -> Histogram:
    """log10 ratios on bins symmetric about 0 (no move); `undefined` moves
    had no finite ratio (from or to 0)."""
    reach = max(float(np.max(np.abs(values))), 0.1)  # at least ±26 %: readable ticks
    edges = np.linspace(-reach, reach, BINS + 1)
    return Histogram(f"{name}: log10(tonight / previous)", edges,
                     np.histogram(values, bins=edges)[0], False, undefined)

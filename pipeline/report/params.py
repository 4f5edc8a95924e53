"""A gpfit run's parameter shards: found, checked, and streamed in batches.

The shards can hold millions of rows; nothing here holds more than one
batch of them at a time.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Callable, Iterator, Optional, Sequence

import pyarrow as pa

from pipeline.io import manifest, shards
from pipeline.io.errors import InputError
from pipeline.io.files import map_files
from pipeline.io.outputs import PARAMS_PREFIX, PARAMS_SUFFIX, is_local
from pipeline.io.shards import COLUMNS
BATCH_ROWS = 65_536


@dataclasses.dataclass(frozen=True)
class ParamsRun:
    """The output folder of one gpfit run.

    Attributes:
      folder: as given.
      files: the parameter shards, sorted (either layout: pipeline/io/outputs.py).
      rows: total rows (one per series) over all shards.
      manifest_name: "_SUCCESS.json", "_FAILED.json" or None if neither is
        there (the run did not finish, or is still running).
      manifest: its parsed content, or None.
      unlisted: shards found that the manifest's output_files does not
        list (a stray copy), left out of `files`; missing: listed shards
        not found (a copy cut short). Both names, sorted; empty where the
        manifest lists none.
    """

    folder: str
    files: tuple[str, ...]
    rows: int
    manifest_name: Optional[str]
    manifest: Optional[dict]
    unlisted: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()


# (name, content) of a run's manifest: read_manifest's answer.
Manifest = tuple[Optional[str], Optional[dict]]


def locate(folder: str, manifest_of: Optional[Callable[[], Manifest]] = None) -> ParamsRun:
    """Finds and checks the shards of a run's output folder; its manifest
    from manifest_of (the command reads it once), else read here.

    Raises:
      InputError: no folder given, no shards in it, a shard that is not
        Parquet or lacks one of the output columns.
    """
    if not folder:
        raise InputError("no params folder given; pass --params, the --output folder of gpfit")
    files = shards.list_shards(folder)
    if not files:
        raise no_shards(folder)
    name, content = manifest_of() if manifest_of else read_manifest(folder)
    files, unlisted, missing = shards.against_listed(files, (content or {}).get("output_files"))
    rows = map_files(shards.checked_rows, files)
    return ParamsRun(folder, tuple(files), sum(rows), name, content, unlisted, missing)


def no_shards(folder: str) -> InputError:
    """The refusal of a folder that holds no params shards."""
    stopped = stopped_run(folder)
    return InputError(f"no {PARAMS_PREFIX}/part-*{PARAMS_SUFFIX} files (nor "
                      f"{PARAMS_PREFIX}-*{PARAMS_SUFFIX} beside the manifest, as gpfit "
                      f"0.4.0 and earlier wrote them) in {folder!r}; "
                      + (f"it holds {stopped}: {RUN_AGAIN}" if stopped else
                         "pass the folder that gpfit --output wrote"))


def iter_batches(run: ParamsRun, columns: Sequence[str] = COLUMNS,
                 batch_rows: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """Yields the shards' rows in file order, batch_rows at a time, with
    only the given columns (series_id always as string)."""
    for path in run.files:
        yield from shards.iter_batches(path, columns, batch_rows)


# What to do about a run that holds its folder's lock and is not live here.
RUN_AGAIN = ("resume it (fg) or wait for its job if it still runs, else run gpfit again "
             "into that folder")


def stopped_run(folder: str) -> str:
    """'the lock ... of a gpfit run that has not finished (who)' where folder
    holds the lock of a run no longer live here (killed, its machine gone,
    or suspended: Ctrl-Z; a Dataflow job may outlive its killed launcher),
    else "": such a folder has no manifest and only the shards, if any,
    the run wrote so far."""
    from pipeline.io import lock
    held = lock.holder(folder)
    if held is None or held.live:
        return ""
    return (f"the lock {lock.LOCK_NAME} of a gpfit run that has not finished "
            f"({held.said})")


def read_manifest(folder: str) -> Manifest:
    """(name, content) of the run's manifest (see ParamsRun), its paths
    located; content None where there is none, or it is unreadable (the
    page then shows it as present but unreadable)."""
    name = manifest.find(folder)
    if name is None:
        return None, None
    try:
        return name, located(folder, manifest.load(folder, name))
    except (OSError, ValueError):
        return name, None


def located(folder: str, found: dict) -> dict:
    """The manifest `found` of the run whose --output is `folder`, with a
    local input pattern and previous_output made absolute. gpfit 0.16.0
    and earlier recorded them as given, relative to the folder the run was
    started in: that is `folder` less the --output its options record as
    given, where that was relative too (else they stay as they are, and
    only resolve from that same folder)."""
    started_in = _started_in(folder, (found.get("options") or {}).get("output"))
    if started_in is None:
        return found
    found = dict(found)
    pattern = (found.get("input") or {}).get("pattern")
    if _relative(pattern):
        found["input"] = {**found["input"], "pattern": os.path.join(started_in, pattern)}
    if _relative(found.get("previous_output")):
        found["previous_output"] = os.path.join(started_in, found["previous_output"])
    return found


def _relative(path) -> bool:
    return isinstance(path, str) and bool(path) and is_local(path) and not os.path.isabs(path)


def _started_in(folder: str, output) -> Optional[str]:
    """The folder a run was started in: `folder` less its relative
    --output `output` (as given); None where that cannot be told."""
    if not _relative(output) or not is_local(folder):
        return None
    here, given = os.path.abspath(folder), os.path.normpath(output)
    if given.startswith("..") or not here.endswith(os.sep + given):
        return None
    return here[:-len(given) - 1] or os.sep

"""The previous run's output folder (--previous_output): checked at launch,
and what its rows give the next run.

A previous output is usable when it holds _SUCCESS.json (a run that
finished and succeeded), no other run is writing it (its lock), and the
parameter shards its manifest lists, whose footers read and which have the
columns a warm start needs. Anything else is refused at launch
(exit code 2) unless --previous_output_optional is given; then the run fits
everything cold and says why (docs/design.md, "Reuse").
"""
from __future__ import annotations

import dataclasses
import posixpath
from typing import Optional

from apache_beam.io.filesystems import FileSystems

from gpcore.result import OK
from pipeline.io import lock, manifest, rows, shards
from pipeline.io.fingerprint import VERSION
from pipeline.io.errors import NO_ANSWER, UsageError, first_line, listing_failure
from pipeline.io.files import map_files
from pipeline.io.matching import gcs_unreached, is_glob
from pipeline.io.outputs import FAILED_MARKER, LOCK_NAME, SUCCESS_MARKER, lies_inside, same_folder
from pipeline.io.schema import PARAMETERS

# Columns a previous shard must have: the id, the status and the parameters
# a warm start is made of (an older release's shards lack `components`,
# `fingerprint` and the newer ones: their series are then warm-started from
# the flat parameters, never reused).
REQUIRED = ("series_id", "status", *(name for name in PARAMETERS if name != "components"))


class Unusable(UsageError):
    """A --previous_output that cannot be used; `reason` says why, without
    the advice that the message adds."""

    def __init__(self, reason: str, advice: str):
        super().__init__(f"{reason}; {advice}")
        self.reason = reason


_ADVICE = "or add --previous_output_optional to fit every series cold"


@dataclasses.dataclass(frozen=True)
class PreviousRun:
    """A usable previous output.

    Attributes:
      folder: as given.
      kernel: the kernel it fitted (its manifest's).
      shards: its parameter shards' paths, sorted (either layout: outputs.py).
      rows: rows over all shards (one per series it wrote).
      version: the gpfit release that wrote it (its manifest's
        gpfit_version), or None: one before 0.16.1 recorded none.
      options: gpfit's options it ran with (its manifest's, as
        pipeline.options.recorded wrote them), or None where it has none.
    """

    folder: str
    kernel: str
    shards: tuple[str, ...]
    rows: int
    version: Optional[str] = None
    options: Optional[dict] = None


def check(folder: str, output: str) -> PreviousRun:
    """Checks a --previous_output folder: its manifest and shard footers.

    Raises:
      UsageError: it is the output folder.
      Unusable: it has no _SUCCESS.json (missing, unfinished, failed) or one
        that does not read, or Google Cloud does not answer for it (or its
        host cannot be reached: matching.gcs_unreached); another
        run holds its lock; it has no shards, or one that is not Parquet or
        lacks a needed column; its shards are not those its manifest lists.
    """
    check_not_output(folder, output)
    check_gcs_reached(folder)
    try:
        held = lock.holder(folder)
    except Exception as err:  # pylint: disable=broad-except
        raise _unanswered(folder, err) from err
    try:
        found = manifest.load(folder, SUCCESS_MARKER)
    except (OSError, ValueError, UnicodeDecodeError) as err:
        raise _without_manifest(folder, held, err) from err
    except Exception as err:  # pylint: disable=broad-except
        raise _unanswered(folder, err) from err
    if held is not None and held.live and lock.started_after(held, found):
        # A run into that folder clears it first: its shards may go while read.
        raise Unusable(f"--previous_output {folder} is being replaced by a gpfit run that "
                       f"started after it was written ({held.said}; its lock {LOCK_NAME})",
                       f"wait for that run to finish, or give another folder, {_ADVICE}")
    try:
        paths = shards.list_shards(folder)
        if not paths:
            raise UsageError(f"{folder} holds no parameter shards (params/part-*.parquet, or "
                             "params-*.parquet as gpfit 0.4.0 and earlier wrote them)")
        rows = map_files(lambda p: shards.checked_rows(p, REQUIRED), paths)
    except UsageError as err:
        raise Unusable(f"--previous_output: {err}", f"give a gpfit output folder, {_ADVICE}"
                       ) from err
    _check_listed(folder, paths, found.get("output_files"))
    version, options = found.get("gpfit_version"), found.get("options")
    return PreviousRun(folder, str(found.get("kernel")), tuple(paths), sum(rows),
                       None if version is None else str(version),
                       options if isinstance(options, dict) else None)


def version_note(run: PreviousRun) -> Optional[str]:
    """Why no series of `run` is reused, where another release wrote it;
    None where this one did. A fingerprint hashes the version first
    (fingerprint.options_key), so the night after an upgrade refits every
    series, which its counts alone ("0 reused") left unexplained."""
    if run.version == VERSION:
        return None
    by = (f"gpfit {run.version}" if run.version is not None
          else "a gpfit release older than 0.16.1")
    return (f"--previous_output {run.folder} was written by {by}, and this is gpfit "
            f"{VERSION}: a series' fingerprint holds the gpfit version, so tonight every "
            "series is fitted again once (warm-started from its previous parameters where "
            "they are ok and of this kernel); the next night reuses them")


def options_note(run: PreviousRun, changed: list[tuple[str, object, object]]) -> Optional[str]:
    """Why no series of `run` is reused, where fit options changed since:
    `changed` lists them as (option, then, now), None meaning its default;
    None where it is empty. A fingerprint hashes the fit options
    (fingerprint.options_key): as after an upgrade (version_note), the
    counts alone said only "0 reused"."""
    if not changed:
        return None
    said = ", ".join(f"--{name} {_shown(then)} -> {_shown(now)}" for name, then, now in changed)
    return (f"--previous_output {run.folder} was fitted with other fit options ({said}): a "
            "series' fingerprint holds the fit options, so tonight every series is fitted "
            "again once (warm-started from its previous parameters where they are ok and of "
            "this kernel); the next night with these options reuses them")


def _shown(value) -> str:
    return "default" if value is None else str(value)


def check_gcs_reached(folder: str) -> None:
    """Raises Unusable where the folder is on gs:// and Cloud Storage's
    host cannot be reached (matching.gcs_unreached): reading its lock and
    manifest waited for the storage client's 120 s of retries."""
    unreached = gcs_unreached(folder)
    if unreached:
        raise Unusable(f"--previous_output {folder} cannot be read: {unreached}", _ADVICE)


def _unanswered(folder: str, err: Exception) -> "Unusable":
    """Unusable for a folder Google Cloud did not answer for; err itself
    otherwise. Google's storage client gives up on a gs:// folder it cannot
    reach (offline, a proxy in the way) after 120 s with a RetryError, which
    is no OSError: the run had ended as a crash, exit 3, "report it"."""
    if listing_failure(err) != NO_ANSWER:
        raise err
    return Unusable(f"--previous_output {folder} cannot be read: {NO_ANSWER}", _ADVICE)


def _check_listed(folder: str, paths: list[str], listed) -> None:
    """Raises Unusable unless the shards found are those the manifest lists
    (`listed`, names relative to folder; unchecked where absent): a copy
    cut short lacks some, and their series were fitted without a word; a
    stray copy of a shard gave its series twice, one taken at random."""
    _, extra, missing = shards.against_listed(paths, listed)
    if missing:
        raise Unusable(f"--previous_output {folder} lacks {len(missing)} shard(s) its "
                       f"{SUCCESS_MARKER} lists ({', '.join(missing[:3])}): a copy cut short?",
                       f"copy the whole folder again, {_ADVICE}")
    if extra:
        raise Unusable(f"--previous_output {folder} holds {len(extra)} shard(s) its "
                       f"{SUCCESS_MARKER} does not list ({', '.join(extra[:3])}), which would "
                       "give their series twice", f"remove them, {_ADVICE}")


def check_not_output(folder: str, output: str) -> None:
    """Raises UsageError if the previous output is this run's output folder
    or lies inside it (where the output's check named only a file there
    "which gpfit did not write")."""
    if same_folder(folder, output):
        raise UsageError(f"--previous_output {folder} is the --output folder, which this run "
                         "replaces; write each night into its own folder")
    if lies_inside(folder, output):
        raise UsageError(f"--previous_output {folder} lies inside the --output folder "
                         f"{output}, which this run replaces; write each night into its own "
                         "folder, beside the others")


def warm_start(row: dict, kernel: str, previous_kernel: Optional[str]) -> Optional[dict]:
    """The previous row's parameters as Series.warm_start takes them
    (rows.parameters), or None when they mean nothing to this fit: not
    "ok", another kernel (neither the row's nor the previous run's is
    `kernel`), or parameters that give no model."""
    if row.get("status") != OK or kernel not in (row.get("kernel"), previous_kernel):
        return None
    try:
        return rows.parameters(row)
    except ValueError:  # a damaged row: the series is fitted cold
        return None


def _without_manifest(folder: str, held: Optional[lock.Holder], err: Exception) -> Unusable:
    """Why a folder without a readable _SUCCESS.json is unusable: a run
    writing it (its lock), a failed or stopped run, or none at all, and
    what was likely meant (the output folder a path lies in; not a glob)."""
    if held is not None and held.live:
        return Unusable(f"--previous_output {folder} is being written by a gpfit run "
                        f"({held.said}; its lock {LOCK_NAME}) and has no {SUCCESS_MARKER} yet",
                        f"wait for that run to finish, {_ADVICE}")
    if _exists(folder, FAILED_MARKER):
        said = f"holds {FAILED_MARKER}: that run failed"
    elif held is not None:
        said = (f"has no {SUCCESS_MARKER} and holds the lock {LOCK_NAME} of a gpfit run "
                f"that stopped before finishing ({held.said})")
    else:
        said = f"has no readable {SUCCESS_MARKER} ({first_line(err)})"
    advice = "give the folder of a run that succeeded"
    above = output_above(folder)
    if above is not None:
        said += f"; it lies in the gpfit output folder {above}"
        advice = "give that folder"
    elif is_glob(folder):
        said += "; it takes one folder, not a glob"
        advice = "give last night's folder"
    return Unusable(f"--previous_output {folder} {said}", f"{advice}, {_ADVICE}")


def output_above(path: str) -> Optional[str]:
    """The output folder a table folder or a file of it lies in (what was
    meant by `night1/params`, `night1/params/part-....parquet`), or None."""
    for _ in range(2):
        parent = posixpath.dirname(path.rstrip("/"))
        if not parent or parent.rstrip("/").endswith(":") or parent == path.rstrip("/"):
            return None
        if _exists(parent, SUCCESS_MARKER):
            return parent
        path = parent
    return None


def _exists(folder: str, name: str) -> bool:
    try:
        return FileSystems.exists(FileSystems.join(folder.rstrip("/"), name))
    except Exception:  # pylint: disable=broad-except  (unreachable: it is not there for us)
        return False

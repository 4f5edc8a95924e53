"""The output folder: its file names, and the rules for (re)writing it.

Layout of a finished run (docs/design.md, "Output folder"):
  <output>/params/part-SSSSS-of-NNNNN.parquet       one row per series (schema.py)
  <output>/predictions/part-SSSSS-of-NNNNN.parquet  with --predict_*: posterior rows
  <output>/_SUCCESS.json                            written last: counts, options, time
Each table has a folder of its own, so that every reader given a folder or
a glob (pandas, pyarrow.dataset, DuckDB, polars, BigQuery's load) gets one
table with one schema. A run that finishes with too many failed series, or
with unreadable input, writes _FAILED.json instead (same content); a run
that crashes writes neither (manifest.py). While a run writes the folder it
holds the lock _RUNNING.json (lock.py). Shard numbers have five digits or
more (Beam pads to the template's width and widens past 99,999).

gpfit 0.4.0 and earlier (0.1.0 on: the same columns) wrote
<output>/params-SSSSS-of-NNNNN.parquet (and predictions-) beside the
manifest: such a folder is still read (--previous_output, the report) and
replaced by a run into it.
"""
from __future__ import annotations

import errno
import os
import posixpath
import re
import stat

from apache_beam.io.filesystems import FileSystems

from pipeline.io.errors import UsageError, listing_failure
from pipeline.io.files import too_long
from pipeline.io.matching import GLOB_CHARACTERS, escaped, gcs_unreached, glob_regex, is_glob

PARAMS_PREFIX = "params"            # the parameters' folder
PREDICTIONS_PREFIX = "predictions"  # the predictions' folder
TABLES = (PARAMS_PREFIX, PREDICTIONS_PREFIX)
PARAMS_SUFFIX = ".parquet"
# The write prefix is <output>/<table> and the template starts with "/": the
# shards land in <output>/<table>/, while Beam's temporary folder, named
# after the prefix's last part, stays beside them as
# <output>/beam-temp-<table>-<hex>/ (never inside a table's folder, where a
# reader of the folder would take an interrupted run's files for data).
SHARD_TEMPLATE = "/part-SSSSS-of-NNNNN"
# zstd: float columns and repeated kernel and status strings compress well
# (docs/design.md, "Output shards"), and every reader named in the README
# reads it.
PARAMS_CODEC = "zstd"
# The manifest's two names: the run succeeded, or too many series failed.
SUCCESS_MARKER = "_SUCCESS.json"
FAILED_MARKER = "_FAILED.json"
MARKERS = (SUCCESS_MARKER, FAILED_MARKER)
# One run at a time writes a folder (lock.py).
LOCK_NAME = "_RUNNING.json"
# manifest.py and lock.py write under this suffix, then rename.
TEMPORARY_SUFFIX = ".tmp"

# Exactly the names gpfit writes, relative to the output folder: shards (this
# release's and 0.4.0's and earlier), manifests, the lock, their temporary names, and
# Beam's temporary folder (beam-temp-<table>-<uuid1 hex>/<uuid4>.<table>.parquet).
# Anything else is someone's and is never deleted.
_TABLE = "|".join(TABLES)
_SHARD = r"-\d{5,}-of-\d{5,}" + re.escape(PARAMS_SUFFIX)
_UUID4 = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_JSON = "|".join(re.escape(name) for name in (*MARKERS, LOCK_NAME))
_OURS = re.compile(
    rf"^(?:(?:{_TABLE})/part{_SHARD}"
    rf"|(?:{_TABLE}){_SHARD}"
    rf"|(?:{_JSON})(?:{re.escape(TEMPORARY_SUFFIX)})?"
    rf"|beam-temp-(?P<table>{_TABLE})-[0-9a-f]{{32}}/{_UUID4}\.(?P=table){re.escape(PARAMS_SUFFIX)}"
    rf")$")
# The file macOS Finder leaves in every folder it shows: neither someone's
# data nor gpfit's, so a folder holding it is neither refused nor is it
# deleted. Readers of a table's folder skip it, as every name starting with
# "." (docs/design.md, "Output folder").
BROWSER_FILES = frozenset({".DS_Store"})
# The longest name gpfit writes in the output folder, with its "/" (Beam's
# temporary predictions shard): a path that leaves no room for it is refused.
WRITTEN_INSIDE = len(f"/beam-temp-{PREDICTIONS_PREFIX}-{'0' * 32}/{'0' * 36}."
                     f"{PREDICTIONS_PREFIX}{PARAMS_SUFFIX}")
# Folders gpfit makes (removed when empty, and only these).
_OUR_FOLDERS = re.compile(rf"^(?:{_TABLE}|beam-temp-(?:{_TABLE})-[0-9a-f]{{32}})$")


def is_ours(name: str) -> bool:
    """Whether a path relative to the output folder is one gpfit writes."""
    return bool(_OURS.match(name))


def is_temporary(name: str) -> bool:
    """Whether a path relative to the output folder is a file of Beam's
    temporary folder (of a write into the folder)."""
    return name.startswith("beam-temp-") and is_ours(name)


def is_local(path: str) -> bool:
    return FileSystems.get_scheme(path) is None


def params_prefix(output: str, prefix: str = PARAMS_PREFIX) -> str:
    """The WriteToParquet file prefix of a table (PARAMS_PREFIX or
    PREDICTIONS_PREFIX); its shard template is SHARD_TEMPLATE."""
    return FileSystems.join(output.rstrip("/"), prefix)


def params_pattern(output: str, prefix: str = PARAMS_PREFIX) -> str:
    """The glob matching a table's shards in an output folder of this release."""
    return FileSystems.join(escaped(output.rstrip("/")), prefix, f"part-*{PARAMS_SUFFIX}")


def legacy_pattern(output: str, prefix: str = PARAMS_PREFIX) -> str:
    """The glob matching a table's shards in an output folder of gpfit 0.4.0
    or earlier."""
    return FileSystems.join(escaped(output.rstrip("/")), f"{prefix}-*{PARAMS_SUFFIX}")


def shard_patterns(output: str, prefix: str = PARAMS_PREFIX) -> tuple[str, str]:
    """Both layouts' globs: what a reader of any gpfit output matches (a
    folder holds one layout: a run clears the other's shards). The folder
    is quoted (matching.escaped): gpfit writes none named with a wildcard, but
    a copy may be (`night [1]`), and as a pattern it matched no shard."""
    return params_pattern(output, prefix), legacy_pattern(output, prefix)


def table_folder(output: str, prefix: str = PARAMS_PREFIX) -> str:
    """The folder a table's shards live in: what the README's readers open."""
    return FileSystems.join(output.rstrip("/"), prefix)


def existing_files(output: str) -> list[str]:
    """Every file under the output folder (recursively), sorted.

    Raises:
      UsageError: the folder cannot be listed.
    """
    folder = output.rstrip("/")
    try:
        matched = FileSystems.match([FileSystems.join(folder, "**")])[0].metadata_list
    except Exception as err:  # BeamIOError: unreachable bucket, bad scheme
        raise UsageError(f"cannot list output folder {output!r}: {listing_failure(err)}"
                         ) from err
    return sorted(m.path for m in matched)


def check_output(output: str, input_files: tuple[str, ...], input_pattern: str = "") -> list[str]:
    """Checks that the output folder may be (re)written; returns its files.

    Refuses a folder holding files gpfit did not write, so that a mistyped
    --output never deletes someone's data. The lock (lock.py) is gpfit's
    but not returned: it is not the previous run's to clear. Local paths are
    compared resolved (symbolic links followed).

    Raises:
      UsageError: no output given; it or a folder above it is a file; it
        holds input, foreign files or symbolic links; it lies where the
        input pattern would read this run's shards on the next run; on
        gs://, Cloud Storage's host cannot be reached (check_gcs_reached).
    """
    if not output:
        raise UsageError("no output given; pass --output FOLDER")
    _refuse_glob(output)
    local = FileSystems.get_scheme(output) is None
    if local:
        _check_local_path(output)
    for path in input_files:
        if lies_inside(path, output):
            raise UsageError(f"input file {path} lies inside the output folder {output}; "
                             "choose another output folder")
    if input_pattern:
        check_not_read_by(input_pattern, output)
    if local:
        _refuse_links(output)
        _refuse_mounted_tables(output)
    else:
        check_gcs_reached(output)
    files = [path for path in existing_files(output)
             if posixpath.basename(path) not in BROWSER_FILES]
    names = [relative(path, output) for path in files]
    for name in names:
        if not is_ours(name):
            raise UsageError(_foreign(output, name, previous=any(n in MARKERS for n in names)))
    return [path for path in files if posixpath.basename(path) != LOCK_NAME]


def named_folder(folder: str) -> str | None:
    """`folder` as a path whose last name is the folder's own, so that a
    place beside it is its dirname joined with a name: local ones
    normalised, "." and ".." (whose dirname lies inside) made absolute;
    None for a bucket's root or "/", which have no place beside them."""
    named = folder.rstrip("/") or folder
    if is_local(folder):
        named = os.path.normpath(named)
        if os.path.basename(named) in (".", ".."):
            named = os.path.abspath(named)
    parent = posixpath.dirname(named)
    return None if parent in (named, "gs:") else named  # "gs:" is no folder


def _foreign(output: str, name: str, previous: bool) -> str:
    """Why a folder holding `name` (relative to it), which gpfit did not
    write, is refused. In a previous run's folder (it holds a manifest) the
    file is most likely the user's own beside the run's, a gpfit-report page
    above all: it is to be moved out, not the folder changed
    (docs/design.md, "Output folder")."""
    if not previous:
        return (f"output folder {output} holds {name!r}, which gpfit did not write; "
                "give an empty folder or a previous gpfit output folder")
    named = named_folder(output)
    # A folder in the working one (--output out): './report.html', where
    # 'report.html' alone read as the name the file already has.
    beside = None if named is None else posixpath.dirname(named) or "."
    place = ("" if beside is None else
             f" (e.g. to {posixpath.join(beside, posixpath.basename(name))!r}: "
             "a gpfit-report --out belongs beside the folder too)")
    return (f"output folder {output}, a previous gpfit run's, holds {name!r}, which gpfit did "
            f"not write and does not delete; move it out of the folder{place}, then run again")


def check_gcs_reached(output: str) -> None:
    """Raises UsageError where the --output folder is on gs:// and Cloud
    Storage's host cannot be reached (matching.gcs_unreached): listing it
    waited for the storage client's 120 s of retries."""
    unreached = gcs_unreached(output)
    if unreached:
        raise UsageError(f"cannot write --output {output!r}: {unreached}")


def check_not_read_by(input_pattern: str, output: str, probe: bool = True) -> None:
    """Refuses an output folder whose shards a glob --input matches.

    Args:
      probe: as would_read's.

    Raises:
      UsageError: the pattern matches a shard this run writes into output.
    """
    if would_read(input_pattern, output, probe):
        raise UsageError(
            f"--input {input_pattern!r} matches files inside --output {output}: the next "
            "run would read this run's shards as input; give an output folder outside the "
            "input pattern, or a narrower pattern (e.g. ending in *.parquet in the data folder)")


def would_read(input_pattern: str, output: str, probe: bool = True) -> bool:
    """Whether a glob --input matches a shard this run writes into output
    (both layouts). A file or folder --input names files directly in it,
    which never holds a shard of this release.

    Args:
      probe: as matching.is_glob's; False where the pattern has just failed to
        read as input.
    """
    if not is_glob(input_pattern, probe):
        return False
    pattern = glob_regex(_resolved_pattern(input_pattern))
    folder = resolved(output)
    candidates = [f"{folder}/{table}/part-00000-of-00001{PARAMS_SUFFIX}" for table in TABLES]
    return any(pattern.match(c) for c in candidates)


def clear_output(output: str, files: list[str], tables: tuple[str, ...] = (PARAMS_PREFIX,)
                 ) -> None:
    """Deletes a previous run's files, so that no stale shard survives a run
    with another shard count; creates the folder and the folders of the
    tables this run writes (Beam renames the shards into them) if missing.

    The manifest goes first: a reader that sees _SUCCESS.json never sees it
    beside a half-deleted set of shards.

    Raises:
      OSError, BeamIOError: the storage refused (errors.storage_error says which).
    """
    if FileSystems.get_scheme(output) is None:
        check_writable(output, files, tables)
    markers, rest = deletion_order(files)
    for batch in (markers, rest):
        if batch:
            FileSystems.delete(batch)
    if FileSystems.get_scheme(output) is None:
        remove_empty_folders(output)
    make_table_folders(output, tables)


def check_writable(output: str, files: list[str], tables: tuple[str, ...] = (PARAMS_PREFIX,)
                   ) -> None:
    """Refuses, before anything is deleted, a local output whose folders
    this run must write this user cannot: the output folder, those of the
    files to delete, the tables' folders that exist. A table's folder
    another user's run made (755) let the lock and the manifest's deletion
    pass and refused the first shard's: exit 5 "at start", the earlier
    run's _SUCCESS.json gone and its shards kept (docs/design.md, "Output
    folder").

    Raises:
      OSError: EACCES, or EROFS on a read-only mount, naming the folder.
    """
    folders = {os.path.abspath(output)} | {os.path.dirname(os.path.abspath(p)) for p in files}
    folders |= {path for path in (os.path.abspath(os.path.join(output, t)) for t in tables)
                if os.path.isdir(path)}
    for folder in sorted(folders):
        if os.path.isdir(folder) and not os.access(folder, os.W_OK | os.X_OK):
            # statvfs is POSIX's: elsewhere a read-only mount is said as EACCES.
            read_only = hasattr(os, "statvfs") and os.statvfs(folder).f_flag & os.ST_RDONLY
            code = errno.EROFS if read_only else errno.EACCES
            raise OSError(code, os.strerror(code), folder)


def make_table_folders(output: str, tables: tuple[str, ...] = (PARAMS_PREFIX,)) -> None:
    """Makes the folders of these tables in a local output (Beam's local
    rename needs them; gs:// has no folders)."""
    if FileSystems.get_scheme(output) is None:
        for table in tables:
            os.makedirs(os.path.join(output, table), exist_ok=True)


def remove_empty_folders(output: str) -> None:
    """Removes the empty folders gpfit makes in a local output folder (the
    tables', Beam's temporary ones); any other folder is left."""
    if not os.path.isdir(output):
        os.makedirs(output, exist_ok=True)
        return
    for name in os.listdir(output):
        path = os.path.join(output, name)
        if (_OUR_FOLDERS.match(name) and os.path.isdir(path) and not os.path.islink(path)
                and not os.listdir(path)):
            os.rmdir(path)


def missing_folders(output: str) -> list[str]:
    """The local folders that making output would make: output and those
    above it that do not exist, deepest first; [] on gs://."""
    if not is_local(output):
        return []
    missing, path = [], os.path.abspath(output)
    while not os.path.lexists(path) and os.path.dirname(path) != path:
        missing.append(path)
        path = os.path.dirname(path)
    return missing


def remove_empty(folders: list[str]) -> None:
    """Removes these folders (missing_folders': a run made them), deepest
    first, while each is empty: never a file, nor a folder with one."""
    for folder in folders:
        try:
            os.rmdir(folder)
        except OSError:  # not empty (a shard, the next run's lock), or gone
            return


def deletion_order(files: list[str]) -> tuple[list[str], list[str]]:
    """(the manifests among files, the rest): what clear_output deletes first."""
    markers = [path for path in files if posixpath.basename(path) in MARKERS]
    return markers, [path for path in files if path not in markers]


def params_files(output: str, prefix: str = PARAMS_PREFIX) -> list[str]:
    """A table's shards in the output folder, as paths relative to it
    ("params/part-00000-of-00002.parquet"), sorted."""
    matched = FileSystems.match([params_pattern(output, prefix)])[0].metadata_list
    return sorted(relative(m.path, output) for m in matched)


def same_folder(a: str, b: str) -> bool:
    """Whether two paths name the same folder: trailing slashes, relative
    local paths and symbolic links aside."""
    return resolved(a) == resolved(b)


def lies_inside(path: str, folder: str) -> bool:
    """Whether path lies below folder (not the folder itself), both
    compared resolved (see resolved)."""
    return resolved(path).startswith(resolved(folder).rstrip("/") + "/")


def resolved(path: str) -> str:
    """A local path made absolute with symbolic links followed (what the
    file system will open); a gs:// path without its trailing slash."""
    if FileSystems.get_scheme(path) is None:
        return os.path.realpath(path)
    return path.rstrip("/")


def _resolved_pattern(pattern: str) -> str:
    """A glob with its fixed leading folders resolved (see resolved)."""
    if FileSystems.get_scheme(pattern) is not None:
        return pattern
    parts = os.path.abspath(pattern).split("/")
    first = next(i for i, part in enumerate(parts) if any(ch in part for ch in GLOB_CHARACTERS))
    return os.path.join(os.path.realpath("/".join(parts[:first]) or "/"), *parts[first:])


def _refuse_glob(output: str) -> None:
    """Refuses an output path with a glob character: Beam's file systems
    match, rename and delete by pattern, so its shards could not be renamed
    into it, its lock never deleted (every later run crashed), and an
    absolute a?/ would delete the same names in a1/ and a2/."""
    found = sorted({ch for ch in output if ch in GLOB_CHARACTERS})
    if found:
        raise UsageError(f"--output {output} holds {' '.join(found)}, which Beam's file systems "
                         "read as a glob pattern; give a folder path without *, ? or [")


def _check_local_path(output: str) -> None:
    """Refuses a local output that is a file or lies below one, or whose
    path holds a symbolic link to nothing (making the folder would fail, or
    fill the disk under an unmounted one)."""
    path = os.path.abspath(output)
    if os.path.isfile(path):
        raise UsageError(f"output {output!r} is a file; --output takes a folder")
    kind = _special_kind(path)
    if kind:  # was "is a file, not a folder, so no folder can be made below it"
        raise UsageError(f"output {output!r} is {kind}, not a folder; --output takes a folder")
    parent = path
    while not os.path.exists(parent):
        if os.path.islink(parent):
            raise UsageError(f"--output {output}: {parent} is a symbolic link to "
                             f"{os.readlink(parent)}, which does not exist; create that folder, "
                             "or give another --output")
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise UsageError(f"--output {output}: {parent} is a file, not a folder, so no folder "
                         "can be made below it; give a folder path")
    long_name = too_long(output, inside=WRITTEN_INSIDE)
    if long_name:
        raise UsageError(f"--output: {long_name}; give a shorter folder path")


def _refuse_mounted_tables(output: str) -> None:
    """Refuses a table's folder on another file system than the output
    folder (a disk mounted at <output>/params): Beam writes each shard in
    the output folder and renames it into the table's, which cannot cross
    file systems (EXDEV, once every series was fitted), and the clearing's
    rmdir of an empty mount point failed (EBUSY)."""
    try:
        device = os.stat(output).st_dev
    except OSError:
        return  # none yet: made below, on the output's file system
    for table in TABLES:
        path = os.path.join(output, table)
        if os.path.isdir(path) and os.stat(path).st_dev != device:
            raise UsageError(
                f"output folder {output}: {path} is on another file system (a mount point) "
                f"than the folder; gpfit writes each shard in {output} and renames it into "
                f"{table}/, which cannot cross file systems: mount the disk at {output} "
                "itself, or give another --output")


def _special_kind(path: str) -> str:
    """What a path that is neither a file nor a folder is ("a device": --output
    /dev/null); "" for anything else, or nothing."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return ""
    for test, kind in ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device")):
        if test(mode):
            return kind
    return ""


def _refuse_links(output: str) -> None:
    """Refuses symbolic links inside a local output folder: gpfit writes none,
    and deleting through one could reach files outside the folder."""
    for root, dirs, files in os.walk(output):
        for name in dirs + files:
            path = os.path.join(root, name)
            if os.path.islink(path):
                raise UsageError(
                    f"output folder {output} holds the symbolic link "
                    f"{os.path.relpath(path, output)!r}, which gpfit did not write; give an "
                    "empty folder or a previous gpfit output folder")


def relative(path: str, output: str) -> str:
    """path relative to the output folder (unchanged if outside it)."""
    folder = _absolute(output)
    path = _absolute(path)
    return path[len(folder) + 1:] if path.startswith(folder + "/") else path


def _absolute(path: str) -> str:
    if FileSystems.get_scheme(path) is None:
        return os.path.abspath(path)
    return path.rstrip("/")

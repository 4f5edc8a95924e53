"""`gpfit-report`: an HTML page showing the fits of a gpfit run.

Exit codes: 0 written; 2 bad invocation, unusable input, params or
predictions, an --out that cannot be written, names the run's data (a
Parquet file, a file of the --params folder) or lies in a gpfit output
folder (whose next run would refuse it), or a --params folder a gpfit run
is writing, said in one line on stderr before anything is written; 128 + N
stopped by signal N (SIGINT 130, SIGTERM 143), the page not written.
"""
from __future__ import annotations

import argparse
import functools
import os
import shutil
import sys
from typing import Optional, Sequence

from pipeline.io import stops, streams
from pipeline.io.errors import (SIGNAL_BASE, UsageError, named_arguments, one_line,
                                read_in_another_encoding, undecodable)

# Folders made for this process alone (a temporary MPLCONFIGDIR), removed
# as the command leaves.
_MADE_FOLDERS: list[str] = []

USAGE = ("gpfit-report --input PATTERN --params DIR --out report.html "
         "[--series ID ...] [--random N] [--worst N] [--seed S] [column options]")


class _Parser(argparse.ArgumentParser):
    """Reports a bad option as a UsageError instead of exiting."""

    def error(self, message):
        raise UsageError(f"{message}; see gpfit-report --help")


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="gpfit-report", usage=USAGE,
        description="Write one self-contained HTML page about a gpfit run: counts by "
                    "status, common failure reasons, histograms of the fitted parameters, "
                    "and plots of sampled series with their posterior mean and ±2σ bands.",
        epilog="Exit codes: 0 written; 2 bad invocation, unusable input, params or "
               "predictions, an --out that cannot be written, names the run's data (a "
               "Parquet file, a file of the --params folder) or lies in a gpfit output "
               "folder, or a --params folder a gpfit run is writing; said in one line "
               "before anything is written.",
        formatter_class=lambda prog: argparse.HelpFormatter(prog, max_help_position=30,
                                                            width=100))

    def add(flag, metavar, help, **kwargs):  # pylint: disable=redefined-builtin
        p.add_argument(flag, metavar=metavar, help=help, **kwargs)

    add("--input", "PATTERN", "the gpfit run's input: Parquet file, folder or glob (local or "
        "gs://); default: the one the run's manifest records")
    add("--params", "DIR", "the gpfit run's --output folder (params/ and _SUCCESS.json)", required=True)
    add("--out", "FILE", "HTML file to write (local or gs://)", required=True)
    add("--id_column", "COLUMN", "input column naming the series (default: the run's, "
        "else series_id)")
    add("--time_column", "COLUMN", "input column of times (default: the run's, else t)")
    add("--value_column", "COLUMN", "input column of values (default: the run's, else y)")
    add("--series", "ID", "also plot this series; repeat for more", action="append", default=[])
    add("--random", "N", "plot N fitted series drawn at random (default %(default)s)",
        type=int, default=6)
    add("--worst", "N", "plot the N worst fits: by holdout_mase, else by standardised nll "
        "per point (default %(default)s)", type=int, default=3)
    add("--seed", "S", "seed of the random draw (default %(default)s)", type=int, default=0)
    return p


def run(argv: Optional[Sequence[str]] = None) -> int:
    """Runs gpfit-report with these arguments; returns the exit code (128 +
    N where stopped by signal N, in one line: docs/design.md, "The fitter",
    A stop while the report writes its page)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    # SIGTERM's default left the page's temporary file beside --out, and
    # Ctrl-C printed a KeyboardInterrupt traceback: either raises Stopped,
    # and the page's write (files.write_whole) removes that file as it
    # unwinds; a second one while unwinding takes the default action.
    handlers = stops.handle(lambda signum, _frame: stops.stop(signum))
    try:
        return _run(argv)
    except stops.Stopped as stop:
        _say(f"error: stopped by {stop.name}; the page was not written, {_out_in(argv)} is "
             "as it was")
        return SIGNAL_BASE + stop.signum
    finally:
        stops.restore(handlers)


def _out_in(argv: list[str]) -> str:
    """--out as given in argv, or "--out" where it cannot be told."""
    return dict(named_arguments(argv)).get("--out") or "--out"


def _run(argv: list[str]) -> int:
    streams.opened()  # a closed stdout or stderr: before anything opens a file
    for flag, value in named_arguments(argv):
        wrong = read_in_another_encoding(value)
        if wrong:  # a column or a path, read in ASCII: "no column 's\udcc3\udca9rie'"
            return _refuse(UsageError(f"{flag} '{undecodable(value)}' {wrong}"))
    try:
        args = parser().parse_args(argv)
    except SystemExit as done:  # --help
        return int(done.code or 0)
    except UsageError as err:
        return _refuse(err)
    # Imported here, and the heavy part (TensorFlow, matplotlib: seconds to
    # load) only once the input is known good: --help and mistakes answer fast.
    from pipeline.io import beam_import
    if beam_import.refusal() is not None:
        return _refuse(UsageError(beam_import.refusal()))
    with beam_import.quietly():
        from apache_beam.io.filesystems import FileSystems
        from pipeline.io.files import check_reachable
        from pipeline.io.inputs import Columns
        from pipeline.report.params import read_manifest
        from pipeline.report.scan import ReportOptions, scan
    # The manifest is read once, when first asked (the lock's check, the
    # defaults of --input and the columns, the page) and not before: offline,
    # a gs:// question waits 120 s, and the listing is to ask first.
    manifest_of = functools.cache(lambda: read_manifest(args.params))
    try:
        # gs:// without the gcp extra is said as such (else --params read
        # as a folder without a manifest).
        check_reachable(args, ("params", "out", "input"), show=repr)
        _check_gcs_reached(args.params, args.input, args.out)
        _check_params(args.params)
        local = FileSystems.get_scheme(args.params) is None
        if local:
            _check_not_written(args.params, manifest_of)
        given = _from_manifest(args, manifest_of)
        _check_gcs_reached(pattern=given["input"])  # the manifest's; a host that answered: not asked again
        options = ReportOptions(
            input=given["input"], params=args.params,
            columns=Columns(given["id_column"], given["time_column"], given["value_column"]),
            series=args.series, random=args.random, worst=args.worst, seed=args.seed)
        _check_matplotlib()
        _check_out(args.out)
        _check_not_data(args.out, args.params)
        _check_not_in_output(args.out, args.params, manifest_of)
        scanned = scan(options, manifest_of)
        if not local:  # asked once its listing answered (offline, each ask waits 120 s)
            _check_not_written(args.params, manifest_of)
    except UsageError as err:
        return _refuse(err)
    except OSError as err:  # a file went while read: a run clearing the folder
        return _refuse(_changed(args.params, err))
    _say(f"read {scanned.tally.rows:,} params rows from {len(scanned.run.files)} shard(s)")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from gpcore import quiet
    quiet.import_tensorflow()  # the plots' posteriors: without TF's start-up lines
    from pipeline.report.build import build
    try:
        report = build(scanned, log=_say)
    except UsageError as err:  # a predictions shard that is not Parquet
        return _refuse(err)
    except OSError as err:
        return _refuse(_changed(args.params, err))
    try:
        size = _write(args.out, report.html)
    except OSError as err:  # the storage refused late (full, gone): one line, as at the start
        return _refuse(UsageError(f"cannot write {args.out!r}: {err}; the page was not written"))
    _say(f"wrote {args.out} ({size / 1e6:.1f} MB): {report.rows:,} series, "
         f"{report.plots} plotted")
    return 0


def main() -> None:
    """The console script: run, then leave at once, as gpfit does. The page
    is written and closed by then; Python's finalisation would only tear
    down modules, and releasing the Python files that Arrow's scan threads
    still held then aborted the process (docs/design.md, "Arrow's reads at
    exit")."""
    code = run()
    for folder in _MADE_FOLDERS:
        shutil.rmtree(folder, ignore_errors=True)
    streams.leave(code)


_DEFAULT_COLUMNS = {"id_column": "series_id", "time_column": "t", "value_column": "y"}


def _from_manifest(args, manifest_of) -> dict:
    """--input and the column names: as given, else as the run's manifest in
    --params records them (manifest_of: params.read_manifest's answer; else
    the command's defaults for the columns).

    Raises:
      UsageError: no --input and no manifest, or one whose input is redacted.
    """
    from pipeline.io.redaction import REDACTED
    from pipeline.io import shards
    from pipeline.report.params import RUN_AGAIN, no_shards, stopped_run

    given = {"input": args.input, **{k: getattr(args, k) for k in _DEFAULT_COLUMNS}}
    if all(v is not None for v in given.values()):
        return given
    try:
        found = manifest_of()[1] or {}
    except OSError:  # the storage did not answer: as no manifest here, the shards' reader says why
        found = {}
    options = found.get("options") or {}
    for name, default in _DEFAULT_COLUMNS.items():
        if given[name] is None:
            given[name] = options.get(name) or default
    if given["input"] is None:
        pattern = (found.get("input") or {}).get("pattern")
        if not pattern or REDACTED in str(pattern):
            stopped = "" if pattern else stopped_run(args.params)
            if not (pattern or stopped or shards.list_shards(args.params)):
                # No manifest, lock nor shard: not a gpfit output; --input would not help.
                raise no_shards(args.params)
            why = ("its manifest's input is redacted" if pattern else
                   "it holds no readable manifest (_SUCCESS.json or _FAILED.json)"
                   + (f", only {stopped}: {RUN_AGAIN} for a whole run's page, or" if stopped
                      else ";"))
            raise UsageError(f"--input is needed: {args.params}: {why} give the run's "
                             "--input pattern")
        if _unfound_relative(pattern):
            raise UsageError(f"--input is needed: {args.params}'s manifest records the input "
                             f"as {pattern!r}, relative to the folder that run was started in, "
                             "which it does not record; give the run's --input")
        given["input"] = pattern
    return given


def _unfound_relative(pattern: str) -> bool:
    """A relative local path (as gpfit 0.16.0 and earlier recorded it) that
    names nothing from here."""
    import glob
    from pipeline.io.outputs import is_local
    if not is_local(pattern) or os.path.isabs(pattern):
        return False
    return not (os.path.exists(pattern) or glob.glob(pattern, recursive=True))


def _check_gcs_reached(params: Optional[str] = None, pattern: Optional[str] = None,
                       out: Optional[str] = None) -> None:
    """Refuses a gs:// --params, --input or --out whose host, Cloud Storage's,
    never answers (matching.gcs_unreached, as gpfit asks of its paths):
    offline, Google's storage client retried each for 120 s (--params: 146 s
    to an exit 1; --out only after the page was built)."""
    from pipeline.io.matching import gcs_unreached
    for name, path, verb in (("params", params, "read"), ("input", pattern, "read"),
                             ("out", out, "write")):
        unreached = path and gcs_unreached(path)
        if unreached:
            raise UsageError(f"cannot {verb} --{name} {path!r}: {unreached}")


def _check_params(params: str) -> None:
    """A local --params that is not there is said as such (else it read as a
    folder without a manifest, and the advice was to give --input), and one
    inside a run's output folder (its params/ table folder, a shard, the
    manifest) names that folder."""
    from apache_beam.io.filesystems import FileSystems
    from pipeline.io.outputs import MARKERS
    from pipeline.io.previous import output_above
    if FileSystems.get_scheme(params) is not None:
        return
    if not any(os.path.isfile(os.path.join(params, name)) for name in MARKERS):
        above = output_above(params)
        if above is not None:
            raise UsageError(f"--params {params!r} lies in the gpfit output folder {above!r}; "
                             "pass that folder")
    if not os.path.isdir(params):
        what = "not a folder" if os.path.exists(params) else "no such folder"
        raise UsageError(f"--params {params!r}: {what}; pass the folder that gpfit --output "
                         "wrote")


def _check_not_written(params: str, manifest_of) -> None:
    """Refuses a --params folder that a gpfit run is writing: one without a
    manifest yet, or one whose lock was taken after its manifest (a run into
    it, which clears it first). Its shards go or change while the report
    reads them (docs/design.md, "Contracts": Reuse reads a previous output
    by the same rule). A stopped run's lock, or the lock of the run that
    wrote the manifest, does not refuse it. Asked before the manifest of a
    local folder, and of a gs:// one after its listing answered: offline,
    each question waits out Google's 120 s of retries. manifest_of:
    params.read_manifest's answer."""
    from pipeline.io import lock
    held = lock.holder(params)
    if held is None or not held.live:
        return
    found = manifest_of()[1]
    if found is None or lock.started_after(held, found):
        raise UsageError(f"--params {params} is being written by a gpfit run ({held.said}; "
                         f"its lock {lock.LOCK_NAME}); run the report once it has finished "
                         "(its manifest appears)")


def _changed(params: str, err: OSError) -> UsageError:
    """Why a file could not be read once the report had checked the folder:
    most likely a gpfit run into --params started meanwhile and cleared it
    (its lock names it, while it runs)."""
    from pipeline.io import lock
    from pipeline.io.errors import first_line
    held = lock.holder(params)
    if held is not None and held.live:
        return UsageError(f"--params {params} changed while the report read it "
                          f"({first_line(err)}): a gpfit run is writing it ({held.said}; its "
                          f"lock {lock.LOCK_NAME}); the page was not written; run the report "
                          "again once it has finished")
    return UsageError(f"a file could not be read once the report had begun ({first_line(err)}); "
                      f"the page was not written; if a gpfit run replaced --params {params}, "
                      "run the report again")


def _check_matplotlib() -> None:
    """matplotlib is an extra (gpfit[report]): say how to get it. Its
    folders are readied first (`_writable_matplotlib_folder`)."""
    _writable_matplotlib_folder()
    try:
        import matplotlib  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
    except ImportError as err:
        raise UsageError("gpfit-report needs matplotlib, which is not installed; "
                         "pip install 'gpfit[report]'") from err


def _writable_matplotlib_folder() -> None:
    """Gives matplotlib a temporary MPLCONFIGDIR, removed at exit, where its
    default config or cache folder cannot be made or written (a read-only
    HOME): it printed "mkdir -p failed for path ..." and "Matplotlib created
    a temporary cache directory ..." among the report's lines, and made the
    same folder itself. A user's own MPLCONFIGDIR is kept, as matplotlib
    keeps it (docs/design.md, "The fitter", A report under a read-only HOME)."""
    if os.environ.get("MPLCONFIGDIR"):
        return
    home = os.path.expanduser("~")
    if sys.platform.startswith(("linux", "freebsd")):  # as matplotlib finds them
        folders = [os.path.join(os.environ.get(xdg) or os.path.join(home, default), "matplotlib")
                   for xdg, default in (("XDG_CONFIG_HOME", ".config"),
                                        ("XDG_CACHE_HOME", ".cache"))]
    else:
        folders = [os.path.join(home, ".matplotlib")]
    if all(_writable_folder(folder) for folder in folders):
        return
    import atexit
    import tempfile
    temporary = tempfile.mkdtemp(prefix="gpfit-report-matplotlib-")
    _MADE_FOLDERS.append(temporary)  # main removes it before os._exit
    atexit.register(shutil.rmtree, temporary, ignore_errors=True)  # run() called in a process
    os.environ["MPLCONFIGDIR"] = temporary


def _writable_folder(folder: str) -> bool:
    """Whether folder exists, or could be made, and can be written."""
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK)


def _check_out(out: str) -> None:
    from apache_beam.io.filesystems import FileSystems
    if not out:
        raise UsageError("no output given; pass --out report.html")
    if FileSystems.get_scheme(out) is None:
        if os.path.isdir(out):
            raise UsageError(f"--out {out!r} is a folder; give a file name, e.g. "
                             f"{os.path.join(out, 'report.html')}")
        parent = os.path.dirname(os.path.abspath(out))
        # The folders the page's write makes (files.write_whole) are made
        # in the nearest one that exists: a read-only place, or a file on
        # the way, was found only after the plots.
        there = _nearest_existing(parent)
        if not os.path.isdir(there):
            raise UsageError(f"cannot write {out!r}: {there!r} is not a folder")
        if not os.access(there, os.W_OK):  # root passes it: _try_writing then says the same
            raise UsageError(f"cannot write {out!r}: "
                             + (f"no folder can be made in {there!r} (not writable)"
                                if there != parent else f"folder {there!r} is not writable"))
        from pipeline.io.files import too_long
        long_name = too_long(out)
        if long_name:
            raise UsageError(f"cannot write --out: {long_name}; give a shorter one")
        _try_writing(out, there, made=there != parent)


def _nearest_existing(folder: str) -> str:
    """folder (absolute), or the nearest folder above it that exists (or a
    file in its place)."""
    while not os.path.lexists(folder) and os.path.dirname(folder) != folder:
        folder = os.path.dirname(folder)
    return folder


def _check_not_data(out: str, params: str) -> None:
    """Refuses an --out that names a file of the run's output folder (a
    shard, the manifest, the lock: outputs.is_ours) or, locally, an
    existing Parquet file (the input): the page was written over it, exit
    0, the data lost to a mistyped or tab-completed name. An earlier page
    (or any other file) at --out is replaced, as before."""
    from pipeline.io.outputs import is_local, is_ours, lies_inside, relative, resolved
    if lies_inside(out, params):
        name = relative(resolved(out), resolved(params))
        if is_ours(name):
            raise UsageError(f"--out {out!r} is {name!r} of the gpfit output folder {params!r}, "
                             "which the page would replace; give the page a name of its own, "
                             "e.g. report.html beside that folder")
    if is_local(out) and os.path.isfile(out):
        try:
            with open(out, "rb") as f:
                parquet = f.read(4) == b"PAR1"  # every Parquet file starts so
        except OSError:
            return  # unreadable: not read as data by anyone here either
        if parquet:
            raise UsageError(f"--out {out!r} is a Parquet file, which the page would replace "
                             "(the run's input?); give the page a name of its own, e.g. "
                             "report.html")


def _check_not_in_output(out: str, params: str, manifest_of) -> None:
    """Refuses an --out inside a gpfit output folder: --params, or locally
    any folder above --out that holds a manifest or a lock. The page was
    written, exit 0, and the next gpfit run into the folder refused it for a
    file it did not write (exit 2), as it must: it deletes only its own
    (docs/design.md, "Output folder"). manifest_of: params.read_manifest's
    answer."""
    folder = _output_holding(out, params, manifest_of)
    if folder is None:
        return
    from pipeline.io.outputs import named_folder
    named = named_folder(folder)  # None: a bucket's root or "/" ("gs://b.html" is a bucket)
    raise UsageError(f"--out {out!r} lies in the gpfit output folder {folder!r}, whose next "
                     "run refuses a file gpfit did not write; write the page "
                     + ("outside that folder" if named is None else f"beside that folder, e.g. "
                                                                    f"{named + '.html'!r}"))


def _output_holding(out: str, params: str, manifest_of) -> Optional[str]:
    """The gpfit output folder --out lies in: --params as given where it
    holds a manifest, else, locally, the nearest folder above --out with a
    manifest or a lock (relative where --out is); None where it lies in
    none. On gs:// only --params is asked: each question is a request."""
    from pipeline.io.lock import LOCK_NAME
    from pipeline.io.outputs import MARKERS, is_local, lies_inside
    if lies_inside(out, params):
        try:
            if manifest_of()[0] is not None:
                return params.rstrip("/") or params
        except OSError:
            pass  # the storage did not answer: the scan says why
    if not is_local(out):
        return None
    folder = os.path.dirname(os.path.abspath(out))
    while True:
        if any(os.path.isfile(os.path.join(folder, name)) for name in (*MARKERS, LOCK_NAME)):
            return folder if os.path.isabs(out) else os.path.relpath(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _try_writing(out: str, folder: str, made: bool = False) -> None:
    """Makes and removes a file of a fresh name in `folder`, the page's or,
    where that is to be made (`made`), the nearest one above it: a
    read-only file system, or a folder that takes no new file (root passes
    os.access), is said now, not after the plots."""
    import tempfile
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as err:
        where = f"no folder can be made in {folder!r} ({err.strerror or err})" if made \
            else (err.strerror or str(err))
        raise UsageError(f"cannot write {out!r}: {where}; give an --out in a folder you can "
                         "write") from err


def _write(out: str, text: str) -> int:
    """Writes the page whole (local: via a temporary file and a rename)."""
    from apache_beam.io.filesystems import FileSystems
    data = text.encode("utf-8")
    if FileSystems.get_scheme(out) is None:
        folder = os.path.dirname(os.path.abspath(out))  # made by write_whole
        # A short name of its own: out + ".tmp" failed where out's name is
        # within 4 bytes of the file system's longest. Unguessable, created
        # exclusively and never through a link: named by the process id and
        # opened as it was, a link another user planted at the name in a
        # shared folder (/tmp, a team's) had the page overwrite the file it
        # named, and then put the link itself in --out's place.
        import secrets
        from pipeline.io.files import write_whole
        write_whole(out, os.path.join(folder, f".gpfit-report-{secrets.token_hex(8)}.tmp"),
                    data, "text/html")
    else:
        with FileSystems.create(out, mime_type="text/html") as f:
            f.write(data)
    return len(data)


def _refuse(err: Exception) -> int:
    _say(f"error: {str(err).strip()}")
    return 2


def _say(message: str) -> None:
    """One line on stderr: what does not print in it (a path's newline, an
    escape) is written as Python escapes it, as gpfit's lines are."""
    streams.write(f"gpfit-report: {one_line(message)}", sys.stderr)


if __name__ == "__main__":
    main()

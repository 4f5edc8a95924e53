"""Errors that end a run, and the exit code and one line each ends with
(the table: README.md "Exit codes", docs/design.md "Exit codes")."""
from __future__ import annotations

import errno
import os
import re
import sys
from typing import Optional

from gpcore.result import first_line, last_line  # noqa: F401  (one-line messages, defined once)

EXIT_OK = 0                # done (or built, where there is no job to wait for)
EXIT_TOO_MANY_FAILED = 1   # finished; more series failed than --max_failure_fraction
EXIT_USAGE = 2             # refused before any work: options, runner, input, output folder
EXIT_PIPELINE_FAILED = 3   # the job started and did not finish: it failed, a worker died,
#                            an input file could not be read, no manifest
EXIT_BUSY = 4              # the output folder is locked by another run
EXIT_STORAGE = 5           # the output folder's storage refused a write
SIGNAL_BASE = 128          # stopped by signal N: 128 + N (SIGINT 130, SIGTERM 143)


class UsageError(ValueError):
    """A bad invocation: an option, the runner, the output folder. The message
    is one line that says what was expected, what was found and what to do."""

    exit_code = EXIT_USAGE


class InputError(UsageError):
    """The input cannot be used: no file matches, a file is not Parquet, a
    column is missing or of the wrong type, there are no rows."""


class FolderBusy(UsageError):
    """The output folder holds another run's lock (pipeline/io/lock.py)."""

    exit_code = EXIT_BUSY


class StorageError(UsageError):
    """The output's storage refused a write: full, read-only, no permission,
    an I/O error. Nothing of the invocation is wrong."""

    exit_code = EXIT_STORAGE


# errno -> what the storage said, in words an operator acts on.
_STORAGE = {errno.ENOSPC: "no space left on the device",
            errno.EDQUOT: "the disk quota is exceeded",
            errno.EROFS: "the file system is read-only",
            errno.EACCES: "permission denied",
            errno.EPERM: "operation not permitted",
            errno.EIO: "an I/O error",
            errno.EFBIG: ("a file is larger than the file system or this process's file-size "
                          "limit (ulimit -f) allows")}
_ERRNO_TEXT = re.compile(r"\[Errno (\d+)\]")
_AGAIN = "then run again into the same folder: its gpfit files are replaced"
_FIX = f"free space or make it writable (or give another --output), {_AGAIN}"
# A shard past a size limit (`ulimit -f`, FAT32's 4 GiB) is no full or
# read-only disk: more shards make each smaller.
_FIXES = {errno.EFBIG: ("raise the limit, or write more, smaller shards (--num_shards), or "
                        f"give another --output, {_AGAIN}")}


def with_value(option: str, flag: str, value) -> str:
    """An option and its value as a message spells them: `option` is the
    name's format, "--{}" for the command's flags ("--predict_steps K") or
    "{}=" for fit_frame's keywords ("predict_steps=K")."""
    name = option.format(flag)
    return f"{name}{value}" if name.endswith("=") else f"{name} {value}"


def descriptor_limit() -> str:
    """This process's open-files limit in words, for messages that say to
    raise it: "ulimit -n is N", or "ulimit -n is unlimited"."""
    try:
        import resource
    except ImportError:  # Windows: no ulimit (docs/design.md, "Runners and quiet runs")
        return "this platform's open-files limit"
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return "ulimit -n is unlimited" if soft == resource.RLIM_INFINITY else f"ulimit -n is {soft}"


def one_line(text: str) -> str:
    """text with what does not print (a newline or a tab in a file name, a
    right-to-left mark) as Python escapes it: a message naming such a path
    is still one line, and reads as the name is (README, "Exit codes")."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


# A series id in a line (a log line, a plot's title) is cut to this many
# characters, its end kept: ids are data, and a 1 MB id made a 1 MB line.
ID_CHARS = 60


def shown_id(series_id) -> str:
    """A series id as a line shows it: what does not print (newline, tab,
    NUL, an escape, a right-to-left override) as one_line writes it, and cut
    to ID_CHARS with an ellipsis, its start and end kept (docs/design.md,
    "Runners and quiet runs")."""
    text = str(series_id)
    if len(text) > 4 * ID_CHARS:  # the ends alone: the rest is cut below
        text = text[:2 * ID_CHARS] + text[-2 * ID_CHARS:]
    text = one_line(text)
    if len(text) <= ID_CHARS:
        return text
    tail = ID_CHARS // 4
    return f"{text[:ID_CHARS - tail - 1]}…{text[-tail:]}"


def undecodable(text: str) -> Optional[str]:
    """text with the bytes that are not UTF-8 shown as \\xNN, where it holds
    any (a file name in Latin-1, as Python's os functions hand it over,
    with surrogate escapes); None where it is UTF-8 text. Beam passes
    options and file names through its job as UTF-8, and failed on such
    names mid-run (docs/design.md, "Contracts")."""
    try:
        text.encode("utf-8")
        return None
    except UnicodeEncodeError:
        pass
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a lone surrogate not from a byte: shown as \udNNN
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def named_arguments(argv: list[str]) -> list[tuple[str, str]]:
    """(flag, value) for each command-line argument: `--name=value` split,
    a value after a `--name` named by it, anything else "argument"."""
    return [tuple(arg.split("=", 1)) if arg.startswith("--") and "=" in arg else
            (argv[i - 1] if i and argv[i - 1].startswith("--") else "argument", arg)
            for i, arg in enumerate(argv)]


def read_in_another_encoding(text: str) -> Optional[str]:
    """Where `text` (an argument, a file name) is UTF-8 text on disk that
    this Python read in another encoding (a C or POSIX locale with
    PYTHONUTF8=0: ASCII, the other bytes escaped), what is wrong and what to
    do, after the name in quotes; None otherwise. `undecodable` alone said
    such a name was not UTF-8 and to rename it."""
    encoding = sys.getfilesystemencoding()
    if undecodable(text) is None or encoding.lower().replace("-", "").replace("_", "") == "utf8":
        return None
    try:
        os.fsencode(text).decode("utf-8")
    except UnicodeError:
        return None
    return (f"is UTF-8 text, but this Python reads names and arguments as {encoding} (a C or "
            "POSIX locale with PYTHONUTF8=0), and Beam needs them as UTF-8; run the command with "
            "PYTHONUTF8=1, or in a UTF-8 locale (LC_ALL=C.UTF-8)")


def storage_error(err: BaseException, output: str) -> Optional[UsageError]:
    """The one-line error for an OSError (or Beam's wrapping of one) met
    writing the output folder; None if it is not a storage refusal.

    ENOTDIR (a folder above --output is a file) is the invocation's fault: a
    UsageError; the storage's refusals (_STORAGE) are StorageError."""
    code = _errno_of(err)
    if code == errno.ENOTDIR:
        return UsageError(f"--output {output}: a folder on its path is a file, so the folder "
                          "cannot be made; give a folder path")
    if code in _STORAGE:
        return StorageError(f"cannot write the output folder {output}: {_STORAGE[code]} "
                            f"({first_line(err)}); {_FIXES.get(code, _FIX)}")
    return None


def storage_line(text: str, output: str) -> Optional[str]:
    """The same, from the text of a failure that crossed a process or a
    runner (Beam keeps the message, not the exception): the first storage
    errno named in it."""
    for found in _ERRNO_TEXT.finditer(text):
        code = int(found.group(1))
        if code in _STORAGE:
            return (f"cannot write the output folder {output}: {_STORAGE[code]} "
                    f"([Errno {code}]); {_FIXES.get(code, _FIX)}")
    return None


# Google's storage client retries what looks transient (no DNS, no route, a
# reset connection) for 120 s, then raises RetryError("Timeout of 120.0s
# exceeded"), which Beam's listing wraps twice. Offline, or behind a proxy
# that drops it, that is how a gs:// path is answered, two to three minutes
# after the command began (README, "Exit codes").
_NO_ANSWER = re.compile(r"RetryError|Timeout of [\d.]+s exceeded")
NO_ANSWER = ("Google Cloud did not answer within its client's 120 s of retries: check that "
             "this machine reaches storage.googleapis.com (network, DNS, proxy) and has Google "
             "credentials (gcloud auth application-default login)")


def listing_failure(err: BaseException) -> str:
    """What a failed listing says in one line: NO_ANSWER where Google Cloud
    never answered, else the error's first line."""
    return NO_ANSWER if _NO_ANSWER.search(_texts(err)) else first_line(err)


def _texts(err: BaseException) -> str:
    """err's message with those of its causes and Beam's wrapped exceptions."""
    seen: set[int] = set()
    stack, texts = [err], []
    while stack:
        item = stack.pop()
        if item is None or id(item) in seen:
            continue
        seen.add(id(item))
        texts.append(f"{type(item).__name__}: {item}")
        details = getattr(item, "exception_details", None)
        if isinstance(details, dict):
            stack.extend(v for v in details.values() if isinstance(v, BaseException))
        stack += [item.__cause__, item.__context__]
    return "\n".join(texts)


# What Beam's local runner says when an SDK worker process is gone (killed,
# out of memory): its data or control channel closes under the runner.
_LOST_WORKER = re.compile(r"Channel closed prematurely|Socket closed|worker.*(?:died|crashed|exited)"
                          r"|StatusCode\.UNAVAILABLE|Connection reset by peer", re.IGNORECASE)


def lost_worker(text: str) -> bool:
    """Whether a pipeline failure's text says a worker process went away."""
    return bool(_LOST_WORKER.search(text))


def _errno_of(err: BaseException) -> Optional[int]:
    """The errno of err, of Beam's BeamIOError details, or of its causes."""
    seen: set[int] = set()
    stack = [err]
    while stack:
        item = stack.pop()
        if item is None or id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, OSError) and item.errno:
            return item.errno
        details = getattr(item, "exception_details", None)
        if isinstance(details, dict):
            stack.extend(v for v in details.values() if isinstance(v, BaseException))
        stack.extend(a for a in getattr(item, "args", ()) if isinstance(a, BaseException))
        stack += [item.__cause__, item.__context__]
        found = _ERRNO_TEXT.search(str(item))
        if found:
            return int(found.group(1))
    return None

"""Which files an --input names: a file, a folder or a glob, local or on
gs://, resolved as the job's workers will match it (data files only:
names starting with "_" or "." are not data), refused where a listing
would pass over files in silence. No Parquet is read here
(pipeline/io/inputs.py checks what is found)."""
from __future__ import annotations

import errno
import fnmatch
import functools
import os
import posixpath
import re
import selectors
import socket
import time
import urllib.request
import warnings
from typing import Optional

from apache_beam.io.filesystem import FileSystem
from apache_beam.io.filesystems import FileSystems

from pipeline.io.errors import NO_ANSWER, InputError, first_line, listing_failure
from pipeline.io.files import missing_extra
from pipeline.io.tables import check_no_table

# A glob's wildcards, to Beam's FileSystems.match (and so to its delete and
# rename, which match too).
GLOB_CHARACTERS = "*?["

def sample(files: list, most: Optional[int]) -> list:
    """At most `most` of `files`, evenly spread, first and last included
    (all when `most` is None)."""
    if most is None or len(files) <= most:
        return list(files)
    if most <= 1:
        return list(files[:most])
    step = (len(files) - 1) / (most - 1)
    return [files[round(i * step)] for i in range(most)]


def job_glob(pattern: str, files: list[tuple[str, int]]) -> tuple[str, bool]:
    """What the job matches on its workers for a resolved pattern, and
    whether it leaves out names starting with "_" or "." (see resolve)."""
    if len(files) == 1 and files[0][0].rstrip("/") == pattern.rstrip("/"):
        glob, data_only = escaped(files[0][0]), False  # a file named explicitly
    elif is_glob(pattern):
        glob, data_only = pattern, True
    else:
        glob, data_only = FileSystems.join(escaped(pattern.rstrip("/")), "*"), True  # a folder
    return listable(glob), data_only


def listable(glob: str) -> str:
    """glob as Beam's match finds it. Beam lists the folder of the glob's
    part before its first wildcard; for a relative local glob with a
    wildcard in its first name ("*.parquet", "runs [[]v2]/*") that is "",
    which it cannot list and so matches nothing: "./" names the working
    folder."""
    head = re.match(r"[^[*?]*", glob).group(0)
    if head == glob or "/" in head or FileSystems.get_scheme(glob) is not None:
        return glob
    return "./" + glob


def is_glob(pattern: str, probe: bool = True) -> bool:
    """Whether --input is a glob: it holds a wildcard (*, ? or [) and names no
    existing file or folder as it is ("runs [v2]/" is a folder). probe=False:
    the wildcard alone, unasked (on gs:// the question is a request, which
    offline retries for minutes)."""
    if not has_wildcard(pattern):
        return False
    if not probe:
        return True
    try:
        return not FileSystems.exists(pattern)
    except Exception as err:  # pylint: disable=broad-except  (an odd scheme: _match names it)
        if listing_failure(err) == NO_ANSWER:
            # Offline: the listing would wait out the client's retries again
            # (docs/design.md, "Exit codes").
            raise InputError(f"cannot list {pattern!r}: {NO_ANSWER}") from err
        return True


def escaped(path: str) -> str:
    """path as a glob that matches it alone: Beam's globs quote nothing, but
    a class of one character does ("[[]", "[*]", "[?]")."""
    return re.sub(r"([*?[])", r"[\1]", path)


# "[[]" becomes the regular expression "[[]", exact, about which Python's re
# warns that a future version may read a nested set there: on stderr, in
# Beam's match and in glob_regex, where a run prints only gpfit's own lines.
warnings.filterwarnings("ignore", message="Possible nested set", category=FutureWarning)


def has_wildcard(part: str) -> bool:
    """Whether a glob or a part of one holds a wildcard, not counting the
    characters `escaped` quoted."""
    return any(ch in re.sub(r"\[[*?[]\]", "", part) for ch in GLOB_CHARACTERS)


def is_data(path: str, glob: str) -> bool:
    """A data file of a folder or glob: matched by glob_regex, not a local
    folder, and not named with a leading "_" or "." (_SUCCESS, .crc files),
    nor in a folder so named that a wildcard matched (a Spark write's
    _temporary/, .ipynb_checkpoints/: _judged)."""
    return (glob_regex(glob).match(path) is not None
            and not any(name.startswith(("_", ".")) for name in _judged(path, glob))
            and not is_local_folder(path))


_NO_FOLDER_OR_MORE = "\0"  # stands for "**/" while Beam translates the rest


@functools.lru_cache(maxsize=16)  # asked once per file matched
def glob_regex(glob: str) -> re.Pattern:
    """A glob's regular expression: Beam's (* within a folder, ** across
    folders), but "**/" also matches no folder, as in Python's and the
    shells' globs: "data/**/*.parquet" holds data/x.parquet ("any depth")."""
    translated = FileSystem.translate_pattern(glob.replace("**/", _NO_FOLDER_OR_MORE))
    return re.compile(translated.replace(re.escape(_NO_FOLDER_OR_MORE), "(?:.*/)?"))


def listing_glob(glob: str) -> str:
    """What Beam is asked to match for a glob: a superset of glob_regex's
    matches ("**/" as "**", which needs no folder), filtered by is_data."""
    return glob.replace("**/", "**")


def _judged(path: str, glob: str) -> list[str]:
    """The names on path that is_data judges: its file name, and each folder
    below the glob's fixed ones, except where the glob's part for it starts
    with "_" or "." itself ("data/_staging*/x.parquet" asks for them).
    Parts line up with folders from the start up to the first "**" and from
    the end after the last; folders that a "**" matched are judged."""
    parts = glob.split("/")
    fixed = next((i for i, part in enumerate(parts) if has_wildcard(part)), len(parts) - 1)
    prefix = "/".join(parts[:fixed]) + "/" if fixed else ""
    if not path.startswith(prefix):
        return [posixpath.basename(path.rstrip("/"))]
    names, wild = path[len(prefix):].rstrip("/").split("/"), parts[fixed:]
    stars = [i for i, part in enumerate(wild) if "**" in part]
    head, tail = (wild[:stars[0]], wild[stars[-1] + 1:]) if stars else (wild, [])
    between = len(names) - len(head) - len(tail)
    if between < 0:  # not matched by the glob: judge every name
        return names
    asked = [*head, *[""] * between, *tail]
    return [name for name, part in zip(names[:-1], asked) if not part.startswith(("_", "."))] \
        + names[-1:]


def resolve(pattern: str) -> list[tuple[str, int]]:
    """A file, a folder or a glob -> sorted [(path, size in bytes)].

    A folder means the files directly in it. As in Hadoop and Spark, names
    starting with "_" or "." (_SUCCESS, .crc files, and every file in such a
    folder) are not data and are left out of folders and globs (is_data).

    Raises:
      InputError: nothing matches.
    """
    if not pattern:
        raise InputError("no input given; pass --input FILE, FOLDER or GLOB")
    _check_filesystem(pattern)
    if is_glob(pattern):
        check_listable(pattern)
        found = _data_files(_match(listing_glob(pattern)), pattern)
        if not found:
            raise InputError(f"no file matches {pattern!r}; check the --input pattern "
                             f"(names starting with _ or . are not data){_bracket_hint(pattern)}")
        _check_no_table(found)
        return found
    if is_local_folder(pattern) or (pattern.endswith("/") and not is_local(pattern)):
        return _folder(pattern)
    found = [m for m in _match(escaped(pattern)) if m[0].rstrip("/") == pattern.rstrip("/")]
    if found:
        return found
    # On object stores (gs://) a folder is only a prefix: try it as one.
    if _match(FileSystems.join(escaped(pattern), "*")):
        return _folder(pattern)
    raise InputError(f"no file or folder {pattern!r}; check the --input path")


def _bracket_hint(pattern: str) -> str:
    """Where a glob that matched nothing has a folder with "[" in its name
    that exists as written ("runs [v2]/*.parquet"), how to match it: a glob
    reads [v2] as one of the characters v and 2."""
    if not is_local(pattern):
        return ""
    parts = pattern.split("/")
    for i, part in enumerate(parts[:-1]):
        literal = "/".join(parts[:i + 1])
        if "[" in part and os.path.isdir(literal):
            quoted = "/".join([escaped(literal), *parts[i + 1:]])
            return (f"; in a glob, [...] matches one of the characters within, so to match "
                    f"the folder {literal!r} write its [ as [[]: {quoted!r}")
    return ""


def _check_filesystem(pattern: str) -> None:
    """Raises InputError where Beam has no file system for the pattern's
    scheme (unknown, or its extra not installed): Beam raises it from any
    call, not only from a listing; or where a gs:// one's host cannot be
    reached (check_gcs_reached)."""
    missing = missing_extra(pattern)
    if missing:
        raise InputError(f"cannot read --input {pattern!r}: {missing}")
    try:
        FileSystems.get_filesystem(pattern)
    except Exception as err:  # Beam raises ValueError or BeamIOError
        raise InputError(f"cannot read --input {pattern!r}: {first_line(err)}; give a local "
                         "path or a gs:// one") from err
    check_gcs_reached(pattern)


# Offline, a gs:// --input was said after Beam's 21 s search for
# credentials and Google's storage client's 120 s of retries (104-141 s in
# all; docs/design.md, "The fitter", An offline gs:// input), and so were
# a gs:// --output and --previous_output. Their host is first asked for at
# the socket level, tries REACH_TRIES seconds apart, each waiting at most
# CONNECT_TIMEOUT_S for any of the host's addresses to connect, all asked at
# once (one at a time, a network that drops packets held each try 10 s per
# address: 36-66 s in all, said as 6): where it is never resolved or
# connected to, the run stops then, saying how long the tries took. Anything the host answers,
# however slowly, goes on to the client and its retries (an HTTP error, 429
# or 503, is answered over a connection); a proxy the client would use
# (the environment's or, on macOS, the system's, unless NO_PROXY exempts
# the host) or another endpoint is the client's to reach. A host that answered is not
# asked again for REACHED_FOR_S: the three options of a run share it, and
# offline each would take the 6 s (one that did not answer is asked again,
# so an optional --previous_output is not dropped on another's word).
GCS_HOST = ("storage.googleapis.com", 443)
REACH_TRIES = (0.0, 2.0, 4.0)  # pauses before each try: 6 s and 3 connection timeouts at most
# A try's wait for a connection: three SYNs at Linux's initial 1 s
# retransmission timeout (sent at 0, 1 and 3 s); with the pauses 21 s at
# most where packets are dropped, plus the resolver's own time (its
# resolv.conf timeouts).
CONNECT_TIMEOUT_S = 5.0
REACHED_FOR_S = 600.0
# Another endpoint in the environment (an emulator, a private one).
_CLIENT_ENDPOINTS = ("STORAGE_EMULATOR_HOST", "API_ENDPOINT_OVERRIDE")
_REACHED: dict[tuple[str, int], float] = {}  # host -> when it last answered (time.monotonic)


def gcs_unreached(path: str) -> Optional[str]:
    """Where path is on gs:// and Cloud Storage's host (GCS_HOST) can
    neither be resolved nor connected to in len(REACH_TRIES) tries, that in
    words, with what to do; else None: not gs://, the client would go
    elsewhere (`_client_routed`), or the host answered (now, or in the last
    REACHED_FOR_S)."""
    if FileSystems.get_scheme(path) != "gs" or _client_routed():
        return None
    host = tuple(GCS_HOST)
    answered = _REACHED.get(host)
    if answered is not None and time.monotonic() - answered < REACHED_FOR_S:
        return None
    began = time.monotonic()
    for pause in REACH_TRIES:
        time.sleep(pause)
        try:
            connect_any(socket.getaddrinfo(*host, type=socket.SOCK_STREAM), CONNECT_TIMEOUT_S)
            _REACHED[host] = time.monotonic()
            return None
        except OSError as err:
            failed = err
    took = time.monotonic() - began
    name, port = host
    return (f"Cloud Storage's {name}:{port} cannot be reached ({type(failed).__name__}: "
            f"{failed}; {len(REACH_TRIES)} tries over {took:.{1 if took < 10 else 0}f} s): "
            "check this machine's network, DNS or proxy (HTTPS_PROXY), then run again")


def connect_any(addresses: list, timeout: float) -> None:
    """Connects to all of `addresses` (socket.getaddrinfo's tuples) at once
    and returns as soon as one accepts, closing every socket; raises the
    last error where none did (TimeoutError: none answered within
    `timeout` seconds)."""
    failed: OSError = TimeoutError("timed out")
    with selectors.DefaultSelector() as waiting:  # not select.select: fds past 1024
        try:
            for family, kind, proto, _, address in addresses:
                s = socket.socket(family, kind, proto)
                s.setblocking(False)
                code = s.connect_ex(address)
                if code in (0, errno.EINPROGRESS, errno.EWOULDBLOCK):
                    waiting.register(s, selectors.EVENT_WRITE)
                else:
                    s.close()
                    failed = OSError(code, os.strerror(code))
            deadline = time.monotonic() + timeout
            while waiting.get_map():
                ready = waiting.select(max(0.0, deadline - time.monotonic()))
                if not ready:
                    break  # the timeout
                for key, _ in ready:
                    code = key.fileobj.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    if code == 0:
                        return
                    waiting.unregister(key.fileobj)
                    key.fileobj.close()
                    failed = ConnectionRefusedError(code, os.strerror(code)) \
                        if code == errno.ECONNREFUSED else OSError(code, os.strerror(code))
        finally:
            for key in list(waiting.get_map().values()):
                key.fileobj.close()
    raise failed


def check_gcs_reached(pattern: str) -> None:
    """Raises InputError where the --input pattern is on gs:// and Cloud
    Storage cannot be reached (gcs_unreached)."""
    unreached = gcs_unreached(pattern)
    if unreached:
        raise InputError(f"cannot read --input {pattern!r}: {unreached}")


def _client_routed() -> bool:
    """Whether Google's client would not connect to GCS_HOST itself: an
    endpoint set in the environment (_CLIENT_ENDPOINTS), or an HTTPS proxy
    the host is not exempt from, found as requests finds them
    (urllib.request.getproxies and proxy_bypass: HTTPS_PROXY, ALL_PROXY and
    NO_PROXY in any case, and on macOS the System Settings' proxies)."""
    if any(os.environ.get(name) for name in _CLIENT_ENDPOINTS):
        return True
    proxies = urllib.request.getproxies()
    if not (proxies.get("https") or proxies.get("all")):
        return False
    return not urllib.request.proxy_bypass(GCS_HOST[0])


def _folder(path: str) -> list[tuple[str, int]]:
    glob = FileSystems.join(escaped(path.rstrip("/")), "*")
    check_listable(glob)
    found = _data_files(_match(glob), glob)
    if not found:
        # An Iceberg or Hudi table's root holds its parts in folders below:
        # the glob advised below would read every version of them. (A name
        # in the folder: its folders are the folder and those above.)
        check_no_table([FileSystems.join(path.rstrip("/"), "*")])
        raise InputError(f"folder {path!r} holds no data files; put the Parquet files directly "
                         f"in it or give a glob such as '{path.rstrip('/')}/**/*.parquet'")
    _check_no_table(found)
    return found


# Files whose folders are asked whether they are a table format's, at most,
# on an object store (a listing per folder asked): the launch's cost must not
# grow with the input.
MAX_TABLE_PROBES = 16


def _check_no_table(found: list[tuple[str, int]]) -> None:
    """Refuses a folder or glob that reaches into a table format's folder
    (Delta Lake, Iceberg, Hudi: tables.check_no_table), where every
    version's parts lie beside the current ones (docs/design.md,
    "Contracts"). A file named explicitly is read as asked."""
    paths = [path for path, _ in found]
    check_no_table(paths if is_local(paths[0]) else sample(paths, MAX_TABLE_PROBES))


def check_listable(glob: str) -> None:
    """Raises InputError where a local folder that the glob reaches cannot
    be listed (no permission): Beam's listing passes over it without a
    word, and the files in it were left out of the run (docs/design.md,
    "Contracts"). Walks the folders the glob can reach, as Beam's listing
    does, but only those: a folder of names starting with "_" or "." that a
    wildcard reaches is no data (is_data), and is not entered."""
    if not is_local(glob):
        return
    parts = os.path.abspath(glob).split("/")
    fixed = next((i for i, part in enumerate(parts) if has_wildcard(part)), len(parts) - 1)
    root = re.sub(r"\[([*?[])\]", r"\1", "/".join(parts[:fixed])) or "/"
    wild = parts[fixed:]  # the last is the files' level: no folder there is entered

    def reached(names: list[str]) -> bool:
        for i, name in enumerate(names):
            if "**" in wild[i]:
                return not name.startswith(("_", "."))
            if i == len(wild) - 1 or not fnmatch.fnmatchcase(name, wild[i]):
                return False
            if name.startswith(("_", ".")) and not wild[i].startswith(("_", ".")):
                return False
        return True

    refused: list[OSError] = []
    for folder, subfolders, _ in os.walk(root, onerror=refused.append):
        if refused:
            break
        names = [] if folder == root else os.path.relpath(folder, root).split("/")
        subfolders[:] = [name for name in subfolders if reached(names + [name])]
    for err in refused:
        if err.errno in (errno.EACCES, errno.EPERM):
            raise InputError(f"cannot list the folder {err.filename}, which --input reaches: "
                             f"{err.strerror}; its files would be left out of the run. Make it "
                             "readable by this user, or give an --input glob that leaves it out")


def _match(pattern: str) -> list[tuple[str, int]]:
    """[(path, size)] matching pattern, named as the pattern names them."""
    asked = listable(pattern)
    try:
        result = FileSystems.match([asked])[0]
    except Exception as err:  # Beam raises BeamIOError for bad paths and schemes
        raise InputError(f"cannot list {pattern!r}: {listing_failure(err)}") from err
    added = len(asked) - len(pattern)  # "./" before a relative glob
    return sorted((m.path[added:] if m.path.startswith(asked[:added]) else m.path,
                   m.size_in_bytes) for m in result.metadata_list)


def _data_files(matches: list[tuple[str, int]], glob: str) -> list[tuple[str, int]]:
    return [(path, size) for path, size in matches if is_data(path, glob)]


def is_local(path: str) -> bool:
    return FileSystems.get_scheme(path) is None


def is_local_folder(path: str) -> bool:
    return is_local(path) and os.path.isdir(path)

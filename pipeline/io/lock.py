"""One run per output folder: the lock file <output>/_RUNNING.json.

A run writes the lock before it clears the folder, refreshes its heartbeat
while it waits for the job, and removes it at the end; the job removes it
too, after writing the manifest, for launchers that do not wait (a Flex
Template). A second run that finds a lock refuses (exit code 4) and names
the run holding it. A lock whose heartbeat is older than STALE_AFTER_S is
left by a run that stopped (crashed, killed, or a launcher that does not
wait): it still refuses, and --break_lock takes it over. One case is
certain and needs no option: a local run (the job ran inside its process)
on this host whose process no longer exists (no process has its pid, or
the one that has it started at another time since boot) is over, and its
lock is taken over at once; a Dataflow job may outlive its launcher, so a
remote run's lock never is.

A lock that cannot be read (empty or cut short: what a full disk or a kill
between creating and writing it leaves) names no run. A run writes its
lock in one go, so one that has been unreadable for UNREADABLE_AFTER_S is
no live run's: it is taken over, with a warning; younger, it refuses as a
run starting just now would (--break_lock takes it over at once).

Locally the lock is created exclusively (O_EXCL). On gs:// it is checked,
then written: two runs started within the same second may both pass, which
the heartbeat does not prevent (docs/design.md, "Output folder").

Refusals are FolderBusy (exit code 4); a lock the storage will not let us
write is a StorageError (exit code 5), and no half-written lock is left.
"""
from __future__ import annotations

import dataclasses
import datetime
import errno
import json
import logging
import os
import socket
import sys
import threading
import time
import uuid
from typing import Callable, Optional

from apache_beam.io.filesystems import FileSystems

from pipeline.io import stops
from pipeline.io.errors import FolderBusy, StorageError, storage_error
from pipeline.io.files import open_file, write_whole
from pipeline.io.outputs import LOCK_NAME, TEMPORARY_SUFFIX

_LOG = logging.getLogger("gpfit")

REFRESH_S = 60.0
STALE_AFTER_S = 600.0  # ten missed heartbeats
# A run writes its lock within milliseconds of creating it: one unreadable
# for a minute was left by a run that stopped (or a full disk), not a live run.
UNREADABLE_AFTER_S = 60.0


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


def path_of(output: str) -> str:
    return FileSystems.join(output.rstrip("/"), LOCK_NAME)


def _parsed(path: str):
    """The JSON at path, or None where there is no file; raises OSError
    (BeamIOError) or ValueError (not JSON, half written)."""
    if not FileSystems.exists(path):
        return None
    with open_file(path) as f:
        return json.loads(f.read().decode("utf-8"))


def read(output: str) -> Optional[dict]:
    """The lock's content; None when there is none (or it vanished), or it
    cannot be read (empty, cut short, not gpfit's JSON)."""
    try:
        found = _parsed(path_of(output))
    except (OSError, ValueError):
        return None  # removed while read, or half written: treated as absent
    if not isinstance(found, dict) or not isinstance(found.get("heartbeat_at"), (int, float)):
        return None  # not a lock gpfit wrote in full
    return found


def check(output: str, break_lock: bool, now: Callable[[], float] = time.time) -> None:
    """Refuses a folder another run is writing.

    Raises:
      FolderBusy: a live lock (see Holder.live); or a stale one without
        break_lock.
    """
    try:
        found = _found(output, now)
    except OSError:
        return  # cannot be asked: the lock's write that follows says why
    if found is None or found.ended:
        return
    if found.held is None:
        if found.live and not break_lock:
            raise FolderBusy(f"output folder {output} holds a lock {LOCK_NAME} that cannot be "
                             f"read yet (written {found.age:.0f} s ago: a gpfit run may be "
                             "starting); run again in a minute, or pass --break_lock if no run "
                             "is writing the folder")
        return
    held, age, who = found.held, found.age, _who(found.held)
    if found.live:
        raise FolderBusy(f"output folder {output} is being written by another gpfit run "
                         f"({who}; heartbeat {age:.0f} s ago); wait for it to finish or give "
                         "another --output")
    if not break_lock:
        state = _state_here(held)
        if state is not None:  # alive, and known to be: --break_lock would make two writers
            pid = held.get("pid")
            raise FolderBusy(f"output folder {output} holds the lock {LOCK_NAME} of a gpfit "
                             f"run whose heartbeat stopped {age / 60:.0f} min ago, but its "
                             f"process {pid} is still there on this host ({state}; {who}); "
                             f"resume it (fg, or kill -CONT {pid}) or end it (kill {pid}), "
                             "then run again")
        raise FolderBusy(f"output folder {output} holds the lock {LOCK_NAME} of a gpfit run "
                         f"that seems to have stopped ({who}; last heartbeat {age / 60:.0f} "
                         "min ago); if no run is writing the folder, pass --break_lock")


@dataclasses.dataclass(frozen=True)
class _Found:
    """A folder's lock, read once for check() and holder() alike.

    Attributes:
      held: its content; None where it cannot be read.
      age: seconds since its heartbeat (an unreadable lock: since the file
        was written; None where that is unknown).
      ended: a local run's on this host whose process is gone.
    """

    held: Optional[dict]
    age: Optional[float]
    ended: bool

    @property
    def live(self) -> bool:
        """The run may be writing the folder now: a recent heartbeat (an
        unreadable lock: younger than UNREADABLE_AFTER_S), its process not
        known to be gone."""
        if self.held is None:
            return self.age is not None and self.age < UNREADABLE_AFTER_S
        return not self.ended and self.age < float(self.held.get("stale_after_s",
                                                                 STALE_AFTER_S))


def _found(output: str, now: Callable[[], float]) -> Optional[_Found]:
    """The folder's lock; None without one. Raises what the file system
    raises on asking whether it is there."""
    if not FileSystems.exists(path_of(output)):
        return None
    held = read(output)
    if held is None:
        return _Found(None, _age(output, now), False)
    return _Found(held, now() - float(held.get("heartbeat_at", 0)), _ended_here(held))


@dataclasses.dataclass(frozen=True)
class Holder:
    """The run a folder's lock names, as another run's reader sees it.

    Attributes:
      said: "run <id> on host <h>, pid <p>, started <iso>; heartbeat 5 s ago",
        or what is known of a lock that cannot be read.
      started_at: when it took the lock, seconds since the epoch (an
        unreadable lock's: when it was written); None if unknown.
      live: its heartbeat is recent (an unreadable lock: it is younger than
        UNREADABLE_AFTER_S) and its process is not known to be gone: the
        run may be writing the folder now.
    """

    said: str
    started_at: Optional[float]
    live: bool


def holder(folder: str, now: Callable[[], float] = time.time) -> Optional[Holder]:
    """The run holding folder's lock (a local run's on this host whose
    process is gone is over for certain: not live); None without a lock."""
    try:
        found = _found(folder, now)
    except Exception:  # pylint: disable=broad-except  (no file system for it: said by the caller)
        return None
    if found is None:
        return None
    if found.held is None:
        said = ("a lock that cannot be read" if found.age is None
                else f"a lock that cannot be read, written {found.age:.0f} s ago")
        return Holder(said, None if found.age is None else now() - found.age, found.live)
    started = float(found.held.get("started_at", 0))
    if found.ended:
        return Holder(f"{_who(found.held)}; its process is gone", started, False)
    return Holder(f"{_who(found.held)}; heartbeat {found.age:.0f} s ago", started, found.live)


def started_after(held: Holder, found: dict) -> bool:
    """held's run took the lock after the manifest `found` was written: a
    run that clears the folder next, not the run that wrote it (which holds
    its lock until just after; finished_at is rounded down to the second)."""
    try:
        finished = datetime.datetime.fromisoformat(found["finished_at"]).timestamp()
    except (KeyError, TypeError, ValueError):  # an older manifest: any live lock is another run's
        return True
    return held.started_at is None or held.started_at >= finished + 1.0


def _who(held: dict) -> str:
    return (f"run {held.get('run_id')} on host {held.get('host')}, pid {held.get('pid')}, "
            f"started {_iso(held.get('started_at', 0))}")


def acquire(output: str, run_id: str, break_lock: bool, local: bool,
            now: Callable[[], float] = time.time) -> None:
    """Checks (see check), then writes the lock for run_id; `local`: the job
    runs inside this process.

    Raises:
      FolderBusy: the folder is locked, or another run took the lock first.
      StorageError: the lock cannot be written (full disk, read-only, ...).
      UsageError: a folder above the output is a file.
    """
    check(output, break_lock, now)
    try:
        _take_over(output, now)
        started = now()
        content = {"run_id": run_id, "host": socket.gethostname(), "pid": os.getpid(),
                   "pid_start": process_start(os.getpid()), "local": local,
                   "started_at": started, "heartbeat_at": started,
                   "stale_after_s": STALE_AFTER_S}
        if FileSystems.get_scheme(output) is None:
            _create_local(output, content, now)
        else:
            _write(output, content)
        _keep_spare()
    except (FolderBusy, StorageError):
        raise
    except OSError as err:  # BeamIOError is one too
        raise storage_error(err, output) or err


def _take_over(output: str, now: Callable[[], float]) -> None:
    """Removes the lock check() let through: a stopped run's, or an unreadable one."""
    if not FileSystems.exists(path_of(output)):
        return
    held = read(output)
    if held is None:
        age = _age(output, now)
        _LOG.warning("gpfit: the lock %s in %s cannot be read (empty or cut short, as a full "
                     "disk or a killed run leaves it; %s old): taken over", LOCK_NAME, output,
                     "unknown" if age is None else f"{age:.0f} s")
    elif _ended_here(held):
        # Taken over without --break_lock: said, as that run was lost and
        # nothing else tells the operator.
        _LOG.warning("gpfit: the lock %s in %s was left by %s, whose process is gone (killed, "
                     "or crashed): taken over; that run wrote no manifest, and its files are "
                     "replaced (a run ends so when killed, out of memory, or out of file "
                     "descriptors: ulimit -n)", LOCK_NAME, output, _who(held))
    FileSystems.delete([path_of(output)])


def _create_local(output: str, content: dict, now: Callable[[], float]) -> None:
    """Creates the lock exclusively and writes it; on a failed or stopped
    write, removes it again (a half lock would refuse the next run for a
    minute)."""
    path = path_of(output)
    data = json.dumps(content).encode("utf-8")  # before the create: the unwritten lock's time
    # A stop (SIGTERM, Ctrl-C) waits for the lock to be whole or removed:
    # one arriving in the open call raised as it returned, before its
    # descriptor was kept, and the empty lock refused the next run for a
    # minute (docs/design.md, "The fitter", A stop while the lock is written).
    with stops.deferred():
        try:
            fd = _created(output, path)
        except FileExistsError:
            check(output, False, now)  # names the winner
            raise FolderBusy(f"output folder {output} was locked by another gpfit run just "
                             "now; wait for it to finish or give another --output") from None
        try:
            while data:
                data = data[os.write(fd, data):]
            os.fsync(fd)  # a full disk answers here at the latest
        except BaseException:
            os.close(fd)
            os.unlink(path)
            raise
        os.close(fd)


def _created(output: str, path: str) -> int:
    """Makes the output folder and creates the lock in it exclusively; -> its
    descriptor. A run into the same new folder that stopped removes the
    folders it made while empty: between this makedirs and the create it
    may remove this one, and the create fails; made again once, where a
    second removal is said as a busy folder (docs/design.md, "The fitter",
    A stop of a run into a new folder).

    Raises:
      FileExistsError: another run's lock is there.
      FolderBusy: the folder was removed twice as the lock was created."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    try:
        os.makedirs(output, exist_ok=True)
        return os.open(path, flags, 0o644)
    except FileNotFoundError:  # removed in between: made again, once
        os.makedirs(output, exist_ok=True)
    try:
        return os.open(path, flags, 0o644)
    except FileNotFoundError:
        raise FolderBusy(f"output folder {output} was removed twice as this run created its "
                         "lock in it (another gpfit run into it ending, or a deletion); run "
                         "again once nothing else writes it") from None


def refresh(output: str, run_id: str, now: Callable[[], float] = time.time) -> bool:
    """Moves the heartbeat on; False when the lock is no longer run_id's."""
    held = read(output)
    if held is None or held.get("run_id") != run_id:
        return False
    held["heartbeat_at"] = now()
    _write(output, held)
    return True


# A descriptor this process keeps from taking its lock to releasing it, and
# closes to release it where the run has used up its descriptors (EMFILE:
# ulimit -n): release opens the lock to see that it is its own, and one
# such run, failed at exit 3, left its _RUNNING.json behind
# (docs/design.md, "The fitter", A lock released without descriptors).
_spare: Optional[int] = None
_spare_lock = threading.Lock()
_OUT_OF_DESCRIPTORS = (errno.EMFILE, errno.ENFILE)


def _keep_spare() -> None:
    global _spare
    with _spare_lock:
        if _spare is None:
            try:
                _spare = os.open(os.devnull, os.O_RDONLY)
            except OSError:
                pass  # none to spare now: release tries as it would have


def _close_spare() -> bool:
    """Closes the spare descriptor; whether there was one."""
    global _spare
    with _spare_lock:
        spare, _spare = _spare, None
    if spare is None:
        return False
    os.close(spare)
    return True


def release(output: str, run_id: str) -> None:
    """Removes the lock if run_id holds it; where this process is out of
    descriptors, with the one it kept spare since taking it."""
    try:
        if _release(output, run_id):
            return
        if _close_spare():
            _release(output, run_id)
    finally:
        _close_spare()


def _release(output: str, run_id: str) -> bool:
    """release once; False where the lock could not be opened for want of
    descriptors (EMFILE, ENFILE), True otherwise."""
    path = path_of(output)
    try:
        held = _parsed(path)
    except ValueError:
        return True  # half written: not this run's, which writes it whole
    except OSError as err:  # BeamIOError is one too, its cause the open's
        cause = err.__cause__ if isinstance(err.__cause__, OSError) else err
        return (err.errno or cause.errno) not in _OUT_OF_DESCRIPTORS
    if isinstance(held, dict) and held.get("run_id") == run_id:
        try:
            FileSystems.delete([path])
        except Exception:  # pylint: disable=broad-except  (removed meanwhile)
            pass
    return True


class Heartbeat:
    """Refreshes run_id's lock every `every_s` seconds on a daemon thread."""

    def __init__(self, output: str, run_id: str, every_s: float = REFRESH_S):
        self._output, self._run_id, self._every_s = output, run_id, every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="gpfit-lock", daemon=True)

    def __enter__(self) -> "Heartbeat":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _beat(self) -> None:
        while not self._stop.wait(self._every_s):
            try:
                if not refresh(self._output, self._run_id):
                    return
            except OSError:
                continue  # a missed beat; the next may succeed


def _age(output: str, now: Callable[[], float]) -> Optional[float]:
    """Seconds since the lock file was last written; None if unknown."""
    try:
        return max(0.0, now() - FileSystems.last_updated(path_of(output)))
    except Exception:  # pylint: disable=broad-except  (gone meanwhile, or no such metadata)
        return None


def _ended_here(held: dict) -> bool:
    """A local run on this host whose process is gone (killed, crashed), or
    whose pid another process has since taken."""
    if not held.get("local") or held.get("host") != socket.gethostname():
        return False
    if sys.platform == "win32":
        # os.kill(pid, 0) is no probe there: it ends process pid
        # (TerminateProcess). Not certain, as a lock of another host
        # (docs/design.md, "Runners and quiet runs").
        return False
    try:
        pid = int(held.get("pid", 0))
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (OSError, ValueError):
        return False  # alive under another user, or unknown: not certain
    # A container restarted after a SIGKILL keeps its host name and gives
    # the new gpfit the killed one's pid: alive, yet a later process (its
    # start since boot differs; ticks, not the wall clock, which may step).
    if "pid_start" not in held and pid == os.getpid():
        # gpfit 0.16.0 and earlier recorded no start: a lock naming this
        # process that it did not write (every lock this release writes has
        # pid_start) is certainly the killed one's.
        return True
    recorded, now = held.get("pid_start"), process_start(pid)
    return recorded is not None and now is not None and recorded != now


def _state_here(held: dict) -> Optional[str]:
    """What the process of a local run's lock on this host is doing, where it
    is certainly that run's (its pid, started when the lock records): a
    stale heartbeat then means a suspended (Ctrl-Z) or hung run, not a
    stopped one. None elsewhere, or where that cannot be told."""
    if not held.get("local") or held.get("host") != socket.gethostname():
        return None
    try:
        pid = int(held.get("pid", 0))
    except (TypeError, ValueError):
        return None
    fields = process_stat(pid) if pid > 0 else None
    if fields is None or held.get("pid_start") is None or int(fields[19]) != held["pid_start"]:
        return None
    return _STATES.get(fields[0], f"state {fields[0]}")


# /proc/<pid>/stat's state letters, as a stale lock's message says them.
_STATES = {"T": "stopped: suspended, e.g. by Ctrl-Z", "t": "stopped by a debugger",
           "D": "waiting on a disk or a network file system", "Z": "ended, not yet reaped"}


def process_start(pid: int) -> Optional[int]:
    """When process pid started, in clock ticks since boot (Linux's
    /proc/<pid>/stat, field 22); None where that cannot be read."""
    fields = process_stat(pid)
    return int(fields[19]) if fields else None


def process_stat(pid) -> Optional[list[str]]:
    """Linux's /proc/<pid>/stat from its third field on (state, parent pid,
    ...: the command's name, in (), may hold spaces); None where it cannot
    be read (the process is gone, no /proc)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        int(fields[19])  # a whole stat line, not one cut short
        return fields
    except (OSError, IndexError, ValueError):
        return None


def _write(output: str, content: dict) -> None:
    # Under a temporary name, then renamed: a reader never sees half a lock.
    # Never through a link planted at the temporary name (write_whole).
    write_whole(path_of(output), path_of(output) + TEMPORARY_SUFFIX,
                json.dumps(content).encode("utf-8"), "application/json")


def _iso(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(float(seconds), datetime.timezone.utc).isoformat(
        timespec="seconds")

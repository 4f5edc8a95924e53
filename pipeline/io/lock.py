"""One run per output folder: the lock file <output>/_RUNNING.json.

A run writes the lock before it clears the folder, refreshes its heartbeat
while it waits for the job, and removes it at the end; the job removes it
too, after writing the manifest, for launchers that do not wait (a Flex
Template). A second run that finds a lock refuses (exit code 2) and names
the run holding it. A lock whose heartbeat is older than STALE_AFTER_S is
left by a run that stopped (crashed, killed, or a launcher that does not
wait): it still refuses, and --break_lock takes it over. One case is
certain and needs no option: a local run (the job ran inside its process)
on this host whose process no longer exists is over, and its lock is taken
over at once; a Dataflow job may outlive its launcher, so a remote run's
lock never is.

Locally the lock is created exclusively (O_EXCL). On gs:// it is checked,
then written: two runs started within the same second may both pass, which
the heartbeat does not prevent (docs/design.md, "Contracts").
"""
from __future__ import annotations

import datetime
import json
import os
import socket
import threading
import time
import uuid
from typing import Callable, Optional

from apache_beam.io.filesystems import FileSystems

from pipeline.io.errors import UsageError
from pipeline.io.files import open_file
from pipeline.io.outputs import LOCK_NAME

REFRESH_S = 60.0
STALE_AFTER_S = 600.0  # ten missed heartbeats


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


def path_of(output: str) -> str:
    return FileSystems.join(output.rstrip("/"), LOCK_NAME)


def read(output: str) -> Optional[dict]:
    """The lock's content; None when there is none (or it vanished)."""
    path = path_of(output)
    try:
        if not FileSystems.exists(path):
            return None
        with open_file(path) as f:
            found = json.loads(f.read().decode("utf-8"))
    except (OSError, ValueError):
        return None  # removed while read, or half written: treated as absent
    return found if isinstance(found, dict) else None


def check(output: str, break_lock: bool, now: Callable[[], float] = time.time) -> None:
    """Refuses a folder another run is writing.

    Raises:
      UsageError: a lock with a recent heartbeat; or a stale one without
        break_lock.
    """
    held = read(output)
    if held is None or _ended_here(held):
        return
    age = now() - float(held.get("heartbeat_at", 0))
    who = (f"run {held.get('run_id')} on host {held.get('host')}, pid {held.get('pid')}, "
           f"started {_iso(held.get('started_at', 0))}")
    if age < float(held.get("stale_after_s", STALE_AFTER_S)):
        raise UsageError(f"output folder {output} is being written by another gpfit run "
                         f"({who}; heartbeat {age:.0f} s ago); wait for it to finish or give "
                         "another --output")
    if not break_lock:
        raise UsageError(f"output folder {output} holds the lock {LOCK_NAME} of a gpfit run "
                         f"that seems to have stopped ({who}; last heartbeat {age / 60:.0f} "
                         "min ago); if no run is writing the folder, pass --break_lock")


def acquire(output: str, run_id: str, break_lock: bool, local: bool,
            now: Callable[[], float] = time.time) -> None:
    """Checks (see check), then writes the lock for run_id; `local`: the job
    runs inside this process.

    Raises:
      UsageError: the folder is locked, or another run took the lock first.
    """
    check(output, break_lock, now)
    if read(output) is not None:  # a stopped run's lock, taken over
        FileSystems.delete([path_of(output)])
    started = now()
    content = {"run_id": run_id, "host": socket.gethostname(), "pid": os.getpid(),
               "local": local, "started_at": started, "heartbeat_at": started,
               "stale_after_s": STALE_AFTER_S}
    if FileSystems.get_scheme(output) is None:
        os.makedirs(output, exist_ok=True)
        try:
            fd = os.open(path_of(output), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            check(output, False, now)  # names the winner
            raise UsageError(f"output folder {output} was locked by another gpfit run just now")
        with os.fdopen(fd, "w") as f:
            json.dump(content, f)
    else:
        _write(output, content)


def refresh(output: str, run_id: str, now: Callable[[], float] = time.time) -> bool:
    """Moves the heartbeat on; False when the lock is no longer run_id's."""
    held = read(output)
    if held is None or held.get("run_id") != run_id:
        return False
    held["heartbeat_at"] = now()
    _write(output, held)
    return True


def release(output: str, run_id: str) -> None:
    """Removes the lock if run_id holds it."""
    held = read(output)
    if held is not None and held.get("run_id") == run_id:
        try:
            FileSystems.delete([path_of(output)])
        except Exception:  # pylint: disable=broad-except  (removed meanwhile)
            pass


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


def _ended_here(held: dict) -> bool:
    """A local run on this host whose process is gone (killed, crashed)."""
    if not held.get("local") or held.get("host") != socket.gethostname():
        return False
    try:
        os.kill(int(held.get("pid", 0)), 0)
    except ProcessLookupError:
        return True
    except (OSError, ValueError):
        return False  # alive under another user, or unknown: not certain
    return False


def _write(output: str, content: dict) -> None:
    # Under a temporary name, then renamed: a reader never sees half a lock.
    temporary = path_of(output) + ".tmp"
    with FileSystems.create(temporary, mime_type="application/json") as f:
        f.write(json.dumps(content).encode("utf-8"))
    FileSystems.rename([temporary], [path_of(output)])


def _iso(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(float(seconds), datetime.timezone.utc).isoformat(
        timespec="seconds")

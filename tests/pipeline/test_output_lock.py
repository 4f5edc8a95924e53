"""One run per output folder (pipeline.io.lock): two real concurrent runs,
a lock left by a run that stopped, and the heartbeat."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.io import lock
from pipeline.io.errors import FolderBusy, UsageError
from gpfit_runs import gpfit_with_hook
from pipeline_data import RUN_OPTIONS, gpfit

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _input(folder, n_series: int = 120) -> str:
    rng = np.random.default_rng(4)
    t = np.sort(rng.uniform(0, 100, 80))
    pq.write_table(pa.table({
        "series_id": np.repeat([f"k{i:03d}" for i in range(n_series)], t.size),
        "t": np.tile(t, n_series),
        "y": np.sin(np.tile(t, n_series) / 5) + 0.1 * rng.standard_normal(t.size * n_series)}),
        folder / "in.parquet")
    return str(folder / "in.parquet")


def test_a_second_run_into_a_folder_being_written_exits_4_and_names_the_first(tmp_path):
    input_, output = _input(tmp_path), str(tmp_path / "out")
    env = {**os.environ, "PYTHONPATH": REPO, "OPENBLAS_NUM_THREADS": "1"}
    first = subprocess.Popen([sys.executable, "-m", "pipeline", "--input", input_,
                              "--output", output, *RUN_OPTIONS], cwd=REPO, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        held = None
        for _ in range(1200):  # the first run takes the lock once its job is built
            held = lock.read(output)
            if held is not None or first.poll() is not None:
                break
            time.sleep(0.1)
        assert held is not None, first.communicate()
        second = gpfit(input_, output, *RUN_OPTIONS)
        out, err = first.communicate(timeout=600)
    finally:
        if first.poll() is None:
            first.kill()
    assert second.code == 4, second.stderr
    message = second.stderr.strip()
    assert message.startswith(f"gpfit: error: output folder {output} is being written by "
                              "another gpfit run")
    assert f"run {held['run_id']}" in message and f"pid {first.pid}" in message
    # The first run was not disturbed: complete output, and its lock removed.
    assert first.returncode == 0, err
    assert sorted(os.listdir(output)) == ["_SUCCESS.json", "params"]
    with open(os.path.join(output, "_SUCCESS.json")) as f:
        assert json.load(f)["counts"]["series_read"] == 120


def _stale_lock(output: str, age_s: float) -> dict:
    os.makedirs(output, exist_ok=True)
    content = {"run_id": "deadbeef0000", "host": "elsewhere", "pid": 4242,
               "started_at": time.time() - age_s - 60, "heartbeat_at": time.time() - age_s,
               "stale_after_s": lock.STALE_AFTER_S}
    with open(os.path.join(output, "_RUNNING.json"), "w") as f:
        json.dump(content, f)
    return content


def test_a_stopped_runs_lock_is_recognised_and_broken_only_on_request(tmp_path):
    input_, output = _input(tmp_path, n_series=3), str(tmp_path / "out")
    _stale_lock(output, age_s=2 * lock.STALE_AFTER_S)
    refused = gpfit(input_, output, *RUN_OPTIONS)
    assert refused.code == 4
    assert "seems to have stopped (run deadbeef0000 on host elsewhere, pid 4242" in \
        refused.stderr
    assert refused.stderr.strip().endswith("pass --break_lock")
    assert os.listdir(output) == ["_RUNNING.json"]  # untouched
    taken = gpfit(input_, output, *RUN_OPTIONS, "--break_lock")
    assert taken.code == 0, taken.stderr
    assert "_RUNNING.json" not in os.listdir(output)
    assert taken.manifest["counts"]["series_read"] == 3


def test_a_live_lock_is_never_broken(tmp_path):
    output = str(tmp_path / "out")
    _stale_lock(output, age_s=5.0)
    for break_lock in (False, True):
        with pytest.raises(UsageError, match="is being written by another gpfit run"):
            lock.acquire(output, "mine", break_lock, local=True)


def test_the_heartbeat_moves_and_only_the_holder_releases(tmp_path):
    output = str(tmp_path / "out")
    clock = iter([100.0, 200.0])
    lock.acquire(output, "mine", False, local=True, now=lambda: next(clock))
    assert lock.refresh(output, "mine", now=lambda: 250.0)
    assert lock.read(output)["heartbeat_at"] == 250.0
    assert not lock.refresh(output, "theirs")
    lock.release(output, "theirs")
    assert lock.read(output)["run_id"] == "mine"
    lock.release(output, "mine")
    assert lock.read(output) is None


def test_a_killed_local_runs_lock_is_taken_over_at_once(tmp_path):
    """A local run's job lives in its process: once that is gone (here, a
    process that has exited), its lock is certainly left over."""
    output = str(tmp_path / "out")
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    held = {**_stale_lock(output, age_s=1.0), "local": True, "host": lock.socket.gethostname(),
            "pid": int(gone.stdout)}
    with open(os.path.join(output, "_RUNNING.json"), "w") as f:
        json.dump(held, f)
    lock.acquire(output, "mine", False, local=True)
    assert lock.read(output)["run_id"] == "mine"
    # The same lock from a remote run (a Dataflow job may outlive its
    # launcher) is refused.
    with open(os.path.join(output, "_RUNNING.json"), "w") as f:
        json.dump({**held, "local": False}, f)
    with pytest.raises(UsageError, match="is being written by another gpfit run"):
        lock.acquire(output, "mine", False, local=True)


def test_a_killed_local_runs_lock_is_taken_over_with_a_warning(tmp_path, caplog):
    """The run after one that was killed (-9, the OOM killer) took its lock
    over without a word: the operator learnt nothing of a night lost. It now
    says whose lock it took and why; a stale lock broken on request
    (--break_lock) is the operator's own act and says nothing more."""
    output = str(tmp_path / "out")
    killed = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    killed.kill()
    killed.wait()
    held = {**_stale_lock(output, age_s=1.0), "local": True, "host": lock.socket.gethostname(),
            "pid": killed.pid}
    with open(os.path.join(output, "_RUNNING.json"), "w") as f:
        json.dump(held, f)
    with caplog.at_level("WARNING", logger="gpfit"):
        lock.acquire(output, "mine", False, local=True)
    assert lock.read(output)["run_id"] == "mine"
    said = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(said) == 1, said
    assert "run deadbeef0000" in said[0] and f"pid {killed.pid}" in said[0], said
    assert "is gone (killed, or crashed)" in said[0] and "taken over" in said[0], said
    caplog.clear()
    lock.release(output, "mine")
    _stale_lock(output, age_s=2 * lock.STALE_AFTER_S)
    with caplog.at_level("WARNING", logger="gpfit"):
        lock.acquire(output, "mine", True, local=True)
    assert not [r for r in caplog.records if r.levelname == "WARNING"]


def test_a_killed_runs_lock_is_taken_over_when_its_pid_is_reused(tmp_path):
    """A container restarted after a SIGKILL (out of memory) keeps its host
    name and gives the new gpfit the pid of the one killed: that pid is
    alive, but its process started after the lock's holder (another start
    time since boot), so the holder is certainly gone. Here the new run is
    this process, as it would be."""
    input_, output = _input(tmp_path, n_series=3), str(tmp_path / "out")
    held = {**_stale_lock(output, age_s=1.0), "local": True, "host": lock.socket.gethostname(),
            "pid": os.getpid(), "pid_start": 1}  # a process of the boot's first tick
    with open(os.path.join(output, "_RUNNING.json"), "w") as f:
        json.dump(held, f)
    taken = gpfit(input_, output, *RUN_OPTIONS)
    assert taken.code == 0, taken.stderr
    assert taken.manifest["counts"]["series_read"] == 3
    # The holder itself (its pid started when it says) is alive: refused.
    live = {**held, "pid": os.getpid(), "pid_start": lock.process_start(os.getpid())}
    with open(os.path.join(output, "_RUNNING.json"), "w") as f:
        json.dump(live, f)
    with pytest.raises(UsageError, match="is being written by another gpfit run"):
        lock.acquire(output, "mine", False, local=True)


def test_a_killed_older_releases_lock_naming_this_process_is_taken_over(tmp_path, caplog):
    """gpfit 0.16.0 and earlier wrote no pid_start. A container killed (out
    of memory) under such a release and restarted on an upgraded image
    keeps its host name, and the new gpfit gets the killed one's pid (pid
    1 as the entry point): its lock named this very process, which did not
    write it, and was refused as another run's for 10 minutes (exit 4,
    "wait for it to finish"), then needed --break_lock."""
    output = str(tmp_path / "out")
    older = {"run_id": "e0694d6c5fbc", "host": lock.socket.gethostname(), "pid": os.getpid(),
             "local": True, "started_at": time.time() - 30, "heartbeat_at": time.time() - 30,
             "stale_after_s": 600.0}  # 0.16.0's lock, field for field
    for age_s in (30.0, 2 * lock.STALE_AFTER_S):
        held = {**older, "heartbeat_at": time.time() - age_s}
        os.makedirs(output, exist_ok=True)
        with open(os.path.join(output, "_RUNNING.json"), "w") as f:
            json.dump(held, f)
        caplog.clear()
        with caplog.at_level("WARNING", logger="gpfit"):
            lock.acquire(output, "mine", False, local=True)
        assert lock.read(output)["run_id"] == "mine"
        said = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
        assert len(said) == 1 and "run e0694d6c5fbc" in said[0], said
        assert "whose process is gone" in said[0], said
        lock.release(output, "mine")
    # This release's own lock naming this process, started when it says, is
    # a live run's (the pid's start is what tells), as before.
    with open(os.path.join(output, "_RUNNING.json"), "w") as f:
        json.dump({**older, "heartbeat_at": time.time(),
                   "pid_start": lock.process_start(os.getpid())}, f)
    with pytest.raises(FolderBusy, match="is being written by another gpfit run"):
        lock.acquire(output, "mine", False, local=True)


@pytest.mark.parametrize("content", [b"", b'{"run_id": "ab', b"[]", b'{"run_id": "x"}'])
def test_an_unreadable_lock_does_not_wedge_the_folder(tmp_path, content):
    """What a full disk or a kill between creating and writing the lock
    leaves: it names no run. Young, it may be a run starting: refused (exit
    4), unless --break_lock; a minute old, no live run has it: taken over."""
    output = tmp_path / "out"
    output.mkdir()
    path = output / "_RUNNING.json"
    path.write_bytes(content)
    with pytest.raises(FolderBusy, match="cannot be read yet .* pass --break_lock"):
        lock.acquire(str(output), "mine", False, local=True)
    assert path.read_bytes() == content
    lock.acquire(str(output), "mine", True, local=True)
    assert lock.read(str(output))["run_id"] == "mine"
    path.write_bytes(content)
    old = time.time() - 2 * lock.UNREADABLE_AFTER_S
    os.utime(path, (old, old))
    lock.acquire(str(output), "theirs", False, local=True)
    assert lock.read(str(output))["run_id"] == "theirs"



def test_the_holder_as_another_runs_reader_sees_it(tmp_path):
    """What --previous_output says of a folder's lock (lock.holder): live
    or not, and who."""
    output = str(tmp_path / "out")
    assert lock.holder(output) is None
    _stale_lock(output, age_s=5.0)
    live = lock.holder(output)
    assert live.live and live.said.startswith("run deadbeef0000 on host elsewhere, pid 4242")
    _stale_lock(output, age_s=2 * lock.STALE_AFTER_S)
    assert not lock.holder(output).live
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    with open(os.path.join(output, "_RUNNING.json"), "w") as f:
        json.dump({**_stale_lock(output, age_s=1.0), "local": True,
                   "host": lock.socket.gethostname(), "pid": int(gone.stdout)}, f)
    ended = lock.holder(output)
    assert not ended.live and ended.said.endswith("its process is gone")
    with open(os.path.join(output, "_RUNNING.json"), "w") as f:
        f.write('{"run_id": "ab')
    unreadable = lock.holder(output)
    assert unreadable.live and unreadable.said.startswith("a lock that cannot be read, written")
    # Unreadable for a minute: no live run's (a run writes its lock at once).
    old = time.time() - 2 * lock.UNREADABLE_AFTER_S
    os.utime(os.path.join(output, "_RUNNING.json"), (old, old))
    assert not lock.holder(output).live


def test_the_check_refuses_exactly_the_locks_the_holder_calls_live(tmp_path):
    """check (a run into the folder) and holder (a reader of it) read a lock
    one way: each kind of lock is refused without --break_lock where the
    holder says live, and a stale one refused as well but not live."""
    output = str(tmp_path / "out")
    path = os.path.join(output, "_RUNNING.json")
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)

    def unreadable(age_s):
        with open(path, "w") as f:
            f.write('{"run_id": "ab')
        os.utime(path, (time.time() - age_s,) * 2)

    def ended():
        with open(path, "w") as f:
            json.dump({**_stale_lock(output, age_s=1.0), "local": True,
                       "host": lock.socket.gethostname(), "pid": int(gone.stdout)}, f)

    kinds = {"live": (lambda: _stale_lock(output, 5.0), True, True),
             "stale": (lambda: _stale_lock(output, 2 * lock.STALE_AFTER_S), False, True),
             "ended": (ended, False, False),
             "unreadable, young": (lambda: unreadable(1.0), True, True),
             "unreadable, old": (lambda: unreadable(2 * lock.UNREADABLE_AFTER_S), False, False)}
    for kind, (write, live, refused) in kinds.items():
        write()
        assert lock.holder(output).live is live, kind
        try:
            lock.check(output, break_lock=False)
        except FolderBusy:
            assert refused, kind
        else:
            assert not refused, kind
        if not live:  # a lock no run holds now is passed with --break_lock
            lock.check(output, break_lock=True)
        elif kind.startswith("unreadable"):
            lock.check(output, break_lock=True)  # too young to be sure: --break_lock takes it
        else:
            with pytest.raises(FolderBusy):
                lock.check(output, break_lock=True)


def test_a_run_that_finished_between_anothers_checks_and_its_lock_leaves_no_shard(
        tmp_path, monkeypatch):
    """Two runs into one folder: the second checks the folder (and lists the
    earlier files it will replace), then the first runs whole, with another
    shard count and forecasts, and releases the folder, then the second
    takes the lock. Its list, made before, named shards the first run had
    deleted and lacked those it wrote: the second deleted the first's
    _SUCCESS.json, then failed "unexpectedly" (Delete operation failed,
    exit 3), and the first's forecasts would have stayed beside its output.
    The files are listed under the lock."""
    from gpfit_runs import files_in, gpfit_here, read_rows
    from pipeline import cli

    input_, output = _input(tmp_path, n_series=12), str(tmp_path / "out")
    assert gpfit_here(input_, output, "--batch_size", "4").code == 0  # last night's
    real_acquire, ran = cli.lock.acquire, []

    def first_run_then_acquire(*args, **kwargs):
        if not ran:  # the first run, start to end, inside the second's window
            ran.append(None)
            ran[0] = gpfit_here(input_, output, "--batch_size", "4", "--num_shards", "3",
                                "--predict_steps", "2")
        return real_acquire(*args, **kwargs)

    monkeypatch.setattr(cli.lock, "acquire", first_run_then_acquire)
    second = gpfit_here(input_, output, "--batch_size", "4")
    assert ran[0].code == 0, ran[0].stderr
    assert second.code == 0, second.stderr
    ids = sorted(row["series_id"] for row in read_rows(output))
    assert ids == [f"k{i:03d}" for i in range(12)], ids  # each once
    assert second.manifest["output_files"] == ["params/part-00000-of-00001.parquet"]
    assert files_in(output) == ["_SUCCESS.json", "params/part-00000-of-00001.parquet"]


def test_a_stale_lock_whose_process_is_still_here_names_it_and_does_not_advise_breaking(
        tmp_path):
    """A run suspended with Ctrl-Z (SIGSTOP) beats no more: after 10 minutes
    its lock was called a stopped run's, "pass --break_lock", and a run
    taking it over would write beside the suspended one once resumed. Its
    process is known to be there (this host, its pid and start time)."""
    import signal
    import socket
    input_, output = _input(tmp_path, n_series=3), str(tmp_path / "out")
    suspended = subprocess.Popen(["sleep", "600"])
    try:
        os.kill(suspended.pid, signal.SIGSTOP)
        content = {**_stale_lock(output, age_s=2 * lock.STALE_AFTER_S),
                   "host": socket.gethostname(), "pid": suspended.pid, "local": True,
                   "pid_start": lock.process_start(suspended.pid)}
        with open(os.path.join(output, "_RUNNING.json"), "w") as f:
            json.dump(content, f)
        for _ in range(100):  # the stop is delivered asynchronously
            if (lock.process_stat(suspended.pid) or ["?"])[0] == "T":
                break
            time.sleep(0.05)
        refused = gpfit(input_, output, *RUN_OPTIONS)
    finally:
        suspended.kill()
        suspended.wait()
    assert refused.code == 4, refused.stderr
    line = refused.stderr.strip().splitlines()[-1]
    assert f"its process {suspended.pid} is still there on this host (stopped: " \
           "suspended, e.g. by Ctrl-Z; run deadbeef0000" in line, line
    assert f"kill -CONT {suspended.pid}" in line and "--break_lock" not in line, line
    assert os.listdir(output) == ["_RUNNING.json"]  # untouched


def test_a_lock_taken_within_the_manifests_second_is_the_writers():
    """finished_at is rounded down to the second: a lock taken less than a
    second after it may be the writing run's own (not another run's, which
    would clear the folder); one taken a second or more after is another's."""
    found = {"finished_at": "2026-12-06T23:00:00+00:00"}
    finished = 1796598000.0  # that instant, in seconds since the epoch
    assert lock._iso(finished) == found["finished_at"]
    assert not lock.started_after(lock.Holder("writer", finished + 0.5, True), found)
    assert lock.started_after(lock.Holder("next run", finished + 1.0, True), found)
    assert lock.started_after(lock.Holder("unknown", None, True), found)
    assert lock.started_after(lock.Holder("any", finished - 5, True), {})  # an older manifest


def test_a_lock_created_between_the_check_and_the_create_wins(tmp_path):
    """Two runs pass the check at once; the exclusive create lets one take
    the lock: the other is refused naming the winner, whose lock is left
    as it wrote it."""
    output = str(tmp_path / "out")
    winner = _stale_lock(output, age_s=1.0)
    with pytest.raises(FolderBusy, match="run deadbeef0000 on host elsewhere"):
        lock._create_local(output, {"run_id": "loser", "heartbeat_at": time.time()}, time.time)
    assert lock.read(output) == winner


def test_a_local_lock_whose_process_cannot_be_told_is_not_taken_over(tmp_path):
    """A local lock on this host whose pid cannot be checked (not a number
    here; a process of another user likewise) is not certainly over: with a
    recent heartbeat it refuses, as any live lock."""
    output = str(tmp_path / "out")
    held = {**_stale_lock(output, age_s=1.0), "local": True, "host": lock.socket.gethostname(),
            "pid": "4242x"}
    with open(os.path.join(output, "_RUNNING.json"), "w") as f:
        json.dump(held, f)
    with pytest.raises(FolderBusy, match="is being written by another gpfit run"):
        lock.acquire(output, "mine", False, local=True)
    assert lock.read(output) == held


def test_a_remote_runs_stale_lock_is_judged_by_its_heartbeat_alone(tmp_path):
    """A Dataflow job outlives its launcher: the launcher's process on this
    host (here suspended, its pid and start time the lock's) says nothing
    of the job, so a stale heartbeat reads as a stopped run's."""
    import signal
    output = str(tmp_path / "out")
    suspended = subprocess.Popen(["sleep", "600"])
    try:
        os.kill(suspended.pid, signal.SIGSTOP)
        content = {**_stale_lock(output, age_s=2 * lock.STALE_AFTER_S),
                   "host": lock.socket.gethostname(), "pid": suspended.pid, "local": False,
                   "pid_start": lock.process_start(suspended.pid)}
        with open(os.path.join(output, "_RUNNING.json"), "w") as f:
            json.dump(content, f)
        with pytest.raises(FolderBusy, match="seems to have stopped .* pass --break_lock$"):
            lock.check(output, break_lock=False)
    finally:
        suspended.kill()
        suspended.wait()


def test_a_lock_that_cannot_be_written_in_full_is_not_left(tmp_path):
    """A write that fails once the lock is created (a full disk; here the
    process's file-size limit, EFBIG) removes the lock again: half a lock
    would refuse the next run for a minute."""
    output = str(tmp_path / "out")
    script = (
        "import resource, signal, sys\n"
        "from pipeline.io import lock\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (16, resource.RLIM_INFINITY))\n"
        "try:\n"
        f"    lock.acquire({output!r}, 'mine', False, local=True)\n"
        "except Exception as err:\n"
        "    sys.exit(f'refused: {type(err).__name__}: {err}')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=REPO), timeout=120)
    assert done.returncode == 1 and done.stderr.startswith("refused: "), done.stderr
    assert "File too large" in done.stderr
    assert os.listdir(output) == []


def test_the_heartbeat_never_writes_through_a_link_planted_at_its_temporary_name(tmp_path):
    output, victim = tmp_path / "out", tmp_path / "elsewhere.txt"
    victim.write_text("the user's file\n")
    lock.acquire(str(output), "mine", False, local=True, now=lambda: 100.0)
    os.symlink(victim, output / (lock.LOCK_NAME + ".tmp"))
    assert lock.refresh(str(output), "mine", now=lambda: 250.0)
    assert victim.read_text() == "the user's file\n"
    assert lock.read(str(output))["heartbeat_at"] == 250.0
    assert os.listdir(output) == [lock.LOCK_NAME] and not (output / lock.LOCK_NAME).is_symlink()


_RELEASE_WITHOUT_DESCRIPTORS = """
import os, resource, sys
from pipeline.io import lock
output = sys.argv[1]
lock.acquire(output, "mine", False, local=True)
resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
held = []
try:
    while True:
        held.append(os.open(os.devnull, os.O_RDONLY))
except OSError as err:
    print("out of descriptors:", err.strerror)
lock.release(output, "mine")
print("released" if not os.path.exists(lock.path_of(output)) else "left")
"""


def test_a_run_whose_descriptors_ran_out_still_releases_its_lock(tmp_path):
    """A run that met EMFILE mid-job (ulimit -n 10, 400 input files,
    --direct_num_workers 2 multi_threading: "the pipeline failed: [Errno
    24] Too many open files", exit 3) left _RUNNING.json: release could not
    open the lock to see it was its own, and said nothing."""
    output = str(tmp_path / "out")
    done = subprocess.run([sys.executable, "-c", _RELEASE_WITHOUT_DESCRIPTORS, output],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["out of descriptors: Too many open files",
                                           "released"], done.stdout
    assert not os.path.exists(os.path.join(output, "_RUNNING.json"))


def test_a_run_out_of_descriptors_in_grpc_prints_only_gpfits_lines(tmp_path):
    """Out of descriptors mid-run (ulimit -n 10, two workers of the local
    runner in one process: multi_processing is refused under 44), gRPC's C++ core wrote its own lines on
    stderr ("E1207 ... posix_interface_posix.cc:168] socket(10, 1, 0)
    returned -1 with error: |Too many open files| ...", 3 lines), and
    gpfit's line said only "Failed to bind to address [::]:0; set
    GRPC_VERBOSITY=debug ...". Now stderr holds gpfit's lines alone, and
    the last one names the descriptor limit."""
    import resource

    # One file: 400 of them ran out in the input's check as often (exit 2, said).
    folder = tmp_path / "in"
    folder.mkdir()
    pq.write_table(pa.table({"series_id": [f"s{i}" for i in range(40) for _ in range(6)],
                             "t": np.tile(np.arange(6.0), 40), "y": np.sin(np.arange(240.0))}),
                   folder / "a.parquet")
    output = str(tmp_path / "out")
    env = {**os.environ, "PYTHONPATH": REPO, "OPENBLAS_NUM_THREADS": "1"}
    env.pop("GRPC_VERBOSITY", None)

    def at_most_10_files():
        resource.setrlimit(resource.RLIMIT_NOFILE, (10, resource.getrlimit(
            resource.RLIMIT_NOFILE)[1]))

    done = subprocess.run([sys.executable, "-m", "pipeline", "--input", str(folder), "--output",
                           output, "--direct_num_workers", "2", "--direct_running_mode",
                           "multi_threading"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300, preexec_fn=at_most_10_files, check=False)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 3, done.stderr
    assert [line for line in lines if not line.startswith("gpfit: ")
            and " gpfit: " not in line] == [], done.stderr
    assert lines[-1].startswith("gpfit: error: ") and "ulimit -n" in lines[-1], done.stderr
    assert not os.path.exists(os.path.join(output, "_RUNNING.json"))


def test_grpcs_own_lines_are_off_below_debug_unless_set():
    """GRPC_VERBOSITY=NONE below --log_level debug; debug, or a value the
    environment gives, leaves gRPC's setting alone."""
    from pipeline.io.beam_import import quiet_grpc

    for argv, environ, expected in [
            (["--input", "x"], {}, "NONE"),
            (["--log_level", "warning"], {}, "NONE"),
            (["--log_level", "debug"], {}, None),
            (["--log_level=debug"], {}, None),
            (["--input", "x"], {"GRPC_VERBOSITY": "DEBUG"}, "DEBUG")]:
        quiet_grpc(argv, environ)
        assert environ.get("GRPC_VERBOSITY") == expected, argv


def test_a_lock_left_by_a_local_run_whose_process_is_gone_is_said_when_taken_over(
        tmp_path, caplog):
    """It was taken over without a word: the leftover went unexplained."""
    output = str(tmp_path / "out")
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    held = {**_stale_lock(output, age_s=1.0), "local": True, "host": lock.socket.gethostname(),
            "pid": int(gone.stdout), "run_id": "gone"}
    with open(os.path.join(output, "_RUNNING.json"), "w") as f:
        json.dump(held, f)
    with caplog.at_level("WARNING", logger="gpfit"):
        lock.acquire(output, "mine", False, local=True)
    assert lock.read(output)["run_id"] == "mine"
    said = [r.getMessage() for r in caplog.records if "_RUNNING.json" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith(
        f"gpfit: the lock _RUNNING.json in {output} was left by run gone on host "), said
    assert "whose process is gone" in said[0] and "out of file descriptors" in said[0]


def test_a_stop_as_the_launcher_releases_its_lock_after_the_run_keeps_the_runs_result(
        tmp_path):
    """SIGTERM as the launcher releases its lock, the job done and its
    _SUCCESS.json written: the Stopped raised in that last step replaced the
    run's exit 0, and gpfit said "stopped by SIGTERM before any work;
    nothing was written" (exit 143) beside the whole result, which a
    scheduler would run again. The signal is sent by a hook on lock.release
    as gpfit's own last step calls it (the job releases the lock too)."""
    source, output = _input(tmp_path, n_series=3), str(tmp_path / "out")
    stopped = gpfit_with_hook(
        "from pipeline.io import lock\n"
        "release = lock.release\n"
        "def stopped_at_the_release(*args, **kwargs):\n"
        "    caller = sys._getframe(1).f_code.co_filename\n"
        "    if caller.endswith(os.path.join('pipeline', 'cli.py')):  # the launcher's\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "    return release(*args, **kwargs)\n"
        "lock.release = stopped_at_the_release\n",
        ["--input", source, "--output", output, *RUN_OPTIONS],
        env=dict(os.environ, PYTHONPATH=REPO))
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stdout.startswith("gpfit: 3 series: 3 ok"), stopped.stdout
    said = [line for line in stopped.stderr.splitlines() if line.startswith("gpfit: ")]
    assert said == ["gpfit: warning: SIGTERM came after the run had ended; its result "
                    "stands"], stopped.stderr
    assert sorted(os.listdir(output)) == ["_SUCCESS.json", "params"], os.listdir(output)


def _stopped_leaves_no_lock_nor_folder(tmp_path, hook: str) -> None:
    """gpfit's CLI into a new folder with `hook` sending SIGTERM as the lock
    is made: it says it stopped before any work (exit 143), leaves neither
    the lock nor the folder it made (docs/design.md, "The fitter", A stop
    of a run into a new folder), and the next run is not refused."""
    source, output = _input(tmp_path, n_series=3), str(tmp_path / "out")
    stopped = gpfit_with_hook(hook, ["--input", source, "--output", output, *RUN_OPTIONS],
                              env=dict(os.environ, PYTHONPATH=REPO))
    assert stopped.returncode == 128 + 15, stopped.stderr
    assert "stopped by SIGTERM before any work" in stopped.stderr, stopped.stderr
    assert not os.path.exists(output), os.listdir(output)
    rerun = gpfit(source, output, *RUN_OPTIONS)
    assert rerun.code == 0, rerun.stderr


def test_a_stop_during_the_locks_open_call_leaves_no_lock(tmp_path):
    """SIGTERM arriving while the lock's exclusive `open` runs: the file was
    created, and the handler raised Stopped as the call returned, before
    its descriptor was kept, so no clause of the write could remove it. The
    empty lock stayed and the next run was refused, exit 4 ("a lock that
    cannot be read yet"), for a minute. The signal is sent by a hook on
    os.open, after the real call creates the lock; the run is gpfit's CLI
    in a process of its own."""
    _stopped_leaves_no_lock_nor_folder(
        tmp_path,
        "real_open = os.open\n"
        "def stopped_in_the_open(path, flags, *args, **kwargs):\n"
        "    fd = real_open(path, flags, *args, **kwargs)\n"
        "    if str(path).endswith('_RUNNING.json') and flags & os.O_EXCL:\n"
        "        os.open = real_open\n"
        "        os.kill(os.getpid(), signal.SIGTERM)  # handled before open returns\n"
        "    return fd\n"
        "os.open = stopped_in_the_open\n")


def _removed_as_the_lock_is_created(source: str, output: str, times: int):
    """gpfit's CLI into output (new, in a new folder), in a process of its own
    where the folders are removed `times` times just before the lock's
    exclusive create, as a stopped run into the same new folder removes
    the folders it made (outputs.remove_empty)."""
    return gpfit_with_hook(
        "real_open = os.open\n"
        f"left = [{times}]\n"
        "def raced(path, flags, *args, **kwargs):\n"
        "    if str(path).endswith('_RUNNING.json') and flags & os.O_EXCL and left[0]:\n"
        "        left[0] -= 1\n"
        "        folder = os.path.dirname(str(path))\n"
        "        os.rmdir(folder)\n"
        "        os.rmdir(os.path.dirname(folder))\n"
        "    return real_open(path, flags, *args, **kwargs)\n"
        "os.open = raced\n",
        ["--input", source, "--output", output, *RUN_OPTIONS],
        env=dict(os.environ, PYTHONPATH=REPO))


def test_a_new_folder_removed_as_the_lock_is_created_is_made_again(tmp_path):
    """A run into a new folder that stops removes the folders it made while
    empty; a second run into the same folder that had made it, and not yet
    created its lock, failed to create it: exit 3, "gpfit failed
    unexpectedly: FileNotFoundError: ... _RUNNING.json". The folder is made
    again once; removed again, the folder is said to be busy (exit 4)."""
    source = _input(tmp_path, n_series=3)
    output = str(tmp_path / "night" / "out")
    raced = _removed_as_the_lock_is_created(source, output, times=1)
    assert raced.returncode == 0, raced.stderr
    assert sorted(os.listdir(output)) == ["_SUCCESS.json", "params"], os.listdir(output)
    shutil.rmtree(tmp_path / "night")
    twice = _removed_as_the_lock_is_created(source, output, times=2)
    assert twice.returncode == 4, twice.stderr
    said = [line for line in twice.stderr.splitlines() if line.startswith("gpfit: ")]
    assert said == [f"gpfit: error: output folder {output} was removed twice as this run "
                    "created its lock in it (another gpfit run into it ending, or a "
                    "deletion); run again once nothing else writes it"], twice.stderr
    assert os.listdir(tmp_path) == ["in.parquet"], os.listdir(tmp_path)


def test_a_stop_while_the_lock_is_written_leaves_no_lock(tmp_path):
    """SIGTERM (a scheduler's timeout) between the lock's creation and its
    write: Stopped passed the write's `except OSError`, the empty lock
    stayed ("half written: not this run's" to release), and the next run
    was refused (exit 4) for a minute, though the stopped run said it left
    the folder as it was. The signal is sent at that step by a hook on the
    lock's own write; the run is gpfit's CLI in a process of its own."""
    _stopped_leaves_no_lock_nor_folder(
        tmp_path,
        "write = os.write\n"
        "def stopped_at_the_lock(fd, data):\n"
        "    if os.readlink(f'/proc/self/fd/{fd}').endswith('_RUNNING.json'):\n"
        "        os.write = write\n"
        "        os.kill(os.getpid(), signal.SIGTERM)  # raises Stopped before the write\n"
        "    return write(fd, data)\n"
        "os.write = stopped_at_the_lock\n")

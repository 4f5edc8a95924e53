"""Faults an operator meets running gpfit nightly, on real files, real
processes, real signals and real (tmpfs) disks. After each: the exit code
and one line that names the thing and the fix (README "Exit codes"), no
_SUCCESS.json, nothing destroyed that gpfit did not write, and a re-run into
the same folder (once the cause is gone) that gives output identical to a
clean run of the same input (conftest.clean).

The input's ids are hostile (reliability_runs.HOSTILE_IDS), so every
comparison also checks that each of them comes out exactly once.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time

import pytest

from gpfit_runs import Run, as_legacy_layout, contents, gpfit_with_hook
from reliability_runs import (ENV, HOSTILE_IDS, OPTIONS, REPO, SECRETS, Running, error_lines,
                              files_in, gpfit_here, gpfit_subprocess, kill_all, snapshot,
                              wait_for)

SUCCESS = "_SUCCESS.json"


def rerun_is_clean(input_: str, output: str, clean) -> None:
    """A re-run into output ends 0 with exactly the clean run's output."""
    rerun = gpfit_here(input_, output, *OPTIONS)
    assert rerun.code == 0, rerun.stderr
    assert snapshot(output) == clean[1]


def one_line(run, code: int, *words: str) -> str:
    """The run ended with `code` and exactly one gpfit error line holding
    `words`, and no traceback; returns the line."""
    assert run.code == code, (run.code, run.stderr)
    lines = error_lines(run.stderr)
    assert len(lines) == 1, run.stderr
    assert "Traceback" not in run.stderr, run.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


@contextlib.contextmanager
def tmpfs(path, size: str):
    """A small real file system mounted at path (root only; else skipped)."""
    if os.geteuid() != 0:
        pytest.skip("a full or read-only disk needs a tmpfs, which only root can mount")
    os.makedirs(path, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                             capture_output=True, text=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield str(path)
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def remount(path: str, options: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{options}", path], check=True)


# ---- the clean run itself: hostile ids, the layout, no secrets --------------------------

def test_every_hostile_id_comes_out_exactly_once(clean):
    run, _ = clean
    ids = [row["series_id"] for row in run.rows()]
    assert sorted(ids) == sorted(HOSTILE_IDS)
    statuses = {row["series_id"]: row["status"] for row in run.rows()}
    assert statuses["null"] == "skipped" and statuses["NaN"] == "ok"
    assert {row["series_id"] for row in run.predictions()} == {
        sid for sid, status in statuses.items() if status == "ok"}


def test_the_manifest_holds_no_secret(clean):
    run, _ = clean
    with open(os.path.join(run.output, SUCCESS)) as f:
        text = f.read()
    for secret in SECRETS:
        assert secret not in text
    beam = json.loads(text)["options"]["beam"]
    assert json.loads(beam["environment_config"]) == {"env": {"DB_PASSWORD": "<redacted>"}}
    assert "sig=<redacted>" not in beam["azure_connection_string"]  # the whole SAS is hidden
    assert "SharedAccessSignature=<redacted>" in beam["azure_connection_string"]


# ---- files gpfit did not write ------------------------------------------------------------

def test_files_with_gpfit_like_names_are_refused_and_kept(hostile_input, clean, tmp_path):
    output = str(tmp_path / "out")
    shutil.copytree(clean[0].output, output)
    os.makedirs(os.path.join(output, "beam-temp-params-backup"))
    theirs = {"beam-temp-params-backup/thesis.tex": b"precious", "settings.json.tmp": b"{}"}
    for name, data in theirs.items():
        with open(os.path.join(output, name), "wb") as f:
            f.write(data)
    before = contents(output)
    refused = gpfit_here(hostile_input, output, *OPTIONS)
    assert refused.code == 2, refused.stderr
    assert "which gpfit did not write" in refused.stderr
    assert contents(output) == before  # nothing deleted, the manifest included
    for name in theirs:
        os.remove(os.path.join(output, name))
    os.rmdir(os.path.join(output, "beam-temp-params-backup"))
    rerun_is_clean(hostile_input, output, clean)


# ---- folders compared resolved: symbolic links ------------------------------------------

def test_a_previous_output_linked_to_the_output_is_refused(hostile_input, clean, tmp_path):
    night1 = str(tmp_path / "night1")
    shutil.copytree(clean[0].output, night1)
    os.symlink(night1, tmp_path / "latest")
    os.symlink(night1, tmp_path / "tonight")
    before = contents(night1)
    for output, previous in ((night1, str(tmp_path / "latest")),
                             (str(tmp_path / "tonight"), night1)):
        refused = gpfit_here(hostile_input, output, *OPTIONS, "--previous_output", previous)
        assert refused.code == 2, refused.stderr
        assert "is the --output folder" in refused.stderr
        assert contents(night1) == before  # last night's output is intact
    rerun_is_clean(hostile_input, night1, clean)


def test_an_input_glob_that_would_read_the_output_is_refused_on_the_first_day(
        hostile_input, clean, tmp_path):
    data = str(tmp_path / "data")
    shutil.copytree(hostile_input, data)
    os.symlink(data, tmp_path / "link")
    output = os.path.join(data, "out")
    for pattern in (os.path.join(data, "**"), str(tmp_path / "link" / "**")):
        refused = gpfit_here(pattern, output, *OPTIONS)
        assert refused.code == 2, refused.stderr
        assert "the next run would read this run's shards as input" in refused.stderr
        assert not os.path.exists(output)
    # A pattern that names the data files only: the output may live beside them,
    # and the second day reads the same input as the first.
    rerun_is_clean(os.path.join(data, "*.parquet"), output, clean)
    rerun_is_clean(os.path.join(data, "*.parquet"), output, clean)
    # A later night widens the pattern over that output: refused for the
    # same reason, said so, not as a shard's missing input column.
    before = contents(output)
    refused = gpfit_here(os.path.join(data, "**"), output, *OPTIONS)
    one_line(refused, 2, "the next run would read this run's shards as input")
    assert contents(output) == before


# ---- the lock -----------------------------------------------------------------------------

def test_an_empty_lock_left_by_a_full_disk_does_not_wedge_the_folder(hostile_input, clean,
                                                                     tmp_path):
    output = str(tmp_path / "out")
    shutil.copytree(clean[0].output, output)
    lock = os.path.join(output, "_RUNNING.json")
    with open(lock, "w"):
        pass  # empty: created, never written
    young = gpfit_here(hostile_input, output, *OPTIONS)
    assert young.code == 4, young.stderr
    assert "cannot be read yet" in young.stderr and "--break_lock" in young.stderr
    old = os.stat(lock).st_mtime - 120
    os.utime(lock, (old, old))
    rerun_is_clean(hostile_input, output, clean)  # taken over, no option needed
    assert not os.path.exists(lock)


# ---- the disk -------------------------------------------------------------------------------

def test_a_full_disk_at_start_exits_5_and_leaves_no_lock(hostile_input, clean, tmp_path):
    with tmpfs(tmp_path / "disk", "64k") as disk:
        output = os.path.join(disk, "out")
        with open(os.path.join(disk, "filler"), "wb", buffering=0) as f:
            with contextlib.suppress(OSError):
                while True:
                    f.write(b"\0" * 4096)
        full = gpfit_subprocess(hostile_input, output, *OPTIONS)
        one_line(full, 5, "no space left on the device", output, "free space")
        assert not os.path.exists(os.path.join(output, "_RUNNING.json"))
        assert not os.path.exists(os.path.join(output, SUCCESS))
        os.remove(os.path.join(disk, "filler"))
        remount(disk, "size=64m")
        rerun_is_clean(hostile_input, output, clean)


def test_a_disk_filling_mid_write_exits_5_without_success(hostile_input, clean, tmp_path):
    # The parameters (about 20 kB) fit, the predictions (about 140 kB) do not.
    with tmpfs(tmp_path / "disk", "96k") as disk:
        output = os.path.join(disk, "out")
        full = gpfit_here(hostile_input, output, *OPTIONS)
        one_line(full, 5, "no space left on the device", "free space")
        assert not os.path.exists(os.path.join(output, SUCCESS))
        remount(disk, "size=64m")
        rerun_is_clean(hostile_input, output, clean)


def test_a_read_only_file_system_exits_5_and_touches_nothing(hostile_input, clean, tmp_path):
    with tmpfs(tmp_path / "disk", "64m") as disk:
        output = os.path.join(disk, "out")
        shutil.copytree(clean[0].output, output)
        before = contents(output)
        remount(disk, "ro")
        refused = gpfit_subprocess(hostile_input, output, *OPTIONS)
        one_line(refused, 5, "the file system is read-only", output)
        assert contents(output) == before
        remount(disk, "rw")
        rerun_is_clean(hostile_input, output, clean)


def test_a_new_output_folder_on_a_read_only_file_system_exits_5(hostile_input, clean, tmp_path):
    """A folder to make, not one to replace: building the job makes the
    tables' folders, which had ended in "failed unexpectedly" (exit 3)."""
    with tmpfs(tmp_path / "disk", "64m") as disk:
        output = os.path.join(disk, "night", "out")
        remount(disk, "ro")
        refused = gpfit_here(hostile_input, output, *OPTIONS)
        one_line(refused, 5, "the file system is read-only", output)
        assert os.listdir(disk) == []
        remount(disk, "rw")
        rerun_is_clean(hostile_input, output, clean)


@pytest.mark.parametrize("holding", ["nothing", "a .DS_Store"])
def test_a_table_folder_on_another_file_system_is_refused_before_any_work(hostile_input,
                                                                          tmp_path, holding):
    """Beam writes each shard in the output folder (beam-temp-params-*/) and
    renames it into params/: a disk mounted there was EBUSY to the clearing's
    rmdir of an empty params/ ("failed unexpectedly", exit 3), and EXDEV to
    the rename once every series was fitted (exit 3, Beam's "Encountered
    exceptions in finalize_write")."""
    output = str(tmp_path / "out")
    with tmpfs(tmp_path / "out" / "params", "1m") as table:
        if holding != "nothing":
            with open(os.path.join(table, ".DS_Store"), "wb"):
                pass
        refused = gpfit_subprocess(hostile_input, output, *OPTIONS)
        one_line(refused, 2, f"{output}/params", "another file system", "mount")
        assert files_in(output) == ([] if holding == "nothing" else ["params/.DS_Store"])


# ---- bad invocations that used to end in a traceback ---------------------------------------

@pytest.mark.parametrize("case", ["below a file", "a link to nowhere", "a glob character",
                                  "unknown runner"])
def test_refusals_are_one_line_with_exit_2(hostile_input, tmp_path, case):
    (tmp_path / "report.txt").write_text("not a folder")
    if case == "below a file":
        run = gpfit_subprocess(hostile_input, str(tmp_path / "report.txt" / "out"), *OPTIONS)
        one_line(run, 2, "report.txt", "is a file, not a folder", "give a folder path")
    elif case == "a link to nowhere":  # e.g. to a disk not mounted: nothing made in its place
        os.symlink(tmp_path / "unmounted" / "out", tmp_path / "out")
        run = gpfit_subprocess(hostile_input, str(tmp_path / "out"), *OPTIONS)
        one_line(run, 2, "is a symbolic link to", "unmounted", "which does not exist")
        assert not os.path.exists(tmp_path / "unmounted")
    elif case == "a glob character":
        # Beam's file systems take the path for a pattern: the job fitted
        # everything, could not rename its shards (exit 3), and left a lock
        # that no later run could delete (each crashed, exit 3).
        run = gpfit_subprocess(hostile_input, str(tmp_path / "night[1]"), *OPTIONS)
        one_line(run, 2, "night[1]", "glob pattern", "without *, ? or [")
        assert not os.path.exists(tmp_path / "night[1]")
    else:
        run = gpfit_subprocess(hostile_input, str(tmp_path / "out"), *OPTIONS,
                               "--runner", "DaskRunner")
        one_line(run, 2, "--runner DaskRunner cannot be built", "DataflowRunner")
        assert not os.path.exists(tmp_path / "out")


# ---- signals and lost workers -----------------------------------------------------------------

@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_run_releases_the_folder_at_once(hostile_input, clean, tmp_path, signum):
    """A pod stopped mid-run (SIGTERM) or an operator's Ctrl-C: the lock and
    Beam's temporary folder go with it, so a restart on another host is not
    refused. While it ran, a second run into the folder was refused (exit 4).
    The run is held (SIGSTOP) while the second one starts: on a quiet machine
    its 12 series were fitted and written before the second run's start-up
    ended, and the signal then came after the run (exit 0)."""
    output = str(tmp_path / "out")
    running = Running(hostile_input, output, *OPTIONS)
    running.wait_fitting()
    running.signal(signal.SIGSTOP)  # held mid-run, its lock's heartbeat recent
    try:
        second = gpfit_here(hostile_input, output, *OPTIONS)
        running.signal(signum)  # pending until it goes on: the run is still fitting
    finally:
        running.signal(signal.SIGCONT)
    stopped = running.finish()
    assert second.code == 4, second.stderr
    assert "is being written by another gpfit run" in second.stderr
    assert f"pid {running.process.pid}" in second.stderr
    one_line(stopped, 128 + signum, f"stopped by {signal.Signals(signum).name}",
             "run again into")
    # Beam's log of the bundle the stop cut short ("ERROR pipeline.io.stops.Stopped:
    # 15 [while running 'FitSeries/...']") read as a crash beside that line.
    assert not [line for line in stopped.stderr.splitlines() if " ERROR " in line], \
        stopped.stderr
    left = files_in(output)
    assert "_RUNNING.json" not in left and SUCCESS not in left, left
    assert not any(name.startswith("beam-temp-") for name in left), left
    rerun_is_clean(hostile_input, output, clean)


def stopped_at(step: str, when: str, input_: str, output: str) -> Run:
    """gpfit's CLI in a process of its own, sent SIGTERM just `when` ("before"
    or "after") its `step` ("module.function", called through the module) runs."""
    module, name = step.rsplit(".", 1)
    done = gpfit_with_hook(
        "import importlib\n"
        f"module = importlib.import_module({module!r})\n"
        f"step = getattr(module, {name!r})\n"
        "def stopped(*args, **kwargs):\n"
        f"    if {when!r} == 'before':\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "    done = step(*args, **kwargs)\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    return done\n"
        f"setattr(module, {name!r}, stopped)\n",
        ["--input", input_, "--output", output, *OPTIONS], env=ENV, cwd=REPO)
    return Run(done.returncode, done.stdout, done.stderr, output)


@pytest.mark.parametrize("step, when, said", [
    ("pipeline.io.lock.acquire", "before", "before any work"),
    ("pipeline.io.outputs.make_table_folders", "after", "before the run finished")])
def test_a_stop_of_a_run_into_a_new_folder_leaves_no_folder(hostile_input, tmp_path, step,
                                                            when, said):
    """SIGTERM early in a run into a new folder (night/out, night/ new too):
    it left out/ with empty params/ and predictions/, which looked like an
    output, though it said "nothing was written" or "left as it was"
    (building the job made them, before the lock). The run now makes them
    under its lock and removes the folders it made, where empty."""
    output = str(tmp_path / "night" / "out")
    stopped = stopped_at(step, when, hostile_input, output)
    one_line(stopped, 128 + signal.SIGTERM, "stopped by SIGTERM", said)
    assert os.listdir(tmp_path) == [], os.listdir(tmp_path)


def test_a_stop_of_a_run_into_a_users_empty_folder_leaves_that_folder(hostile_input,
                                                                      tmp_path):
    """The folders a stopped run removes are those it made: a user's empty
    --output folder stays, empty."""
    output = tmp_path / "out"
    output.mkdir()
    stopped = stopped_at("pipeline.io.outputs.make_table_folders", "after", hostile_input,
                         str(output))
    one_line(stopped, 128 + signal.SIGTERM, "stopped by SIGTERM before the run finished")
    assert os.listdir(tmp_path) == ["out"] and os.listdir(output) == []


def failing_in(step: str, input_: str, output: str) -> Run:
    """gpfit's CLI in a process of its own whose job fails: `step` (a DoFn's
    method, "module.Class.method") raises as the job runs it."""
    module, name, method = step.rsplit(".", 2)
    done = gpfit_with_hook(
        "import importlib\n"
        "def broken(*args, **kwargs):\n"
        "    raise RuntimeError('a step broke')\n"
        f"setattr(getattr(importlib.import_module({module!r}), {name!r}), {method!r}, "
        "broken)\n",
        ["--input", input_, "--output", output, *OPTIONS], env=ENV, cwd=REPO)
    return Run(done.returncode, done.stdout, done.stderr, output)


def test_a_failed_run_into_a_new_folder_leaves_no_folder(hostile_input, tmp_path):
    """A job that fails (a step raises) in a run into a new folder, with no
    manifest written: it left night/out/ with an empty params/,
    predictions/ and Beam's empty temporary folder, which looked like an
    output, where a stopped run leaves none. A failed run now removes
    gpfit's empty folders in a folder it made, then that folder where
    empty; a user's empty --output folder stays."""
    output = str(tmp_path / "night" / "out")
    failed = failing_in("pipeline.transforms.BatchByLength.process", hostile_input, output)
    one_line(failed, 3, "the pipeline failed: a step broke", "no _SUCCESS.json was written")
    assert os.listdir(tmp_path) == [], os.listdir(tmp_path)
    users = tmp_path / "users"
    users.mkdir()
    failed = failing_in("pipeline.transforms.BatchByLength.process", hostile_input, str(users))
    one_line(failed, 3, "the pipeline failed: a step broke")
    assert os.listdir(tmp_path) == ["users"] and os.listdir(users) == []


def test_a_stop_before_the_clearing_says_the_folder_was_left_as_it_was(hostile_input, clean,
                                                                       tmp_path):
    """SIGTERM as the run lists the output folder under its lock, before it
    deletes anything: it said "no _SUCCESS.json was written, ... (its files
    are replaced)" beside the earlier run's _SUCCESS.json and shards, left
    whole. The signal is sent at that step by a hook on outputs.check_output
    (its second call: the first, at launch, is before the lock); the run is
    gpfit's CLI in a process of its own."""
    output = str(tmp_path / "out")
    shutil.copytree(clean[0].output, output)
    before = contents(output)
    done = gpfit_with_hook(
        "from pipeline.io import outputs\n"
        "listed = outputs.check_output\n"
        "def stopped_at_the_listing(output, *args, **kwargs):\n"
        "    if os.path.exists(os.path.join(output, '_RUNNING.json')):  # under the lock\n"
        "        os.kill(os.getpid(), signal.SIGTERM)  # raises Stopped before the listing\n"
        "    return listed(output, *args, **kwargs)\n"
        "outputs.check_output = stopped_at_the_listing\n",
        ["--input", hostile_input, "--output", output, *OPTIONS], env=ENV, cwd=REPO)
    stopped = Run(done.returncode, done.stdout, done.stderr, output)
    one_line(stopped, 128 + signal.SIGTERM, "stopped by SIGTERM before any work",
             "was left as it was")
    assert contents(output) == before


def test_a_stopped_run_on_beams_in_process_runner_releases_the_folder(hostile_input, tmp_path):
    """Beam's BundleBasedDirectRunner runs the job in gpfit's process, which
    a Ctrl-C ends: gpfit said the job goes on, and left the lock (the next
    run exited 4) and Beam's temporary folder."""
    output = str(tmp_path / "out")
    running = Running(hostile_input, output, *OPTIONS, "--runner", "BundleBasedDirectRunner")
    running.wait_fitting()
    running.signal(signal.SIGINT)
    stopped = running.finish()
    one_line(stopped, 130, "stopped by SIGINT before the run finished", "run again into")
    left = files_in(output)
    assert "_RUNNING.json" not in left, left
    assert not any(name.startswith("beam-temp-") for name in left), left


def _fitting_on_two_workers(hostile_input, output: str) -> Running:
    """A run under multi_processing with both worker processes up and fitting."""
    running = Running(hostile_input, output, *OPTIONS, "--direct_num_workers", "2",
                      "--direct_running_mode", "multi_processing")
    running.wait_fitting()
    assert wait_for(lambda: len(running.workers()) == 2, timeout=30)
    return running


def test_ctrl_c_under_multi_processing_is_one_line(hostile_input, clean, tmp_path):
    """A terminal's Ctrl-C sends SIGINT to the whole process group, the
    worker processes too: the launcher stops the job and says so in one
    line, no worker prints a traceback, none is left, the folder is free."""
    output = str(tmp_path / "out")
    running = _fitting_on_two_workers(hostile_input, output)
    running.signal_group(signal.SIGINT)
    stopped = running.finish()
    one_line(stopped, 130, "stopped by SIGINT", "run again into")
    assert not [line for line in stopped.stderr.splitlines()
                if "KeyboardInterrupt" in line or " ERROR " in line
                or line.startswith("  File ")], stopped.stderr
    assert wait_for(lambda: not running.left(), timeout=10), running.left()
    assert "_RUNNING.json" not in files_in(output)
    rerun_is_clean(hostile_input, output, clean)


@pytest.mark.parametrize("ctrl_c", [False, True])
def test_a_stop_while_worker_processes_start_ends_them(hostile_input, clean, tmp_path, ctrl_c):
    """SIGTERM to the launcher (a pod stopped), or Ctrl-C to the group, while
    its worker processes still start: Beam's runner waited for them for
    ever, and the launcher hung with its lock's heartbeat going."""
    output = str(tmp_path / "out")
    running = Running(hostile_input, output, *OPTIONS, "--direct_num_workers", "2",
                      "--direct_running_mode", "multi_processing")
    assert wait_for(lambda: len(running.workers()) == 2, timeout=240), "".join(running.lines)
    if ctrl_c:
        running.signal_group(signal.SIGINT)
    else:
        running.signal(signal.SIGTERM)
    stopped = running.finish(timeout=60)
    one_line(stopped, 130 if ctrl_c else 143, "stopped by", "run again into")
    assert wait_for(lambda: not running.left(), timeout=10), running.left()
    assert "_RUNNING.json" not in files_in(output)
    rerun_is_clean(hostile_input, output, clean)


def _state(pid: int) -> str:
    """A process's state letter in /proc ("T": stopped), "" once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def test_a_stop_ends_a_frozen_worker_process(hostile_input, clean, tmp_path):
    """A worker process stopped (SIGSTOP: frozen, not dead) holds the job for
    ever; the scheduler's timeout then sends SIGTERM to the launcher. A
    stopped process keeps a SIGTERM pending until it is continued, so the
    launcher's SIGTERM to its workers never reached it and the unwinding
    waited on it for ever, the folder locked; a SIGKILL to the launcher then
    left the worker stopped for good."""
    output = str(tmp_path / "out")
    running = _fitting_on_two_workers(hostile_input, output)
    frozen = running.workers()[0]
    try:
        os.kill(frozen, signal.SIGSTOP)
        assert wait_for(lambda: _state(frozen) == "T", timeout=30)
        running.signal(signal.SIGTERM)
        stopped = running.finish(timeout=90)
        one_line(stopped, 143, "stopped by SIGTERM", "run again into")
        assert wait_for(lambda: not running.left(), timeout=10), running.left()
        assert "_RUNNING.json" not in files_in(output)
    finally:
        kill_all([frozen])  # never left stopped, whatever failed
    rerun_is_clean(hostile_input, output, clean)


def test_a_worker_process_frozen_for_a_minute_stops_the_job(hostile_input, clean, tmp_path):
    """A worker process stopped (SIGSTOP) and left so: the runner waited on it
    with no limit, and gpfit hung, its folder locked, until killed. After
    runtime.FROZEN_AFTER_S it is ended and the job fails: exit 3, one line
    naming it, no process left, the folder free."""
    output = str(tmp_path / "out")
    running = _fitting_on_two_workers(hostile_input, output)
    frozen = running.workers()[0]
    try:
        os.kill(frozen, signal.SIGSTOP)
        started = time.monotonic()
        failed = running.finish(timeout=240)
        took = time.monotonic() - started
        one_line(failed, 3, f"worker process (pid {frozen}) was stopped (SIGSTOP: frozen) for "
                 "60 s", "run again into")
        assert took >= 59, took
        assert wait_for(lambda: not running.left(), timeout=10), running.left()
        assert "_RUNNING.json" not in files_in(output)
    finally:
        kill_all([frozen])  # never left stopped, whatever failed
    rerun_is_clean(hostile_input, output, clean)


def test_the_one_worker_process_frozen_for_a_minute_stops_the_job(hostile_input, clean, tmp_path):
    """--direct_num_workers 1 under multi_processing (or 0 on a one-core
    machine or container) runs one worker process, as open to a SIGSTOP as
    two: it was not watched (the watch asked for more than one process per
    machine), and gpfit hung, its folder locked, until killed."""
    output = str(tmp_path / "out")
    running = Running(hostile_input, output, *OPTIONS, "--direct_num_workers", "1",
                      "--direct_running_mode", "multi_processing")
    running.wait_fitting()
    assert wait_for(lambda: len(running.workers()) == 1, timeout=30)
    frozen = running.workers()[0]
    try:
        os.kill(frozen, signal.SIGSTOP)
        failed = running.finish(timeout=150)
        one_line(failed, 3, f"worker process (pid {frozen}) was stopped (SIGSTOP: frozen) for "
                 "60 s", "run again into")
        assert wait_for(lambda: not running.left(), timeout=10), running.left()
        assert "_RUNNING.json" not in files_in(output)
    finally:
        kill_all([frozen])  # never left stopped, whatever failed
    rerun_is_clean(hostile_input, output, clean)


def test_ctrl_c_twice_under_multi_processing_leaves_no_worker_tracebacks(hostile_input, clean,
                                                                       tmp_path):
    """A second Ctrl-C kills the unwinding launcher (by design); its worker
    processes, their launcher gone, died printing gRPC tracebacks (some 60
    lines) after it. The next run takes the folder over."""
    output = str(tmp_path / "out")
    running = _fitting_on_two_workers(hostile_input, output)
    running.signal_group(signal.SIGINT)
    time.sleep(0.2)
    running.signal_group(signal.SIGINT)
    stopped = running.finish()
    assert stopped.code in (-signal.SIGINT, 128 + signal.SIGINT), stopped.stderr
    assert wait_for(lambda: not running.left(), timeout=30), running.left()
    assert not [line for line in stopped.stderr.splitlines()
                if "Traceback" in line or line.startswith(("  File ", "Exception in thread"))], \
        stopped.stderr
    rerun_is_clean(hostile_input, output, clean)


def test_a_lost_worker_process_is_named_with_exit_3(hostile_input, clean, tmp_path):
    output = str(tmp_path / "out")
    running = _fitting_on_two_workers(hostile_input, output)
    kill_all(running.workers())  # what the OOM killer does
    lost = running.finish()
    one_line(lost, 3, "a worker process died", "run again into")
    assert not os.path.exists(os.path.join(output, SUCCESS))
    rerun_is_clean(hostile_input, output, clean)


def _not_gpfits(stderr: str) -> list[str]:
    """The lines of a stderr that are not gpfit's own (its error and warning
    lines, and the log lines it writes: "... INFO gpfit: ...")."""
    return [line for line in stderr.splitlines()
            if not line.startswith("gpfit: ") and " gpfit: " not in line
            and " worker: gpfit" not in line]


@pytest.mark.parametrize("signum,said", [
    (signal.SIGKILL, "killed (SIGKILL: the OOM killer or kill -9)"),
    (signal.SIGSEGV, "killed by SIGSEGV (signal 11)"),
])
def test_one_worker_process_killed_by_a_signal_is_one_line(hostile_input, tmp_path, signum,
                                                           said):
    """One of two worker processes killed (the OOM killer's SIGKILL) or
    crashed (SIGSEGV): the line said "exit code -11", and Beam's and gRPC's
    lines came with it at the default level ("Failed to read inputs in the
    data plane", "thread ... ended: RpcError"), and the other worker's C++
    runtime aborting as it was ended ("terminate called after throwing an
    instance of ''", "FATAL: exception not rethrown"). Now the line names
    the signal and is the only one; the rest shows at --log_level debug."""
    output = str(tmp_path / "out")
    running = _fitting_on_two_workers(hostile_input, output)
    survivor = running.workers()[1]
    started = time.monotonic()
    kill_all(running.workers()[:1], signum)
    lost = running.finish()
    took = time.monotonic() - started
    line = one_line(lost, 3, "a worker process died mid-run", said, "run again into")
    assert "exit code" not in line, line
    assert _not_gpfits(lost.stderr) == [], lost.stderr
    assert wait_for(lambda: not running.left(), timeout=10), running.left()
    assert not os.path.exists(f"/proc/{survivor}") or _state(survivor) in ("", "Z")
    assert "_RUNNING.json" not in files_in(output)
    assert took < 30, took


def test_a_worker_that_raises_is_named_by_its_error(hostile_input, clean, tmp_path):
    """A worker process's error reaches the launcher as its traceback's text:
    the line names the error raised (here a disk that fills while the
    workers write the predictions), not the traceback's first line; the
    traceback Beam's worker prints on its (gpfit's) stderr is not shown.
    (An --output too long for the workers' names once made the error; the
    launcher now refuses such a path before any work.)"""
    with tmpfs(tmp_path / "disk", "96k") as disk:
        output = os.path.join(disk, "out")
        failed = gpfit_subprocess(hostile_input, output, *OPTIONS, "--direct_num_workers", "2",
                                  "--direct_running_mode", "multi_processing")
        one_line(failed, 5, "no space left on the device", "free space")
        assert not os.path.exists(os.path.join(output, SUCCESS))


# ---- the layout of gpfit 0.4.0 and earlier -----------------------------------------------------

def test_a_040_folder_is_a_previous_output_and_is_replaced(hostile_input, clean, tmp_path):
    old = as_legacy_layout(clean[0].output, str(tmp_path / "night-040"))
    assert sorted(os.listdir(old))[0] == "_SUCCESS.json" and "params" not in os.listdir(old)
    nightly = gpfit_here(hostile_input, str(tmp_path / "tonight"), *OPTIONS,
                         "--previous_output", old)
    assert nightly.code == 0, nightly.stderr
    rows = nightly.rows()
    assert all(row["reused"] for row in rows) and len(rows) == len(HOSTILE_IDS)
    assert [dict(row, reused=False) for row in rows] == clean[0].rows()
    # A run into a 0.4.0 folder replaces its shards with this release's layout.
    rerun_is_clean(hostile_input, old, clean)

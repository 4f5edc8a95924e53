"""The output's storage refusing gpfit's writes as a user meets it, without
root: exit 5 and one line that names the folder and the fix (README, "Exit
codes"), and no _SUCCESS.json but the earlier run's, kept where the refusal
came at start."""
from __future__ import annotations

import os
import resource
import subprocess
import sys

from gpfit_runs import as_a_user_without_access, contents, files_in, write_long_parquet
from pipeline_data import gpfit

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_a_table_folder_this_user_cannot_write_exits_5_and_keeps_the_earlier_run(tmp_path):
    # The lock and the manifest's deletion passed (the output folder is
    # writable); the first shard's deletion did not: exit 5 "at start", the
    # earlier run's _SUCCESS.json gone and its shards kept.
    series = str(write_long_parquet(tmp_path / "in"))
    output = str(tmp_path / "night")
    assert gpfit(series, output, "--kernel", "rbf").code == 0
    before = contents(output)
    table = os.path.join(output, "params")
    os.chmod(table, 0o555)
    try:
        done = as_a_user_without_access("-m", "pipeline", "--input", series, "--output", output,
                                        "--kernel", "rbf")
    finally:
        os.chmod(table, 0o755)
    assert done.returncode == 5, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"gpfit: error: cannot write the output folder {output}: permission denied ([Errno 13] "
        f"Permission denied: '{table}'); free space or make it writable (or give another "
        "--output), then run again into the same folder: its gpfit files are replaced"]
    assert contents(output) == before  # the lock released, nothing deleted


def test_a_file_past_the_file_size_limit_exits_5_and_says_how_to_write_smaller_files(tmp_path):
    # `ulimit -f`, or FAT32's 4 GiB under a large predictions shard: EFBIG
    # was "the pipeline failed: OSError: [Errno 27] File too large", exit 3.
    series = str(write_long_parquet(tmp_path / "in", n_series=12))  # a 5 kB params shard
    output = str(tmp_path / "out")

    def limited():
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))  # Python ignores SIGXFSZ

    done = subprocess.run([sys.executable, "-m", "pipeline", "--input", series, "--output",
                           output, "--kernel", "rbf"], env=dict(os.environ, PYTHONPATH=REPO),
                          preexec_fn=limited, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 5, done.stderr
    said = [line for line in done.stderr.splitlines() if line.startswith("gpfit: error:")]
    assert said == [
        f"gpfit: error: the job failed: cannot write the output folder {output}: a file is "
        "larger than the file system or this process's file-size limit (ulimit -f) allows "
        "([Errno 27]); raise the limit, or write more, smaller shards (--num_shards), or give "
        "another --output, then run again into the same folder: its gpfit files are "
        "replaced"], done.stderr
    assert "_SUCCESS.json" not in files_in(output)
    assert "_RUNNING.json" not in files_in(output)


def test_an_open_files_limit_too_low_for_local_worker_processes_exits_2_before_the_lock(tmp_path):
    # `ulimit -n 8` with 2 worker processes failed binding gRPC's port
    # (exit 3) and left _RUNNING.json behind (its removal could not open a
    # file either); `ulimit -n 16`, two minutes of gRPC retries, then "a
    # worker process died". Neither named the limit.
    series = str(write_long_parquet(tmp_path / "in"))
    output = str(tmp_path / "out")

    def limited():
        resource.setrlimit(resource.RLIMIT_NOFILE, (8, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

    done = subprocess.run([sys.executable, "-m", "pipeline", "--input", series, "--output",
                           output, "--kernel", "rbf", "--direct_num_workers", "2",
                           "--direct_running_mode", "multi_processing"],
                          env=dict(os.environ, PYTHONPATH=REPO), preexec_fn=limited,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "gpfit: error: this process may open 8 files at once (ulimit -n), and the local "
        "runner's 2 worker processes (--direct_running_mode multi_processing) need 44 (gRPC "
        "channels to each); raise the limit (ulimit -n 44 in the shell that runs gpfit), or run "
        "fewer worker processes (--direct_num_workers), or all in one process "
        "(--direct_running_mode multi_threading)")
    assert not os.path.exists(output)  # refused before the lock and the output were touched

"""Smoke test of benchmarks/long_worker.py as docs/design.md runs it: one
fitter over a few calls, and the command on a few series, their tables
printed with the counts a defect would move."""
import importlib.util
import os
import re
import subprocess
import sys
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "benchmarks", "long_worker.py")
ENV = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="2")


def _run(*args):
    done = subprocess.run([sys.executable, SCRIPT, *args], env=ENV, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_one_fitter_over_calls_keeps_its_trace_and_handles():
    rows = [line.split("|")[1:-1] for line in _run("fitter", "--calls", "10").splitlines()
            if re.match(r"\| \d", line)]
    assert [int(r[0]) for r in rows] == list(range(1, 11))
    assert {int(r[5]) for r in rows} == {1}  # tracing_count
    assert len({r[2] for r in rows}) == len({r[3] for r in rows}) == 1  # fds, threads


def test_the_command_on_a_few_series_reports_its_processes():
    out = _run("command", "--series", "24", "--workers", "1", "--",
               "--predict_horizon", "2", "--predict_points", "3")
    assert "24 series, gpfit --seconds_per_fit_call 0.1 --predict_horizon 2" in out
    assert "fitters_built 1, tracing_count_max 1" in out
    assert re.search(r"^\| launcher \d+ \|", out, re.M)


def test_inside_each_process_samples_its_own_memory():
    """--inside: the job's process reads its glibc bytes in use, arrow's
    pool and Python's blocks itself (a sitecustomize on its path), and the
    table gives them at the job's end."""
    out = _run("command", "--series", "24", "--workers", "1", "--inside", "--every", "0.5", "--",
               "--predict_horizon", "2", "--predict_points", "3")
    rows = out.split("| malloc in use MB at 10 %")[1]
    found = re.search(r"^\| launcher \d+ \| - \| ([\d.]+) \| - \| ([\d.]+) \| - \| (\d+) \|$",
                      rows, re.M)
    assert found, out
    assert float(found[1]) > 10 and int(found[3]) > 100  # TensorFlow and Beam loaded
    # The series it fitted, counted inside it: its memory by them, and at its end.
    trajectory = out.split("| process | series it fitted |")[1]
    assert re.search(r"^\| \d+ \(its end\) \| 24 \| \d+ \| [\d.]+ \|", trajectory, re.M), out

def test_the_command_modes_processes_are_the_children_of_every_thread():
    """Beam's local runner starts its worker processes from a thread, not
    the main one: Linux lists a child under the thread that started it,
    and reading only the main thread's children sampled the launcher alone."""
    spec = importlib.util.spec_from_file_location("long_worker", SCRIPT)
    long_worker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(long_worker)
    started, done = [], threading.Event()

    def start():  # and stay: a child whose thread ended moves to another
        started.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]))
        done.wait(60)

    thread = threading.Thread(target=start)
    thread.start()
    while not started:
        done.wait(0.01)
    try:
        assert started[0].pid in long_worker._descendants(os.getpid())
    finally:
        done.set()
        thread.join()
        started[0].kill()
        started[0].wait()

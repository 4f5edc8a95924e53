"""Progress lines (pipeline.progress): done/total, the rate and the ETA, at
most every interval, and from a heartbeat thread during a long fit call;
the clock driven by the tests."""
from __future__ import annotations

from pipeline.progress import Progress, start_heartbeat


def test_progress_line_at_most_every_interval():
    now = [100.0]
    progress = Progress(lambda: now[0], every_s=30.0)
    now[0] = 110.0
    assert progress.add(50) is None
    now[0] = 131.0
    line = progress.add(50)
    # No total yet: the line says so, and gives no ETA.
    assert "100 of ? (not counted yet) series fitted" in line and "3.23 series/s" in line
    assert "ETA not known" in line
    now[0] = 140.0
    assert progress.add(10) is None


def test_progress_line_gives_done_of_total_rate_and_eta():
    now = [0.0]
    progress = Progress(lambda: now[0], every_s=30.0)
    progress.set_total(400)
    now[0] = 40.0
    line = progress.add(100)  # 2.5 series/s, 300 left: 120 s
    assert "100/400 series fitted" in line and "2.50 series/s, ETA 120 s" in line
    # Two processes share the job's 400 series: this one's share is 200.
    two = Progress(lambda: now[0], every_s=30.0, processes=2)
    two.set_total(400)
    now[0] = 80.0
    line = two.add(100)  # 2.5 series/s since its start at 40 s, 100 of its 200 left
    assert "100/400 series fitted" in line and "one of 2" in line and "ETA 40 s" in line


def test_progress_rate_and_eta_count_fit_calls_and_the_running_one():
    now = [0.0]
    progress = Progress(lambda: now[0], every_s=30.0)
    progress.set_total(2000)
    now[0] = 60.0  # the job reads its input: no fitting yet
    progress.start_call(400, 40.0)
    now[0] = 100.0
    line = progress.add(400)  # 40 s of fitting: 10 series/s, not 400 / 100 s
    assert "400/2000 series fitted" in line and "10.00 series/s, ETA 160 s" in line
    progress.start_call(1600, 160.0)
    now[0] = 240.0
    # The running call holds every series left and has run 140 of its
    # 160 s; the rate since the start (1.67 series/s) would say 960 s.
    line = progress.beat()
    assert "10.00 series/s, ETA 20 s" in line
    assert "a fit call of 1600 series running for 140 s" in line
    now[0] = 300.0  # overdue: due now, not a negative time
    assert "ETA 0 s" in progress.beat()


def test_a_rate_below_one_series_a_second_is_not_said_as_zero():
    """Long series (minutes each on the O(n) path, or under auto) were
    said to fit at "0.00 series/s", with an ETA of hours beside it."""
    now = [0.0]
    progress = Progress(lambda: now[0], every_s=30.0)
    progress.set_total(10)
    progress.start_call(3, 900.0)
    now[0] = 900.0
    line = progress.add(3)  # 3 series in 900 s, 7 left: 2100 s
    assert "0.0033 series/s, ETA 2100 s" in line


def test_progress_lines_come_during_a_long_fit_call():
    now = [0.0]
    progress = Progress(lambda: now[0], every_s=30.0)
    progress.set_total(50)
    progress.start_call(50, 15.0)
    now[0] = 20.0
    assert progress.beat() is None  # not due yet
    now[0] = 45.0
    line = progress.beat()
    assert line.startswith("gpfit progress: 0/50 series fitted")
    assert "rate and ETA not known yet (no fit call finished)" in line
    assert "a fit call of 50 series running for 45 s (estimated 15.0 core-s)" in line
    now[0] = 60.0
    assert progress.beat() is None  # at most one line per interval
    now[0] = 80.0
    assert "50/50 series fitted" in progress.add(50)
    now[0] = 200.0
    assert progress.beat() is None  # no call running: an idle process says nothing


def test_the_heartbeat_thread_logs_due_lines_and_ends_with_its_progress():
    import threading
    now = [0.0]
    progress = Progress(lambda: now[0], every_s=0.02)
    lines, seen = [], threading.Event()
    stop = start_heartbeat(progress, lambda line: (lines.append(line), seen.set()),
                                   every_s=0.02)
    progress.start_call(3, 1.0)
    now[0] = 1.0
    assert seen.wait(60), "no heartbeat line"
    assert "a fit call of 3 series running for 1 s" in lines[0]
    stop.set()

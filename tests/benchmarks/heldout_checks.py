"""What the held-out and tuning sets' smoke tests share: a set's scoring
command run as a script in the test's process, its markdown table read
back, and series compared by their values (a set must share no series with another)."""
import contextlib
import importlib
import io
import os
import runpy
import signal
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def values(series) -> set:
    """Each series' finite values (Series, or Cases with .series), rounded,
    as a hashable key."""
    out = set()
    for s in series:
        y = getattr(s, "series", s).y
        out.add(tuple(np.round(y[np.isfinite(y)], 6)))
    return out


def built_alike(module, low: int = 150, high: int = 250) -> tuple[list, list[str]]:
    """(series, each one's source: its id's first part) of a held-out real
    set's module, asserting what every such set promises: real_series()
    built twice gives the same values, between low and high series with
    distinct ids, from exactly module.PACKAGES."""
    series, again = module.real_series(), module.real_series()
    assert low <= len(series) <= high
    assert all(np.array_equal(a.y, b.y, equal_nan=True) for a, b in zip(series, again))
    ids = [s.series_id for s in series]
    assert len(ids) == len(set(ids))
    sources = [i.split("/")[0] for i in ids]
    assert set(sources) == set(module.PACKAGES)
    return series, sources


def assert_spacings(series, bands) -> None:
    """That for each (low, high) of bands some series' median spacing lies
    strictly between them (a set's mix of frequencies)."""
    spacings = np.array([np.median(np.diff(s.t)) for s in series])
    for low, high in bands:
        assert np.any((spacings > low) & (spacings < high)), (low, high)


def assert_windows(series, module) -> None:
    """That every series has module.MIN_POINTS to module.WINDOW points, at
    increasing times, and is not constant."""
    for s in series:
        assert module.MIN_POINTS <= s.t.size <= module.WINDOW
        assert np.all(np.diff(s.t) > 0) and np.ptp(s.y[np.isfinite(s.y)]) > 0


def assert_shares_nothing(series, *sets: str) -> None:
    """That series (one set's Series) share no values and no series id with
    the sets of the named modules of benchmarks/ (each one's real_series(),
    realdata_tuning's tuning_series())."""
    ours, ids = values(series), {s.series_id for s in series}
    for name in sets:
        module = importlib.import_module(name)
        other = (getattr(module, "real_series", None) or module.tuning_series)()
        assert not ours & values(other), f"values shared with {name}"
        assert not ids & {getattr(s, "series", s).series_id for s in other}, \
            f"ids shared with {name}"


def run(script: str, *args: str, timeout: float = 600) -> str:
    """stdout of benchmarks/<script> with args, run as `python <script>`
    runs it (runpy, __name__ "__main__": its own argument parsing, path
    set-up and exit status) but in this process, which has TensorFlow and
    scikit-learn imported already (a fresh process paid 7-10 CPU s for
    them, docs/design.md, "Build"). Fails the test on a non-zero exit or
    after `timeout` seconds."""
    path = os.path.join(ROOT, "benchmarks", script)
    out, err = io.StringIO(), io.StringIO()
    saved = sys.argv, list(sys.path), os.getcwd()

    def too_long(signum, frame):
        raise TimeoutError(f"{script} ran past {timeout} s")

    previous = signal.signal(signal.SIGALRM, too_long)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    sys.argv = [path, *args]
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            runpy.run_path(path, run_name="__main__")
        code = 0
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else int(done.code is not None)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        sys.argv, sys.path[:] = saved[0], saved[1]
        os.chdir(saved[2])
    assert code == 0, out.getvalue()[-3000:] + err.getvalue()[-3000:]
    return out.getvalue()


def table_rows(text: str) -> dict:
    """{first cell: [the other cells]} of the markdown table rows in text."""
    return {r[0]: r[1:] for r in ([c.strip() for c in line.strip("|").split("|")]
                                  for line in text.splitlines() if line.startswith("| "))}


def assert_real_check_scores(script: str, count: int = 4, *options: str) -> None:
    """A real set's `--check --count count --fresh [options]` prints its one
    table row: a share in [0, 100] % and no oracle failure."""
    cells = table_rows(run(script, "--check", "--count", str(count), "--fresh",
                           *options)).get(str(count))
    assert cells, f"no table row for {count} series from {script}"
    assert 0 <= float(cells[0].rstrip(" %")) <= 100 and cells[2] == "0"


def live_oracle_nll(series, k: int) -> float:
    """The oracle's nll of `series`, refitted live as a held-out set's cache
    fits it (benchmarks/heldout_oracle.py: RBF + White, scikit-learn with its
    starts, the seed the series' position k in its set), by the one numpy nll."""
    import heldout_oracle

    fit = heldout_oracle.sklearn_fit((series.t, series.y, "rbf", heldout_oracle.REFERENCE_RESTARTS, k))
    return heldout_oracle.row_nll(fit["row"], series.t, series.y)

"""gpfit-report over runs whose values reach float64's limits: a page (exit 0)
whose plots say what they leave out, never a traceback."""
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from matplotlib.figure import Figure

from gpfit_runs import gpfit_here
from pipeline.report import plots
from pipeline.report.cli import run
from pipeline.report.summary import Histogram, _edges
from test_cli import decode_png, parse_page

CODE = 1.79e308  # a missing-value code: float64's largest, 1.797e308, rounded down


def _write(folder, series: dict) -> str:
    """series {id: y [n]} at t = 0, 1, ...; -> the input folder."""
    ids, ts, ys = [], [], []
    for sid, y in series.items():
        ids += [sid] * len(y)
        ts.append(np.arange(len(y), dtype=float))
        ys.append(np.asarray(y, dtype=float))
    folder.mkdir()
    pq.write_table(pa.table({"series_id": ids, "t": np.concatenate(ts), "y": np.concatenate(ys)}),
                   folder / "part-0.parquet")
    return str(folder)


def _wiggle(seed: int, n: int = 40) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.sin(np.arange(n) / 3.0) + 0.2 * rng.standard_normal(n)


@pytest.fixture(scope="module")
def coded_backtest(tmp_path_factory):
    """A --holdout 4 run whose held-out points hold missing-value codes:
    one code (MASE near 1e308), a negative one, two (MASE null), and a
    series without codes (MASE near 1)."""
    root = tmp_path_factory.mktemp("coded")
    series = {}
    for i, (sid, codes) in enumerate((("one", {-2: CODE}), ("neg", {-2: -CODE}),
                                      ("two", {-1: CODE, -3: CODE}), ("clean", {}))):
        y = _wiggle(i)
        for at, code in codes.items():
            y[at] = code
        series[sid] = y
    series["codes"] = np.where(_wiggle(9) > 0, CODE, -CODE)  # skipped: its spread overflows
    fitted = gpfit_here(_write(root / "in", series), str(root / "out"), "--holdout", "4")
    assert fitted.code == 0, fitted.stderr
    mase = {r["series_id"]: r["holdout_mase"] for r in fitted.rows()}
    assert mase["one"] > 1e307 and mase["neg"] > 1e307 and mase["two"] is None
    assert {r["series_id"]: r["status"] for r in fitted.rows()}["codes"] == "skipped"
    return root / "out"


def _report(params, out, capsys, *args) -> str:
    """Runs gpfit-report with warnings as errors; -> its stderr."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        code = run(["--params", str(params), "--out", str(out), *args])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "Traceback" not in err and "Warning" not in err, err
    for image in parse_page(out).images:
        decode_png(image["src"])
    return err


def test_the_histograms_of_a_backtest_with_held_out_codes_are_drawn(coded_backtest, tmp_path,
                                                                     capsys):
    """The MASEs near 1e308 made the holdout_mase histogram fail in
    matplotlib's ticks ('arange: cannot compute length'), exit 1."""
    _report(coded_backtest, tmp_path / "r.html", capsys, "--worst", "0", "--random", "0")


@pytest.mark.parametrize("lo, hi, count", [
    (0.81, 1.09e308, 3),  # drawn as an axis from 1 to 10: its padding was inf
    (1.3e308, 1.5e308, 2),  # the ticks failed
    (1.5e308, 1.5e308, 1),  # one value: its bin's right edge was inf
    (5e-300, 5e296, 5),  # noise variances of series of sd 1e-150 and 1e149
])
def test_a_histogram_near_float64s_limits_spans_its_values(lo, hi, count):
    edges, log = _edges(lo, hi, count)
    assert np.all(np.isfinite(edges)) and edges[0] <= lo and edges[-1] >= hi
    counts = np.histogram([lo, hi], bins=edges)[0]
    assert counts.sum() == 2
    fig = Figure()
    ax = fig.add_subplot()
    ax.stairs(counts, edges)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        plots._x_limits(ax, edges[0], edges[-1], log)
        if log:
            plots._log_axis(ax, edges[0], edges[-1])
        shown = ax.get_xlim()
        plots.histograms_png([Histogram("q", edges, counts, log, 0)])
    # The axis holds every value (relative: edges are rounded by geomspace).
    assert shown[0] <= lo * (1 + 1e-12) and shown[1] >= hi * (1 - 1e-12), shown


def test_values_near_float64s_largest_are_left_out_of_a_plot_which_says_so(
        coded_backtest, tmp_path, capsys, monkeypatch):
    """A held-out code made the series plot fail ('arange: cannot compute
    length', exit 1) or drawn blank (its axis from -1 to 1.79e308, every
    other point at 0); so did a skipped series of codes. Such points are
    not drawn, and the legend counts them."""
    legends = []
    png = plots._png

    def kept(fig):
        legends.append([text.get_text() for ax in fig.axes if ax.get_legend()
                        for text in ax.get_legend().get_texts()])
        for ax in fig.axes:  # the axis spans what is drawn: no 1e308
            assert max(abs(v) for v in ax.get_ylim()) < 1e3, ax.get_ylim()
        return png(fig)

    monkeypatch.setattr(plots, "_png", kept)
    ids = ("one", "neg", "two", "clean", "codes")
    _report(coded_backtest, tmp_path / "r.html", capsys, "--worst", "0", "--random", "0",
            *(arg for sid in ids for arg in ("--series", sid)))
    cards = legends[:len(ids)]  # drawn before the histograms
    beyond = f"beyond ±{plots.DRAWN_MAX:g} not drawn"
    assert "held out (4 points; 1 " + beyond + ")" in cards[0]
    assert "held out (4 points; 1 " + beyond + ")" in cards[1]
    assert "held out (4 points; 2 " + beyond + ")" in cards[2]
    assert "held out (4 points)" in cards[3]
    assert "data (40 points; 1 " + beyond + ")" in cards[0]
    assert "data (40 points)" in cards[3]
    assert "data (40 points; 40 " + beyond + ")" in cards[4]


def test_a_named_series_without_a_finite_value_is_drawn_empty(tmp_path, capsys, monkeypatch):
    """--series of a skipped series whose values are all missing (NaN)
    died on 'slice step cannot be zero' (exit 1); its plot is empty and
    its legend says it has no points."""
    legends = []
    png = plots._png
    monkeypatch.setattr(plots, "_png", lambda fig: legends.append(
        [text.get_text() for ax in fig.axes if ax.get_legend()
         for text in ax.get_legend().get_texts()]) or png(fig))
    fitted = gpfit_here(_write(tmp_path / "in", {"gone": np.full(30, np.nan),
                                                 "here": _wiggle(1, 30)}), str(tmp_path / "out"))
    assert fitted.code == 0, fitted.stderr
    _report(tmp_path / "out", tmp_path / "r.html", capsys, "--series", "gone", "--worst", "0",
            "--random", "0")
    assert legends[0] == [] and "too few finite points: 0" in (tmp_path / "r.html").read_text()


def test_a_nightly_move_of_600_decades_is_binned_and_one_from_0_is_counted(tmp_path):
    """A noise_variance from 1e-300 to 1e296 (fits of y near 1e-150, then
    1e149) overflowed its ratio: the move was left out of the histogram and
    of the series that moved most, and one from 0 was dropped without a
    word; numpy's log10 of each parameter is the reference (exact to 1e-12
    in log10 units: a difference of two logs of doubles)."""
    from pipeline.report import params as params_io
    from pipeline.report.nightly import compare
    from report_helpers import params_row, write_params

    write_params(tmp_path / "prev", [params_row("a", noise_variance=1e-300),
                                     params_row("b", noise_variance=0.0),
                                     params_row("c", noise_variance=0.1)])
    write_params(tmp_path / "new", [params_row("a", noise_variance=1e296),
                                    params_row("b", noise_variance=0.1),
                                    params_row("c", noise_variance=0.2)],
                 manifest={"previous_output": str(tmp_path / "prev")})
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        moves = compare(params_io.locate(str(tmp_path / "new")), str(tmp_path / "prev"))
    noise = next(h for h in moves.histograms if h.name.startswith("noise_variance"))
    assert noise.total == 2 and noise.nonfinite == 1
    assert noise.counts[-1] == 1 and noise.edges[-1] == pytest.approx(596.0, abs=1e-12)
    top = moves.top[0]
    assert (top.series_id, top.parameter) == ("a", "noise_variance")
    assert top.log10_ratio == pytest.approx(np.log10(1e296) - np.log10(1e-300), abs=1e-12)


def test_a_predictions_shard_that_is_not_parquet_is_refused_in_one_line(tmp_path, capsys):
    """A predictions shard emptied (or cut short by a copy) ended the report
    with pyarrow's ArrowInvalid traceback, exit 1, where a params shard so
    broken is refused: it is refused too, exit 2, naming it."""
    fitted = gpfit_here(_write(tmp_path / "in", {"a": _wiggle(1), "b": _wiggle(2)}),
                        str(tmp_path / "out"), "--predict_steps", "5", "--num_shards", "2")
    assert fitted.code == 0, fitted.stderr
    for cut, name in ((0, "part-00000-of-00002.parquet"), (300, "part-00001-of-00002.parquet")):
        shard = tmp_path / "out" / "predictions" / name
        whole = shard.read_bytes()
        shard.write_bytes(whole[:cut])
        assert run(["--params", str(tmp_path / "out"), "--out", str(tmp_path / "r.html"),
                    "--series", "a", "--series", "b"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err[-1].startswith(f"gpfit-report: error: {shard} is not a Parquet file"), err
        assert "Traceback" not in "\n".join(err) and not (tmp_path / "r.html").exists()
        shard.write_bytes(whole)


def test_a_log_fit_whose_bands_map_back_past_1e307_is_drawn_on_the_datas_axis(
        tmp_path, capsys, monkeypatch):
    """--transform log on values from 1e-300 to 1e300: the posterior's ±2σ
    bands map back to 1e308 and inf (numpy's overflow warning on stderr),
    and the y axis spanned 1e308 with every point drawn at 0. The bands are
    cut at the axis of the data and the line, and their legend says so."""
    drawn = []
    png = plots._png

    def kept(fig):
        drawn.extend((ax.get_ylim(), [t.get_text() for t in ax.get_legend().get_texts()])
                     for ax in fig.axes if ax.get_legend())
        return png(fig)

    monkeypatch.setattr(plots, "_png", kept)
    y = np.exp(np.random.default_rng(4).uniform(-690, 690, 40))
    fitted = gpfit_here(_write(tmp_path / "in", {"wide": y}), str(tmp_path / "out"),
                        "--transform", "log")
    assert fitted.code == 0, fitted.stderr
    _report(tmp_path / "out", tmp_path / "r.html", capsys, "--series", "wide", "--worst", "0",
            "--random", "0")
    (low, high), legend = drawn[0]
    assert high < 1.1 * y.max() and low > -0.1 * y.max()  # the data's axis, with its margin
    cut = f"(cut: past ±{plots.DRAWN_MAX:g})"
    assert f"±2σ new observation {cut}" in legend and f"±2σ posterior {cut}" in legend


def test_an_amplitude_whose_square_overflows_is_reported(tmp_path, capsys):
    """An ok row with amplitude 1e200 (its square past float64's largest)
    ended the report with Python's OverflowError traceback while ranking
    the worst fits (and in the plot's title); it is left unranked (numpy's
    square is inf) and plotted when named."""
    from pipeline.report.build import title
    from report_helpers import params_row, write_params

    rows = [params_row("big", amplitude=1e200), params_row("a"), params_row("b", nll=60.0)]
    write_params(tmp_path / "out", rows)
    _write(tmp_path / "in", {sid: _wiggle(i, 30) for i, sid in enumerate(("big", "a", "b"))})
    _report(tmp_path / "out", tmp_path / "r.html", capsys, "--input", str(tmp_path / "in"),
            "--worst", "3", "--random", "0")
    assert [i["alt"] for i in parse_page(tmp_path / "r.html").images][1:] == ["series b",
                                                                            "series a"]
    _report(tmp_path / "out", tmp_path / "r.html", capsys, "--input", str(tmp_path / "in"),
            "--series", "big", "--worst", "0", "--random", "0")
    assert "series big" in [i["alt"] for i in parse_page(tmp_path / "r.html").images]
    assert "mean 0 · amplitude 1e+200" in title(rows[0])


def test_params_with_a_mase_not_finite_are_reported(tmp_path, capsys):
    """A run before gpfit wrote a MASE that is not a finite number as null
    failed at its manifest with inf or NaN MASEs in its shards: the report
    on them died in the backtest's bins ('cannot convert float infinity to
    integer', exit 1). They are left out of the mean and the median, as
    null ones are; the numpy mean of the finite ones is the reference."""
    from report_helpers import params_row, write_params

    scored = dict(holdout_points=4, holdout_coverage_95=1.0, holdout_scale=1.0)
    write_params(tmp_path / "out", [params_row(sid, holdout_mase=mase, **scored) for sid, mase in
                                    (("a", np.inf), ("b", np.nan), ("c", 0.5), ("d", 1.5))],
                 manifest=False)
    _write(tmp_path / "in", {sid: _wiggle(i, 30) for i, sid in enumerate("abcd")})
    _report(tmp_path / "out", tmp_path / "r.html", capsys, "--input", str(tmp_path / "in"),
            "--worst", "0", "--random", "0")
    text = " ".join(" ".join(parse_page(tmp_path / "r.html").text).split())
    table = text[text.index("Backtest (--holdout)"):text.index("Most common reasons")]
    assert f"4 16 {np.mean([0.5, 1.5]):.3g} " in table, table

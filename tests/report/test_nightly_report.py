"""gpfit-report on a nightly chain: a cold run, then the next night with
--previous_output and forecasts, both real gpfit runs. The page shows how
many series were reused, warm-started and fitted cold, how far the
parameters moved (the series scaled by 10 moved most), and forecast bands."""
import io
import base64

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from gpfit_runs import gpfit_here
from pipeline.report import params as params_io
from pipeline.report.cli import run
from pipeline.report.nightly import compare
from pipeline.report.plots import FORECAST_COLOR
from test_cli import parse_page


def write(folder, series):
    folder.mkdir(parents=True)
    pq.write_table(pa.table({
        "series_id": [sid for sid, (t, _) in series.items() for _ in t],
        "t": np.concatenate([t for t, _ in series.values()]),
        "y": np.concatenate([y for _, y in series.values()])}), folder / "part-0.parquet")
    return str(folder)


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    root = tmp_path_factory.mktemp("chain")
    rng = np.random.default_rng(3)
    series = {}
    for i in range(6):
        t = np.sort(rng.uniform(0.0, 50.0, 40))
        series[f"s{i}"] = (t, np.sin(t / rng.uniform(3, 8)) + 0.1 * rng.standard_normal(40))
    night2 = dict(series)
    night2["s1"] = (series["s1"][0], 10.0 * series["s1"][1])  # every parameter scales
    t, y = series["s2"]
    night2["s2"] = (np.append(t, t[-1] + 1.0), np.append(y, y[-1]))
    first = gpfit_here(write(root / "in1", series), str(root / "out1"), "--batch_size", "4")
    second = gpfit_here(write(root / "in2", night2), str(root / "out2"), "--batch_size", "4",
                        "--previous_output", str(root / "out1"),
                        "--predict_horizon", "5", "--predict_points", "10")
    assert first.code == 0 and second.code == 0, second.stderr
    return root, second


def orange_pixels(src: str) -> int:
    data = base64.b64decode(src.split(",", 1)[1])
    with Image.open(io.BytesIO(data)) as image:
        pixels = np.asarray(image.convert("RGB")).reshape(-1, 3).astype(int)
    target = np.array([int(FORECAST_COLOR[i:i + 2], 16) for i in (1, 3, 5)])
    return int((np.abs(pixels - target).sum(axis=1) < 30).sum())


def test_the_page_compares_with_the_previous_run_and_draws_forecasts(chain, tmp_path, capsys):
    root, _ = chain
    out = tmp_path / "report.html"
    code = run(["--input", str(root / "in2"), "--params", str(root / "out2"), "--out", str(out),
                "--series", "s1", "--series", "s3", "--random", "0", "--worst", "0"])
    assert code == 0, capsys.readouterr().err
    page = parse_page(out)
    text = " ".join(" ".join(page.text).split())
    assert "Against the previous run" in text and str(root / "out1") in text
    assert "reused (unchanged, copied) 4 66.7%" in text
    assert "fitted, warm-started from the previous parameters 2 33.3%" in text
    assert "fitted cold (new, changed without usable parameters, skipped or failed) 0" in text
    assert "How far the parameters of the 2 series fitted again moved" in text
    # The largest move: s1's noise variance, scaled by 10^2 with its values.
    top = text[text.index("moved most previous tonight factor"):]
    assert top.split()[5:8] == ["s1", "rbf", "noise_variance"]
    factor = float(top.split()[10].lstrip("×"))
    assert factor == pytest.approx(100.0, rel=0.05)
    # Move histograms, parameter histograms, then s1's and s3's plots, each
    # with the forecast past the data (s3 was reused: its data are the input's).
    assert len(page.images) == 4
    assert all(orange_pixels(image["src"]) > 50 for image in page.images[2:])
    assert orange_pixels(page.images[0]["src"]) == orange_pixels(page.images[1]["src"]) == 0


def _two_nights(folder, first: str, second: str, seed: int) -> None:
    """Two nights run from `folder` with relative paths: in1 -> first, then
    in2 (series s0 doubled) -> second against first; 3 series of 30 points."""
    rng = np.random.default_rng(seed)
    series = {f"s{i}": (np.arange(30.0), np.sin(np.arange(30.0) / (3 + i))
                        + 0.1 * rng.standard_normal(30)) for i in range(3)}
    write(folder / "in1", series)
    write(folder / "in2", {**series, "s0": (series["s0"][0], 2.0 * series["s0"][1])})
    assert gpfit_here("in1", first, "--batch_size", "4").code == 0
    done = gpfit_here("in2", second, "--batch_size", "4", "--previous_output", first)
    assert done.code == 0, done.stderr


def _report_text(params, out, capsys) -> str:
    """gpfit-report's page on params (series s0 alone), as its words."""
    code = run(["--params", str(params), "--out", str(out),
                "--series", "s0", "--random", "0", "--worst", "0"])
    assert code == 0, capsys.readouterr().err
    return " ".join(" ".join(parse_page(out).text).split())


def test_a_run_given_relative_paths_is_reported_from_any_folder(tmp_path, monkeypatch, capsys):
    """The manifest records where the input and the previous run are, so a
    report launched elsewhere (a scheduler's other working folder) finds them."""
    (tmp_path / "launch").mkdir()
    monkeypatch.chdir(tmp_path / "launch")
    _two_nights(tmp_path / "launch", "out1", "out2", seed=5)
    monkeypatch.chdir(tmp_path)
    text = _report_text(tmp_path / "launch" / "out2", tmp_path / "report.html", capsys)
    assert "Against the previous run" in text and "cannot read the previous run" not in text
    assert "How far the parameters of the 1 series fitted again moved" in text


def test_a_sums_components_are_compared_with_the_previous_run(tmp_path):
    """For a sum the flat amplitude, length_scale and period are null: the
    moves are each component's, against numpy's log10 ratios of the rows."""
    rng = np.random.default_rng(4)
    t = np.arange(40.0)
    series = {f"s{i}": (t, 0.05 * (i + 1) * t + np.sin(t / (3 + i))
                        + 0.1 * rng.standard_normal(40)) for i in range(3)}
    night2 = {**series, "s1": (t, 10.0 * series["s1"][1])}
    options = ("--batch_size", "4", "--kernel", "linear+rbf")
    assert gpfit_here(write(tmp_path / "in1", series), str(tmp_path / "out1"), *options).code == 0
    assert gpfit_here(write(tmp_path / "in2", night2), str(tmp_path / "out2"), *options,
                      "--previous_output", str(tmp_path / "out1")).code == 0
    before, after = ({r["series_id"]: r for r in pq.read_table(tmp_path / out / "params")
                      .to_pylist()} for out in ("out1", "out2"))
    ratios = {"amplitude": [], "length_scale": [], "period": [],
              "noise_variance": [np.log10(after["s1"]["noise_variance"]
                                          / before["s1"]["noise_variance"])]}
    for old, new in zip(before["s1"]["components"], after["s1"]["components"]):
        for name in ("amplitude", "length_scale"):
            if old[name] is not None:
                ratios[name].append(np.log10(new[name] / old[name]))
    moves = compare(params_io.locate(str(tmp_path / "out2")), str(tmp_path / "out1"))
    assert moves.compared == 1
    found = {h.name.split(":")[0]: h for h in moves.histograms}
    assert sorted(found) == ["amplitude", "length_scale", "noise_variance"]
    for name, hist in found.items():
        assert hist.total == len(ratios[name])
        np.testing.assert_array_equal(hist.counts, np.histogram(ratios[name], hist.edges)[0])
    largest = max(abs(v) for vs in ratios.values() for v in vs)
    assert abs(moves.top[0].log10_ratio) == pytest.approx(largest, rel=1e-9)


def test_series_that_moved_equally_are_listed_by_id_in_any_row_order(tmp_path):
    """Either run's rows in either order (worker processes and bundles
    decide it): the series that moved most are the same list."""
    from report_helpers import params_row, write_params

    before = [params_row(f"s{i}", amplitude=1.0) for i in range(6)]
    after = [params_row(f"s{i}", amplitude=10.0 if i in (1, 4) else 2.0) for i in range(6)]
    tops = []
    for name, was, now in (("a", before, after), ("b", before[::-1], after[::-1])):
        write_params(tmp_path / name / "out1", was, shards=2)
        write_params(tmp_path / name / "out2", now, shards=2)
        moves = compare(params_io.locate(str(tmp_path / name / "out2")),
                        str(tmp_path / name / "out1"), top=3)
        tops.append([m.series_id for m in moves.top])
    assert tops[0] == tops[1] == ["s1", "s4", "s0"]


def test_the_page_says_the_forecast_bands_are_the_runs_intervals(chain, tmp_path, capsys):
    """The orange bands are the run's calibrated lower_95/upper_95, not the
    ±2σ bands of the fit: the text says so, and names the held-out points."""
    root, second = chain
    out = tmp_path / "report.html"
    assert run(["--params", str(root / "out2"), "--out", str(out), "--series", "s1",
                "--random", "0", "--worst", "0"]) == 0, capsys.readouterr().err
    text = " ".join(" ".join(parse_page(out).text).split())
    assert "with the same bands" not in text
    assert "a band per interval level the run wrote (lower_L, upper_L: calibrated" in text
    assert "Magenta, with --holdout" in text


def test_an_older_manifests_relative_paths_are_found_from_any_folder(tmp_path, monkeypatch,
                                                                     capsys):
    """gpfit 0.16.0 (and every release before it) recorded a local input
    pattern and previous_output as given: relative to the folder the run
    was started in, which its recorded --output, as given, names. Such a
    manifest is rebuilt here from a real run's."""
    import json
    launch = tmp_path / "launch"
    (launch / "nights").mkdir(parents=True)
    monkeypatch.chdir(launch)
    _two_nights(launch, "nights/out1", "nights/out2/", seed=6)
    path = launch / "nights" / "out2" / "_SUCCESS.json"
    manifest = json.loads(path.read_text())
    assert manifest["options"]["output"] == "nights/out2/"
    manifest["input"]["pattern"], manifest["previous_output"] = "in2", "nights/out1"
    path.write_text(json.dumps(manifest))
    monkeypatch.chdir(tmp_path)
    # Before: exit 2, "no file or folder 'in2'; check the --input path" (no
    # --input was given), and the previous run unread.
    text = _report_text(launch / "nights" / "out2", tmp_path / "report.html", capsys)
    assert "Against the previous run" in text and "cannot read the previous run" not in text
    assert str(launch / "nights" / "out1") in text
    assert "How far the parameters of the 1 series fitted again moved" in text


def test_an_older_manifests_relative_input_not_found_says_where_it_came_from(
        chain, tmp_path, monkeypatch, capsys):
    import json
    root, _ = chain
    params = tmp_path / "copied"
    import shutil
    shutil.copytree(root / "out2", params)
    manifest = json.loads((params / "_SUCCESS.json").read_text())
    manifest["input"]["pattern"] = "in2"
    manifest["options"]["output"] = "/srv/elsewhere/out2"  # absolute: the run's folder unknown
    (params / "_SUCCESS.json").write_text(json.dumps(manifest))
    monkeypatch.chdir(tmp_path)
    code = run(["--params", str(params), "--out", str(tmp_path / "r.html")])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err == (f"gpfit-report: error: --input is needed: {params}'s manifest records the "
                   "input as 'in2', relative to the folder that run was started in, which it "
                   "does not record; give the run's --input"), err


def test_only_series_ok_in_both_runs_under_one_kernel_are_compared(tmp_path):
    """A series that failed last night, or was fitted with another kernel,
    has no move; a noise_variance null last night has no move either, and
    is not counted as a move from or to 0. rbf+rbf's two amplitudes are
    two parameters, "amplitude (rbf #1)" and "(rbf #2)"."""
    from report_helpers import params_row, write_params

    def twice(amplitudes):
        return params_row("twice", kernel="rbf+rbf", amplitude=None, length_scale=None,
                          components=[{"kernel": "rbf", "amplitude": a, "length_scale": s,
                                       "period": None} for a, s in zip(amplitudes, (2.0, 20.0))])

    ids = ("same", "failed", "other", "no_noise")
    before = [params_row("same"), params_row("failed", status="failed"),
              params_row("other", kernel="matern52"), params_row("no_noise", noise_variance=None),
              twice((1.0, 3.0))]
    write_params(tmp_path / "out1", before)
    write_params(tmp_path / "out2", [params_row(sid, amplitude=2.0) for sid in ids]
                 + [twice((2.0, 3.0))])
    moves = compare(params_io.locate(str(tmp_path / "out2")), str(tmp_path / "out1"))
    assert moves.compared == 3
    found = {h.name.split(":")[0]: h for h in moves.histograms}
    # same, no_noise, and twice's two: log10(2), log10(2), log10(2), 0.
    assert (found["amplitude"].total, found["amplitude"].nonfinite) == (4, 0)
    assert (found["noise_variance"].total, found["noise_variance"].nonfinite) == (2, 0)
    assert sorted(m.series_id for m in moves.top) == ["no_noise", "same", "twice"]
    assert {m.parameter for m in moves.top if m.series_id == "twice"} == {"amplitude (rbf #1)"}
    assert moves.top[0].log10_ratio == pytest.approx(np.log10(2.0), rel=1e-12)


def test_the_cap_on_compared_series_stops_reading_this_runs_shards(tmp_path, monkeypatch):
    """Past MAX_COMPARED refitted series the comparison is capped and says
    so; the shards after the cap were still read to their end (each batch's
    rows listed, then dropped), which on a run of millions cost the report
    its reading time again."""
    from report_helpers import params_row, write_params

    from pipeline.report import nightly

    ids = [f"s{i:02d}" for i in range(12)]
    write_params(tmp_path / "out1", [params_row(sid) for sid in ids])
    write_params(tmp_path / "out2", [params_row(sid, amplitude=2.0) for sid in ids], shards=4)
    read, real = [], params_io.iter_batches

    def counted(*args, **kwargs):
        for batch in real(*args, **kwargs):
            read.append(batch.num_rows)
            yield batch
    monkeypatch.setattr(nightly.params_io, "iter_batches", counted)
    monkeypatch.setattr(nightly, "MAX_COMPARED", 4)
    moves = compare(params_io.locate(str(tmp_path / "out2")), str(tmp_path / "out1"))
    assert moves.capped and moves.compared == 4
    assert sum(read) <= 6, read  # two shards of 3 rows, not all four


def test_a_stray_predictions_shard_is_left_out_of_the_plots(chain, tmp_path, capsys):
    """The manifest lists its predictions shards (prediction_files) as its
    params shards, but the report read every one in predictions/: a stray
    copy of another night's shard had its rows drawn with the run's, two
    forecasts interleaved in one curve, without a word. Only the listed
    shards are read now, and the page names the ones left out."""
    import shutil

    import pyarrow.compute as pc

    from pipeline.report.nightly import listed_predictions, read_predictions

    root, _ = chain
    params = tmp_path / "out2"
    shutil.copytree(root / "out2", params)
    (listed,) = sorted((params / "predictions").iterdir())
    table = pq.read_table(listed)
    other = pa.Table.from_arrays([pc.add(c, 10.0) if n == "mean" else c
                                  for n, c in zip(table.column_names, table.columns)],
                                 schema=table.schema)  # another night's forecast
    pq.write_table(other, params / "predictions" / "part-00000-of-00003.parquet")

    kept, unlisted, missing = listed_predictions(str(params), params_io.read_manifest(
        str(params))[1]["prediction_files"])
    assert [p.rsplit("/", 1)[-1] for p in kept] == [listed.name]
    assert (unlisted, missing) == (("part-00000-of-00003.parquet",), ())
    curve = read_predictions(str(params), ["s1"], dates=False, names=kept)["s1"]
    want = table.filter(pc.and_(pc.equal(table["series_id"], "s1"),
                                pc.equal(table["kind"], "forecast")))
    np.testing.assert_array_equal(curve.mean, want["mean"].to_numpy())

    out = tmp_path / "report.html"
    assert run(["--input", str(root / "in2"), "--params", str(params), "--out", str(out),
                "--series", "s1", "--random", "0", "--worst", "0"]) == 0, \
        capsys.readouterr().err
    text = " ".join(" ".join(parse_page(out).text).split())
    assert ("1 predictions shard(s) its _SUCCESS.json does not list were left out of the "
            "plots, as not this run's (part-00000-of-00003.parquet)") in text

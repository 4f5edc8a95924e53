"""gpfit-report end to end: a valid page with decodable images, and exit 2 for bad input."""
import base64
import html.parser
import io
import os
import struct
import subprocess
import sys
import zlib

import pyarrow.parquet as pq
import pytest
from PIL import Image

from gpfit_runs import as_a_user_without_access, command_in, without_gcs
from report_helpers import ODD_ID, params_row, write_params
from table_folders import delta_table
from pipeline.report.cli import run

VOID = {"meta", "img", "br", "hr", "link", "input"}
# Screen-sized plots: any smaller is unreadable, any larger bloats the page.
MIN_SIDE, MAX_SIDE = 200, 2000


class PageParser(html.parser.HTMLParser):
    """Collects images, headings and text, and checks that tags nest."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors, self.images = [], [], []
        self.headings, self.text, self.doctype = [], [], None
        self._heading = None

    def handle_decl(self, decl):
        self.doctype = decl

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.images.append(attrs)
        if tag not in VOID:
            self.stack.append(tag)
        if tag == "h3":
            self._heading = []

    def handle_endtag(self, tag):
        # <td>/<tr> may close implicitly in HTML5; the page closes <tr> only.
        while self.stack and self.stack[-1] in ("td", "th") and tag != self.stack[-1]:
            self.stack.pop()
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
            return
        self.stack.pop()
        if tag == "h3":
            self.headings.append("".join(self._heading))
            self._heading = None

    def handle_data(self, data):
        self.text.append(data)
        if self._heading is not None:
            self._heading.append(data)


def parse_page(path):
    parser = PageParser()
    parser.feed(path.read_text(encoding="utf-8"))
    parser.close()
    assert parser.doctype and parser.doctype.lower() == "doctype html"
    assert not parser.errors, parser.errors
    assert not parser.stack, f"unclosed tags {parser.stack}"
    return parser


def decode_png(src):
    """data: URI -> (width, height), checking the PNG by hand and with Pillow."""
    prefix = "data:image/png;base64,"
    assert src.startswith(prefix)
    data = base64.b64decode(src[len(prefix):], validate=True)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13
    width, height = struct.unpack(">II", data[16:24])
    assert struct.unpack(">I", data[29:33])[0] == zlib.crc32(data[12:29])
    with Image.open(io.BytesIO(data)) as image:
        image.load()  # decodes every pixel
        assert image.size == (width, height)
    return width, height


def test_report_for_a_fitted_run(fitted_run, tmp_path, capsys):
    out = tmp_path / "sub" / "report.html"
    code = run(["--input", fitted_run.data, "--params", fitted_run.params, "--out", str(out),
                "--series", ODD_ID, "--series", "short", "--series", "ghost",
                "--random", "3", "--worst", "2", "--seed", "5"])
    assert code == 0, capsys.readouterr().err
    page = parse_page(out)
    text = " ".join(page.text)

    # Named first, in order, then 2 worst and 3 random (fewer if overlapping).
    assert page.headings[:3] == [ODD_ID, "short", "ghost"]
    assert 6 <= len(page.headings) <= 8
    assert len(set(page.headings)) == len(page.headings)
    assert "worst #1 by standardised nll per point" in text and "random" in text
    # Summary: 12 fitted, 1 skipped, 1 failed; the reasons table shows both.
    assert "too few finite points: #" in text and "fit failed after jitter up to #" in text
    assert "No rows with this id" in text  # ghost has params but no data

    # One histogram figure plus one plot per series with data (not ghost).
    assert len(page.images) == 1 + len(page.headings) - 1
    for image in page.images:
        width, height = decode_png(image["src"])
        assert MIN_SIDE <= width <= MAX_SIDE and MIN_SIDE <= height <= MAX_SIDE
        assert (int(image["width"]), int(image["height"])) == (width, height)
    assert out.stat().st_size < 3_000_000
    err = capsys.readouterr().err
    assert f"wrote {out}" in err


def test_options_reach_the_sampler_and_the_same_seed_picks_the_same(fitted_run):
    from pipeline.io.inputs import Columns
    from pipeline.report.scan import ReportOptions, scan

    def picked(seed):
        options = ReportOptions(fitted_run.data, fitted_run.params, Columns(),
                                series=["short"], random=3, worst=1, seed=seed)
        return [(p.series_id, p.reasons) for p in scan(options).sampler.picks()]

    first = picked(9)
    assert first == picked(9)
    assert first[0] == ("short", ["named"])
    assert first[1][1][0] == "worst #1 by standardised nll per point"
    assert sum("random" in reasons for _, reasons in first) == 3
    assert any(picked(seed) != first for seed in (1, 2, 3))


def test_the_same_params_in_other_files_and_order_plot_the_same_series(fitted_run, tmp_path):
    """Reruns write a run's rows in another order and another number of
    shards (worker processes, bundles): the report of the same params and
    seed draws the same series and ranks the same worst."""
    from pipeline.io.inputs import Columns
    from pipeline.report.scan import ReportOptions, scan

    def picked(params, seed):
        options = ReportOptions(fitted_run.data, params, Columns(), random=4, worst=2, seed=seed)
        return [(p.series_id, p.reasons) for p in scan(options).sampler.picks()]

    reordered = str(write_params(tmp_path / "reordered", fitted_run.rows[::-1], shards=3))
    for seed in (0, 1, 2, 3):
        assert picked(reordered, seed) == picked(fitted_run.params, seed), seed


def test_run_without_manifest_is_reported_with_a_warning(fitted_run, tmp_path):
    params = write_params(tmp_path / "params", fitted_run.rows[:4], manifest=False)
    out = tmp_path / "r.html"
    assert run(["--input", fitted_run.data, "--params", str(params), "--out", str(out),
                "--random", "0", "--worst", "0"]) == 0
    page = parse_page(out)
    assert "did not finish" in " ".join(page.text)
    assert page.headings == [] and len(page.images) == 1  # the histograms only


def test_the_input_and_columns_come_from_the_runs_manifest_when_not_given(fitted_run, tmp_path):
    renamed = tmp_path / "renamed"
    renamed.mkdir()
    table = pq.read_table(fitted_run.data).rename_columns(["store", "day", "sales"])
    pq.write_table(table, renamed / "part-0.parquet")
    params = write_params(tmp_path / "params", fitted_run.rows[:4], manifest={
        "input": {"pattern": str(renamed)},
        "options": {"id_column": "store", "time_column": "day", "value_column": "sales"}})
    out = tmp_path / "r.html"
    assert run(["--params", str(params), "--out", str(out), "--series", "s00",
                "--random", "0", "--worst", "0"]) == 0
    assert parse_page(out).headings == ["s00"] and len(parse_page(out).images) == 2


@pytest.mark.parametrize("make_args, message", [
    (lambda r, t: ["--params", str(write_params(t / "p", r.rows[:2], manifest=False)),
                   "--out", str(t / "o.html")], "--input is needed"),
    # A run's table folder (README: "Read a table's folder") was told to give --input.
    (lambda r, t: ["--params", f"{r.params}/params", "--out", str(t / "o.html")],
     "--params '{params}/params' lies in the gpfit output folder '{params}'; pass that "
     "folder"),
    (lambda r, t: ["--params", f"{r.params}/_SUCCESS.json", "--out", str(t / "o.html")],
     "/_SUCCESS.json' lies in the gpfit output folder"),
    (lambda r, t: ["--params", str(t / "absent"), "--out", str(t / "o.html")],
     "absent': no such folder; pass the folder that gpfit --output wrote"),
    (lambda r, t: ["--input", str(t / "nothing"), "--params", r.params,
                   "--out", str(t / "o.html")], "no file or folder"),
    (lambda r, t: ["--input", r.data, "--params", str(t),
                   "--out", str(t / "o.html")], "no params/part-*.parquet files"),
    # A folder gpfit did not write, without --input: it was told "--input is
    # needed ... give the run's --input pattern", and with --input then
    # learnt that it was not a gpfit output folder.
    (lambda r, t: ["--params", str(t), "--out", str(t / "o.html")],
     "no params/part-*.parquet files (nor params-*.parquet beside the manifest, as gpfit 0.4.0 "
     "and earlier wrote them) in '{tmp}'; pass the folder that gpfit --output wrote"),
    # A Delta table's folder: every version's rows were read, as by gpfit.
    (lambda r, t: ["--input", str(delta_table(t / "sales")), "--params", r.params,
                   "--out", str(t / "o.html")], "sales is a Delta Lake table (_delta_log/)"),
    (lambda r, t: ["--input", r.data, "--params", r.params, "--out", str(t / "o.html"),
                   "--series", "nope"], "--series 'nope' not in the params"),
    (lambda r, t: ["--input", r.data, "--params", r.params, "--out", str(t)], "is a folder"),
    # /proc takes no new file, whoever asks (root included): a read-only place.
    (lambda r, t: ["--input", r.data, "--params", r.params, "--out", "/proc/gpfit-report.html"],
     "cannot write '/proc/gpfit-report.html'"),
    # A folder to be made in a read-only place, or below a file: found only
    # after the plots, where README says "tried before the work".
    (lambda r, t: ["--input", r.data, "--params", r.params, "--out", "/proc/gpfit-new/o.html"],
     "cannot write '/proc/gpfit-new/o.html': no folder can be made in '/proc'"),
    (lambda r, t: ["--input", r.data, "--params", r.params, "--out",
                   f"{r.params}/_SUCCESS.json/new/o.html"],
     "/_SUCCESS.json/new/o.html': '{params}/_SUCCESS.json' is not a folder"),
    # Refused only after the plots, on ENAMETOOLONG, where README says "tried before the work".
    (lambda r, t: ["--input", r.data, "--params", r.params, "--out", str(t / ("o" * 251 + ".html"))],
     "cannot write --out: the name oooooooooooooooooooooooooooooooooooooooo... is 256 bytes, "
     "longer than the file system takes (255 bytes); give a shorter one"),
    (lambda r, t: ["--input", r.data, "--params", r.params, "--out", str(t / "o.html"),
                   "--random", "-1"], "must be >= 0"),
    # Plotted every series of the run: hours and gigabytes on a large one.
    (lambda r, t: ["--input", r.data, "--params", r.params, "--out", str(t / "o.html"),
                   "--random", "1000000000"], "--random 1000000000 asks for more plots than a "
     "page holds: --random and --worst together at most 1,000 (each plot is about 26 KB of "
     "the page and 0.3 s to draw); give --random 997 or fewer"),
    (lambda r, t: ["--input", r.data, "--params", r.params, "--out", str(t / "o.html"),
                   "--random", "600", "--worst", "700"], "give --worst 400 or fewer"),
    # Named series were not counted: 2,000 --series (an id list through xargs)
    # drew a page of about 52 MB, past what a browser opens, in ten minutes.
    (lambda r, t: ["--input", r.data, "--params", r.params, "--out", str(t / "o.html")]
     + [f"--series=s{i:04d}" for i in range(995)] + ["--series", "s0001"],
     "--series (995 ids), --random 6 and --worst 3 ask for more plots than a page holds: "
     "at most 1,000 together (each plot is about 26 KB of the page and 0.3 s to draw); give "
     "--random and --worst together at most 5"),
    (lambda r, t: ["--input", r.data, "--params", r.params, "--out", str(t / "o.html"),
                   "--random", "0", "--worst", "0"] + [f"--series=s{i:04d}" for i in range(1001)],
     "--series (1,001 ids), --random 0 and --worst 0 ask for more plots than a page holds: "
     "at most 1,000 together (each plot is about 26 KB of the page and 0.3 s to draw); give "
     "at most 1,000 --series ids, and --random 0 --worst 0"),
    # numpy's generator refused it after the params were read: a traceback, exit 1.
    (lambda r, t: ["--input", r.data, "--params", r.params, "--out", str(t / "o.html"),
                   "--seed", "-5"], "--seed must be >= 0; got -5"),
    (lambda r, t: ["--input", r.data, "--params", r.params, "--out", str(t / "o.html"),
                   "--value_column", "v"], "no column 'v'"),
    (lambda r, t: ["--input", r.data, "--params", r.params, "--out", str(t / "o.html"),
                   "--worst", "x"], "invalid int value"),
    # `--out=~/r.html`: the shell left the ~, and the page went to a folder "~" here.
    (lambda r, t: ["--input", r.data, "--params", r.params, "--out", "~/o.html"],
     "--out '~/o.html' starts with '~', which no shell expanded"),
    (lambda r, t: ["--params", "~/out", "--out", str(t / "o.html")],
     "--params '~/out' starts with '~', which no shell expanded"),
])
def test_bad_input_exits_2_with_one_line(fitted_run, tmp_path, capsys, make_args, message):
    assert run(make_args(fitted_run, tmp_path)) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("gpfit-report: error: ") and "\n" not in err, err
    assert message.replace("{params}", str(fitted_run.params)).replace("{tmp}",
                                                                        str(tmp_path)) in err
    assert not (tmp_path / "o.html").exists()


def test_an_out_folder_to_be_made_where_none_can_be_is_said_alike_for_any_user(
        fitted_run, tmp_path, capsys, monkeypatch):
    """An --out whose folder is to be made in a place this user cannot
    write is said as "no folder can be made in ..." whoever runs it: a user
    but root was told "folder '/proc' is not writable" (os.access), root
    "no folder can be made in '/proc'" (the trial file), so the test of
    the latter passed as root alone. os.access is made to answer as for a
    user who is not root."""
    import os

    access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: (
        False if mode & os.W_OK and os.path.abspath(path) == "/proc"
        else access(path, mode, **kw)))
    assert run(["--input", fitted_run.data, "--params", fitted_run.params, "--out",
                "/proc/gpfit-new/o.html"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("gpfit-report: error: cannot write '/proc/gpfit-new/o.html': no folder can "
                   "be made in '/proc' (not writable)"), err


def test_an_out_naming_the_runs_data_is_refused_and_the_data_kept(fitted_run, tmp_path, capsys):
    """--out naming the input file, a params shard or the manifest (a
    mistyped or tab-completed name) had the page written over it: exit 0,
    the run's data replaced by HTML. Each is refused, exit 2, before the
    params are read, and the file is left as it was; an earlier page at
    --out is still replaced."""
    import shutil

    data, params = tmp_path / "data", tmp_path / "night"
    shutil.copytree(fitted_run.data, data)
    shutil.copytree(fitted_run.params, params)
    shard = sorted((params / "params").iterdir())[0]
    for out, said in (
            (data / "part-00000.parquet", "is a Parquet file, which the page would replace"),
            (shard, f"is {'params/' + shard.name!r} of the gpfit output folder"),
            (params / "_SUCCESS.json", "is '_SUCCESS.json' of the gpfit output folder")):
        before = out.read_bytes()
        assert run(["--input", str(data), "--params", str(params), "--out", str(out),
                    "--random", "1", "--worst", "0"]) == 2
        err = capsys.readouterr().err
        assert f"gpfit-report: error: --out {str(out)!r} {said}" in err, err
        assert "give the page a name of its own" in err
        assert out.read_bytes() == before
    page = tmp_path / "night.html"
    page.write_text("an earlier page")
    assert run(["--input", str(data), "--params", str(params), "--out", str(page), "--random",
                "0", "--worst", "0"]) == 0
    assert page.read_text().startswith("<!DOCTYPE html>")


def test_a_page_inside_a_gpfit_output_folder_is_refused_so_the_next_run_goes_on(tmp_path,
                                                                                 capsys):
    """--out night/report.html (a natural place) was written, exit 0, and
    the next night's gpfit --output night refused the folder, exit 2, for a
    file it did not write: the nightly run stopped. A page inside the
    --params folder, its params/ folder, or another run's folder is refused
    before anything is read, saying where to write it instead; beside the
    folder it is written, and the next run into the folder goes on."""
    from gpfit_runs import files_in, gpfit_here, write_long_parquet

    write_long_parquet(tmp_path / "in")
    night = str(tmp_path / "night")
    options = ("--kernel", "rbf", "--batch_size", "4")
    assert gpfit_here(str(tmp_path / "in"), night, *options).code == 0
    before = files_in(night)
    other = write_params(tmp_path / "other", [params_row("s01")])  # another run's folder
    for out in (f"{night}/report.html", f"{night}/params/report.html",
                f"{night}/pages/report.html", f"{other}/report.html"):
        assert run(["--params", night, "--out", out, "--random", "1", "--worst", "0"]) == 2
        err = capsys.readouterr().err.strip()
        folder = night if out.startswith(night) else str(other)
        assert err == (f"gpfit-report: error: --out {out!r} lies in the gpfit output folder "
                       f"{folder!r}, whose next run refuses a file gpfit did not write; write "
                       f"the page beside that folder, e.g. {folder + '.html'!r}"), err
        assert files_in(night) == before and not os.path.exists(out)
    beside = f"{night}.html"
    assert run(["--params", night, "--out", beside, "--random", "1", "--worst", "0"]) == 0, \
        capsys.readouterr().err
    assert gpfit_here(str(tmp_path / "in"), night, *options).code == 0


def test_a_path_with_a_newline_or_an_escape_is_named_on_one_line(fitted_run, tmp_path, capsys):
    """'wrote <out>' printed the page's path raw: a folder named with a
    newline made two lines, an ANSI escape reached the terminal, and a
    refusal naming such a path turned its newline into a space. Both are
    written as gpfit's lines write them (\\n, \\x1b)."""
    out = tmp_path / "night\nly\x1b" / "report.html"
    assert run(["--input", fitted_run.data, "--params", fitted_run.params, "--out", str(out),
                "--random", "0", "--worst", "0"]) == 0
    err = capsys.readouterr().err
    assert all(line.startswith("gpfit-report: ") and line.isprintable()
               for line in err.splitlines()), err
    assert f"wrote {tmp_path}/night\\nly\\x1b/report.html (" in err
    assert run(["--input", fitted_run.data, "--params", str(tmp_path / "no\nsuch\x1b"),
                "--out", str(tmp_path / "o.html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err[:-1].isprintable() and "no\\nsuch\\x1b" in err, err


def test_an_out_name_of_the_longest_length_is_written(fitted_run, tmp_path, capsys):
    """A name of 255 bytes, the most the file system takes, is a name the
    page can have: it was first written as that name + ".tmp", refused
    (File name too long) after all the work."""
    out = tmp_path / ("o" * 250 + ".html")
    assert run(["--input", fitted_run.data, "--params", fitted_run.params, "--out", str(out),
                "--random", "0", "--worst", "0"]) == 0, capsys.readouterr().err
    assert parse_page(out).doctype and sorted(p.name for p in tmp_path.iterdir()) == [out.name]


def test_the_reasons_table_says_what_it_leaves_out(fitted_run, tmp_path, capsys):
    """Past the 10 most common reasons the table stopped, and the page said
    nothing of the rest: 13 reasons of 14 series showed as 10 of 11."""
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota",
             "kappa", "lambda", "mu", "nu"]
    rows = [params_row(f"bad-{word}", status="failed", error=f"the {word} check failed")
            for word in words] + [params_row("bad-again", status="failed",
                                             error="the alpha check failed")]
    params = write_params(tmp_path / "p", rows + [params_row("s00")])
    out = tmp_path / "r.html"
    assert run(["--input", fitted_run.data, "--params", str(params), "--out", str(out),
                "--random", "0", "--worst", "0"]) == 0, capsys.readouterr().err
    text = " ".join(" ".join(parse_page(out).text).split())
    assert "the alpha check failed" in text and "the nu check failed" not in text
    assert "Not shown: 3 less common reason(s), of 3 series" in text


def test_params_without_output_columns_exit_2(fitted_run, tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq
    # The shard name of gpfit 0.4.0 and earlier: read too.
    pq.write_table(pa.table({"series_id": ["a"]}), tmp_path / "params-00000-of-00001.parquet")
    assert run(["--input", fitted_run.data, "--params", str(tmp_path),
                "--out", str(tmp_path / "o.html")]) == 2
    assert "lacks column(s) status" in capsys.readouterr().err


def test_help_exits_0(capsys):
    assert run(["--help"]) == 0
    assert "--series ID" in capsys.readouterr().out


def test_params_row_helper_matches_output_schema():
    # The helper above must keep up with the output contract.
    from pipeline.io.schema import OUTPUT_SCHEMA
    assert list(params_row("x")) == OUTPUT_SCHEMA.names


def test_nested_input_with_dates_and_periodic_params(tmp_path):
    import datetime

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    start = datetime.datetime(2024, 1, 1)
    times = [start + datetime.timedelta(hours=12 * i) for i in range(60)]
    values = [float(np.sin(2 * np.pi * i / 14)) for i in range(60)]
    pq.write_table(pa.table({
        "key": ["p", "q"],
        "when": pa.array([times, times[:30]], pa.list_(pa.timestamp("ms"))),
        "value": pa.array([values, values[:30]], pa.list_(pa.float64())),
    }), tmp_path / "nested.parquet")
    params = write_params(tmp_path / "params", [
        params_row("p", kernel="periodic", n_points=60, period=7.0, length_scale=0.9),
        params_row("q", kernel="periodic", n_points=30, period=None, length_scale=0.9,
                   converged=False, nll=None),  # broken row: drawn without a fit
    ])
    out = tmp_path / "dates.html"
    assert run(["--input", str(tmp_path / "nested.parquet"), "--params", str(params),
                "--out", str(out), "--id_column", "key", "--time_column", "when",
                "--value_column", "value", "--random", "5", "--worst", "5"]) == 0
    page = parse_page(out)
    assert sorted(page.headings) == ["p", "q"]
    assert "time in days" in " ".join(page.text)
    assert len(page.images) == 3
    for image in page.images:
        decode_png(image["src"])


def test_under_a_transform_the_parameters_section_names_their_scale(tmp_path):
    """A run under --transform log1p (its manifest's options) fitted
    log(1 + y): the histograms of mean, the amplitudes and noise_variance
    are of that scale, which the page did not say; a run without one says
    nothing of it."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    t = np.arange(12.0)
    pq.write_table(pa.table({"series_id": ["a"] * 12, "t": t, "y": 2.0 + np.sin(t)}),
                   tmp_path / "in.parquet")
    rows = [params_row("a", n_points=12)]
    out = tmp_path / "r.html"
    for transform, said in (("log1p", "log(1 + y)"), ("none", None)):
        params = write_params(tmp_path / transform, rows,
                              manifest={"options": {"transform": transform}})
        assert run(["--input", str(tmp_path / "in.parquet"), "--params", str(params),
                    "--out", str(out)]) == 0
        text = " ".join(" ".join(parse_page(out).text).split())
        section = text[text.index("Fitted parameters"):text.index("Series Dots")]
        if said:
            assert (f"Fitted on {said} (--transform {transform}): mean, the amplitudes, "
                    f"noise_variance and nll per point are those of {said}, not of y.") in section
        else:
            assert "Fitted on" not in section and "--transform" not in section


def test_only_the_shards_the_manifest_lists_are_counted(fitted_run, tmp_path, capsys):
    """A stray copy of a shard (a copy of one night over another, with
    another shard count) counted its series twice: 28 series on the page of
    a 14-series run. The report now reads the shards the manifest's
    output_files lists, as --previous_output does, and the page names the
    ones it left out; a listed shard that is missing is said too."""
    import json
    import shutil

    params = tmp_path / "night"
    shutil.copytree(fitted_run.params, params)
    listed = sorted(f"params/{p.name}" for p in (params / "params").iterdir())
    manifest = json.loads((params / "_SUCCESS.json").read_text())
    (params / "_SUCCESS.json").write_text(json.dumps({**manifest, "output_files": listed}))
    shutil.copy(params / listed[0], params / "params" / "part-00000-of-00003.parquet")
    out = tmp_path / "r.html"
    args = ["--input", fitted_run.data, "--params", str(params), "--out", str(out),
            "--random", "0", "--worst", "0"]
    assert run(args) == 0, capsys.readouterr().err
    text = " ".join(" ".join(parse_page(out).text).split())
    rows = len(fitted_run.rows)
    assert f"total {rows}" in text
    assert ("1 shard(s) its _SUCCESS.json does not list were left out, as not this run's "
            "(part-00000-of-00003.parquet)") in text
    assert f"wrote {out}" in capsys.readouterr().err

    (params / listed[1]).unlink()  # a copy cut short
    assert run(args) == 0, capsys.readouterr().err
    text = " ".join(" ".join(parse_page(out).text).split())
    left = pq.ParquetFile(params / listed[0]).metadata.num_rows
    assert f"total {left}" in text
    assert ("1 shard(s) its _SUCCESS.json lists are missing (part-00001-of-00002.parquet): "
            "a copy cut short? Their series are not counted here") in text


def test_the_choice_says_a_periodic_candidate_must_win_by_the_margin(tmp_path):
    """Under auto a periodic candidate is kept only where its BIC is more
    than 6 below every non-periodic one's; else the other is kept with a
    negative bic_margin (README, bic_margin). The page said every series
    keeps the lowest BIC, and drew negative margins unexplained; it now
    gives the rule and how many series hold a negative margin (counted
    among those below 2)."""
    import numpy as np
    import pyarrow as pa

    t = np.arange(12.0)
    pq.write_table(pa.table({"series_id": np.repeat(["a", "b", "c"], 12), "t": np.tile(t, 3),
                             "y": np.tile(np.sin(t), 3)}), tmp_path / "in.parquet")
    rows = [params_row("a", bic=10.0, bic_margin=-3.5), params_row("c", bic=10.0, bic_margin=0.5),
            params_row("b", kernel="rbf+periodic", bic=10.0, bic_margin=9.0, components=[
                {"kernel": "rbf", "amplitude": 1.0, "length_scale": 2.0, "period": None},
                {"kernel": "periodic", "amplitude": 1.0, "length_scale": 1.0, "period": 6.0}])]
    params = write_params(tmp_path / "out", rows, manifest={
        "options": {"kernel": "auto", "candidates": "rbf,rbf+periodic"}})
    out = tmp_path / "auto.html"
    assert run(["--input", str(tmp_path / "in.parquet"), "--params", str(params), "--out",
                str(out), "--random", "0", "--worst", "0"]) == 0
    text = " ".join(" ".join(parse_page(out).text).split())
    choice = text[text.index("Kernel choice"):text.index("Most common reasons")]
    assert "keeps the candidate with the lowest BIC;" not in choice
    assert ("a periodic candidate only where its BIC is more than 6 below every "
            "non-periodic candidate's") in choice
    assert "negative (1 series here) where a periodic candidate had the lower BIC by 6 or less" \
        in choice
    assert "rbf 2 66.7% 2 rbf+periodic 1 33.3% 0 total 3" in choice


def test_the_choice_counts_series_whose_periodic_candidate_the_screen_left_out(tmp_path):
    """A gpfit run under auto: series on a regular grid without a cycle fit
    rbf alone (no bic_margin); the table still counts every ok series by
    the kernel it holds, so its total is the ok count."""
    import numpy as np
    import pyarrow as pa

    from gpfit_runs import gpfit_here

    rng = np.random.default_rng(2)
    ids, ts, ys = [], [], []
    for i in range(4):
        t = np.arange(40.0) if i < 2 else np.sort(rng.uniform(0, 40, 40))
        ids += [f"s{i}"] * 40
        ts.append(t)
        ys.append(np.cumsum(rng.standard_normal(40)) * 0.3 + 0.2 * t)
    (tmp_path / "in").mkdir()
    pq.write_table(pa.table({"series_id": ids, "t": np.concatenate(ts), "y": np.concatenate(ys)}),
                   tmp_path / "in" / "part-0.parquet")
    fitted = gpfit_here(str(tmp_path / "in"), str(tmp_path / "out"), "--kernel", "auto",
                        "--candidates", "rbf,rbf+periodic", "--batch_size", "4")
    assert fitted.code == 0, fitted.stderr
    ok = [r for r in fitted.rows() if r["status"] == "ok"]
    assert any(r["bic_margin"] is None for r in ok)  # fitted alone: the screen's doing
    out = tmp_path / "auto.html"
    assert run(["--params", str(tmp_path / "out"), "--out", str(out), "--random", "0",
                "--worst", "0"]) == 0
    text = " ".join(" ".join(parse_page(out).text).split())
    choice = text[text.index("Kernel choice"):text.index("Most common reasons")]
    for candidate in ("rbf", "rbf+periodic"):
        count = sum(r["kernel"] == candidate for r in ok)
        assert f"{candidate} {count} {100 * count / len(ok):.1f}%" in choice
    assert f"total {len(ok)}" in choice


def test_report_of_an_auto_run_shows_the_choice_and_the_components(auto_run, tmp_path):
    """Real fits under kernel auto: the kernel-choice table and bic_margin
    histogram; each sum's plot has a panel of its components below it."""
    out = tmp_path / "auto.html"
    assert run(["--input", auto_run.data, "--params", auto_run.params, "--out", str(out),
                "--series", "season-0", "--series", "flat", "--random", "0",
                "--worst", "0"]) == 0
    page = parse_page(out)
    text = " ".join(" ".join(page.text).split())
    chosen = {r["series_id"]: r["kernel"] for r in auto_run.rows if r["status"] == "ok"}
    assert chosen["season-0"] == "rbf+periodic"
    assert "Kernel choice (--kernel auto)" in text
    for candidate in ("rbf", "rbf+periodic"):
        count = sum(k == candidate for k in chosen.values())
        assert f"{candidate} {count} {100 * count / len(chosen):.1f}%" in text
    # The bic_margin histogram, the parameter histograms, then the two series.
    assert page.headings == ["season-0", "flat"]
    sizes = [decode_png(image["src"]) for image in page.images]
    assert len(sizes) == 4
    plots = dict(zip(page.headings, sizes[2:]))
    tall = plots["season-0"][1]
    assert tall > 500  # the data panel plus the components panel
    if chosen["flat"] == "rbf":
        assert plots["flat"][1] < tall


def test_a_backtested_run_shows_its_scores_as_the_manifest_sums_them(tmp_path):
    """A real run with --holdout: the page's backtest table holds the rows'
    mean MASE, the manifest's median, and the coverage pooled over every
    held-out point (numpy over the rows); a run without one has no table."""
    import json

    import numpy as np
    import pyarrow as pa

    from gpfit_runs import gpfit_here

    rng = np.random.default_rng(4)
    ids, ts, ys = [], [], []
    for i, n in enumerate((30, 45, 60, 25, 50)):
        t = np.sort(rng.uniform(0, 20, n))
        ids += [f"s{i}"] * n
        ts.append(t)
        ys.append(np.sin(t / (2 + i)) + 0.2 * rng.standard_normal(n))
    (tmp_path / "in").mkdir()
    pq.write_table(pa.table({"series_id": ids, "t": np.concatenate(ts), "y": np.concatenate(ys)}),
                   tmp_path / "in" / "part-0.parquet")
    fitted = gpfit_here(str(tmp_path / "in"), str(tmp_path / "out"), "--holdout", "4")
    assert fitted.code == 0, fitted.stderr
    rows = [r for r in fitted.rows() if r["holdout_coverage_95"] is not None]
    assert len(rows) == 5
    points = np.array([r["holdout_points"] for r in rows])
    pooled = np.sum(points * np.array([r["holdout_coverage_95"] for r in rows])) / points.sum()
    mean = np.mean([r["holdout_mase"] for r in rows])
    median = json.loads((tmp_path / "out" / "_SUCCESS.json").read_text())["holdout"]["mase_median"]

    out = tmp_path / "backtest.html"
    assert run(["--params", str(tmp_path / "out"), "--out", str(out), "--random", "0",
                "--worst", "0"]) == 0
    page = parse_page(out)
    text = " ".join(" ".join(page.text).split())
    table = text[text.index("Backtest (--holdout)"):text.index("Most common reasons")]
    assert f"5 {points.sum()} {mean:.3g} {median:.3g} {pooled:.3g}" in table
    assert [i["alt"] for i in page.images] == ["histogram of holdout_mase",
                                               "histograms of the fitted parameters"]

    plain = gpfit_here(str(tmp_path / "in"), str(tmp_path / "plain"))
    assert plain.code == 0, plain.stderr
    assert run(["--params", str(tmp_path / "plain"), "--out", str(out), "--random", "0",
                "--worst", "0"]) == 0
    assert "Backtest" not in " ".join(parse_page(out).text)


def test_the_choice_states_the_periodic_guard_as_gpcore_applies_it():
    """The page said a periodic candidate is kept only where its BIC is
    more than 6 below "the best other candidate's", but gpcore.choice
    holds it to the non-periodic ones alone: among rbf (BIC 100),
    rbf+periodic (90) and matern52+periodic (89.5) the last is kept by
    0.5. The page now says "every non-periodic candidate's"."""
    from gpcore.choice import choose_fit
    from gpcore.result import OK, FitResult
    from pipeline.report.page import Choice, _choice

    fits = [FitResult("s", OK, k, 30, bic=b) for k, b in (
        ("rbf", 100.0), ("rbf+periodic", 90.0), ("matern52+periodic", 89.5))]
    kept = choose_fit(fits)
    assert (kept.kernel, kept.bic_margin) == ("matern52+periodic", 0.5)
    said = " ".join(_choice(Choice([("rbf", 0, 0)], 1, 2.0, None))[1].split())
    assert "BIC is more than 6 below every non-periodic candidate's" in said
    assert "best other" not in said


def test_the_backtest_says_over_how_many_series_its_mase_is(tmp_path):
    """A series whose fitted part is constant (zero sales) has a MASE scale
    of 0 and a null holdout_mase, but is scored for coverage: the table gave
    "3 series" beside a MASE mean and median over 2, unsaid. The page now
    says how many series the MASE is over, and why the others have none;
    where every scored series has one it says nothing more."""
    import numpy as np
    import pyarrow as pa

    t = np.arange(10.0)
    pq.write_table(pa.table({"series_id": np.repeat(["a", "b", "c"], 10), "t": np.tile(t, 3),
                             "y": np.tile(np.sin(t), 3)}), tmp_path / "in.parquet")
    scored = dict(holdout_points=2, holdout_coverage_95=1.0)
    rows = [params_row("a", holdout_mase=0.8, holdout_scale=0.5, **scored),
            params_row("b", holdout_mase=1.2, holdout_scale=0.5, **scored),
            params_row("c", holdout_mase=None, holdout_scale=0.0, **scored)]
    out = tmp_path / "r.html"
    for given, said in ((rows, "MASE over 2 of the 3 series: the other 1 have none (an "
                               "in-sample naive error of 0, a constant fitted part, or a "
                               "MASE that is not a finite number)."),
                        (rows[:2], None)):
        params = write_params(tmp_path / str(len(given)), given)
        assert run(["--input", str(tmp_path / "in.parquet"), "--params", str(params),
                    "--out", str(out), "--random", "0", "--worst", "0"]) == 0
        text = " ".join(" ".join(parse_page(out).text).split())
        table = text[text.index("Backtest (--holdout)"):text.index("Most common reasons")]
        assert f"{len(given)} {2 * len(given)} 1 1 1" in table
        assert (said in table) if said else ("MASE over" not in table)


def test_gs_params_without_the_gcp_extra_says_to_install_it(tmp_path):
    """A plain `pip install gpfit[report]` has no gs:// file system: --params
    on gs:// read as a folder without a manifest, and the advice was to give
    --input."""
    done = command_in(without_gcs(tmp_path / "no-gcs"), "-m", "pipeline.report",
                      "--params", "gs://bucket-x/out/", "--out", str(tmp_path / "r.html"))
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "gpfit-report: error: --params 'gs://bucket-x/out/': gs:// paths need gpfit's gcp "
        "extra, which is not installed here; pip install 'gpfit[gcp]'"), done.stderr
    assert not (tmp_path / "r.html").exists()


def test_an_offline_gs_params_input_or_out_is_said_in_seconds(fitted_run, tmp_path, capsys,
                                                             monkeypatch):
    """Offline, a gs:// --params, --input or --out waited for Google's
    storage client's retries (and Beam's search for credentials) before the
    report said anything: 139-146 s each on this machine, --out only after
    the page was built. Cloud Storage's host is now tried first, as gpfit
    tries it for its own paths. (Run for real where storage.googleapis.com
    cannot be reached; skipped where it can.)"""
    import socket
    import time

    from pipeline.io import matching

    try:
        socket.create_connection(matching.GCS_HOST, timeout=5).close()
        pytest.skip("this machine reaches storage.googleapis.com")
    except OSError:
        pass
    for name in ("https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "STORAGE_EMULATOR_HOST",
                 "API_ENDPOINT_OVERRIDE"):
        monkeypatch.delenv(name, raising=False)
    out = tmp_path / "r.html"
    given = {"params": ["--params", "gs://gpfit-offline-test-bucket/out/", "--out", str(out)],
             "input": ["--params", fitted_run.params, "--input",
                       "gs://gpfit-offline-test-bucket/series/", "--out", str(out)],
             "out": ["--params", fitted_run.params, "--input", fitted_run.data, "--out",
                     "gs://gpfit-offline-test-bucket/r.html"]}
    for name, argv in given.items():
        capsys.readouterr()
        started = time.monotonic()
        assert run(argv) == 2
        assert time.monotonic() - started < 30  # 3 tries over 6 s, and the start-up
        said = capsys.readouterr().err.strip().splitlines()[-1]
        verb = "write" if name == "out" else "read"
        assert said.startswith(f"gpfit-report: error: cannot {verb} --{name} "
                               f"'gs://gpfit-offline-test-bucket/"), said
        assert ": Cloud Storage's storage.googleapis.com:443 cannot be reached (" in said, said
        assert not out.exists()


def test_ids_that_do_not_print_are_shown_escaped_in_the_html(fitted_run, tmp_path, capsys):
    """A NUL (or a tab, a newline, a right-to-left override) in an id was
    written raw into the card's heading, the table of moved series and the
    reasons quoting it: HTML shows a NUL as nothing or a box, and a tab or a
    newline as a space. Each shows as the plots' titles and the log lines
    show it (errors.one_line), the id whole."""
    from pipeline.report.nightly import Moved, Moves
    from pipeline.report.page import Card, Page, render

    odd = "nul\x00tab\tnew\nrtl\u202e" + "x" * 100
    shown = "nul\\x00tab\\tnew\\nrtl\\u202e" + "x" * 100
    params = write_params(tmp_path / "p", [
        params_row(odd), params_row("bad", status="failed", error=f"series {odd}: broken")])
    out = tmp_path / "r.html"
    code = run(["--input", fitted_run.data, "--params", str(params), "--out", str(out),
                "--series", odd, "--random", "0", "--worst", "0"])
    assert code == 0, capsys.readouterr().err
    text = out.read_text(encoding="utf-8")
    assert "\x00" not in text and "\u202e" not in text
    assert parse_page(out).headings == [shown]
    assert f"series {shown}: broken" in text
    page = Page("p", "i", "now", 1, [("ok", 1)], 1, [("rbf", 1)], [], None,
                [Card(odd, [], "ok", None)],
                moves=Moves("prev", 1, top=[Moved(odd, "rbf", "amplitude", 1.0, 2.0)]))
    moved = render(page)
    assert "\x00" not in moved and moved.count(shown) == 2


def test_a_folder_gpfit_040_or_earlier_wrote_is_reported(tmp_path, capsys):
    """gpfit 0.1.0 to 0.4.0 wrote the shards beside the manifest, without
    gpfit_version, the input and output as given (relative): the report
    reads such a folder whole, its forecasts too (real 0.1.0 and 0.3.0
    folders were checked so). Its refusal of a folder without shards named
    0.4.0's layout alone, as if older folders were not read."""
    import json

    from gpfit_runs import as_legacy_layout, gpfit_here, write_long_parquet
    write_long_parquet(tmp_path / "in", n_series=3, n_points=24)
    done = gpfit_here(str(tmp_path / "in"), str(tmp_path / "new"), "--predict_horizon", "2",
                      "--predict_points", "3")
    assert done.code == 0, done.stderr
    old = as_legacy_layout(str(tmp_path / "new"), str(tmp_path / "old"))
    with open(tmp_path / "old" / "_SUCCESS.json") as f:
        found = json.load(f)
    found["input"]["pattern"], found["options"]["output"] = "in", "old"  # as given, in tmp_path
    (tmp_path / "old" / "_SUCCESS.json").write_text(json.dumps(found))
    out = tmp_path / "r.html"
    code = run(["--params", old, "--out", str(out), "--series", "s1", "--random", "0",
                "--worst", "0"])
    assert code == 0, capsys.readouterr().err
    assert parse_page(out).headings == ["s1"]
    from pipeline.report.nightly import read_predictions
    assert read_predictions(old, ["s1"], dates=False)["s1"].t.size == 3
    (tmp_path / "none").mkdir()
    assert run(["--input", str(tmp_path / "in"), "--params", str(tmp_path / "none"),
                "--out", str(out)]) == 2
    assert "as gpfit 0.4.0 and earlier wrote them" in capsys.readouterr().err


def test_a_run_of_null_ids_alone_says_so(tmp_path, capsys):
    """Every input row with a null id: gpfit fits no series and counts the
    rows in its manifest (counts.null_ids). The page said "None: every
    series was fitted" of a run of none, and nothing of the rows."""
    import pyarrow as pa

    from gpfit_runs import gpfit_here
    (tmp_path / "in").mkdir()
    pq.write_table(pa.table({"series_id": pa.array([None] * 5, pa.string()),
                             "t": [0.0, 1.0, 2.0, 3.0, 4.0], "y": [1.0, 2.0, 3.0, 4.0, 5.0]}),
                   tmp_path / "in" / "part-0.parquet")
    done = gpfit_here(str(tmp_path / "in"), str(tmp_path / "out"))
    assert done.code == 0 and done.manifest["counts"]["null_ids"] == 5, done.stderr
    out = tmp_path / "r.html"
    assert run(["--params", str(tmp_path / "out"), "--out", str(out)]) == 0, \
        capsys.readouterr().err
    text = " ".join(" ".join(parse_page(out).text).split())
    assert "every series was fitted" not in text and "None: the run has no series." in text
    assert "5 input rows with a null id: no series, not fitted" in text


def test_an_empty_id_is_named_as_such(fitted_run, tmp_path, capsys):
    """An empty string is an id gpfit fits like any other; the page gave its
    card an empty heading (and its plot an empty name in the title and alt
    text), so nothing said which series it was."""
    from pipeline.report.build import title

    params = write_params(tmp_path / "p", [params_row(""), params_row("s01")])
    out = tmp_path / "r.html"
    code = run(["--input", fitted_run.data, "--params", str(params), "--out", str(out),
                "--series", "", "--random", "0", "--worst", "0"])
    assert code == 0, capsys.readouterr().err
    assert parse_page(out).headings == ["(empty id)"]
    assert "<h3><em>(empty id)</em></h3>" in out.read_text(encoding="utf-8")
    assert title(params_row("")).startswith("(empty id) · rbf · ")


def test_a_folder_named_with_a_newline_or_an_escape_is_shown_escaped(fitted_run, tmp_path,
                                                                     capsys):
    """The page's title, its header and its warnings named --params raw: an
    ANSI escape in the folder's name went into the HTML as a control
    character, a newline showed as a space. They show it as gpfit's lines
    write it (\\n, \\x1b), as the report's own stderr does."""
    import shutil
    params = tmp_path / "night\nly\x1b"
    shutil.copytree(fitted_run.params, params)
    (params / "_SUCCESS.json").unlink()  # a warning naming the folder, too
    out = tmp_path / "r.html"
    assert run(["--input", fitted_run.data, "--params", str(params), "--out", str(out),
                "--random", "0", "--worst", "0"]) == 0, capsys.readouterr().err
    text = out.read_text(encoding="utf-8")
    assert "\x1b" not in text and f"{tmp_path}/night\nly" not in text
    assert text.count(f"{tmp_path}/night\\nly\\x1b") == 3  # title, header, warning


@pytest.mark.parametrize("streams", ["a pipe whose reader has gone", "closed"])
def test_the_page_is_written_whatever_the_commands_streams(fitted_run, tmp_path, streams):
    # `gpfit-report ... 2>&1 | head -1` wrote no page, exit 1 (its first line's
    # BrokenPipeError); with stderr closed (2>&-) the None Python gives it
    # raised in TensorFlow's quiet import, exit 1, no page.
    out = tmp_path / "r.html"
    read, gone = os.pipe()
    os.close(read)
    close = (2,) if streams == "closed" else ()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pipeline.report", "--input", fitted_run.data, "--params",
             fitted_run.params, "--out", str(out), "--random", "0", "--worst", "0"],
            env=dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(
                os.path.dirname(os.path.abspath(__file__))))),
            stdout=gone, stderr=subprocess.DEVNULL if close else gone,
            preexec_fn=lambda: [os.close(fd) for fd in close], timeout=300, check=False)
    finally:
        os.close(gone)
    assert done.returncode == 0
    assert len(parse_page(out).images) == 1  # the histograms


def test_the_page_is_never_written_through_a_link_planted_beside_it(fitted_run, tmp_path, capsys):
    """In a folder others can write (/tmp, a team's), a link planted at the
    page's temporary name, which was named by the process id, had the page
    overwrite the file it named and then stand in --out's place."""
    shared, victim = tmp_path / "shared", tmp_path / "elsewhere.txt"
    shared.mkdir()
    victim.write_text("the user's file\n")
    os.symlink(victim, shared / f".gpfit-report-{os.getpid()}.tmp")
    out = shared / "report.html"
    assert run(["--input", fitted_run.data, "--params", fitted_run.params, "--out", str(out),
                "--random", "0", "--worst", "0"]) == 0, capsys.readouterr().err
    assert victim.read_text() == "the user's file\n"
    assert not out.is_symlink() and parse_page(out).doctype
    assert oct(out.stat().st_mode & 0o777) == oct(0o666 & ~_umask())
    assert sorted(p.name for p in shared.iterdir()) == [f".gpfit-report-{os.getpid()}.tmp",
                                                         "report.html"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_read_only_home_gives_a_quiet_report_and_a_users_mplconfigdir_is_kept(
        fitted_run, tmp_path, monkeypatch):
    """matplotlib could not make ~/.config/matplotlib: it printed "mkdir -p
    failed ..." and "Matplotlib created a temporary cache directory ...",
    two lines among the report's own. The report gives it a temporary
    folder, removed at exit; an MPLCONFIGDIR of the user's is theirs."""
    home, temp = tmp_path / "home", tmp_path / "temp"
    home.mkdir()
    temp.mkdir()
    home.chmod(0o555)
    for name in ("MPLCONFIGDIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TMPDIR", str(temp))
    args = ["-m", "pipeline.report", "--input", fitted_run.data, "--params", fitted_run.params,
            "--random", "1", "--worst", "0"]
    done = as_a_user_without_access(*args, "--out", str(tmp_path / "r.html"))
    assert done.returncode == 0, done.stderr
    assert [line.split(":")[0] for line in done.stderr.splitlines()] == ["gpfit-report"] * 3, \
        done.stderr
    assert len(parse_page(tmp_path / "r.html").images) == 2
    # TensorFlow's autograph leaves its own files in TMPDIR.
    assert [p.name for p in temp.iterdir() if "matplotlib" in p.name] == []
    assert list(home.iterdir()) == []

    mine = tmp_path / "mine"
    mine.mkdir()
    monkeypatch.setenv("MPLCONFIGDIR", str(mine))
    done = as_a_user_without_access(*args, "--out", str(tmp_path / "r2.html"))
    assert done.returncode == 0, done.stderr
    assert any(p.name.startswith("fontlist") for p in mine.iterdir())


@pytest.mark.parametrize("params", ["gs://bucket", "gs://bucket/", "/"])
def test_a_page_in_a_root_run_folder_is_told_no_bucket_for_a_place(params):
    """A run into a bucket's root (or "/") was told to write the page to
    'gs://bucket.html', a bucket's name, or '/.html', inside the folder."""
    from pipeline.io.errors import UsageError
    from pipeline.report.cli import _check_not_in_output
    with pytest.raises(UsageError) as refused:
        _check_not_in_output(params.rstrip("/") + "/report.html", params,
                             lambda: ({"gpfit_version": "0.16.5"}, None))
    said = str(refused.value)
    assert said.endswith("write the page outside that folder"), said


@pytest.mark.parametrize("signum", [15, 2])  # SIGTERM (a scheduler's timeout), SIGINT (Ctrl-C)
def test_a_stop_while_the_page_is_written_leaves_the_earlier_page_and_one_line(fitted_run,
                                                                               tmp_path, signum):
    """A stop as the page is renamed into place: SIGTERM ended the process
    at once, its temporary page left beside --out; Ctrl-C printed a
    KeyboardInterrupt traceback (43 lines, from TensorFlow's import when it
    came earlier). The signal is sent at that step by a hook on os.replace;
    the command runs in a process of its own."""
    out = tmp_path / "report.html"
    out.write_text("<html>the earlier night's page</html>\n")
    script = (
        "import os, signal, sys\n"
        "from pipeline.report.cli import run\n"
        "replace = os.replace\n"
        "def stopped_at_the_rename(source, target):\n"
        f"    os.kill(os.getpid(), {signum})  # raises before the rename\n"
        "    return replace(source, target)\n"
        "os.replace = stopped_at_the_rename\n"
        f"sys.exit(run(['--input', {fitted_run.data!r}, '--params', {fitted_run.params!r}, "
        f"'--out', {str(out)!r}, '--random', '0', '--worst', '0']))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(
                              os.path.dirname(os.path.abspath(__file__))))),
                          timeout=300, check=False)
    assert done.returncode == 128 + signum, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    name = "SIGTERM" if signum == 15 else "SIGINT"
    assert done.stderr.splitlines()[-1] == (
        f"gpfit-report: error: stopped by {name}; the page was not written, "
        f"{out} is as it was"), done.stderr
    assert out.read_text() == "<html>the earlier night's page</html>\n"
    assert os.listdir(tmp_path) == ["report.html"]

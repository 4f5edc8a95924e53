"""Every count and score the page prints, against the run's own Parquet
files and manifest read with pyarrow and numpy (a real gpfit run)."""
import collections
import html.parser
import json

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from gpfit_runs import gpfit_here
from pipeline.report.cli import run


class Tables(html.parser.HTMLParser):
    """{h2 heading: [table rows, each a list of its cells' text]} and the
    text under each heading."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tables, self.text = collections.defaultdict(list), collections.defaultdict(str)
        self._section, self._heading, self._cell = "", None, None

    def handle_starttag(self, tag, attrs):
        if tag == "h2":
            self._heading = ""
        elif tag == "tr":
            self.tables[self._section].append([])
        elif tag in ("td", "th"):
            self._cell = ""

    def handle_endtag(self, tag):
        if tag == "h2":
            self._section, self._heading = self._heading, None
        elif tag in ("td", "th"):
            self.tables[self._section][-1].append(self._cell)
            self._cell = None

    def handle_data(self, data):
        if self._heading is not None:
            self._heading += data
        if self._cell is not None:
            self._cell += data
        self.text[self._section] += data


def _number(cell: str) -> float:
    return float(cell.replace(",", "").rstrip("%"))


def test_every_number_on_the_page_is_the_runs(tmp_path):
    """A run under --kernel auto with --holdout, series skipped for want of
    points among the fitted ones: counts by status and their shares, the
    converged count, the kernels, the choice per candidate (with margins
    below 2 and negative ones), the backtest's totals and the reasons
    equal what pyarrow and numpy make of params/ and _SUCCESS.json. Shares
    are printed to 0.1 %, scores to 3 significant digits; the MASE median
    is the manifest's, within 2 % of numpy's (README, the report)."""
    rng = np.random.default_rng(11)
    ids, ts, ys = [], [], []
    for i in range(10):
        n = 2 if i % 4 == 3 else 30  # s3 and s7: too few points to fit
        t = np.arange(n, dtype=float)
        ids += [f"s{i}"] * n
        ts.append(t)
        ys.append(np.sin(2 * np.pi * t / 7) * (i % 3) + 0.3 * rng.standard_normal(n) + 5)
    (tmp_path / "in").mkdir()
    pq.write_table(pa.table({"series_id": ids, "t": np.concatenate(ts), "y": np.concatenate(ys)}),
                   tmp_path / "in" / "part-0.parquet")
    fitted = gpfit_here(str(tmp_path / "in"), str(tmp_path / "out"), "--kernel", "auto",
                        "--candidates", "matern12,matern12+periodic", "--holdout", "3",
                        "--restarts", "1", "--search", "quick")
    assert fitted.code == 0, fitted.stderr
    out = tmp_path / "r.html"
    assert run(["--params", str(tmp_path / "out"), "--out", str(out), "--random", "0",
                "--worst", "0"]) == 0
    page = Tables()
    page.feed(out.read_text(encoding="utf-8"))
    rows = ds.dataset(str(tmp_path / "out" / "params"), format="parquet").to_table().to_pylist()
    manifest = json.loads((tmp_path / "out" / "_SUCCESS.json").read_text())
    ok = [r for r in rows if r["status"] == "ok"]

    statuses = collections.Counter(r["status"] for r in rows)
    assert statuses["skipped"] == 2 and len(ok) == 8
    summary = page.tables["Summary"]
    assert summary[0] == ["status", "series", "share"]
    for status, count, share in summary[1:-1]:
        assert _number(count) == statuses[status] == manifest["counts"][status]
        assert share == f"{100 * statuses[status] / len(rows):.1f}%"
    assert summary[-1][:2] == ["total", str(len(rows))]
    said = " ".join(page.text["Summary"].split())
    converged = sum(bool(r["converged"]) for r in ok)
    assert f"{converged} of {len(ok)} fitted series converged" in said
    kernels = collections.Counter(r["kernel"] for r in rows)
    for kernel, count in kernels.items():
        assert f"{kernel} ({count})" in said

    choice = page.tables["Kernel choice (--kernel auto)"]
    chosen = collections.Counter(r["kernel"] for r in ok)
    close = collections.Counter(r["kernel"] for r in ok
                                if r["bic_margin"] is not None and r["bic_margin"] < 2)
    assert [row[0] for row in choice[1:-1]] == ["matern12", "matern12+periodic"]
    for kernel, count, share, below in choice[1:-1]:
        assert _number(count) == chosen[kernel] and _number(below) == close[kernel]
        assert share == f"{100 * chosen[kernel] / len(ok):.1f}%"
    assert choice[-1][:2] == ["total", str(len(ok))]
    negative = sum(r["bic_margin"] is not None and r["bic_margin"] < 0 for r in ok)
    assert f"negative ({negative} series here)" in page.text["Kernel choice (--kernel auto)"]

    (header, scores), held = page.tables["Backtest (--holdout)"], [
        r for r in ok if r["holdout_coverage_95"] is not None]
    points = np.array([r["holdout_points"] for r in held])
    mase = np.array([r["holdout_mase"] for r in held])
    coverage = np.sum(points * [r["holdout_coverage_95"] for r in held]) / points.sum()
    assert header[0] == "series" and _number(scores[0]) == len(held) == 8
    assert _number(scores[1]) == points.sum() == 24
    assert scores[2] == f"{np.mean(mase):.3g}" and scores[4] == f"{coverage:.3g}"
    assert scores[3] == f"{manifest['holdout']['mase_median']:.3g}"
    assert abs(_number(scores[3]) / np.median(mase) - 1) <= 0.02 + 5e-3  # and 3 digits

    reasons = page.tables["Most common reasons for skipped and failed series"]
    assert len(reasons) == 2 and reasons[1][:2] == ["2", "skipped"]
    assert reasons[1][3] == min(r["error"] for r in rows if r["status"] == "skipped")

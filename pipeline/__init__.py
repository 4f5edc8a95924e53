"""pipeline: gpfit's Apache Beam batch pipeline around gpcore.

Parquet series in, one row of fitted GP hyperparameters per series out. The
entry point is `pipeline.cli.run(argv)` (console script `gpfit`,
`python -m pipeline`); `python -m pipeline.demo` runs it on synthetic data.
The same fit on a DataFrame in memory, without a Beam job, is
`pipeline.frame.fit_frame` (exported as `gpfit.fit_frame`).
The on-disk contract (input checks, column conversion, output schema and
folder, manifest) is `pipeline.io`, shared with the `gpfit-report` command
(`pipeline.report`); docs/design.md draws the layout.
"""
from pipeline import worker_stderr as _worker_stderr

_worker_stderr.drop_printed_tracebacks()

"""gpfit: fit a Gaussian process to every time series of a data set.

The command `gpfit` runs the Beam job over Parquet files (pipeline.cli);
this package is the Python API beside it:

  fit_frame(df, ...)  a pandas DataFrame or pyarrow Table -> one row of
                      hyperparameters per series, the job's output schema
                      (pipeline/frame.py)
  Tables              fit_frame's result with predictions asked for:
                      (params, predictions), the command's two tables
  output_schema()     that schema as a pyarrow Schema, for to_parquet(schema=)
  predictions_schema(dates, predict_levels)  the predictions' schema
  spark_schema(schema)  a schema (default the output's) as Spark DDL, for
                      applyInPandas
  __version__         the release (pipeline/io/fingerprint.py's VERSION)
"""
from pipeline.io import beam_import as _beam_import

# Without the gcp extra, Beam's import logged a line and configured the
# user's root logger (pipeline/io/beam_import.py).
with _beam_import.quietly():
    from pipeline.frame import (Tables, fit_frame, output_schema, predictions_schema,
                                 spark_schema)
    from pipeline.io.fingerprint import VERSION as __version__

__all__ = ["Tables", "fit_frame", "output_schema", "predictions_schema", "spark_schema",
           "__version__"]

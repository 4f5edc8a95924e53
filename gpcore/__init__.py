"""gpcore: batched, compiled Gaussian-process hyperparameter fitting.

Pure numerics (TensorFlow, TensorFlow Probability, numpy); knows nothing of
Beam, Parquet or files.
"""
from gpcore.config import KERNELS, FitConfig
from gpcore.fitter import GPFitter
from gpcore.predict import predict
from gpcore.result import OUTPUT_COLUMNS, FitResult
from gpcore.series import Series

__all__ = ["FitConfig", "FitResult", "GPFitter", "KERNELS", "OUTPUT_COLUMNS",
           "Series", "predict"]

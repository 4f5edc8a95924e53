"""gpcore: batched, compiled Gaussian-process hyperparameter fitting.

Pure numerics (TensorFlow, TensorFlow Probability, numpy); knows nothing of
Beam, Parquet or files. TensorFlow loads only when GPFitter or predict is
first used, so configuration and data types are cheap to import.
"""
from gpcore.batching import Batching
from gpcore.config import KERNELS, FitConfig
from gpcore.result import FitResult
from gpcore.series import Series

__all__ = ["Batching", "FitConfig", "FitResult", "GPFitter", "KERNELS", "KernelChoice",
           "Series", "build_fitter", "predict"]


def __getattr__(name):
    if name == "GPFitter":
        from gpcore.fitter import GPFitter
        return GPFitter
    if name in ("KernelChoice", "build_fitter"):
        from gpcore import choice
        return getattr(choice, name)
    if name == "predict":
        from gpcore.predict import predict
        return predict
    raise AttributeError(f"module 'gpcore' has no attribute {name!r}")

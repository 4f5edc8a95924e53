"""gpcore: batched, compiled Gaussian-process hyperparameter fitting.

Pure numerics (TensorFlow, TensorFlow Probability, numpy); knows nothing of
Beam, Parquet or files. Every export loads on first use: `import gpcore`
(or `import gpcore.threads`, which must run before numpy loads) imports
nothing heavy, configuration and data types bring numpy, and TensorFlow
loads only when GPFitter, KernelChoice, build_fitter or predict is used.
"""
import importlib

# export -> the module that defines it
_EXPORTS = {
    "Batching": "gpcore.batching",
    "FitConfig": "gpcore.config",
    "KERNELS": "gpcore.config",
    "FitResult": "gpcore.result",
    "Series": "gpcore.series",
    "GPFitter": "gpcore.fitter",
    "KernelChoice": "gpcore.choice",
    "build_fitter": "gpcore.choice",
    "predict": "gpcore.predict",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'gpcore' has no attribute {name!r}")
    from gpcore import threads

    with threads.collection_paused(module):  # TensorFlow's import, where this is it
        loaded = importlib.import_module(module)
    if module == f"gpcore.{name}":
        # predict: the import system has bound its module here, which calls
        # as the function (gpcore/predict.py); the same object every time.
        return loaded
    value = globals()[name] = getattr(loaded, name)  # found directly next time
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))

"""The on-disk contract (pipeline.io) stands alone: no TensorFlow, no Beam job."""
from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import apache_beam as beam

import pipeline.io

REPO = Path(__file__).resolve().parents[3]
MODULES = sorted(f"pipeline.io.{m.name}" for m in pkgutil.iter_modules(pipeline.io.__path__))
# The Beam job's own modules: the contract must not need them.
JOB_MODULES = ("pipeline.cli", "pipeline.options", "pipeline.builder", "pipeline.transforms",
               "pipeline.runtime", "pipeline.manifest_step", "pipeline.metrics")


def test_importing_the_contract_loads_no_tensorflow_and_no_beam_job():
    code = (f"import json, sys\nfor m in {MODULES!r}: __import__(m)\n"
            "print(json.dumps(sorted(sys.modules)))")
    loaded = set(json.loads(subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
        check=True).stdout))
    assert len(MODULES) >= 7 and set(MODULES) <= loaded
    assert not {m for m in loaded if m.split(".")[0] in ("tensorflow", "tensorflow_probability",
                                                         "tf_keras", "keras")}
    assert "gpcore.fitter" not in loaded
    assert not loaded & set(JOB_MODULES)


def test_the_contract_defines_no_beam_transforms():
    # Beam's own package loads its transforms whatever is imported from it (its
    # __init__ does), so sys.modules cannot tell; the classes here can.
    beam_kinds = (beam.PTransform, beam.DoFn, beam.CombineFn)
    for name in MODULES:
        module = importlib.import_module(name)
        for value in vars(module).values():
            if isinstance(value, type) and value.__module__ == name:
                assert not issubclass(value, beam_kinds), f"{name}.{value.__name__}"

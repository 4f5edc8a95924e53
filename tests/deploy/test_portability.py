"""gpfit's transforms travel the way Dataflow moves them.

The launcher pickles every DoFn into the pipeline proto (Beam 2.77 pickles
with cloudpickle); workers rebuild the pipeline from that proto and unpickle.
Here the pipeline goes to its runner API proto, through bytes, back to a
Pipeline, and that rebuilt pipeline fits a small data set.
"""
from __future__ import annotations

import importlib.util
import json

import numpy as np
import pyarrow.parquet as pq
import pytest
from apache_beam import Pipeline
from apache_beam.internal import pickler
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.portability import common_urns, python_urns
from apache_beam.portability.api import beam_runner_api_pb2

from gpfit_runs import write_long_parquet


def dofn_types(proto: beam_runner_api_pb2.Pipeline) -> dict[str, str]:
    """{ParDo label: class name of its DoFn}, unpickled from the proto.

    ParDos whose DoFn Beam names by URN instead of pickling it (the key-with-
    None step of CombineGlobally) are left out.
    """
    types = {}
    for transform in proto.components.transforms.values():
        if transform.spec.urn == common_urns.primitives.PAR_DO.urn:
            payload = beam_runner_api_pb2.ParDoPayload.FromString(transform.spec.payload)
            if payload.do_fn.urn != python_urns.PICKLED_DOFN_INFO:
                continue
            types[transform.unique_name] = type(pickler.loads(payload.do_fn.payload)[0]).__name__
    return types


def test_beam_pickles_with_cloudpickle():
    # What this file proves is for the pickler Beam 2.77 uses by default.
    # (dill, the alternative, is an optional extra that is not installed.)
    assert pickler.DEFAULT_PICKLE_LIB == "cloudpickle"
    assert importlib.util.find_spec("dill") is None


def test_gpfit_transforms_pickle_small_and_whole():
    from gpcore import Batching, FitConfig
    from pipeline.io.inputs import Columns, uninspected
    from pipeline.reading import (GatherChunks, ListRowGroups, MergeChunks, ReadRowGroup,
                                  ReadSeries, SplitBySeries)
    from pipeline.handler import FitterHandler
    from pipeline.transforms import BatchByLength, FitDoFn, FitSeries

    config = FitConfig(kernel="periodic", restarts=3, batch_size=8)
    columns = Columns("store", "day", "sales")
    spec = uninspected("gs://b/x/*.parquet", columns)
    objects = [SplitBySeries(columns), MergeChunks("periodic", 1000), GatherChunks(1000),
               ListRowGroups(spec), ReadRowGroup(columns), BatchByLength(Batching(config, 5.0)),
               FitDoFn(FitterHandler(config), None), ReadSeries(spec, "periodic", 1000),
               FitSeries(config, 4, 5.0)]
    for obj in objects:
        data = pickler.dumps(obj)
        copy = pickler.loads(data)
        assert type(copy) is type(obj)
        if isinstance(obj, FitDoFn):
            assert copy._handler.config == config
        if isinstance(obj, FitSeries):
            assert copy._config == config
    # A DoFn carries its configuration only: the fitter (TensorFlow state) is
    # built on the worker in setup(), never pickled.
    fit = FitDoFn(FitterHandler(config), None)
    assert len(pickler.dumps(fit)) < 20_000
    assert pickler.loads(pickler.dumps(fit))._slot is None


@pytest.fixture(scope="module")
def built(tmp_path_factory, dry_run_module):
    root = tmp_path_factory.mktemp("roundtrip")
    write_long_parquet(root / "in", n_series=3, n_points=24)
    argv = [f"--input={root / 'in'}/*.parquet", f"--output={root / 'out'}",
            "--runner=FnApiRunner", "--kernel=matern52", "--batch_size=4"]
    return dry_run_module.build_pipeline(argv), argv, root


def test_pipeline_survives_the_runner_api_round_trip(built):
    from pipeline.runtime import local_runner

    pipeline, argv, root = built
    proto = pipeline.to_runner_api()
    wire = proto.SerializeToString()  # what a launcher would send
    options = PipelineOptions(argv)
    rebuilt = Pipeline.from_runner_api(beam_runner_api_pb2.Pipeline.FromString(wire),
                                       runner=local_runner(options), options=options)
    again = rebuilt.to_runner_api()
    assert ({t.unique_name for t in again.components.transforms.values()}
            == {t.unique_name for t in proto.components.transforms.values()})
    types = dofn_types(again)
    assert dofn_types(proto) == types
    assert {types["FitSeries/FitBatches/ParDo(FitDoFn)"], types["FitSeries/BatchByLength"],
            types["ReadSeries/SplitBySeries/ParDo(SplitBySeries)"],
            types["WriteManifest/Write"]} == {
                "FitDoFn", "BatchByLength", "SplitBySeries", "_WriteManifestFn"}

    # The rebuilt pipeline, with its unpickled transforms, does the work.
    rebuilt.run().wait_until_finish()
    files = sorted((root / "out" / "params").glob("part-*.parquet"))
    assert files
    table = pq.read_table(files).to_pylist()
    assert sorted(r["series_id"] for r in table) == ["s0", "s1", "s2"]
    for row in table:
        assert row["status"] == "ok", row
        assert row["kernel"] == "matern52" and row["n_points"] == 24
        assert np.isfinite([row["length_scale"], row["amplitude"], row["nll"]]).all()
    # ... including the manifest, which the job writes itself.
    manifest = json.loads((root / "out" / "_SUCCESS.json").read_text())
    assert manifest["counts"] == {"series_read": 3, "ok": 3, "skipped": 0, "failed": 0,
                                  "null_ids": 0}
    assert manifest["input"]["layout"] == "not inspected"


_UNPICKLE_ALL = """
import json, sys
from apache_beam.internal import pickler
from apache_beam.portability import common_urns, python_urns
from apache_beam.portability.api import beam_runner_api_pb2 as pb
proto = pb.Pipeline.FromString(open(sys.argv[1], "rb").read())
found, failed = {}, {}
for t in proto.components.transforms.values():
    payload = None
    if t.spec.urn == common_urns.primitives.PAR_DO.urn:
        fn = pb.ParDoPayload.FromString(t.spec.payload).do_fn
        payload = fn.payload if fn.urn == python_urns.PICKLED_DOFN_INFO else None
    elif t.spec.urn == common_urns.composites.COMBINE_PER_KEY.urn:
        fn = pb.CombinePayload.FromString(t.spec.payload).combine_fn
        payload = fn.payload if fn.urn == python_urns.PICKLED_COMBINE_FN else None
    if payload is None:
        continue
    try:
        obj = pickler.loads(payload)
        found[t.unique_name] = type(obj[0] if isinstance(obj, tuple) else obj).__name__
    except Exception as err:
        failed[t.unique_name] = repr(err)
print(json.dumps({"found": found, "failed": failed}))
"""


def test_every_step_of_a_full_job_unpickles_in_a_fresh_process(tmp_path, dry_run_module):
    """A Dataflow worker unpickles each step in a process that never ran the
    launcher: nothing may lean on the launcher's state (a closure over a
    module-level object, a class defined in __main__, TensorFlow state).
    The job with every step (kernel auto, a previous output, a transform,
    forecasts and a holdout), its proto through bytes into a new Python
    started in another folder."""
    import os
    import subprocess
    import sys

    argv = [f"--input={tmp_path / 'in'}/", f"--output={tmp_path / 'out'}",
            f"--previous_output={tmp_path / 'previous'}", "--runner=FnApiRunner",
            "--kernel=auto", "--candidates=rbf,rbf+periodic", "--transform=log",
            "--predict_steps=3", "--holdout=2"]
    proto = dry_run_module.build_pipeline(argv).to_runner_api()
    wire = tmp_path / "job.pb"
    wire.write_bytes(proto.SerializeToString())
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = subprocess.run([sys.executable, "-c", _UNPICKLE_ALL, str(wire)], cwd=elsewhere,
                          env=dict(os.environ, PYTHONPATH=repo), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["failed"] == {}
    assert {"FitDoFn", "BatchByLength", "Compare", "Forecast", "ToFittedScale",
            "_WriteManifestFn", "MergeChunks"} <= set(result["found"].values()), result
    assert len(result["found"]) >= len(dofn_types(proto))

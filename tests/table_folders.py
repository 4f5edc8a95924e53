"""Table-format folders laid out by hand as their writers lay them out
(deltalake, pyiceberg and Hudi are not installed): Parquet parts beside the
log that says which of them are current, old versions' parts still there."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

OLD = "part-00000-11111111-1111-1111-1111-111111111111-c000.snappy.parquet"
NEW = "part-00000-22222222-2222-2222-2222-222222222222-c000.snappy.parquet"
N_POINTS = 30


def version(shift: float) -> pa.Table:
    """Series 'a', N_POINTS points, at level `shift`."""
    t = np.arange(N_POINTS, dtype=float)
    return pa.table({"series_id": ["a"] * N_POINTS, "t": t, "y": np.sin(t / 5) + shift})


def _lines(path: Path, actions: list[dict]) -> None:
    path.write_text("".join(json.dumps(action) + "\n" for action in actions))


def delta_table(root: Path, under: str = "") -> Path:
    """A Delta Lake table of two commits (Delta's PROTOCOL.md): version 0
    adds OLD, version 1 (an overwrite) removes OLD and adds NEW; OLD stays on
    disk until VACUUM. `under`: a partition folder ("region=eu") the parts
    are in."""
    folder = root / under if under else root
    folder.mkdir(parents=True)
    (root / "_delta_log").mkdir()
    pq.write_table(version(0.0), folder / OLD)
    pq.write_table(version(10.0), folder / NEW)
    old, new = (f"{under}/{name}" if under else name for name in (OLD, NEW))
    schema = {"type": "struct", "fields": [
        {"name": name, "type": kind, "nullable": True, "metadata": {}}
        for name, kind in (("series_id", "string"), ("t", "double"), ("y", "double"))]}
    partitions = {under.split("=")[0]: under.split("=")[1]} if under else {}
    _lines(root / "_delta_log" / f"{0:020d}.json", [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {"metaData": {"id": "5e1f", "format": {"provider": "parquet", "options": {}},
                      "schemaString": json.dumps(schema),
                      "partitionColumns": list(partitions), "configuration": {},
                      "createdTime": 0}},
        {"add": {"path": old, "partitionValues": partitions,
                 "size": os.path.getsize(folder / OLD), "modificationTime": 0,
                 "dataChange": True}}])
    _lines(root / "_delta_log" / f"{1:020d}.json", [
        {"remove": {"path": old, "deletionTimestamp": 1, "dataChange": True}},
        {"add": {"path": new, "partitionValues": partitions,
                 "size": os.path.getsize(folder / NEW), "modificationTime": 1,
                 "dataChange": True}}])
    return root


def iceberg_table(root: Path) -> Path:
    """An Iceberg table as a Hadoop catalog lays it out: data/ with both
    snapshots' files, metadata/ with vN.metadata.json and version-hint.text
    (the manifests, Avro, are not needed to be recognised)."""
    (root / "data").mkdir(parents=True)
    (root / "metadata").mkdir()
    pq.write_table(version(0.0), root / "data" / "00000-0-old.parquet")
    pq.write_table(version(10.0), root / "data" / "00000-1-new.parquet")
    for n in (1, 2):
        (root / "metadata" / f"v{n}.metadata.json").write_text(
            json.dumps({"format-version": 2, "current-snapshot-id": n}))
    (root / "metadata" / "version-hint.text").write_text("2")
    return root


def hudi_table(root: Path) -> Path:
    """A copy-on-write Hudi table: .hoodie/ beside a partition whose file
    group has two versions (base files of two commits)."""
    (root / ".hoodie").mkdir(parents=True)
    (root / ".hoodie" / "hoodie.properties").write_text("hoodie.table.name=t\n")
    (root / "2026").mkdir()
    (root / "2026" / ".hoodie_partition_metadata").write_text("commitTime=1\n")
    pq.write_table(version(0.0), root / "2026" / "f1-0_0-1-1_20261201000000.parquet")
    pq.write_table(version(10.0), root / "2026" / "f1-0_0-2-2_20261202000000.parquet")
    return root


def spark_stream_sink(root: Path) -> Path:
    """A Spark Structured Streaming file sink: _spark_metadata/ lists the
    committed files; a batch that failed and was retried left its part."""
    (root / "_spark_metadata").mkdir(parents=True)
    pq.write_table(version(0.0), root / "part-00000-aaaa-c000.snappy.parquet")
    pq.write_table(version(0.0), root / "part-00000-bbbb-c000.snappy.parquet")
    (root / "_spark_metadata" / "0").write_text(
        'v1\n{"path":"part-00000-bbbb-c000.snappy.parquet","size":1,"isDir":false,'
        '"modificationTime":1,"blockReplication":1,"blockSize":1,"action":"add"}\n')
    return root

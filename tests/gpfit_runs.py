"""Running the gpfit CLI in tests and reading what it wrote; shared by the
pipeline, reliability and other end-to-end tests (tests/ is on sys.path
through tests/conftest.py's folder)."""
from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


@dataclasses.dataclass
class Run:
    """One gpfit invocation: exit code, what it printed, where it wrote."""

    code: int
    stdout: str
    stderr: str
    output: str

    @property
    def manifest(self) -> Optional[dict]:
        path = os.path.join(self.output, "_SUCCESS.json")
        if not os.path.exists(path):
            return None
        with open(path) as f:
            return json.load(f)

    def shards(self, prefix: str = "params") -> list[str]:
        """A table's shards, relative to the output folder, as the manifest
        lists them ("params/part-00000-of-00002.parquet")."""
        return shard_names(self.output, prefix)

    def rows(self) -> list[dict]:
        """Every output row, duplicates kept, sorted by series id."""
        return sorted(read_rows(self.output), key=lambda r: r["series_id"])

    def predictions(self) -> list[dict]:
        """Every row of the predictions shards, in file order."""
        return read_rows(self.output, "predictions")


def files_in(folder: str) -> list[str]:
    """Every file under folder, relative to it, sorted (folders not listed)."""
    return sorted(os.path.relpath(os.path.join(root, name), folder)
                  for root, _, names in os.walk(folder) for name in names)


def contents(folder: str) -> dict[str, bytes]:
    """{file under folder, relative to it: its bytes}: a folder's state, to
    check that a refused run left it as it was."""
    found = {}
    for name in files_in(folder):
        with open(os.path.join(folder, name), "rb") as f:
            found[name] = f.read()
    return found


def shard_names(folder: str, prefix: str = "params") -> list[str]:
    """A table's shards in an output folder, relative to it: <prefix>/part-*.parquet."""
    table = os.path.join(folder, prefix)
    if not os.path.isdir(table):
        return []
    return sorted(f"{prefix}/{n}" for n in os.listdir(table)
                  if n.startswith("part-") and n.endswith(".parquet"))


def read_rows(folder: str, prefix: str = "params") -> list[dict]:
    """Every row of every params (or predictions) shard, in file order
    (duplicates kept)."""
    return [row for name in shard_names(folder, prefix)
            for row in pq.read_table(os.path.join(folder, name)).to_pylist()]


def as_legacy_layout(folder: str, into: str) -> str:
    """A copy of an output folder as gpfit 0.1.0 to 0.4.0 wrote it: the
    shards beside the manifest (params-SSSSS-of-NNNNN.parquet, predictions-
    likewise), a manifest without gpfit_version (recorded since 0.16.1)."""
    os.makedirs(into)
    with open(os.path.join(folder, "_SUCCESS.json")) as f:
        found = json.load(f)
    for table in ("params", "predictions"):
        if os.path.isdir(os.path.join(folder, table)):
            for name in sorted(os.listdir(os.path.join(folder, table))):
                shutil.copy(os.path.join(folder, table, name),
                            os.path.join(into, name.replace("part", table, 1)))
    found["output_files"] = [n.replace("params/part", "params") for n in found["output_files"]]
    found.pop("gpfit_version", None)
    with open(os.path.join(into, "_SUCCESS.json"), "w") as f:
        json.dump(found, f)
    return into


def gpfit_here(input_: str, output: str, *extra: str) -> Run:
    """Runs the gpfit CLI in this process (the local runner's default)."""
    from pipeline import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.run(["--input", input_, "--output", output, *extra])
    return Run(code, out.getvalue(), err.getvalue(), output)


def without_gcs(folder) -> str:
    """Writes a google.cloud.storage that fails to import into `folder`;
    -> folder, to put first on a process's PYTHONPATH: as where the gcp
    extra is not installed, Beam then has no gs:// file system."""
    package = os.path.join(str(folder), "google", "cloud", "storage")
    os.makedirs(package, exist_ok=True)
    with open(os.path.join(package, "__init__.py"), "w") as f:
        f.write('raise ImportError("no google-cloud-storage: as without the gcp extra")\n')
    return str(folder)


def command_in(python_path: str, *args: str, cwd: Optional[str] = None
               ) -> subprocess.CompletedProcess:
    """`python *args` in a fresh process with python_path first on its path
    (and the checkout after it), in cwd."""
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [python_path, repo, os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=600)


def gpfit_with_hook(hook: str, args: list[str], env: Optional[dict] = None,
                    cwd: Optional[str] = None) -> subprocess.CompletedProcess:
    """gpfit's CLI with `args`, in a process of its own that first runs
    `hook` (Python lines; os, signal, sys and pipeline.cli imported): a hook
    that sends a stop signal at a named step."""
    script = ("import os, signal, sys\n"
              "from pipeline import cli\n"
              f"{hook}"
              f"sys.exit(cli.run({list(args)!r}))\n")
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=300, check=False)


def as_a_user_without_access(*args: str, cwd: Optional[str] = None
                             ) -> subprocess.CompletedProcess:
    """`python *args` in a fresh process that file permissions bind: as
    root, without the capabilities that pass them over (root reads a chmod
    000 file and writes a chmod 555 folder otherwise); skipped where that
    cannot be had."""
    import shutil

    import pytest

    prefix = []
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("root reads and writes any file; dropping that needs setpriv")
        prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"]
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=repo)
    return subprocess.run([*prefix, sys.executable, *args], env=env, capture_output=True,
                          text=True, cwd=cwd, timeout=300, check=False)


def write_long_parquet(folder: Path, n_series: int = 3, n_points: int = 24,
                       seed: int = 11) -> Path:
    """A small long-layout Parquet file: smooth noisy series s0, s1, ..."""
    rng = np.random.default_rng(seed)
    ids, ts, ys = [], [], []
    for i in range(n_series):
        t = np.sort(rng.uniform(0.0, 10.0, n_points))
        y = np.sin(t * (1 + i / 3)) + 0.05 * rng.standard_normal(n_points)
        ids += [f"s{i}"] * n_points
        ts.append(t)
        ys.append(y)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "part-00000.parquet"
    pq.write_table(pa.table({"series_id": ids, "t": np.concatenate(ts),
                             "y": np.concatenate(ys)}), path)
    return path


def write_encrypted(path, table: pa.Table, columns: list[str], plaintext_footer: bool) -> None:
    """Writes `table` with Parquet modular encryption: `columns` under a
    column key, the footer encrypted or only signed (`plaintext_footer`).
    The KMS wraps no key, but the file is encrypted all the same: Arrow
    reads neither footer nor columns without decryption properties."""
    import base64

    import pyarrow.parquet.encryption as pe

    class KeysAsGiven(pe.KmsClient):
        def wrap_key(self, key_bytes, master_key_identifier):
            return base64.b64encode(key_bytes)

        def unwrap_key(self, wrapped_key, master_key_identifier):
            return base64.b64decode(wrapped_key)

    sealing = pe.EncryptionConfiguration(footer_key="footer", column_keys={"columns": columns},
                                         plaintext_footer=plaintext_footer,
                                         double_wrapping=False)
    properties = pe.CryptoFactory(lambda config: KeysAsGiven()).file_encryption_properties(
        pe.KmsConnectionConfig(), sealing)
    with pq.ParquetWriter(path, table.schema, encryption_properties=properties) as writer:
        writer.write_table(table)

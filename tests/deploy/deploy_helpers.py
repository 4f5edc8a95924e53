"""Helpers of the deployment tests: the repository's files, pyproject.toml's
pins and the lock, the dry-run module, small Parquet inputs, sdists."""
from __future__ import annotations

import ast
import importlib.util
import os
import py_compile
import re
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path


REPO = Path(__file__).resolve().parents[2]

# Stand-ins for a real project: syntactically valid, never contacted.
PROJECT = "gpfit-offline-test"
REGION = "europe-west4"
BUCKET = "gpfit-offline-test-bucket"


def gpfit_version() -> str:
    """The package's version: pipeline/io/fingerprint.py's VERSION, which
    pyproject.toml reads (dynamic), parsed without importing the package."""
    tree = ast.parse((REPO / "pipeline" / "io" / "fingerprint.py").read_text())
    (value,) = [node.value.value for node in tree.body if isinstance(node, ast.Assign)
                and [getattr(t, "id", None) for t in node.targets] == ["VERSION"]]
    return value


VERSION = gpfit_version()
IMAGE = f"{REGION}-docker.pkg.dev/{PROJECT}/gpfit/gpfit:{VERSION}"


def read_setup() -> dict:
    """pyproject.toml's metadata, as the deployment tests use it: BEAM_VERSION
    (apache-beam's one pin), name, version, python_requires,
    install_requires, extras_require and console_scripts."""
    with open(REPO / "pyproject.toml", "rb") as f:
        project = tomllib.load(f)["project"]
    requires = project["dependencies"]
    extras = project["optional-dependencies"]
    (beam,) = {r.split("==")[1] for r in requires + [r for e in extras.values() for r in e]
               if r.split("==")[0].split("[")[0] == "apache-beam"}
    return {
        "BEAM_VERSION": beam,
        "name": project["name"],
        "version": VERSION,
        "python_requires": project["requires-python"],
        "install_requires": requires,
        "extras_require": extras,
        "console_scripts": [f"{name}={target}" for name, target in project["scripts"].items()],
    }


def read_lock() -> dict[str, str]:
    """requirements/lock.txt: {normalised name: version}, every line name==version."""
    found = {}
    for line in (REPO / "requirements" / "lock.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, version = line.split("==")
            found[canonical(name)] = version
    return found


def canonical(name: str) -> str:
    """A distribution's name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def load_dry_run_module():
    """deploy/dataflow_dry_run.py, imported from its path (deploy/ is not a
    package: it is not shipped)."""
    name = "gpfit_deploy_dataflow_dry_run"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, REPO / "deploy" / "dataflow_dry_run.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up here
        spec.loader.exec_module(module)
    return sys.modules[name]


def sdist_members(path) -> dict[str, bytes]:
    """{member name: bytes} of the files in an sdist tarball."""
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def package_sources(package: str) -> list[Path]:
    """The .py files of a package folder in the checkout."""
    return sorted(p for p in (REPO / package).rglob("*.py") if "__pycache__" not in p.parts)


def check_gpfit_sdist(path, setup: dict) -> None:
    """The file is the sdist of this checkout's pyproject.toml (and the setup.py
    that Beam builds it from), with its three packages."""
    members = sdist_members(path)
    root = f"{setup['name']}-{setup['version']}"
    for name in ("setup.py", "pyproject.toml"):
        assert members[f"{root}/{name}"] == (REPO / name).read_bytes()
    for package in ("gpcore", "gpfit", "pipeline"):
        for source in package_sources(package):
            name = f"{root}/{source.relative_to(REPO).as_posix()}"
            assert members.get(name) == source.read_bytes(), f"{name} missing or stale"
    pkg_info = members[f"{root}/PKG-INFO"].decode()
    assert f"Name: {setup['name']}" in pkg_info
    assert f"Version: {setup['version']}" in pkg_info


def fresh_venv(folder: Path) -> Path:
    """A new virtual environment (no pip of its own) that also sees this
    interpreter's site-packages through a .pth file, so that gpfit's pinned
    dependencies are importable offline. Returns its bin folder.

    Its own site-packages comes first on sys.path, so a package installed
    into it is imported from there, not from the checkout or from .venv.
    """
    import sysconfig

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    (site,) = (folder / "lib").glob("python3*/site-packages")
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "zz_offline_dependencies.pth").write_text("".join(f"{p}\n" for p in sorted(deps)))
    return folder / "bin"


def pip_install(bin_folder: Path, requirement: str) -> None:
    """pip install REQUIREMENT into the venv, offline and without dependencies
    (they are visible already); this interpreter's pip drives the venv's."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(bin_folder / "python"), "install",
         "--quiet", "--no-deps", "--no-index", "--no-build-isolation",
         "--disable-pip-version-check", requirement],
        capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def run_in(bin_folder: Path, args: list[str], cwd: Path, env: dict | None = None):
    """Runs a command of the venv (bin_folder/args[0]) outside the checkout."""
    full_env = {**os.environ, "PYTHONNOUSERSITE": "1", **(env or {})}
    full_env.pop("PYTHONPATH", None)
    return subprocess.run([str(bin_folder / args[0]), *args[1:]], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=300)


def read_dag(path: Path, scratch: Path) -> dict:
    """A DAG file's settings, evaluated from its source (Airflow is not
    installed here): {"names": module constants, "calls": {callee: [keyword
    arguments of each call]}}. The file is compiled first."""
    py_compile.compile(str(path), cfile=str(scratch / "dag.pyc"), doraise=True)
    tree = ast.parse(path.read_text())
    names: dict = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, (ast.Constant, ast.JoinedStr)):
            names[node.targets[0].id] = eval(  # pylint: disable=eval-used
                compile(ast.Expression(node.value), str(path), "eval"), {}, names)
    calls: dict = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            kwargs = {}
            for keyword in node.keywords:
                try:
                    kwargs[keyword.arg] = eval(  # pylint: disable=eval-used
                        compile(ast.Expression(keyword.value), str(path), "eval"), {}, names)
                except NameError:
                    kwargs[keyword.arg] = keyword.value  # e.g. nested calls
            calls.setdefault(node.func.id, []).append(kwargs)
    return {"names": names, "calls": calls}

"""The source distribution: what --setup_file stages and what workers install.

A fresh virtual environment installs it and runs `gpfit --help`, offline:
the environment sees the pinned dependencies of this interpreter through a
.pth file, and gpfit itself only from the installed sdist.
"""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from deploy_helpers import (REPO, canonical, check_gpfit_sdist, fresh_venv, pip_install,
                            read_lock, run_in, sdist_members)


@pytest.fixture(scope="module")
def sdist(tmp_path_factory):
    """`python setup.py sdist`, as Beam's stager runs it when `build` is absent."""
    from pipeline.sdist_build import folder_locked

    dist = tmp_path_factory.mktemp("dist")
    # It writes in the checkout, as a dry run's build does on the other
    # worker: the same lock (docs/design.md, "One sdist build a folder at a time").
    with folder_locked(str(REPO)):
        done = subprocess.run([sys.executable, "setup.py", "-q", "sdist", "--dist-dir",
                               str(dist)], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    # Beam's stager passes the build's stderr through on every Dataflow
    # launch: MANIFEST.in's prunes of folders nothing adds printed 3 lines.
    assert "no previously-included" not in done.stderr, done.stderr
    (path,) = dist.glob("*.tar.gz")
    return path


@pytest.fixture(scope="module")
def installed(sdist, tmp_path_factory):
    """A fresh venv with the sdist installed: its bin folder."""
    bin_folder = fresh_venv(tmp_path_factory.mktemp("venv") / "gpfit-venv")
    pip_install(bin_folder, str(sdist))
    return bin_folder


def test_sdist_has_both_packages_and_the_console_scripts(sdist, setup_info):
    check_gpfit_sdist(sdist, setup_info)
    members = sdist_members(sdist)
    root = f"{setup_info['name']}-{setup_info['version']}"
    entry_points = members[f"{root}/{setup_info['name']}.egg-info/entry_points.txt"].decode()
    scripts = [line.replace(" ", "") for line in entry_points.splitlines()]
    for script in setup_info["console_scripts"]:
        assert script.replace(" ", "") in scripts
    assert "gpfit=pipeline.cli:main" in scripts
    # Only the packages: no tests, data or environments ride along to workers.
    tops = {name.split("/")[1] for name in members if name.count("/") >= 2}
    assert tops <= {"gpcore", "gpfit", "pipeline", f"{setup_info['name']}.egg-info"}, tops
    assert sdist.stat().st_size < 1_000_000


def test_fresh_venv_runs_gpfit_help(installed, tmp_path):
    done = run_in(installed, ["gpfit", "--help"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: gpfit")
    for option in ("--input", "--output", "--kernel", "--max_failure_fraction"):
        assert option in done.stdout


def test_fresh_venv_imports_gpfit_from_the_installed_sdist(installed, tmp_path):
    # find_spec locates without executing (importing gpcore starts TensorFlow).
    done = run_in(installed, ["python", "-c",
                              "from importlib.util import find_spec as f; "
                              "print(f('gpcore').origin, f('pipeline.cli').origin)"],
                  cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    site = str(installed.parent / "lib")
    for path in done.stdout.split():
        assert path.startswith(site), f"{path} is not the installed copy"


def test_every_console_script_resolves(installed, setup_info, tmp_path):
    for script in setup_info["console_scripts"]:
        name, target = (part.strip() for part in script.split("="))
        module, function = target.split(":")
        assert (installed / name).exists(), f"console script {name} was not installed"
        done = run_in(installed, ["python", "-c",
                                  f"import {module} as m; assert callable(m.{function})"],
                      cwd=tmp_path)
        assert done.returncode == 0, f"{name} = {target}: {done.stderr.strip()[-500:]}"


def test_pinned_dependencies_are_consistent(installed, tmp_path):
    """pip check in the fresh venv: gpfit's pins (and their dependencies) are
    all satisfied together, as the Dockerfile's `pip check` requires."""
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(installed / "python"),
                           "check", "--disable-pip-version-check"],
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_pin_is_exact_one_version_per_dependency_and_the_locks(setup_info):
    """pyproject.toml pins each direct dependency exactly, to one version
    wherever it appears, and requirements/lock.txt (every transitive pin)
    holds the same versions: `make test`, CI and the image install with it."""
    lock = read_lock()
    pins: dict[str, set] = {}
    for requirement in setup_info["install_requires"] + [
            r for extra in setup_info["extras_require"].values() for r in extra]:
        name, _, version = requirement.partition("==")
        assert version and re.fullmatch(r"[\w.]+", version), f"{requirement} is not exact"
        pins.setdefault(canonical(name.split("[")[0]), set()).add(version)
    assert {name: versions for name, versions in pins.items() if len(versions) > 1} == {}
    assert {name: (versions, lock.get(name)) for name, versions in pins.items()
            if lock.get(name) not in versions} == {}
    lines = [line for line in (REPO / "requirements" / "lock.txt").read_text().splitlines()
             if line and not line.startswith("#")]
    assert len(lines) == len(lock) and setup_info["name"] not in lock
    assert "-c requirements/lock.txt" in (REPO / "Dockerfile").read_text()
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r"^LOCK\s*:?=\s*requirements/lock.txt$", makefile, re.M)
    # The installer's command (uv's `pip install`) as the recipes spell it.
    makefile = makefile.replace("$(INSTALL)", re.search(r"^INSTALL\s*:=\s*(.*)$", makefile, re.M)[1])
    installs = re.findall(r"^\t.*pip install.* -e .*$", makefile, re.M)  # gpfit's installs
    assert installs and all("-c $(LOCK)" in line for line in installs), installs
    every = re.findall(r"^\t.*pip install.*$", makefile, re.M)  # uv's own install too
    assert all("-c $(LOCK)" in line for line in every), every


def test_the_launchers_extras_carry_the_sdist_builder(setup_info):
    """Beam's stager builds --setup_file's sdist with `python -m build` where
    the job is launched: the gcp extra (the image's, the launcher's, the
    Beam DAG's virtualenv's) and the test extra (the dry runs) carry it."""
    for extra in ("gcp", "test"):
        assert "build==" + read_lock()["build"] in setup_info["extras_require"][extra], extra


def test_make_bench_installs_the_jax_peers_extra():
    """README's `make bench` ("all of it") races the JAX peer, which needs
    the jaxbench extra: installing only the test extras, it left the peer
    out with a note. `make -n -B` lists every recipe of the chain, runs none."""
    # --no-print-directory: under `make test` this make is a sub-make, which
    # prints "Leaving directory" last.
    done = subprocess.run(["make", "--no-print-directory", "-n", "-B", "bench"], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    installs = [line for line in done.stdout.splitlines() if "pip install" in line]
    assert any("jaxbench" in line and "-c requirements/lock.txt" in line
               for line in installs), installs
    assert done.stdout.rstrip().splitlines()[-1].endswith("benchmarks/speed.py")

"""The Dockerfile and its build context, checked without a Docker engine.

What a build would do is checked piece by piece: the base image is the
pinned Beam and Python, the package is installed with the gcp extra and
`pip check`ed, the image can be worker and Flex launcher, threads are set
for one SDK process per vCPU, and the build context (.dockerignore) holds
what the COPY steps need, from which the package installs and the Flex
entry point runs.
"""
from __future__ import annotations

import json
import os
import re
import shutil

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from deploy_helpers import REPO, fresh_venv, pip_install, run_in

BEAM_BOOT = "/opt/apache/beam/boot"
LAUNCHER_BINARY = "/opt/google/dataflow/python_template_launcher"


# --- reading a Dockerfile -----------------------------------------------------

def instructions(text: str) -> list[dict]:
    """The Dockerfile's instructions, continuation lines joined.

    Each: {"op": "RUN", "args": str, "comment": comment lines just above its
    block (instructions with no blank line between them form a block)}.
    """
    found, comment, block_comment, pending = [], [], [], None
    for line in text.splitlines():
        stripped = line.strip()
        if pending is not None:
            if stripped.startswith("#"):
                continue  # comments inside a continued instruction are dropped
            pending += " " + stripped.rstrip("\\").strip()
            if not stripped.endswith("\\"):
                found.append(_instruction(pending, block_comment))
                pending = None
            continue
        if not stripped:
            comment, block_comment = [], []
            continue
        if stripped.startswith("#"):
            comment.append(stripped.lstrip("# ").rstrip())
            continue
        if comment:
            block_comment, comment = comment, []
        if stripped.endswith("\\"):
            pending = stripped.rstrip("\\").strip()
        else:
            found.append(_instruction(stripped, block_comment))
    assert pending is None, "Dockerfile ends inside a continued instruction"
    return found


def _instruction(line: str, comment: list[str]) -> dict:
    op, _, args = line.partition(" ")
    return {"op": op.upper(), "args": args.strip(), "comment": list(comment)}


def stages(steps: list[dict]) -> list[dict]:
    """[{"image": resolved FROM image, "name": stage name or None, "steps": [...]}]."""
    args, result = {}, []
    for step in steps:
        if step["op"] == "ARG" and not result:
            name, _, default = step["args"].partition("=")
            args[name] = default
        elif step["op"] == "FROM":
            words = step["args"].split()
            image = re.sub(r"\$\{(\w+)\}|\$(\w+)",
                           lambda m: args[m.group(1) or m.group(2)], words[0])
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            result.append({"image": image, "name": name, "steps": []})
        else:
            result[-1]["steps"].append(step)
    return result


def env_of(steps: list[dict]) -> dict[str, str]:
    env = {}
    for step in steps:
        if step["op"] == "ENV":
            for key, value in re.findall(r"(\w+)=(\"[^\"]*\"|\S+)", step["args"]):
                env[key] = value.strip('"')
    return env


@pytest.fixture(scope="module")
def dockerfile() -> list[dict]:
    return instructions((REPO / "Dockerfile").read_text())


@pytest.fixture(scope="module")
def image(dockerfile) -> dict:
    """The final stage: the image that is pushed."""
    return stages(dockerfile)[-1]


# --- the Dockerfile ---------------------------------------------------------

def test_base_image_is_the_pinned_beam_and_python(image, dockerfile, setup_info):
    match = re.fullmatch(r"apache/beam_python(\d+)\.(\d+)_sdk:(\S+)", image["image"])
    assert match, f"base image {image['image']} is not a Beam Python SDK image"
    python, beam = f"{match.group(1)}.{match.group(2)}", match.group(3)
    assert beam == setup_info["BEAM_VERSION"]
    assert f"apache-beam=={beam}" in setup_info["install_requires"]
    assert f"apache-beam[gcp]=={beam}" in setup_info["extras_require"]["gcp"]
    # python_requires admits exactly the image's Python minor version.
    spec = SpecifierSet(setup_info["python_requires"])
    admitted = {f"3.{minor}" for minor in range(6, 20) if Version(f"3.{minor}.0") in spec}
    assert admitted == {python}
    # The Flex launcher stage is built for the same Python.
    (launcher,) = [s for s in stages(dockerfile) if s["name"] == "launcher"]
    assert launcher["image"].split(":")[0] == (
        f"gcr.io/dataflow-templates-base/python{python.replace('.', '')}"
        "-template-launcher-base")
    # And the tests (and the launching machine) run that Python too.
    assert f"{os.sys.version_info.major}.{os.sys.version_info.minor}" == python


def test_every_base_image_is_pinned(dockerfile):
    # A moving tag (":latest" or none) makes two builds of one commit differ;
    # a dated release tag or a digest does not.
    for stage in stages(dockerfile):
        name, _, tag = stage["image"].rpartition(":")
        if "@sha256:" in stage["image"]:
            continue
        assert name and tag and tag != "latest" and "/" not in tag, stage["image"]
        assert re.fullmatch(r"\d+(\.\d+)+|flex_templates_base_image_release_\d{8}_RC\d\d", tag), \
            stage["image"]


def test_installs_the_package_with_the_gcp_extra_then_pip_check(image, setup_info):
    steps = image["steps"]
    runs = [i for i, s in enumerate(steps) if s["op"] == "RUN"]
    install = next(i for i in runs if "pip install" in steps[i]["args"])
    assert re.search(r"""pip install .*["']?\.\[gcp\]["']?""", steps[install]["args"])
    assert "gcp" in setup_info["extras_require"]
    assert "-e " not in steps[install]["args"], "workers need a regular install"
    # Every transitive version held at the lock's, as `make test` installs.
    assert "-c requirements/lock.txt" in steps[install]["args"]
    copied = [args.split()[:-1] for s in steps[:install] if s["op"] == "COPY"
              for args in [s["args"]]]
    for source in ("pyproject.toml", "setup.py", "requirements/lock.txt", "gpcore/", "gpfit/",
                   "pipeline/"):
        assert any(source in sources for sources in copied), f"{source} not copied"
    assert any(steps[i]["args"].strip() == "pip check" for i in runs if i > install)


def test_one_image_for_workers_and_flex_launches(image, dockerfile):
    steps = image["steps"]
    copies = [s["args"].split() for s in steps if s["op"] == "COPY"]
    assert ["--from=launcher", LAUNCHER_BINARY, LAUNCHER_BINARY] in copies
    assert any(s["name"] == "launcher" for s in stages(dockerfile)[:-1])
    entrypoints = [s["args"] for s in steps if s["op"] == "ENTRYPOINT"]
    assert entrypoints and json.loads(entrypoints[-1]) == [BEAM_BOOT]
    env = env_of(steps)
    py_file = env["FLEX_TEMPLATE_PYTHON_PY_FILE"]
    # The file is copied to that path (WORKDIR + relative destination).
    workdir, placed = "/", {}
    for step in steps:
        if step["op"] == "WORKDIR":
            workdir = step["args"]
        elif step["op"] == "COPY" and not step["args"].startswith("--from"):
            *sources, dest = step["args"].split()
            for source in sources:
                target = os.path.join(workdir, dest)
                if dest.endswith("/") and not source.endswith("/"):
                    target = os.path.join(target, os.path.basename(source))
                placed[os.path.normpath(target)] = source
    assert py_file in placed, f"{py_file} is not copied into the image"
    source = REPO / placed[py_file]
    assert source.is_file() and "pipeline.cli" in source.read_text()
    # The package is installed in the image: no per-launch sdist, no
    # reinstall on every worker (see the Dockerfile's comment).
    assert "FLEX_TEMPLATE_PYTHON_SETUP_FILE" not in env
    assert "FLEX_TEMPLATE_PYTHON_REQUIREMENTS_FILE" not in env


def test_thread_counts_are_derived_per_process_not_pinned(image):
    env = env_of(image["steps"])
    assert env.get("OPENBLAS_NUM_THREADS") == "1"
    # An environment value would win over pipeline/runtime.py's count, and
    # one pinned in the image would starve a single process per VM.
    from pipeline import runtime
    for name in (runtime.INTRA_OP_ENV, runtime.INTER_OP_ENV):
        assert name not in env, name
    from apache_beam.options.pipeline_options import PipelineOptions
    per_vcpu = runtime.processes_per_machine(PipelineOptions(["--runner", "DataflowRunner"]))
    one = runtime.processes_per_machine(PipelineOptions([
        "--runner", "DataflowRunner", "--experiments", "no_use_multiple_sdk_containers"]))
    # n2-standard-4: 1 core for each of 4 processes, or 4 for the one process
    # (4 fitters side by side).
    assert runtime.cores_per_process(4, per_vcpu) == 1
    assert runtime.cores_per_process(4, one) == 4


def test_every_step_says_why(dockerfile):
    for step in dockerfile:
        assert step["comment"], f"{step['op']} {step['args'][:60]} has no comment above its block"


# --- the build context ------------------------------------------------------

def dockerignore_rules(text: str) -> list[tuple[bool, re.Pattern]]:
    """[(is exception, regex)] of .dockerignore patterns, in order."""
    rules = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        pattern = line.lstrip("!").strip().strip("/")
        if pattern.startswith("./"):
            pattern = pattern[2:]
        regex, i = "", 0
        while i < len(pattern):
            if pattern.startswith("**/", i):
                regex, i = regex + "(?:.*/)?", i + 3
            elif pattern.startswith("**", i):
                regex, i = regex + ".*", i + 2
            elif pattern[i] == "*":
                regex, i = regex + "[^/]*", i + 1
            elif pattern[i] == "?":
                regex, i = regex + "[^/]", i + 1
            else:
                regex, i = regex + re.escape(pattern[i]), i + 1
        rules.append((negate, re.compile(regex + r"\Z")))
    return rules


def in_context(path: str, rules) -> bool:
    """Docker's rule: the last pattern matching the path or one of its
    parent folders decides; `!` patterns re-include."""
    parts = path.split("/")
    candidates = ["/".join(parts[:k]) for k in range(1, len(parts) + 1)]
    included = True
    for negate, regex in rules:
        if any(regex.match(c) for c in candidates):
            included = negate
    return included


@pytest.fixture(scope="module")
def context_files() -> list[str]:
    """Files of the checkout that `docker build .` would send."""
    rules = dockerignore_rules((REPO / ".dockerignore").read_text())
    exceptions = [regex.pattern for negate, regex in rules if negate]
    files = []
    for folder, dirs, names in os.walk(REPO):
        relative = os.path.relpath(folder, REPO)
        relative = "" if relative == "." else relative + "/"
        # Descend only where something could be included (not into .venv).
        dirs[:] = [d for d in dirs if in_context(relative + d, rules)
                   or any(p.startswith(re.escape(relative + d)) for p in exceptions)]
        files += [relative + n for n in names if in_context(relative + n, rules)]
    return sorted(files)


def test_context_holds_exactly_what_the_copies_need(context_files, image):
    sources = [source for s in image["steps"]
               if s["op"] == "COPY" and not s["args"].startswith("--from")
               for source in s["args"].split()[:-1]]
    needed = set()
    for source in sources:
        path = REPO / source
        assert path.exists(), f"COPY source {source} is not in the checkout"
        if path.is_dir():
            needed |= {p.relative_to(REPO).as_posix() for p in path.rglob("*")
                       if p.is_file() and "__pycache__" not in p.parts}
        else:
            needed.add(source)
    assert set(context_files) == needed


def test_package_installs_from_the_context_and_the_flex_entry_point_runs(
        context_files, image, tmp_path):
    """The image's install step, replayed on the build context alone: the
    package installs, and `python $FLEX_TEMPLATE_PYTHON_PY_FILE` is gpfit
    (help, and exit code 2 with one line for a bad invocation)."""
    context = tmp_path / "context"
    for name in context_files:
        (context / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, context / name)
    bin_folder = fresh_venv(tmp_path / "venv")
    assert (context / "requirements" / "lock.txt").is_file()  # the install's -c
    pip_install(bin_folder, f"{context}[gcp]")
    template = tmp_path / "template"
    template.mkdir()
    shutil.copy2(context / "deploy/flex-template/main.py", template / "main.py")
    env = env_of(image["steps"])
    shown = run_in(bin_folder, ["python", "main.py", "--help"], cwd=template, env=env)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("usage: gpfit")
    refused = run_in(bin_folder, ["python", "main.py", "--input", str(tmp_path / "nothing"),
                                  "--output", str(tmp_path / "out")], cwd=template, env=env)
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.strip().splitlines()[-1].startswith("gpfit: error: ")

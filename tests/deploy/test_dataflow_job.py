"""The Dataflow job, built offline: a --dry_run job and a classic template.

Both build the job Beam's DataflowRunner would send for gs:// input and
output, with every socket refused (deploy/dataflow_dry_run.py, no_network):
a step that needed Google's services would fail these tests, not hang them.
"""
from __future__ import annotations

import json
import re
import shlex
import socket
import subprocess
import urllib.request

import cloudpickle
import pytest
from apache_beam.internal import pickler
from apache_beam.portability import common_urns, python_urns
from apache_beam.portability.api import beam_runner_api_pb2

from deploy_helpers import BUCKET, IMAGE, PROJECT, REGION, REPO, check_gpfit_sdist
from gpfit_runs import write_long_parquet

RUN_DATE = "2026-11-29"
INPUT = f"gs://{BUCKET}/series/date={RUN_DATE}/*.parquet"
OUTPUT = f"gs://{BUCKET}/gp-params/run_date={RUN_DATE}/"
STEPS = ["ReadSeries", "FitSeries", "AllRows", "CountStatus", "WriteParams", "WriteManifest"]

# The worker options docs/dataflow.md recommends; they must reach the job.
WORKER_OPTIONS = ["--machine_type=n2-standard-4", "--max_num_workers=50",
                  "--number_of_worker_harness_threads=4", "--experiments=use_runner_v2"]


def pardo_fns(proto: beam_runner_api_pb2.Pipeline) -> dict[str, object]:
    """{transform label: the DoFn (or callable wrapper) unpickled from its payload};
    ParDos whose DoFn Beam names by URN (CombineGlobally's key-with-None) are left out."""
    fns = {}
    for transform in proto.components.transforms.values():
        if transform.spec.urn != common_urns.primitives.PAR_DO.urn:
            continue
        payload = beam_runner_api_pb2.ParDoPayload.FromString(transform.spec.payload)
        if payload.do_fn.urn != python_urns.PICKLED_DOFN_INFO:
            continue
        fns[transform.unique_name] = pickler.loads(payload.do_fn.payload)
    return fns


# --- the --dry_run job -------------------------------------------------------

@pytest.fixture(scope="module")
def dry_job(dry_run_module):
    # Beam's short name for the runner, as users write it: the script
    # refused it ("needs --runner DataflowRunner; got dataflow").
    return dry_run_module.dry_run([
        f"--input={INPUT}", f"--output={OUTPUT}", "--runner=dataflow", f"--project={PROJECT}",
        f"--region={REGION}", f"--temp_location=gs://{BUCKET}/dataflow/temp",
        f"--setup_file={REPO / 'setup.py'}", f"--sdk_container_image={IMAGE}",
        "--kernel=matern52", "--restarts=2", *WORKER_OPTIONS])


def test_dry_run_builds_the_whole_gpfit_job(dry_job, dry_run_module):
    assert dry_job.proto.type_.name == "JOB_TYPE_BATCH"
    assert dry_run_module.top_level_steps(dry_job) == STEPS
    labels = {t.unique_name for t in dry_job.proto_pipeline.components.transforms.values()}
    assert {"ReadSeries/ListFiles", "ReadSeries/ReadRowGroups", "ReadSeries/GroupBySeries",
            "FitSeries/BatchByLength", "FitSeries/FitBatches", "WriteManifest/Write"} <= labels
    # Every environment runs the gpfit image (Dataflow accepts only Docker).
    assert dry_run_module.container_images(dry_job) == [IMAGE]
    for env in dry_job.proto_pipeline.components.environments.values():
        assert env.urn == common_urns.environments.DOCKER.urn


def test_dry_run_job_carries_the_options_to_the_workers(dry_job):
    fns = pardo_fns(dry_job.proto_pipeline)
    fit = fns["FitSeries/FitBatches/ParDo(FitDoFn)"][0]  # a ParDo with two outputs
    assert type(fit).__name__ == "FitDoFn"
    config = fit._handler.config  # the fitter handler (pipeline/handler.py) the workers build from
    assert (config.kernel_name, config.restarts) == ("matern52", 2)
    # The job reads the --input pattern itself (the files are listed on the workers).
    list_files = next(fn for label, fn in fns.items()
                      if label.startswith("ReadSeries/ListFiles/FlatMap"))
    assert INPUT.encode() in cloudpickle.dumps(list_files)
    sinks = [arg for label, fn in fns.items() if label.startswith("WriteParams/")
             for arg in fn[1] if type(arg).__name__ == "_ParquetSink"]
    assert sinks and {s.file_path_prefix.get() for s in sinks} == {OUTPUT + "params"}
    # The job writes its own manifest, with what the launcher knew.
    record = fns["WriteManifest/Write"][0]._record
    assert (record.output, record.kernel, record.input["pattern"]) == (OUTPUT, "matern52", INPUT)
    assert record.options["restarts"] == 2 and record.options["beam"]["max_num_workers"] == 50
    options = dry_job.options.get_all_options(drop_default=True)
    assert options["input"] == INPUT and options["output"] == OUTPUT
    assert options["machine_type"] == "n2-standard-4" and options["max_num_workers"] == 50
    assert options["number_of_worker_harness_threads"] == 4
    assert "use_runner_v2" in options["experiments"]


def test_a_max_points_past_the_launchers_memory_is_left_to_the_workers(dry_run_module):
    """The bound on one series' dense fit is the fitting machine's: a
    launcher (a scheduler's small VM) refused a --max_points that the job's
    workers, of their own machine type, may hold. Each worker's fitter
    checks it against its own memory when built."""
    job = dry_run_module.dry_run([
        f"--input={INPUT}", f"--output={OUTPUT}", "--runner=DataflowRunner",
        f"--project={PROJECT}", f"--region={REGION}",
        f"--temp_location=gs://{BUCKET}/dataflow/temp", f"--setup_file={REPO / 'setup.py'}",
        f"--sdk_container_image={IMAGE}", "--max_points=100000", "--max_rows=100000",
        "--machine_type=m1-ultramem-160"])
    fit = pardo_fns(job.proto_pipeline)["FitSeries/FitBatches/ParDo(FitDoFn)"][0]
    assert fit._handler.config.max_points == 100_000


def test_dry_run_stages_the_setup_package(dry_job, dry_run_module, setup_info):
    staged = dry_run_module.staged_artifacts(dry_job)
    assert "workflow.tar.gz" in staged  # the name Beam's workers pip-install
    check_gpfit_sdist(staged["workflow.tar.gz"], setup_info)
    assert dry_run_module.sdist_packages(staged["workflow.tar.gz"]) == ["gpcore", "gpfit", "pipeline"]


def test_dry_run_submits_nothing(dry_job):
    # No job id was ever assigned, and the staging location was never used:
    # the fixture ran under no_network, so a request would have failed it.
    assert dry_job.proto.id == ""
    assert dry_job.options.get_all_options()["staging_location"].startswith(
        f"gs://{BUCKET}/dataflow/temp/")


def test_network_guard_refuses_and_reports(dry_run_module):
    with pytest.raises(dry_run_module.NetworkUsed):
        with dry_run_module.no_network():
            socket.getaddrinfo("dataflow.googleapis.com", 443)
    # Swallowed refusals still fail the block: a library that catches the
    # error and carries on offline is caught too.
    with pytest.raises(dry_run_module.NetworkUsed, match="socket.connect"):
        with dry_run_module.no_network() as attempts:
            with socket.socket() as sock:
                try:
                    sock.connect(("127.0.0.1", 9))
                except Exception:  # pylint: disable=broad-except
                    pass
            assert [a.event for a in attempts] == ["socket.connect"]
    with pytest.raises(dry_run_module.NetworkUsed, match="getaddrinfo 'storage.googleapis.com'"):
        with dry_run_module.no_network():
            urllib.request.urlopen("https://storage.googleapis.com/", timeout=1)
    with dry_run_module.no_network() as attempts:  # allowed outside it again
        pass
    assert attempts == []


def test_make_dataflow_dry_run_target(dry_run_module, monkeypatch, capfd):
    """`make dataflow-dry-run` runs deploy/dataflow_dry_run.py; its arguments
    (read with `make -n`, nothing installed) build the job offline. Beam's
    stager builds the sdist with `python -m build` in a subprocess on this
    process's stderr: without `build` installed it printed "No module named
    build" before falling back to `setup.py sdist` (capfd sees that write);
    with it, its progress lines, which gpfit's own dry run keeps for
    --log_level debug."""
    shown = subprocess.run(["make", "-n", "dataflow-dry-run"], cwd=REPO,
                           capture_output=True, text=True, check=True).stdout
    line = next(l for l in shown.splitlines() if "deploy/dataflow_dry_run.py" in l)
    words = shlex.split(line)
    argv = words[words.index("deploy/dataflow_dry_run.py") + 1:]
    assert any(a.startswith("--input=gs://") for a in argv)
    assert any(a.startswith("--output=gs://") for a in argv)
    monkeypatch.chdir(REPO)  # as make runs it: --setup_file=./setup.py
    assert dry_run_module.main(argv) == 0
    text, err = capfd.readouterr()
    assert "No module named build" not in err, err
    assert "* Building sdist..." not in err, err
    assert "steps: " + ", ".join(STEPS) in text
    assert "setup package contains: gpcore, gpfit, pipeline" in text
    assert "nothing staged or submitted, no network used" in text


def test_a_pyproject_toml_setup_file_builds_the_staged_sdist(dry_run_module, monkeypatch,
                                                            setup_info):
    """gpfit takes --setup_file ./pyproject.toml (pipeline/dataflow.py's
    SETUP_FILES), which Beam's stager builds only with `python -m build`:
    without `build` the launch failed as it staged the job, "Failed to build
    package from './pyproject.toml'", exit 3."""
    monkeypatch.chdir(REPO)
    job = dry_run_module.dry_run([f"--input={INPUT}", f"--output={OUTPUT}",
                                  f"--temp_location=gs://{BUCKET}/dataflow/temp",
                                  "--setup_file=./pyproject.toml"])
    staged = dry_run_module.staged_artifacts(job)
    check_gpfit_sdist(staged["workflow.tar.gz"], setup_info)


def test_a_dry_run_with_a_requirements_file_downloads_nothing(dry_run_module, tmp_path):
    """Beam's stager ran `pip download` of every requirement for a dry run, a
    subprocess the socket guard does not see: online minutes of downloads,
    offline exit 3 after pip's retries ("the pipeline failed: Full
    traceback: ..."). A dry run skips the requirements cache: the file is
    staged and nothing downloaded (this package does not exist)."""
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("gpfit-no-such-package==0.0.1\n")
    job = dry_run_module.dry_run([f"--input={INPUT}", f"--output={OUTPUT}",
                                  f"--temp_location=gs://{BUCKET}/dataflow/temp",
                                  f"--sdk_container_image={IMAGE}",
                                  f"--requirements_file={requirements}"])
    staged = dry_run_module.staged_artifacts(job)
    assert "requirements.txt" in staged
    assert not [name for name in staged if "no-such-package" in name or "no_such" in name]


# --- the classic template ----------------------------------------------------

@pytest.fixture(scope="module")
def template(tmp_path_factory, dry_run_module):
    """A classic template written to a local file, staged to a local folder.

    An endpoint on localhost makes Beam treat the run as not going to the
    service (no gs:// checks of the locations); port 9 has no server, and
    writing a template sends nothing anyway.
    """
    root = tmp_path_factory.mktemp("template")
    (root / "staging").mkdir()
    (root / "temp").mkdir()
    argv = [f"--input={INPUT}", f"--output={OUTPUT}", "--runner=DataflowRunner",
            f"--project={PROJECT}", f"--region={REGION}", "--no_auth",
            "--dataflow_endpoint=http://localhost:9",
            f"--template_location={root / 'template.json'}",
            f"--staging_location={root / 'staging'}", f"--temp_location={root / 'temp'}",
            f"--setup_file={REPO / 'setup.py'}", f"--sdk_container_image={IMAGE}",
            *WORKER_OPTIONS]
    with dry_run_module.no_network():
        result = dry_run_module.build_pipeline(argv).run()
    assert not result.has_job  # written, not submitted
    return root, json.loads((root / "template.json").read_text())


def test_template_names_the_gpfit_container_image(template):
    _, job = template
    options = job["environment"]["sdkPipelineOptions"]["options"]
    assert options["sdk_container_image"] == IMAGE
    (pool,) = job["environment"]["workerPools"]
    assert pool["workerHarnessContainerImage"] == IMAGE
    assert {c["containerImage"] for c in pool["sdkHarnessContainerImages"]} == {IMAGE}
    assert pool["machineType"] == "n2-standard-4"
    assert pool["autoscalingSettings"]["maxNumWorkers"] == 50
    assert options["number_of_worker_harness_threads"] == 4
    assert "use_runner_v2" in job["environment"]["experiments"]
    assert (options["input"], options["output"]) == (INPUT, OUTPUT)


def test_template_stages_the_sdist_of_setup_py(template, setup_info):
    root, job = template
    (pool,) = job["environment"]["workerPools"]
    packages = {p["name"]: p["location"] for p in pool["packages"]}
    assert packages["workflow.tar.gz"] == str(root / "staging" / "workflow.tar.gz")
    check_gpfit_sdist(packages["workflow.tar.gz"], setup_info)


def test_template_stages_the_pipeline_proto(template):
    root, job = template
    options = job["environment"]["sdkPipelineOptions"]["options"]
    assert options["pipelineUrl"] == str(root / "staging" / "pipeline.pb")
    proto = beam_runner_api_pb2.Pipeline.FromString((root / "staging" / "pipeline.pb").read_bytes())
    labels = {t.unique_name for t in proto.components.transforms.values()}
    assert set(STEPS) | {"FitSeries/FitBatches"} <= labels
    assert re.fullmatch(r"beamapp-[-a-z0-9]+", job["name"])


def test_a_requirement_pip_cannot_get_is_named_in_the_failure_line(dry_run_module, capsys,
                                                                  monkeypatch, tmp_path):
    """Staging a job (here a template into a local folder) downloads
    --requirements_file's packages with pip; when pip failed, gpfit's line
    was "the pipeline failed: Full traceback: Traceback (most recent call
    last):". It names the package and pip's error. Offline: pip looks in no
    index, and the package does not exist."""
    from pipeline import cli

    monkeypatch.setenv("PIP_NO_INDEX", "1")
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("gpfit-no-such-package==0.0.1\n")
    (tmp_path / "staging").mkdir()
    # Local paths: a template staged into a local folder is not the service.
    data = write_long_parquet(tmp_path / "in")
    with dry_run_module.no_network():
        code = cli.run([f"--input={data}", f"--output={tmp_path / 'out'}",
                        "--runner=DataflowRunner",
                        f"--project={PROJECT}", f"--region={REGION}", "--no_auth",
                        "--dataflow_endpoint=http://localhost:9",
                        f"--template_location={tmp_path / 'template.json'}",
                        f"--staging_location={tmp_path / 'staging'}",
                        f"--temp_location={tmp_path / 'staging'}",
                        f"--sdk_container_image={IMAGE}", f"--requirements_file={requirements}"])
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 3, last
    assert last.startswith("gpfit: error: the pipeline failed: pip failed for "
                           "gpfit-no-such-package==0.0.1: "), last
    assert "No matching distribution found for gpfit-no-such-package" in last, last


def test_dry_run_refuses_what_it_cannot_prove(dry_run_module):
    from pipeline.io.errors import UsageError

    with pytest.raises(UsageError, match="DataflowRunner"):
        dry_run_module.dry_run([f"--input={INPUT}", f"--output={OUTPUT}",
                                "--runner=DirectRunner"])
    with pytest.raises(UsageError, match="kernal"):  # gpfit's strict parsing
        dry_run_module.dry_run([f"--input={INPUT}", f"--output={OUTPUT}", "--kernal=rbf"])
    with pytest.raises(UsageError, match="--input"):
        dry_run_module.dry_run([f"--output={OUTPUT}"])


def test_gpfit_refuses_options_beam_refuses(dry_run_module, capsys):
    """Beam's own check of its options for the runner (here a project ID
    that is not one) refuses the invocation: exit 2, one line saying what
    Beam found (README, "Exit codes")."""
    from pipeline import cli

    with dry_run_module.no_network():
        code = cli.run([f"--input={INPUT}", f"--output={OUTPUT}", "--runner=DataflowRunner",
                        "--dry_run=True", "--no_auth", "--project=my project",
                        f"--region={REGION}", f"--temp_location=gs://{BUCKET}/dataflow/temp",
                        f"--sdk_container_image={IMAGE}"])
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2
    assert last.startswith("gpfit: error: ") and "Invalid Project ID (my project)" in last


@pytest.mark.parametrize("name", ["TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS"])
def test_thread_counts_past_the_launchers_cores_do_not_refuse_a_dataflow_launch(
        dry_run_module, capsys, monkeypatch, name):
    """The launching machine's environment is not the workers' (a Flex
    Template's launcher VM runs the workers' image on fewer cores): a count
    set for n2-standard-8 workers refused the launch (exit 2) wherever the
    launcher had fewer cores. The workers check their own."""
    from pipeline import cli, fitters

    monkeypatch.setenv(name, str(fitters.machine_cores() + 1))
    with dry_run_module.no_network():
        code = cli.run([f"--input={INPUT}", f"--output={OUTPUT}", "--runner=DataflowRunner",
                        "--no_auth", f"--project={PROJECT}", f"--region={REGION}",
                        f"--temp_location=gs://{BUCKET}/dataflow/temp",
                        f"--sdk_container_image={IMAGE}", "--machine_type=n2-standard-8",
                        "--dry_run=True"])
    assert code == 0, capsys.readouterr().err


@pytest.mark.parametrize("level", ["info", "debug"])
def test_the_setup_files_build_says_nothing_below_debug(dry_run_module, capfd, level):
    """Beam builds --setup_file's sdist with `python -m build`, whose
    progress ("* Getting build dependencies for sdist...", "* Building
    sdist...") went to the user's terminal on every launch; now only at
    --log_level debug, as Beam's other chatter."""
    from pipeline import cli

    with dry_run_module.no_network():
        code = cli.run([f"--input={INPUT}", f"--output={OUTPUT}", "--runner=DataflowRunner",
                        "--no_auth", f"--project={PROJECT}", f"--region={REGION}",
                        f"--temp_location=gs://{BUCKET}/dataflow/temp",
                        f"--setup_file={REPO / 'setup.py'}", "--dry_run=True",
                        f"--log_level={level}"])
    err = capfd.readouterr().err
    assert code == 0, err
    assert ("* Building sdist..." in err) == (level == "debug"), err


@pytest.mark.parametrize("command", [["-m", "build", "--no-isolation", "--sdist"],
                                     ["setup.py", "sdist"]], ids=["build", "setup.py"])
def test_a_launchs_sdist_build_waits_for_another_in_the_same_folder(tmp_path, monkeypatch,
                                                                    command):
    """Beam builds --setup_file's sdist in the setup file's folder, where
    setuptools writes and then removes its release tree: two launches from
    one checkout at once (two pytest-xdist workers' dry runs) removed each
    other's, and one failed, "No such file or directory:
    'gpfit-0.16.5/pipeline/io/matching.py'" (in 5 of 5 tries of two builds
    at once). A build now waits while another holds the folder; other
    commands do not (docs/design.md, "One sdist build a folder at a time")."""
    import sys
    import threading

    from apache_beam.utils import processes

    from pipeline import sdist_build

    ran = []
    monkeypatch.setattr(processes, "check_output",
                        lambda args, **kwargs: ran.append(args[1]) or b"")
    monkeypatch.chdir(tmp_path)  # Beam builds in the setup file's folder
    with sdist_build.quiet(False):
        build = threading.Thread(target=processes.check_output,
                                 args=([sys.executable, *command, "--outdir", "dist"],))
        with sdist_build.folder_locked(str(tmp_path)):  # another launch's build
            processes.check_output([sys.executable, "-m", "pip", "--version"])
            build.start()
            build.join(0.5)
            assert build.is_alive() and ran == ["-m"]  # pip ran; the build waits
        build.join(30)
    assert not build.is_alive() and ran == ["-m", command[0]]


# --- what gpfit refuses before any work ----------------------------------------

def _refused(dry_run_module, capsys, argv: list[str]) -> str:
    """gpfit's last stderr line for a Dataflow dry run of argv, which must be
    refused with exit 2 at once (no network, no job built)."""
    from pipeline import cli

    with dry_run_module.no_network():
        code = cli.run([f"--input={INPUT}", f"--output={OUTPUT}", "--runner=DataflowRunner",
                        "--no_auth", f"--project={PROJECT}", f"--region={REGION}",
                        f"--sdk_container_image={IMAGE}", *argv])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("gpfit: error: ")
    return last


def test_dry_run_false_is_refused_not_taken_as_a_dry_run(dry_run_module, capsys):
    """Beam reads --dry_run's value as a string, any but '' true: --dry_run=False
    built the job, submitted nothing and exited 0, as a scheduler's flag
    switched off would."""
    last = _refused(dry_run_module, capsys, ["--dry_run=False",
                                             f"--temp_location=gs://{BUCKET}/dataflow/temp"])
    assert "--dry_run=False" in last and "leave --dry_run out to submit" in last


@pytest.mark.parametrize("setup, said", [
    ("--setup_file=/nonexistent/setup.py", "--setup_file /nonexistent/setup.py: no such file"),
    ("--setup_file=setup.py", "give it with its folder, e.g. ./setup.py"),
    ("--setup_file=README.md", "a file named setup.py or pyproject.toml"),
    ("--requirements_file=/nonexistent/req.txt",
     "--requirements_file /nonexistent/req.txt: no such file"),
    ("--extra_package=/nonexistent/dep-1.0.tar.gz",
     "--extra_package /nonexistent/dep-1.0.tar.gz: no such file"),
    ("--extra_package=README.md", "Beam stages a file ending in .tar, .tar.gz, .whl, .zip"),
    # Beam has no file system for a URL: "Unable to get filesystem from
    # specified path", exit 3, at staging, dry run or not.
    ("--extra_package=https://example.com/dep-1.0.tar.gz",
     "Beam cannot stage a package from a URL"),
    # A dry run downloaded it to stage it: offline, minutes of Cloud
    # Storage's retries.
    (f"--extra_package=gs://{BUCKET}/deps/dep-1.0.tar.gz",
     "a dry run would download it to stage it"),
])
def test_staged_files_are_checked_before_any_work(dry_run_module, capsys, monkeypatch,
                                                  setup, said):
    """Beam checks them only as it stages the job, after gpfit has cleared the
    output folder: exit 3, "the pipeline failed" (a bare setup.py: "No such
    file or directory: ''")."""
    monkeypatch.chdir(REPO)  # setup.py and README.md are there
    last = _refused(dry_run_module, capsys, [setup, "--dry_run=True",
                                             f"--temp_location=gs://{BUCKET}/dataflow/temp"])
    assert said in last


@pytest.mark.parametrize("location", ["/tmp/dataflow/temp", f"gs://{BUCKET}", "gs://b/temp"])
@pytest.mark.parametrize("name", ["temp_location", "staging_location"])
def test_a_location_that_is_not_a_gs_folder_is_refused(dry_run_module, capsys, name, location):
    """Beam swapped a bad one for a bucket it makes in the project: offline
    120 s of retries, then a message blaming a missing --temp_location."""
    last = _refused(dry_run_module, capsys, [f"--{name}={location}", "--dry_run=True"])
    assert f"--{name} {location}: Dataflow needs a gs:// folder there" in last
    assert "Beam says: Invalid GCS" in last


@pytest.mark.parametrize("name", ["input", "output", "previous_output"])
def test_paths_on_this_machine_are_refused_for_dataflow(dry_run_module, capsys, tmp_path, name):
    """Dataflow's workers cannot read this machine's files: a local --input
    failed on the workers, a local --output was written on their disks."""
    last = _refused(dry_run_module, capsys, [f"--{name}={tmp_path}", "--dry_run=True",
                                             f"--temp_location=gs://{BUCKET}/dataflow/temp"])
    assert f"--{name} {tmp_path} is a path on this machine" in last
    assert "gs://" in last


@pytest.mark.parametrize("given, builds", [
    ([], False),
    ([f"--sdk_container_image={IMAGE}"], True),
    ([f"--worker_harness_container_image={IMAGE}"], True),  # Beam's older name for it
    ([f"--setup_file={REPO / 'setup.py'}"], True),
])
def test_a_job_whose_workers_would_have_no_gpfit_is_refused(dry_run_module, capsys, given,
                                                            builds):
    """Without --sdk_container_image (the gpfit image) and with nothing
    staged (--setup_file, --extra_package, --requirements_file), Dataflow's
    workers run Beam's own SDK image, which has no gpfit: every bundle failed
    to unpickle gpfit's DoFns, after gpfit had cleared the output folder and
    the workers had started (exit 3, minutes later). A Flex launch without
    sdkContainerImage is such a job. Refused before any work, exit 2."""
    from pipeline import cli

    with dry_run_module.no_network():
        code = cli.run([f"--input={INPUT}", f"--output={OUTPUT}", "--runner=DataflowRunner",
                        "--no_auth", f"--project={PROJECT}", f"--region={REGION}",
                        f"--temp_location=gs://{BUCKET}/dataflow/temp", "--dry_run=True",
                        *given])
    err = capsys.readouterr().err
    if builds:
        assert code == 0, err
        return
    assert code == 2, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("gpfit: error: ") and "Traceback" not in err
    assert "--sdk_container_image" in last and "--setup_file ./setup.py" in last, last
    assert "no gpfit" in last, last


@pytest.mark.parametrize("given", [[], [f"--staging_location=gs://{BUCKET}/dataflow/staging"]])
def test_a_dry_run_without_a_temp_location_is_refused_at_once(dry_run_module, capsys, given):
    """Without --temp_location (or --staging_location) Beam makes a default
    bucket in the project for the job's files, dry run or not: offline that
    ended in exit 2 after 140 s of Google's retries; online it would have
    made a bucket in a run that says nothing was written. A dry run is
    refused at once instead, naming the option; a --staging_location alone
    Beam takes for both."""
    from pipeline import cli

    if given:  # Beam uses the one given for the other: built, offline, exit 0
        with dry_run_module.no_network():
            code = cli.run([f"--input={INPUT}", f"--output={OUTPUT}", "--runner=DataflowRunner",
                            "--no_auth", f"--project={PROJECT}", f"--region={REGION}",
                            f"--sdk_container_image={IMAGE}", "--dry_run=True", *given])
        assert code == 0, capsys.readouterr().err
        return
    last = _refused(dry_run_module, capsys, ["--dry_run=True"])
    assert "--temp_location" in last and "default bucket" in last, last


def test_the_readmes_dataflow_example_is_a_job_gpfit_builds(dry_run_module, capsys):
    """README's example of Beam options after gpfit's (`--runner
    DataflowRunner --project P --region R --temp_location gs://...`) named
    no worker image and staged nothing, which gpfit refuses (exit 2: the
    workers would run Beam's own SDK image, without gpfit). Its options,
    placeholders filled in, build the job offline."""
    from pipeline import cli

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    example = re.search(r"follow gpfit's own, e\.g\. `(--runner DataflowRunner[^`]*)`", readme)
    temp = f"gs://{BUCKET}/dataflow/temp"
    filled = {"P": PROJECT, "R": REGION, "gs://B/temp": temp, "gs://...": temp,
              "IMAGE": IMAGE}
    argv = [filled.get(word, word) for word in example.group(1).split()]
    with dry_run_module.no_network():
        code = cli.run([f"--input={INPUT}", f"--output={OUTPUT}", *argv, "--dry_run=True",
                        "--no_auth"])
    assert code == 0, capsys.readouterr().err

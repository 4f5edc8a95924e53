"""The scheduled runs and the documented Dataflow commands, checked offline.

Airflow is not installed here, so the DAG is compiled and read, not run: its
options are turned into the command line Beam's Airflow operator passes,
and that command line builds the Dataflow job offline. The gpfit command
lines of docs/dataflow.md and docs/scheduling.md go through gpfit's strict
option parser and the same dry run.
"""
from __future__ import annotations

import json
import re
import shlex
import subprocess

import pytest

from deploy_helpers import BUCKET, IMAGE, PROJECT, REGION, REPO, VERSION, read_dag

DAG = REPO / "deploy" / "airflow" / "gpfit_dag.py"
DATAFLOW_DOC = REPO / "docs" / "dataflow.md"
SCHEDULING_DOC = REPO / "docs" / "scheduling.md"
DS = "2026-11-29"
DS_BEFORE = "2026-11-28"  # {{ macros.ds_add(ds, -1) }}
SHELL_VARS = {"PROJECT": PROJECT, "REGION": REGION, "BUCKET": BUCKET, "IMAGE": IMAGE,
              "TAG": VERSION, "AR_REPO": "gpfit"}


def render(text: str) -> str:
    """Airflow's templating, for the three macros the DAG uses."""
    return (text.replace("{{ ds }}", DS).replace("{{ ds_nodash }}", DS.replace("-", ""))
            .replace("{{ macros.ds_add(ds, -1) }}", DS_BEFORE))


def beam_operator_argv(options: dict) -> list[str]:
    """pipeline_options as Beam's Airflow hook passes them: --key=value,
    one flag per list item, a bare flag for True."""
    argv = []
    for key, value in options.items():
        if value is True or value is None:
            argv.append(f"--{key}")
        elif value is False:
            continue
        elif isinstance(value, list):
            argv += [f"--{key}={item}" for item in value]
        elif isinstance(value, dict):
            argv.append(f"--{key}={json.dumps(value)}")
        else:
            argv.append(f"--{key}={value}")
    return argv


@pytest.fixture(scope="module")
def dag(tmp_path_factory) -> dict:
    return read_dag(DAG, tmp_path_factory.mktemp("dag"))


def test_dag_compiles_and_uses_the_beam_operator_and_a_marker_sensor(dag):
    calls = dag["calls"]
    assert len(calls["BeamRunPythonPipelineOperator"]) == 1
    assert len(calls["GCSObjectExistenceSensor"]) == 1
    assert "fit >> success_marker" in DAG.read_text()


def test_dag_writes_one_folder_per_date_and_waits_for_its_marker(dag):
    (fit,) = dag["calls"]["BeamRunPythonPipelineOperator"]
    (sensor,) = dag["calls"]["GCSObjectExistenceSensor"]
    output = fit["pipeline_options"]["output"]
    assert output.endswith("/gp-params/run_date={{ ds }}/")
    assert f"gs://{sensor['bucket']}/{sensor['object']}" == output + "_SUCCESS.json"
    assert "{{ ds }}" in fit["pipeline_options"]["input"]
    assert fit["runner"] == "DataflowRunner"


def test_dag_chains_each_night_to_the_one_before(dag):
    (fit,) = dag["calls"]["BeamRunPythonPipelineOperator"]
    options = fit["pipeline_options"]
    assert render(options["previous_output"]) == render(options["output"]).replace(DS, DS_BEFORE)
    assert options["previous_output_optional"] is True  # the first night has none


def test_dag_runs_the_images_gpfit_release(dag, setup_info):
    names = dag["names"]
    (fit,) = dag["calls"]["BeamRunPythonPipelineOperator"]
    assert names["GPFIT_VERSION"] == setup_info["version"]
    assert names["GPFIT_IMAGE"].endswith(f":{setup_info['version']}")
    assert fit["pipeline_options"]["sdk_container_image"] == names["GPFIT_IMAGE"]
    # pip's arguments: the image's lock as constraints, then the sdist, so
    # the launcher pickles the job with the packages that unpickle it.
    flag, lock, requirement = fit["py_requirements"]
    assert requirement.endswith(f"/{setup_info['name']}-{setup_info['version']}.tar.gz")
    assert requirement.startswith(f"{setup_info['name']}[gcp] @ file:///")
    folder = requirement.split("file://")[1].rsplit("/", 1)[0]
    assert (flag, lock) == ("-c", f"{folder}/lock.txt")
    assert fit["py_file"] == f"{folder}/main.py"


def test_the_documented_composer_copy_gives_the_dag_its_files():
    """docs/scheduling.md's copy puts in the DAG's folder every file the
    DAG's virtualenv and operator read: the sdist, main.py and the lock."""
    copy = next(c for c in shell_commands(SCHEDULING_DOC.read_text())
                if c.startswith("gcloud storage cp dist/"))
    sources = shlex.split(copy)[3:-1]
    assert sources == ["dist/gpfit-$TAG.tar.gz", "deploy/flex-template/main.py",
                       "requirements/lock.txt"]
    assert all((REPO / s).exists() for s in sources[1:])


def test_dag_command_line_builds_the_dataflow_job(dag, dry_run_module):
    (fit,) = dag["calls"]["BeamRunPythonPipelineOperator"]
    (keywords,) = dag["calls"]["DataflowConfiguration"]
    options = {**fit["pipeline_options"], "job_name": keywords["job_name"],
               "project": keywords["project_id"], "region": keywords["location"],
               "labels": {"airflow-version": "v2-10-5"}}
    argv = [render(a) for a in beam_operator_argv(options)]
    job = dry_run_module.dry_run(argv)
    assert job.proto.name == f"gpfit-{DS.replace('-', '')}"
    got = job.options.get_all_options(drop_default=True)
    assert got["output"] == f"gs://{dag['names']['BUCKET']}/gp-params/run_date={DS}/"
    assert got["previous_output"] == (f"gs://{dag['names']['BUCKET']}/gp-params/"
                                      f"run_date={DS_BEFORE}/")
    assert dry_run_module.container_images(job) == [dag["names"]["GPFIT_IMAGE"]]


# --- docs/dataflow.md, docs/scheduling.md -----------------------------------

def shell_commands(text: str) -> list[str]:
    """The commands of the text's ```bash blocks, continuation lines joined."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for command in block.replace("\\\n", " ").splitlines():
            command = command.split("  #")[0].strip()
            if command:
                commands.append(command)
    return commands


def expand(command: str) -> list[str]:
    """shlex words of a command, with the docs' shell variables set."""
    words = shlex.split(command)
    return [re.sub(r"\$(\w+)", lambda m: SHELL_VARS.get(m.group(1), m.group(0)), w)
            for w in words]


def test_documented_direct_run_builds_the_dataflow_job(dry_run_module):
    from pipeline.options import parse_options

    (command,) = [c for c in shell_commands(DATAFLOW_DOC.read_text())
                  if c.startswith("gpfit ") and "DataflowRunner" in c]
    argv = expand(command)[1:]
    parse_options(argv)  # gpfit's own, strict parser: every flag is known
    job = dry_run_module.dry_run(argv)
    assert dry_run_module.container_images(job) == [IMAGE]
    assert dry_run_module.top_level_steps(job)[-2:] == ["WriteParams", "WriteManifest"]


def test_documented_flex_template_parameters_are_gpfit_or_beam_options():
    from pipeline.options import parse_options

    metadata = json.loads((REPO / "deploy/flex-template/metadata.json").read_text())
    declared = {p["name"] for p in metadata["parameters"]}
    commands = shell_commands(DATAFLOW_DOC.read_text())
    (build,) = [c for c in commands if c.startswith("gcloud dataflow flex-template build")]
    assert "--metadata-file deploy/flex-template/metadata.json" in build
    (run,) = [c for c in commands if c.startswith("gcloud dataflow flex-template run")]
    words = expand(run)
    parameters = [words[i + 1] for i, w in enumerate(words) if w == "--parameters"]
    assert {p.split("=", 1)[0] for p in parameters} >= {"input", "output"}
    assert {"input", "output"} <= declared
    # As the launcher passes them, they parse (declared ones are gpfit's).
    parse_options([f"--{p}" for p in parameters])


def test_documented_cloud_run_job_runs_a_valid_gpfit_command(tmp_path):
    """The `gcloud run jobs create` line, through bash (gcloud captured), then
    its --args through sh -c as the container would (gpfit captured): the
    gpfit command line it produces parses, for yesterday's folder."""
    from pipeline.options import GPFitOptions, parse_options

    (create,) = [c for c in shell_commands(SCHEDULING_DOC.read_text())
                 if c.startswith("gcloud run jobs create")]
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in SHELL_VARS.items())
    script = f'gcloud() {{ printf "%s\\0" "$@"; }}\n{exports}\n{create}\n'
    words = subprocess.run(["bash", "-c", script], capture_output=True, check=True).stdout
    words = words.decode().split("\0")[:-1]
    (args,) = [w.split("=", 1)[1] for w in words if w.startswith("--args=")]
    shell_flag, gpfit_line = args.split(",", 1)  # gcloud splits --args on commas
    assert shell_flag == "-c" and "," not in gpfit_line
    assert words[words.index("--command") + 1] == "/bin/sh"
    container = f'gpfit() {{ printf "%s\\0" "$@"; }}\n{gpfit_line}\n'
    argv = subprocess.run(["sh", "-c", container], capture_output=True, check=True,
                          cwd=tmp_path).stdout.decode().split("\0")[:-1]
    gp = parse_options(argv).view_as(GPFitOptions)
    yesterday = subprocess.run(["date", "-u", "-d", "yesterday", "+%F"], capture_output=True,
                               text=True, check=True).stdout.strip()
    assert gp.output == f"gs://{BUCKET}/gp-params/run_date={yesterday}/"
    assert gp.input == f"gs://{BUCKET}/series/date={yesterday}/*.parquet"
    before = subprocess.run(["date", "-u", "-d", "2 days ago", "+%F"], capture_output=True,
                            text=True, check=True).stdout.strip()
    assert gp.previous_output == f"gs://{BUCKET}/gp-params/run_date={before}/"
    assert gp.previous_output_optional is True

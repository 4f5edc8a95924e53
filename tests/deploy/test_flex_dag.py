"""deploy/airflow/gpfit_flex_dag.py, compiled and read (Airflow is not
installed here): it launches the Flex Template with parameters that
metadata.json declares and gpfit accepts, and imports nothing of gpfit."""
from __future__ import annotations

import ast
import json

import pytest

from deploy_helpers import REPO, read_dag

DAG = REPO / "deploy" / "airflow" / "gpfit_flex_dag.py"
DS = "2026-11-29"
DS_BEFORE = "2026-11-28"


@pytest.fixture(scope="module")
def dag(tmp_path_factory) -> dict:
    return read_dag(DAG, tmp_path_factory.mktemp("flex-dag"))


def test_the_dag_launches_the_flex_template_and_waits_for_its_marker(dag):
    (fit,) = dag["calls"]["DataflowStartFlexTemplateOperator"]
    (sensor,) = dag["calls"]["GCSObjectExistenceSensor"]
    assert fit["wait_until_finished"] is True
    launch = fit["body"]["launchParameter"]
    assert launch["containerSpecGcsPath"] == dag["names"]["TEMPLATE"]
    output = launch["parameters"]["output"]
    assert output.endswith("/gp-params/run_date={{ ds }}/")
    assert f"gs://{sensor['bucket']}/{sensor['object']}" == output + "_SUCCESS.json"
    assert "fit >> success_marker" in DAG.read_text()


def test_the_workers_run_the_gpfit_image_the_template_was_built_from(dag):
    """A Flex Template's image runs its launcher only: a launch without
    sdkContainerImage runs the workers on Beam's SDK image, where gpfit is
    not installed. The DAG gives the release's image, as docs/dataflow.md's
    launch does (sdk_container_image=$IMAGE)."""
    (fit,) = dag["calls"]["DataflowStartFlexTemplateOperator"]
    names = dag["names"]
    image = fit["body"]["launchParameter"]["environment"]["sdkContainerImage"]
    assert image == names["GPFIT_IMAGE"]
    assert image.endswith(f"/gpfit:{names['GPFIT_VERSION']}")
    assert names["TEMPLATE"].endswith(f"/gpfit-{names['GPFIT_VERSION']}.json")


def test_composer_needs_no_tensorflow_beam_or_gpfit():
    imported = {alias.name.split(".")[0] for node in ast.walk(ast.parse(DAG.read_text()))
                if isinstance(node, (ast.Import, ast.ImportFrom))
                for alias in (node.names if isinstance(node, ast.Import)
                              else [ast.alias(node.module or "")])}
    assert imported <= {"__future__", "pendulum", "airflow"}, imported


def test_its_parameters_are_declared_and_parse_as_gpfit_options(dag):
    from pipeline.options import GPFitOptions, check, parse_options

    (fit,) = dag["calls"]["DataflowStartFlexTemplateOperator"]
    parameters = fit["body"]["launchParameter"]["parameters"]
    metadata = json.loads((REPO / "deploy/flex-template/metadata.json").read_text())
    assert set(parameters) <= {p["name"] for p in metadata["parameters"]}
    assert all(isinstance(v, str) for v in parameters.values())
    rendered = [f"--{k}=" + v.replace("{{ ds }}", DS).replace("{{ macros.ds_add(ds, -1) }}",
                                                              DS_BEFORE)
                for k, v in parameters.items()]
    gp = parse_options(rendered).view_as(GPFitOptions)  # as the launcher passes them
    check(gp)
    assert gp.output.endswith(f"/gp-params/run_date={DS}/") and gp.kernel == "matern52"
    # Each night against the one before; the first night has none.
    assert gp.previous_output == gp.output.replace(DS, DS_BEFORE)
    assert gp.previous_output_optional is True

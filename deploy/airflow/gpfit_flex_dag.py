"""Airflow DAG: fit one day's series every night by launching gpfit's Flex
Template, then check the marker. Composer needs no TensorFlow, Beam or gpfit.

gpfit_dag.py runs the gpfit command in a virtualenv on the Airflow worker,
which installs TensorFlow and Beam there on every run. This DAG instead asks
Dataflow to launch the Flex Template (docs/dataflow.md builds it): the
launcher runs in gpfit's image, on Dataflow's side, and the job writes
`_SUCCESS.json` (or `_FAILED.json`) last. `DataflowStartFlexTemplateOperator`
waits for the job and fails the task if the job fails; the sensor then
confirms the marker that downstream DAGs wait on (a job that finished with
too many failed series or unreadable input writes `_FAILED.json`, and the
sensor times out).

Each run writes its own folder, gs://BUCKET/gp-params/run_date=YYYY-MM-DD/
(docs/design.md, "Measured facts"). Set PROJECT, REGION, BUCKET,
TEMPLATE (the spec written by `gcloud dataflow flex-template build`) and
GPFIT_IMAGE (the image that template was built from: the workers run it).
Needs apache-airflow-providers-google (in Cloud Composer).
"""
from __future__ import annotations

import pendulum
from airflow import DAG
from airflow.providers.google.cloud.operators.dataflow import DataflowStartFlexTemplateOperator
from airflow.providers.google.cloud.sensors.gcs import GCSObjectExistenceSensor

PROJECT = "my-project"
REGION = "europe-west4"
BUCKET = "my-bucket"
GPFIT_VERSION = "0.16.6"
TEMPLATE = f"gs://{BUCKET}/templates/gpfit-{GPFIT_VERSION}.json"
GPFIT_IMAGE = f"{REGION}-docker.pkg.dev/{PROJECT}/gpfit/gpfit:{GPFIT_VERSION}"

RUN_FOLDER = "gp-params/run_date={{ ds }}/"
# The night before's folder: its unchanged series are reused, its parameters
# warm-start the changed ones. Optional, so that the first night, or a night
# after one that failed, fits everything cold (the manifest's previous_note
# says why) instead of failing.
PREVIOUS_FOLDER = "gp-params/run_date={{ macros.ds_add(ds, -1) }}/"

with DAG(
    dag_id="gpfit_nightly_flex",
    schedule="0 3 * * *",  # 03:00 UTC, for the previous day ({{ ds }})
    start_date=pendulum.datetime(2026, 11, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 0},  # a re-run refits the whole date: retry by hand
    tags=["gpfit", "dataflow"],
) as dag:
    fit = DataflowStartFlexTemplateOperator(
        task_id="fit",
        project_id=PROJECT,
        location=REGION,
        wait_until_finished=True,
        body={
            "launchParameter": {
                "jobName": "gpfit-flex-{{ ds_nodash }}",
                "containerSpecGcsPath": TEMPLATE,
                # Template parameters are strings; metadata.json declares them.
                "parameters": {
                    "input": f"gs://{BUCKET}/series/date={{{{ ds }}}}/*.parquet",
                    "output": f"gs://{BUCKET}/{RUN_FOLDER}",
                    "previous_output": f"gs://{BUCKET}/{PREVIOUS_FOLDER}",
                    "previous_output_optional": "true",
                    "kernel": "matern52",
                    "max_failure_fraction": "0.01",
                },
                "environment": {
                    # The template's image runs only the launcher; without
                    # this the workers run Beam's own SDK image, which has
                    # no gpfit (docs/dataflow.md passes it as a parameter).
                    "sdkContainerImage": GPFIT_IMAGE,
                    "tempLocation": f"gs://{BUCKET}/dataflow/temp",
                    "machineType": "n2-standard-4",
                    "maxWorkers": 50,
                },
            },
        },
    )

    success_marker = GCSObjectExistenceSensor(
        task_id="success_marker",
        bucket=BUCKET,
        object=f"{RUN_FOLDER}_SUCCESS.json",
        mode="reschedule",
        poke_interval=60,
        timeout=30 * 60,
    )

    fit >> success_marker

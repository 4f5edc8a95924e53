"""Airflow DAG: fit one day's series on Dataflow every night, then check the marker.

Each run reads one date's input and writes its own output folder,
gs://BUCKET/gp-params/run_date=YYYY-MM-DD/, so a re-run replaces only that
date and no stale shard of another run can mix in (docs/design.md, "Measured facts").

The `fit` task runs the `gpfit` command with the DataflowRunner through
Beam's operator: gpfit checks the input, submits the job (which writes
`_SUCCESS.json` last) and waits for it, and its exit code fails the task
(1: too many series failed, 2: bad input, 3: the job failed), so Airflow
alerts. The sensor then confirms the marker that downstream DAGs wait on.

Setup (once per gpfit release; docs/scheduling.md):
  - the gpfit image pushed to Artifact Registry (GPFIT_IMAGE): Dataflow's
    workers run it, so they have exactly the code that builds the job;
  - the same release's sdist, Flex entry point and dependency lock copied to
    the Composer bucket's data/ folder, which Composer mounts at
    /home/airflow/gcs/data:
      gcloud storage cp dist/gpfit-0.16.6.tar.gz deploy/flex-template/main.py \
          requirements/lock.txt gs://COMPOSER_BUCKET/data/gpfit/
Needs apache-airflow-providers-apache-beam and -google (in Cloud Composer).
"""
from __future__ import annotations

import pendulum
from airflow import DAG
from airflow.providers.apache.beam.operators.beam import BeamRunPythonPipelineOperator
from airflow.providers.google.cloud.operators.dataflow import DataflowConfiguration
from airflow.providers.google.cloud.sensors.gcs import GCSObjectExistenceSensor

PROJECT = "my-project"
REGION = "europe-west4"
BUCKET = "my-bucket"
GPFIT_VERSION = "0.16.6"
GPFIT_IMAGE = f"{REGION}-docker.pkg.dev/{PROJECT}/gpfit/gpfit:{GPFIT_VERSION}"
GPFIT_FILES = "/home/airflow/gcs/data/gpfit"  # gs://COMPOSER_BUCKET/data/gpfit/

RUN_FOLDER = "gp-params/run_date={{ ds }}/"
# The night before's folder: its unchanged series are reused, its parameters
# warm-start the changed ones. Optional, so that the first night, or a night
# after one that failed, fits everything cold (the manifest's previous_note
# says why) instead of failing.
PREVIOUS_FOLDER = "gp-params/run_date={{ macros.ds_add(ds, -1) }}/"

with DAG(
    dag_id="gpfit_nightly",
    schedule="0 3 * * *",  # 03:00 UTC, for the previous day ({{ ds }})
    start_date=pendulum.datetime(2026, 11, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 0},  # a re-run refits the whole date: retry by hand
    tags=["gpfit", "dataflow"],
) as dag:
    fit = BeamRunPythonPipelineOperator(
        task_id="fit",
        runner="DataflowRunner",
        py_file=f"{GPFIT_FILES}/main.py",
        # A fresh virtualenv per run keeps gpfit's pins (TensorFlow, Beam)
        # out of Airflow's own environment; it must be the image's version,
        # installed against the image's lock: the job is pickled here and
        # unpickled by the image's packages (cloudpickle, protobuf), and the
        # package pins only gpfit's direct dependencies.
        py_requirements=["-c", f"{GPFIT_FILES}/lock.txt",
                         f"gpfit[gcp] @ file://{GPFIT_FILES}/gpfit-{GPFIT_VERSION}.tar.gz"],
        py_interpreter="python3.11",
        py_system_site_packages=False,
        pipeline_options={
            "input": f"gs://{BUCKET}/series/date={{{{ ds }}}}/*.parquet",
            "output": f"gs://{BUCKET}/{RUN_FOLDER}",
            "previous_output": f"gs://{BUCKET}/{PREVIOUS_FOLDER}",
            "previous_output_optional": True,
            "kernel": "matern52",
            "max_failure_fraction": 0.01,
            "temp_location": f"gs://{BUCKET}/dataflow/temp",
            "sdk_container_image": GPFIT_IMAGE,
            "machine_type": "n2-standard-4",
            "max_num_workers": 50,
            "number_of_worker_harness_threads": 4,
            "experiments": ["use_runner_v2"],
        },
        dataflow_config=DataflowConfiguration(
            job_name="gpfit-{{ ds_nodash }}",
            project_id=PROJECT,
            location=REGION,
            wait_until_finished=True,
        ),
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

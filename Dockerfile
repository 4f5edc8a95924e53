# gpfit's one image. It is both
#   - the Dataflow worker SDK container (--sdk_container_image), and
#   - the Flex Template launcher image (gcloud dataflow flex-template build --image),
# so a job is built and run by exactly the same code and dependencies.
# Build, push and use it: docs/dataflow.md. Docker is not needed
# for tests: tests/deploy/test_dockerfile.py checks this file statically.

# Stage 1: Google's Flex Template launcher image, used only as the source of
# its launcher binary (copied below). A dated release tag, not :latest, so a
# rebuild copies the same launcher; move it to a newer release with
# --build-arg LAUNCHER_IMAGE=... (or here) after a test launch.
ARG LAUNCHER_IMAGE=gcr.io/dataflow-templates-base/python311-template-launcher-base:flex_templates_base_image_release_20240628_RC00
FROM ${LAUNCHER_IMAGE} AS launcher

# Stage 2, the image: Beam's Python SDK worker image of exactly the Beam and
# Python versions pyproject.toml pins (BEAM_VERSION, python_requires; a test keeps
# the three equal). It brings the worker boot program and apache-beam[gcp].
FROM apache/beam_python3.11_sdk:2.77.0

# The launcher binary lets Dataflow start Flex Template launches from this
# image; without it the image could only be a worker container.
COPY --from=launcher /opt/google/dataflow/python_template_launcher /opt/google/dataflow/python_template_launcher

# Only what the package build needs (.dockerignore keeps the rest of the
# checkout, caches and .venv out of the build context).
WORKDIR /src
COPY pyproject.toml setup.py ./
COPY requirements/lock.txt requirements/lock.txt
COPY gpcore/ gpcore/
COPY gpfit/ gpfit/
COPY pipeline/ pipeline/

# Install gpfit as a regular (not editable) package with pyproject.toml's
# pins, every transitive one held at requirements/lock.txt's version (the
# versions `make test` ran); the gcp extra pins apache-beam[gcp] to the
# version already in the base image, so pip keeps Beam and replaces only
# what the lock differs on. The sources are deleted so that the installed
# copy is the only one on the image.
RUN pip install --no-cache-dir --disable-pip-version-check --root-user-action=ignore \
        -c requirements/lock.txt ".[gcp]" \
    && rm -rf /src

# Fail the build, not the job, if our pins and the base image's packages conflict.
RUN pip check

# The Flex Template entry point: the launcher runs `python $FLEX_TEMPLATE_PYTHON_PY_FILE
# <parameters>`, and main.py is just the `gpfit` command. There is deliberately
# no FLEX_TEMPLATE_PYTHON_SETUP_FILE (nor _REQUIREMENTS_FILE): the package and
# its dependencies are already installed here, in the image the workers run,
# so staging setup.py would only make every launch build an sdist and every
# worker reinstall it at start-up.
WORKDIR /template
COPY deploy/flex-template/main.py ./main.py
ENV FLEX_TEMPLATE_PYTHON_PY_FILE=/template/main.py

# gpfit's process settings, gpcore/threads.py's PROCESS_ENV, for every
# process of the image (Beam's worker loads numpy before any gpfit code
# runs, so the worker cannot set them itself): one BLAS thread, TensorFlow's
# C++ INFO lines off, tf-keras instead of Keras 3. A test holds these lines
# equal to PROCESS_ENV. TensorFlow's thread counts are deliberately not set:
# each worker process derives them from its share of the cores
# (pipeline/fitters.py; one SDK process per vCPU by default: 1 thread each;
# --experiments=no_use_multiple_sdk_containers: one process, every core).
ENV OPENBLAS_NUM_THREADS=1 \
    TF_CPP_MIN_LOG_LEVEL=2 \
    TF_USE_LEGACY_KERAS=1

# As a worker container the entry point must be Beam's boot program, which
# Dataflow starts with its own arguments. For Flex Template launches Dataflow
# runs /opt/google/dataflow/python_template_launcher by path, overriding this
# entry point, so one entry point serves both roles.
ENTRYPOINT ["/opt/apache/beam/boot"]

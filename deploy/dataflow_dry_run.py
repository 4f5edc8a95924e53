"""Builds gpfit's Dataflow job offline, without submitting it.

    python deploy/dataflow_dry_run.py --input gs://BUCKET/series/ \
        --output gs://BUCKET/gp-params/run_date=2026-11-29/ [Beam options]

Runs Beam's DataflowRunner with --dry_run=True and --no_auth: the pipeline is
translated to the job Dataflow would receive, the setup file is built into the
sdist that would be staged, and the runner returns before it creates an API
client, so nothing is uploaded or submitted. Every socket the run tries to open
is refused and reported (see `no_network`); a dry run that needed the network
fails. `make dataflow-dry-run` runs this; tests/deploy use its functions.

The pipeline is built by pipeline.builder.build_from_options with
check_paths=False, as `gpfit --runner DataflowRunner --dry_run ...` builds it.
The input is not inspected: listing and reading Parquet footers on gs:// needs
the network. The job matches the --input pattern itself, on the workers
(pipeline/reading.py), and a real run's graph holds the pattern too, never
the file list, so this graph is the graph of a real run: a folder given with
its "/" is matched as "<folder>/*" in both, but one given without it, which a
real run finds is a folder by listing it, is taken here as a file of that
name. The CLI's up-front input and output checks are not part of this proof.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import socket
import sys
import tarfile
from typing import Iterator, Optional

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SETUP_FILE = os.path.join(REPO, "setup.py")

# What a dry run needs and a user may leave out: an offline stand-in project,
# a region, and gs:// locations derived from --output (only their syntax is
# checked; nothing is written there).
_DEFAULTS = {"project": "gpfit-dry-run", "region": "us-central1"}


@dataclasses.dataclass
class NetworkAttempt:
    event: str
    target: str


class NetworkUsed(RuntimeError):
    """Raised when the code under `no_network` opened (or tried to) a socket."""


@contextlib.contextmanager
def no_network() -> Iterator[list[NetworkAttempt]]:
    """Refuses every Internet-family socket connect and DNS lookup inside the block.

    Uses a Python audit hook, so it sees every socket opened through Python's
    `socket` module (urllib3, requests, httplib2, google-auth); it cannot see
    sockets opened by C extensions (gRPC's core). Attempts are refused with
    NetworkUsed *and* recorded, so that code which swallows the exception
    still fails the check: the block raises NetworkUsed on exit if any were
    recorded. Unix-domain sockets are allowed.
    """
    _install_hook()
    attempts: list[NetworkAttempt] = []
    _GUARD.append(attempts)
    try:
        yield attempts
    finally:
        _GUARD.remove(attempts)
    if attempts:
        raise NetworkUsed(f"{len(attempts)} network attempt(s): "
                          + "; ".join(f"{a.event} {a.target}" for a in attempts[:5]))


_GUARD: list[list[NetworkAttempt]] = []
_HOOKED = False


def _audit(event: str, args: tuple) -> None:
    if not _GUARD or not event.startswith("socket."):
        return
    if event == "socket.connect":
        sock, address = args
        if getattr(sock, "family", None) == socket.AF_UNIX:
            return
        target = repr(address)
    elif event in ("socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyname_ex",
                   "socket.gethostbyaddr"):
        target = repr(args[0])
    else:
        return
    _GUARD[-1].append(NetworkAttempt(event, target))
    raise NetworkUsed(f"network use refused in an offline check: {event} {target}")


def _install_hook() -> None:
    global _HOOKED
    if not _HOOKED:
        sys.addaudithook(_audit)  # hooks cannot be removed; _audit is a no-op outside the block
        _HOOKED = True


def parser() -> argparse.ArgumentParser:
    """The options this script looks at; all others (gpfit's and Beam's) pass
    through to gpfit untouched (parse_known_args)."""
    p = argparse.ArgumentParser(
        prog="dataflow_dry_run.py", allow_abbrev=False,
        usage="python deploy/dataflow_dry_run.py --input PATTERN --output gs://... "
              "[gpfit and Beam options]",
        description="Build gpfit's Dataflow job offline, without submitting it.")
    for name in ("runner", "output", "project", "region", "temp_location", "setup_file",
                 "sdk_container_image"):
        # nargs="?": a flag given without a value is passed on for gpfit to refuse.
        p.add_argument(f"--{name}", nargs="?", const="", metavar=name.upper())
    return p


def with_defaults(argv: list[str]) -> list[str]:
    """argv plus what a Dataflow dry run needs and the user left out."""
    argv = list(argv)
    given, _ = parser().parse_known_args(argv)
    if given.runner is None:
        argv.append("--runner=DataflowRunner")
    for name, value in _DEFAULTS.items():
        if getattr(given, name) is None:
            argv.append(f"--{name}={value}")
    output = given.output or ""
    if given.temp_location is None and output.startswith("gs://"):
        bucket = output[len("gs://"):].split("/", 1)[0]
        argv.append(f"--temp_location=gs://{bucket}/dataflow/temp")
    if given.setup_file is None and given.sdk_container_image is None:
        argv.append(f"--setup_file={SETUP_FILE}")
    return argv


def build_pipeline(argv: list[str]):
    """gpfit's pipeline for argv, built (not run) as `gpfit --dry_run` builds it.

    Options are parsed and checked as strictly as `gpfit` does it
    (pipeline.builder.build_from_options); the input and the output folder
    are not looked at (see the module docstring): the job reads the --input
    pattern itself.

    Raises:
      pipeline.io.errors.UsageError: a bad option, as `gpfit` would report it.
    """
    from pipeline import builder
    from pipeline.options import parse_options

    return builder.build_from_options(parse_options(argv), check_paths=False).pipeline


def dry_run(argv: list[str]):
    """Builds the Dataflow job for argv offline; returns Beam's apiclient.Job.

    Raises:
      NetworkUsed: building the job tried to use the network.
      pipeline.io.errors.UsageError: a bad option, or a runner other than Dataflow
        (which would run the pipeline for real).
    """
    from pipeline import sdist_build
    from pipeline.dataflow import names_dataflow
    from pipeline.io.beam_import import log_level_in
    from pipeline.io.errors import UsageError

    runner = parser().parse_known_args(argv)[0].runner
    if runner is not None and not names_dataflow(runner):
        raise UsageError(f"a Dataflow dry run needs --runner DataflowRunner; got {runner}")
    argv = with_defaults(argv) + ["--dry_run=True", "--no_auth"]
    with no_network():
        pipeline = build_pipeline(argv)
        # `python -m build`'s progress lines, below --log_level debug, as gpfit's own run.
        with sdist_build.quiet(log_level_in(argv) == "debug"):
            result = pipeline.run()
    return result.job


def staged_artifacts(job) -> dict[str, str]:
    """{staged name: local file} of every artifact the job would stage."""
    from apache_beam.portability.api import beam_runner_api_pb2

    staged = {}
    for env in job.proto_pipeline.components.environments.values():
        for dep in env.dependencies:
            path = beam_runner_api_pb2.ArtifactFilePayload.FromString(dep.type_payload).path
            name = beam_runner_api_pb2.ArtifactStagingToRolePayload.FromString(
                dep.role_payload).staged_name
            staged[name] = path
    return staged


def top_level_steps(job) -> list[str]:
    """Labels of the pipeline's own steps (the children of its root)."""
    transforms = job.proto_pipeline.components.transforms
    steps = []
    for root in job.proto_pipeline.root_transform_ids:
        children = transforms[root].subtransforms
        steps += [transforms[c].unique_name for c in children] or [transforms[root].unique_name]
    return steps


def container_images(job) -> list[str]:
    from apache_beam.portability.api import beam_runner_api_pb2

    return sorted({beam_runner_api_pb2.DockerPayload.FromString(env.payload).container_image
                   for env in job.proto_pipeline.components.environments.values()})


def sdist_packages(path: str) -> list[str]:
    """Top-level packages (folders with __init__.py) inside an sdist tarball."""
    with tarfile.open(path) as tar:
        names = tar.getnames()
    found = set()
    for name in names:
        parts = name.split("/")
        if len(parts) == 3 and parts[2] == "__init__.py":
            found.add(parts[1])
    return sorted(found)


def main(argv: Optional[list[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser().parse_known_args(argv)  # answers --help
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from pipeline.io.errors import UsageError

    try:
        job = dry_run(argv)
    except UsageError as err:
        print(f"dataflow-dry-run: error: {err}", file=sys.stderr)
        return 2
    options = job.options.get_all_options(drop_default=True)
    steps = top_level_steps(job)
    print(f"job {job.proto.name} ({job.proto.type_.name}) for project {options.get('project')}, "
          f"region {options.get('region')}")
    print(f"  {len(job.proto_pipeline.components.transforms)} transforms; steps: "
          + ", ".join(steps))
    print("  container image: " + ", ".join(container_images(job)))
    staged = staged_artifacts(job)
    for name, path in sorted(staged.items()):
        print(f"  would stage {name} ({os.path.getsize(path)} bytes)")
    if "workflow.tar.gz" in staged:
        packages = sdist_packages(staged["workflow.tar.gz"])
        print("  setup package contains: " + ", ".join(packages))
        if not {"gpcore", "gpfit", "pipeline"} <= set(packages):
            print("dataflow-dry-run: error: the staged setup package lacks gpcore, gpfit or pipeline",
                  file=sys.stderr)
            return 1
    print("dry run: job built, nothing staged or submitted, no network used")
    return 0


if __name__ == "__main__":
    # The job is built from this checkout's code, the code its setup.py stages.
    sys.path.insert(0, REPO)
    sys.exit(main())

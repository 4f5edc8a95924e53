"""The portable runner's external worker pool, checked before the job.

With `--runner PortableRunner --environment_type EXTERNAL
--environment_config HOST:PORT` the job service asks a Beam worker pool
(`python -m apache_beam.runners.worker.worker_pool_main`) to start SDK
workers, then waits for them to connect, without a time limit: a pool that
cannot start one (its `python` lacks Beam or gpfit) left gpfit waiting until
it was killed, holding its lock. So before the job, gpfit asks the pool for
one worker itself, pointed at a control endpoint of its own on loopback,
and waits at most WORKER_START_S for it to connect (docs/design.md,
"Runners and quiet runs").
"""
from __future__ import annotations

import threading
from concurrent import futures

from apache_beam.options.pipeline_options import PipelineOptions, PortableOptions, StandardOptions

from pipeline.io.errors import UsageError
from pipeline.options import names_runner

# A worker imports Beam before it connects (measured in docs/design.md,
# "Runners and quiet runs"); Beam's own harness gives its control channel 60 s.
WORKER_START_S = 90.0
_ASK_S = 10.0  # for the pool's answer to the request itself


def pool_address(options: PipelineOptions):
    """The worker pool's address of a portable run with external workers,
    else None."""
    portable = options.view_as(PortableOptions)
    if not names_runner(options.view_as(StandardOptions).runner, "PortableRunner") \
            or (portable.environment_type or "").upper() != "EXTERNAL":
        return None
    address = portable.environment_config
    for option in portable.environment_options or []:
        if option.startswith("external_service_address="):
            address = option.split("=", 1)[1]
    return address or None


def check_job_endpoint(options: PipelineOptions, runner) -> None:
    """Refuses a PortableRunner without --job_endpoint, or with one where
    no job server answers. Beam's runner says it needs one only once the
    job runs, after gpfit has cleared the output folder (an earlier run's
    manifest gone) and exits 3; Beam's Flink and Spark runners start a job
    server of their own and need none.

    Raises:
      UsageError: the runner has no job server of its own and none is
        named, or none answers at the address given.
    """
    from apache_beam.runners.portability.portable_runner import PortableRunner

    if not isinstance(runner, PortableRunner):
        return
    endpoint = options.view_as(PortableOptions).job_endpoint
    if not endpoint and type(runner).default_job_server is PortableRunner.default_job_server:
        raise UsageError("--runner PortableRunner needs --job_endpoint: embed (a job server in "
                         "this process, with --environment_type EXTERNAL --environment_config "
                         "HOST:PORT of a Beam worker pool) or HOST:PORT of a running job "
                         "server; see README.md, \"Usage\"")
    if endpoint and endpoint != "embed":
        _check_answers(endpoint)


def _check_answers(endpoint: str) -> None:
    """Waits at most _ASK_S for a gRPC connection to the job server at
    endpoint: Beam's runner waited for one without end (an unused port:
    over 150 s), the output folder cleared and left locked as a remote job's.

    Raises:
      UsageError: nothing answers there.
    """
    import grpc

    with grpc.insecure_channel(endpoint) as channel:
        try:
            grpc.channel_ready_future(channel).result(timeout=_ASK_S)
        except grpc.FutureTimeoutError as err:
            raise UsageError(f"no job server answers at --job_endpoint {endpoint} (within "
                             f"{_ASK_S:.0f} s): start one there or give its address, or "
                             "--job_endpoint embed to run one in this process") from err


def check_workers_start(options: PipelineOptions, timeout_s: float | None = None) -> None:
    """Asks the external worker pool of these options (if any) for one
    worker and waits until it connects.

    Raises:
      UsageError: no pool answers at the address, it refused, or its worker
        did not connect within timeout_s (WORKER_START_S); in one line.
    """
    address = pool_address(options)
    if address is None:
        return
    import grpc
    from apache_beam.portability.api import (beam_fn_api_pb2, beam_fn_api_pb2_grpc,
                                             endpoints_pb2)

    timeout_s = WORKER_START_S if timeout_s is None else timeout_s
    connected = threading.Event()

    class _Control(beam_fn_api_pb2_grpc.BeamFnControlServicer):
        def Control(self, request_iterator, context):  # noqa: N802  (gRPC's name)
            connected.set()  # the worker is up; ending the stream ends it
            return iter(())

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    beam_fn_api_pb2_grpc.add_BeamFnControlServicer_to_server(_Control(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        endpoint = endpoints_pb2.ApiServiceDescriptor(url=f"127.0.0.1:{port}")
        with grpc.insecure_channel(address) as channel:
            stub = beam_fn_api_pb2_grpc.BeamFnExternalWorkerPoolStub(channel)
            try:
                answer = stub.StartWorker(beam_fn_api_pb2.StartWorkerRequest(
                    worker_id="gpfit-check", control_endpoint=endpoint,
                    logging_endpoint=endpoint, artifact_endpoint=endpoint,
                    provision_endpoint=endpoint), timeout=_ASK_S)
            except grpc.RpcError as err:
                raise UsageError(
                    f"no Beam worker pool answers at --environment_config {address} "
                    f"({err.code().name}): start one there (python -m "
                    "apache_beam.runners.worker.worker_pool_main --service_port PORT) "
                    "or give its address") from err
        if answer.error:  # a traceback as text: its last line says what
            said = [line for line in answer.error.strip().splitlines() if line.strip()]
            raise UsageError(f"the worker pool at {address} could not start a worker: "
                             f"{said[-1].strip() if said else 'no reason given'}")
        if not connected.wait(timeout_s):
            raise UsageError(
                f"the worker pool at {address} started no worker that connected within "
                f"{timeout_s:.0f} s; its workers run `python` from the pool's PATH, which "
                "needs gpfit and Beam installed: start the pool from gpfit's environment")
    finally:
        server.stop(grace=None)

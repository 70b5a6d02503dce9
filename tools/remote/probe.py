"""Asks a REAPI execution service whether any worker serves a platform: executes a trivial
action (`/bin/sh -c 'exit 0'`) with those platform properties and reports who ran it. Used by
tools/remote/preflight.py; runs on BuildGrid's interpreter (grpc and the REAPI protos).

Invariants: the probe never comes from a cache (a unique salt, do_not_cache and
skip_cache_lookup), so an answer means a worker leased it just now. A probe no worker took
within the wait is cancelled, so a worker that joins later does not run a stale probe.
"""
from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

import grpc  # pants: no-infer-dep
from buildgrid._protos.build.bazel.remote.execution.v2 import (  # pants: no-infer-dep
    remote_execution_pb2 as re_pb2, remote_execution_pb2_grpc as re_grpc)  # pants: no-infer-dep
from buildgrid._protos.google.longrunning import (  # pants: no-infer-dep
    operations_pb2, operations_pb2_grpc)  # pants: no-infer-dep

from tools.remote.reapi_client import upload_action

PROBE = ["/bin/sh", "-c", "exit 0"]


@dataclass(frozen=True)
class Answer:
    served: bool
    seconds: float
    worker: str = ""           # who ran the probe (served)
    refused: str = ""          # the service's FAILED_PRECONDITION message: no pool fits
    # otherwise (not served, not refused): accepted, but no worker took it within the wait


class Unreachable(RuntimeError):
    pass


def channel_for(address: str):
    """grpc://HOST:PORT (plain) or grpcs://HOST:PORT (TLS), as Pants spells addresses."""
    scheme, _, target = address.partition("://")
    if scheme == "grpcs":
        return grpc.secure_channel(target, grpc.ssl_channel_credentials())
    if scheme == "grpc" and target:
        return grpc.insecure_channel(target)
    raise ValueError(f"bad address {address!r}: grpc://HOST:PORT or grpcs://HOST:PORT")


def probe(exec_channel, cas, instance: str, properties, wait_s: float) -> Answer:
    start = time.monotonic()
    try:
        digest = upload_action(cas, PROBE, sorted(properties), (), timeout_s=60,
                               salt=f"mettle-preflight-{uuid.uuid4().hex}", do_not_cache=True)
    except grpc.RpcError as e:
        raise Unreachable(f"the store refused the probe: {e.code().name}: {e.details()}") \
            from None
    stub = re_grpc.ExecutionStub(exec_channel)
    name = None
    try:
        stream = stub.Execute(re_pb2.ExecuteRequest(instance_name=instance, action_digest=digest,
                                                    skip_cache_lookup=True), timeout=wait_s)
        for op in stream:
            name = op.name or name
            if op.done:
                response = re_pb2.ExecuteResponse()
                op.response.Unpack(response)
                return Answer(True, time.monotonic() - start,
                              worker=response.result.execution_metadata.worker or "?")
    except grpc.RpcError as e:
        if e.code() == grpc.StatusCode.FAILED_PRECONDITION:
            return Answer(False, time.monotonic() - start, refused=e.details() or "")
        if e.code() != grpc.StatusCode.DEADLINE_EXCEEDED:
            raise Unreachable(f"{e.code().name}: {e.details()}") from None
    _cancel(exec_channel, name)
    return Answer(False, time.monotonic() - start)


def _cancel(channel, name: str | None) -> None:
    if not name:
        return
    try:
        operations_pb2_grpc.OperationsStub(channel).CancelOperation(
            operations_pb2.CancelOperationRequest(name=name), timeout=10)
    except grpc.RpcError:
        pass  # best effort: a stale probe is a no-op action

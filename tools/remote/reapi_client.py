#!/usr/bin/env python3
"""A small REAPI client for the remote-execution fault tests: runs one shell command as an
action on a BuildGrid instance and prints the outcome as one JSON line. Run it with
BuildGrid's interpreter (grpc and the REAPI protos):

    .bootstrap/buildgrid/bin/python tools/remote/reapi_client.py --server 127.0.0.1:PORT \
        [--instance mettle] [--property K=V]... [--output FILE]... [--timeout S] \
        [--deadline S] [--salt TEXT] -- COMMAND...

Like a build client (Pants retries the same way) it survives the server: when the Execute
stream breaks (a restart, a network error), it waits and asks again with WaitExecution,
then Execute for the same action digest (the action cache or the persisted queue answers),
until --deadline. It uploads the action and command, waits for the result and downloads
the stdout and every declared output file. Output: {"exit_code", "stdout", "stderr", "outputs":
{path: text}, "worker", "seconds", "retries"} or {"error": "..."} (exit 1).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import grpc  # pants: no-infer-dep
from buildgrid._protos.build.bazel.remote.execution.v2 import (  # pants: no-infer-dep
    remote_execution_pb2 as re_pb2, remote_execution_pb2_grpc as re_grpc)  # pants: no-infer-dep

from tools.remote.cas import Cas, digest_of  # noqa: E402

RETRY_S = 1.0


def upload_action(cas: Cas, argv, properties, outputs, timeout_s, salt: str,
                  do_not_cache: bool = False):
    platform = re_pb2.Platform(properties=[
        re_pb2.Platform.Property(name=k, value=v) for k, v in sorted(properties)])
    command = re_pb2.Command(arguments=argv, output_files=list(outputs), platform=platform,
                             environment_variables=[re_pb2.Command.EnvironmentVariable(
                                 name="PATH", value="/usr/bin:/bin")])
    root = re_pb2.Directory()
    blobs = {}
    for message in (command, root):
        data = message.SerializeToString()
        d = digest_of(data)
        blobs[d.hash] = (d, data)
    action = re_pb2.Action(command_digest=digest_of(command.SerializeToString()),
                           input_root_digest=digest_of(root.SerializeToString()),
                           platform=platform, salt=salt.encode(), do_not_cache=do_not_cache)
    action.timeout.seconds = int(timeout_s)
    data = action.SerializeToString()
    d = digest_of(data)
    blobs[d.hash] = (d, data)
    cas.upload(blobs)
    return d


def result_of(stream):
    """The ActionResult at the end of an Execute/WaitExecution stream (or an error)."""
    for op in stream:
        if op.done:
            if op.HasField("error"):
                raise RuntimeError(f"operation failed: {op.error.code} {op.error.message}")
            response = re_pb2.ExecuteResponse()
            op.response.Unpack(response)
            if response.status.code != 0:
                raise RuntimeError(f"execution failed: code {response.status.code}: "
                                   f"{response.status.message}")
            return response.result, op.name
    return None, None


def execute(channel, instance, action_digest, deadline):
    stub = re_grpc.ExecutionStub(channel)
    retries, name = 0, None
    while time.monotonic() < deadline:
        left = max(1.0, deadline - time.monotonic())
        try:
            if name:
                stream = stub.WaitExecution(re_pb2.WaitExecutionRequest(name=name),
                                            timeout=left)
            else:
                stream = stub.Execute(re_pb2.ExecuteRequest(
                    instance_name=instance, action_digest=action_digest,
                    skip_cache_lookup=False), timeout=left)
            try:
                for op in stream:
                    name = op.name or name
                    if op.done:
                        result, _ = result_of(iter([op]))
                        return result, retries
            finally:
                stream.cancel()  # a call left open keeps grpc's threads alive at exit
            name = None
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.FAILED_PRECONDITION:
                raise RuntimeError(f"FAILED_PRECONDITION: {e.details()}") from None
            if e.code() == grpc.StatusCode.DEADLINE_EXCEEDED and time.monotonic() >= deadline:
                break
            if e.code() == grpc.StatusCode.NOT_FOUND:
                name = None  # the server forgot the operation: execute the digest again
        retries += 1
        time.sleep(RETRY_S)
    raise RuntimeError(f"no result within the deadline ({retries} retries)")


def main(argv: list) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--server", required=True)
    p.add_argument("--instance", default="mettle")
    p.add_argument("--property", action="append", default=[])
    p.add_argument("--output", action="append", default=[])
    p.add_argument("--timeout", type=float, default=600, help="the action's own timeout")
    p.add_argument("--deadline", type=float, default=300, help="give up after this long")
    p.add_argument("--salt", default="", help="makes otherwise equal actions distinct")
    p.add_argument("command", nargs="+")
    args = p.parse_args(argv)
    props = [tuple(kv.split("=", 1)) for kv in args.property]
    start = time.monotonic()
    # Closing the channel ends every call still open (one broken by a GOAWAY included);
    # without it the interpreter can wait on grpc's threads after the answer is printed.
    with grpc.insecure_channel(args.server) as channel:
        return _run(channel, args, props, start)


def _run(channel, args, props, start) -> int:
    try:
        cas = Cas(channel, args.instance, Path("/tmp") / f"mettle-client-{hashlib.sha256(args.server.encode()).hexdigest()[:8]}")
        digest = upload_action(cas, args.command, props, args.output, args.timeout, args.salt)
        result, retries = execute(channel, args.instance, digest, start + args.deadline)
        outputs = {f.path: cas.read(f.digest).decode(errors="replace")
                   for f in result.output_files}
        stdout = cas.read(result.stdout_digest).decode(errors="replace") \
            if result.HasField("stdout_digest") else ""
        stderr = cas.read(result.stderr_digest).decode(errors="replace") \
            if result.HasField("stderr_digest") else ""
        print(json.dumps({"exit_code": result.exit_code, "stdout": stdout, "stderr": stderr,
                          "outputs": outputs,
                          "worker": result.execution_metadata.worker,
                          "seconds": round(time.monotonic() - start, 2),
                          "retries": retries}), flush=True)
        return 0
    except (RuntimeError, grpc.RpcError) as e:
        print(json.dumps({"error": str(e), "seconds": round(time.monotonic() - start, 2)}),
              flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

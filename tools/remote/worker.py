#!/usr/bin/env python3
"""The smallest Remote Workers (Bots) API worker for BuildGrid: a test fixture that executes
REAPI actions, not a product feature. Run it with BuildGrid's interpreter:

    .bootstrap/buildgrid/bin/python tools/remote/worker.py --server 127.0.0.1:PORT \
        --instance mettle --name plain --property OSFamily=linux --property ISA=x86-64 \
        --property gpu=none --base-env PATH=/usr/bin:/bin --work DIR [--log FILE] \
        [--record-only REGEX]

For every lease it fetches the Action, its Command and input root from the CAS, runs the
command in a fresh directory (tools/remote/sandbox.py: the declared environment, no stdin,
the action's timeout), uploads the declared outputs plus stdout/stderr and completes the
lease with the ActionResult. `--base-env K=V` plays the part of a container image's ENV
(Pants learns a remote environment's PATH by running `env` there): the action's variables
override it and nothing of the worker's own environment leaks in. BuildGrid matches actions
to the platform properties the worker advertises (`--property K=V`: OSFamily, ISA and
`gpu` = none | sm_90a | gb10).

`--record-only REGEX` stands in for hardware this machine lacks: an action whose argv (joined
by spaces) matches REGEX is recorded, not run (the demo matches Pants' pytest runs; the setup
actions of the test environment, e.g. building the pytest PEX, still execute). It answers
exit code 1 with a message on stderr, so the build fails visibly and BuildGrid (which caches
only exit code 0) never caches a result that no hardware produced. `--log FILE` appends one
JSON line per lease: the worker's name, the action digest, argv, declared environment,
platform, whether it executed, exit code and seconds.

Exit: 0 on SIGTERM/SIGINT after the lease in progress; 2 when the server is unreachable.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import signal
import socket
import sys
import time
import uuid
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

# BuildGrid's interpreter provides these (E402: after the sys.path line above).
import grpc  # pants: no-infer-dep
from buildgrid._protos.build.bazel.remote.execution.v2 import (  # pants: no-infer-dep
    remote_execution_pb2 as re_pb2)  # pants: no-infer-dep
from buildgrid._protos.google.devtools.remoteworkers.v1test2 import (  # pants: no-infer-dep
    bots_pb2, bots_pb2_grpc, worker_pb2)  # pants: no-infer-dep

from tools.remote.cas import Cas, ResultBuilder  # noqa: E402
from tools.remote.sandbox import (ActionError, inside, prepare_outputs, run,  # noqa: E402
                                  scan_output)

# The server long-polls UpdateBotSession; the worker asks again at least this often.
POLL_TIMEOUT_S = 20
RECORD_ONLY_MESSAGE = ("mettle record-only worker {name} ({props}): recorded this action, did "
                       "not execute it (no such hardware here); see {log}\n")


def parse_properties(pairs) -> list:
    props = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"worker: wants KEY=VALUE, got {pair!r}")
        props.append((key, value))
    return props


class Worker:
    def __init__(self, args):
        self.args = args
        self.props = parse_properties(args.property)
        self.base_env = dict(parse_properties(args.base_env))
        self.channel = grpc.insecure_channel(args.server, options=[
            ("grpc.max_receive_message_length", 64 * 1024 * 1024),
            ("grpc.max_send_message_length", 64 * 1024 * 1024)])
        self.bots = bots_pb2_grpc.BotsStub(self.channel)
        self.work = Path(args.work)
        self.cas = Cas(self.channel, args.instance, self.work / "blobs")
        self.stopping = False

    # -- one action -----------------------------------------------------------------------
    def record_only(self, command) -> bool:
        pattern = self.args.record_only
        return bool(pattern) and re.search(pattern, " ".join(command.arguments)) is not None

    def platform_of(self, command, action) -> dict:
        props = {}
        for p in list(action.platform.properties) + list(command.platform.properties):
            props[p.name] = p.value
        return props

    def execute(self, payload) -> tuple:
        """Runs one leased action; returns (ActionResult, record dict)."""
        if payload.Is(re_pb2.Action.DESCRIPTOR):
            action = re_pb2.Action()
            payload.Unpack(action)
        else:
            digest = re_pb2.Digest()
            payload.Unpack(digest)
            action = self.cas.message(digest, re_pb2.Action)
        command = self.cas.message(action.command_digest, re_pb2.Command)
        platform = self.platform_of(command, action)
        mine = dict(self.props)
        wrong = {k: v for k, v in platform.items() if k in mine and mine[k] != v}
        if wrong:
            # The scheduler should never send it; refusing keeps the hardware promise anyway.
            raise ActionError(f"action needs {wrong}, this worker has {mine}")
        record = {"worker": self.args.name,
                  "action": hashlib.sha256(action.SerializeToString()).hexdigest(),
                  "argv": list(command.arguments),
                  "env": {e.name: e.value for e in command.environment_variables},
                  "platform": platform,
                  "executed": not self.record_only(command)}
        result = re_pb2.ActionResult()
        result.execution_metadata.worker = self.args.name
        builder = ResultBuilder()
        start = time.monotonic()
        if not record["executed"]:
            props = ",".join(f"{k}={v}" for k, v in self.props)
            message = RECORD_ONLY_MESSAGE.format(name=self.args.name, props=props,
                                                 log=self.args.log or "no log")
            result.exit_code = 1
            result.stderr_digest.CopyFrom(builder.add(message.encode()))
        else:
            self.run_action(action, command, result, builder)
        self.cas.upload(builder.blobs)
        record.update(exit_code=result.exit_code, seconds=round(time.monotonic() - start, 3))
        return result, record

    def run_action(self, action, command, result, builder) -> None:
        sandbox = self.work / "actions" / uuid.uuid4().hex
        try:
            self.cas.materialize(action.input_root_digest, sandbox)
            cwd = inside(sandbox, command.working_directory)
            paths = list(command.output_paths) or [*command.output_files,
                                                   *command.output_directories]
            prepare_outputs(cwd, paths)
            timeout = (action.timeout.seconds + action.timeout.nanos / 1e9) or None
            env = dict(self.base_env)
            env.update((e.name, e.value) for e in command.environment_variables)
            ran = run(list(command.arguments), env, cwd, timeout)
            result.exit_code = ran.exit_code
            result.stdout_digest.CopyFrom(builder.add(ran.stdout))
            result.stderr_digest.CopyFrom(builder.add(ran.stderr))
            dirs = set(command.output_directories)
            for path in paths:
                out = scan_output(cwd, path)
                builder.output(result, out, "dir" if path in dirs else "file")
        except ActionError as e:
            result.exit_code = 1
            result.stderr_digest.CopyFrom(builder.add(f"worker: {e}\n".encode()))
        finally:
            shutil.rmtree(sandbox, ignore_errors=True)

    def complete(self, lease) -> None:
        """Executes a lease and marks it completed: an ActionResult, or on a failure of the
        worker itself (not of the action) an INTERNAL status with the reason."""
        try:
            result, record = self.execute(lease.payload)
            self.log(record)
            lease.result.Pack(result)
            lease.status.code = 0
        except (grpc.RpcError, ActionError, OSError) as e:
            self.log({"worker": self.args.name, "error": str(e)})
            lease.status.code = 13  # google.rpc.Code.INTERNAL
            lease.status.message = f"worker {self.args.name}: {e}"
        lease.state = bots_pb2.COMPLETED

    def log(self, record: dict) -> None:
        if self.args.log:
            with open(self.args.log, "a") as f:
                f.write(json.dumps(record, sort_keys=True) + "\n")

    # -- the Bots session -----------------------------------------------------------------
    def session(self):
        device = worker_pb2.Device(handle=socket.gethostname(), properties=[
            worker_pb2.Device.Property(key=k, value=v) for k, v in self.props])
        worker = worker_pb2.Worker(devices=[device], configs=[
            worker_pb2.Worker.Config(key="capacity", value="1")])
        bot = bots_pb2.BotSession(bot_id=f"{self.args.name}-{uuid.uuid4().hex[:8]}",
                                  status=bots_pb2.OK, worker=worker)
        return self.bots.CreateBotSession(
            bots_pb2.CreateBotSessionRequest(parent=self.args.instance, bot_session=bot),
            timeout=POLL_TIMEOUT_S)

    def serve(self) -> int:
        try:
            grpc.channel_ready_future(self.channel).result(timeout=self.args.connect_timeout)
        except grpc.FutureTimeoutError:
            print(f"worker: no server at {self.args.server}", file=sys.stderr)
            return 2
        bot = self.session()
        print(f"worker {self.args.name}: session {bot.name} "
              f"properties {dict(self.props)}", flush=True)
        while not self.stopping:
            for lease in bot.leases:
                if lease.state == bots_pb2.ACTIVE:
                    self.complete(lease)
            if self.stopping:
                bot.status = bots_pb2.BOT_TERMINATING
            try:
                bot = self.bots.UpdateBotSession(
                    bots_pb2.UpdateBotSessionRequest(name=bot.name, bot_session=bot),
                    timeout=POLL_TIMEOUT_S)
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.DEADLINE_EXCEEDED:
                    raise
                # The long poll ran out with no work: drop what the server already has.
                bot.leases[:] = [le for le in bot.leases if le.state != bots_pb2.COMPLETED]
        return 0


def main(argv: list) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--server", required=True, help="host:port of BuildGrid's Bots service")
    p.add_argument("--instance", default="", help="REAPI instance name")
    p.add_argument("--name", required=True, help="this worker's name (logs, bot id)")
    p.add_argument("--property", action="append", default=[], help="KEY=VALUE to advertise")
    p.add_argument("--work", required=True, help="directory for sandboxes and the blob cache")
    p.add_argument("--base-env", action="append", default=[], metavar="KEY=VALUE",
                   help="the worker image's environment (like a container's ENV), under "
                   "the action's own variables; e.g. PATH=/usr/bin:/bin")
    p.add_argument("--log", help="append one JSON line per lease here")
    p.add_argument("--record-only", metavar="REGEX",
                   help="record actions whose argv matches and answer exit 1 instead of "
                   "running them")
    p.add_argument("--connect-timeout", type=float, default=60)
    args = p.parse_args(argv)
    worker = Worker(args)

    def stop(*_):
        worker.stopping = True
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    return worker.serve()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

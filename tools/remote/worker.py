#!/usr/bin/env python3
"""A Remote Workers (Bots) API worker for BuildGrid that executes REAPI actions. Run it with
BuildGrid's interpreter:

    .bootstrap/buildgrid/bin/python tools/remote/worker.py --server 127.0.0.1:PORT \
        --instance mettle --name plain --property OSFamily=linux --property ISA=x86-64 \
        --property gpu=none --base-env PATH=/usr/bin:/bin --work DIR [--slots N] \
        [--cache-bytes N] [--log FILE] [--record-only REGEX] [--no-isolation]

For every lease it fetches the Action, its Command and input root from the CAS, runs the
command in a fresh directory (tools/remote/sandbox.py: the declared environment, no stdin,
the action's timeout, and by default a bubblewrap jail: an unprivileged user in its own
mount, PID and network namespaces that sees only its input root and the tool paths), uploads
the declared outputs plus stdout/stderr and completes the lease with the ActionResult.
`--base-env K=V` plays the part of a container image's ENV (Pants learns a remote
environment's PATH by running `env` there): the action's variables override it and nothing
of the worker's own environment leaks in. BuildGrid matches actions to the platform
properties the worker advertises (`--property K=V`: OSFamily, ISA and `gpu` = none | sm_90a
| gb10).

Lifecycle. One bot session with capacity `--slots` (default: the number of cores) runs that
many actions at once, each in its own thread. The session loop reports to BuildGrid at least
every third of the session's remaining lifetime (the server's bot-session keepalive), also
while actions run, and at once when one finishes. After a server restart or a network error
it retries with backoff (0.5 s doubling to 2 s while it holds a session, to 30 s while it
opens one) and keeps its session if the server still
knows it; a lost session (expired, or refused) is replaced by a new one, and the actions of
the old one are killed, since BuildGrid has already requeued their jobs. SIGTERM or SIGINT:
take no new leases (BOT_TERMINATING), finish and report the running ones, exit 0; a second
signal kills them and exits 1 (their jobs are requeued when the session expires). The blob
cache is LRU-bounded by `--cache-bytes`.

`--record-only REGEX` stands in for hardware this machine lacks: an action whose argv (joined
by spaces) matches REGEX is recorded, not run (the demo matches Pants' pytest runs; the setup
actions of the test environment, e.g. building the pytest PEX, still execute). It answers
exit code 1 with a message on stderr, so the build fails visibly and BuildGrid (which caches
only exit code 0) never caches a result that no hardware produced. `--log FILE` appends one
JSON line per lease: the worker's name, the action digest, argv, declared environment,
platform, whether it executed, exit code and seconds.

Exit: 0 after SIGTERM/SIGINT once the running leases are reported; 1 on a second signal;
2 when the server is unreachable at start or isolation is impossible (use --no-isolation).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
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
from tools.remote.sandbox import (ActionError, Jail, inside, jail_available,  # noqa: E402
                                  kill, prepare_outputs, run, scan_output)

# The server long-polls UpdateBotSession; the worker asks again at least this often, and at
# least every third of the session's remaining lifetime.
POLL_TIMEOUT_S = 20
MIN_POLL_S = 1.0
BACKOFF_FIRST_S, BACKOFF_MAX_S = 0.5, 30.0
BACKOFF_SESSION_MAX_S = 2.0
# Append-only caches (Pants' pex and pip caches): the path the client's configuration names
# (tools/remote/pants.remote.toml), bound to the worker's own directory inside each jail.
CACHES_PATH = "/tmp/mettle-remote-caches"
# gRPC codes that mean "the server does not know this session any more".
SESSION_LOST = ("NOT_FOUND", "INVALID_ARGUMENT", "FAILED_PRECONDITION", "PERMISSION_DENIED",
                "ABORTED", "INTERNAL")
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
        self.cas = Cas(self.channel, args.instance, self.work / "blobs",
                       max_bytes=args.cache_bytes)
        self.slots = max(1, args.slots)
        self.base = self._reachable_base()
        self.jail = None if args.no_isolation else self._make_jail()
        self.sandboxes = self.base / "actions"
        self.sandboxes.mkdir(parents=True, exist_ok=True)
        self.stopping = False
        self.signals = 0
        self.lock = threading.Lock()
        self.wake = threading.Event()
        self.pool = ThreadPoolExecutor(max_workers=self.slots, thread_name_prefix="slot")
        self.running = {}    # lease id -> Future of its (status code, message, result)
        self.tokens = {}     # lease id -> this run's token (a lease can come back)
        self.procs = {}      # token -> the action's process, while it runs
        self.abandoned = set()  # tokens of runs whose session is gone

    def _make_jail(self) -> Jail:
        caches = self.base / "caches"
        caches.mkdir(parents=True, exist_ok=True)
        jail = Jail(binds={caches: self.args.caches_path},
                    tool_paths=tuple(self.args.tool_path) or Jail.tool_paths,
                    share_network=self.args.share_network)
        jail.give(caches)
        return jail

    def _reachable_base(self) -> Path:
        """Where actions run and the append-only caches live. A jailed action's user must be
        able to reach both, so a root worker whose work directory is private (0700 above
        it) uses a directory in /tmp instead."""
        if self.args.no_isolation or os.geteuid() != 0 or _reachable_by_others(self.work):
            return self.work
        base = Path(tempfile.mkdtemp(prefix=f"mettle-worker-{self.args.name}-"))
        os.chmod(base, 0o711)
        return base

    # -- one action -----------------------------------------------------------------------
    def record_only(self, command) -> bool:
        pattern = self.args.record_only
        return bool(pattern) and re.search(pattern, " ".join(command.arguments)) is not None

    def platform_of(self, command, action) -> dict:
        props = {}
        for p in list(action.platform.properties) + list(command.platform.properties):
            props[p.name] = p.value
        return props

    def execute(self, payload, token: str = "") -> tuple:
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
            self.run_action(action, command, result, builder, token)
        self.cas.upload(builder.blobs)
        record.update(exit_code=result.exit_code, seconds=round(time.monotonic() - start, 3))
        return result, record

    def run_action(self, action, command, result, builder, token: str = "") -> None:
        sandbox = self.sandboxes / uuid.uuid4().hex
        try:
            self.cas.materialize(action.input_root_digest, sandbox)
            cwd = inside(sandbox, command.working_directory)
            paths = list(command.output_paths) or [*command.output_files,
                                                   *command.output_directories]
            prepare_outputs(cwd, paths)
            if self.jail is not None:
                self.jail.give(sandbox)
            timeout = (action.timeout.seconds + action.timeout.nanos / 1e9) or None
            env = dict(self.base_env)
            env.update((e.name, e.value) for e in command.environment_variables)

            def started(proc):
                with self.lock:
                    self.procs[token] = proc
                    lost = token in self.abandoned
                if lost:
                    kill(proc)
            try:
                ran = run(list(command.arguments), env, cwd, timeout, jail=self.jail,
                          started=started)
            finally:
                with self.lock:
                    self.procs.pop(token, None)
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

    def work_on(self, token: str, payload) -> tuple:
        """One slot's job: runs a lease's action; returns (status code, message, result).
        A failure of the worker itself (not of the action) is an INTERNAL status."""
        try:
            result, record = self.execute(payload, token)
            self.log(record)
            return 0, "", result
        except (grpc.RpcError, ActionError, OSError) as e:
            self.log({"worker": self.args.name, "error": str(e)})
            return 13, f"worker {self.args.name}: {e}", None  # google.rpc.Code.INTERNAL
        finally:
            self.wake.set()

    def log(self, record: dict) -> None:
        if self.args.log:
            with open(self.args.log, "a") as f:
                f.write(json.dumps(record, sort_keys=True) + "\n")

    # -- the Bots session -----------------------------------------------------------------
    def session(self):
        device = worker_pb2.Device(handle=socket.gethostname(), properties=[
            worker_pb2.Device.Property(key=k, value=v) for k, v in self.props])
        worker = worker_pb2.Worker(devices=[device], configs=[
            worker_pb2.Worker.Config(key="capacity", value=str(self.slots))])
        bot = bots_pb2.BotSession(bot_id=f"{self.args.name}-{uuid.uuid4().hex[:8]}",
                                  status=bots_pb2.OK, worker=worker)
        return self.bots.CreateBotSession(
            bots_pb2.CreateBotSessionRequest(parent=self.args.instance, bot_session=bot),
            timeout=POLL_TIMEOUT_S)

    def sync_leases(self, bot) -> None:
        """Starts the leases the server handed over and fills in the finished ones."""
        for lease in bot.leases:
            if lease.state not in (bots_pb2.PENDING, bots_pb2.ACTIVE):
                continue
            future = self.running.get(lease.id)
            if future is None:
                if self.stopping:
                    continue  # never started: the server requeues it with the session
                lease.state = bots_pb2.ACTIVE
                print(f"worker {self.args.name}: lease {lease.id} started", flush=True)
                token = uuid.uuid4().hex
                self.tokens[lease.id] = token
                self.running[lease.id] = self.pool.submit(self.work_on, token, lease.payload)
            elif future.done():
                code, message, result = future.result()
                if result is not None:
                    lease.result.Pack(result)
                lease.status.code = code
                lease.status.message = message
                lease.state = bots_pb2.COMPLETED

    def forget_completed(self, bot) -> None:
        """Drops the leases the server has now been told about."""
        for lease in bot.leases:
            if lease.state == bots_pb2.COMPLETED:
                self.running.pop(lease.id, None)
                self.tokens.pop(lease.id, None)
        keep = []
        for lease in bot.leases:
            if lease.state != bots_pb2.COMPLETED:
                copy = bots_pb2.Lease()
                copy.CopyFrom(lease)
                keep.append(copy)
        del bot.leases[:]
        bot.leases.extend(keep)

    def abandon_all(self, why: str) -> None:
        """The session is gone and BuildGrid requeued its jobs: kill what still runs."""
        with self.lock:
            self.abandoned.update(self.tokens.values())
            procs = list(self.procs.values())
        for proc in procs:
            kill(proc)
        if self.running:
            print(f"worker {self.args.name}: {why}; killed {len(self.running)} action(s)",
                  flush=True)
        self.running.clear()
        self.tokens.clear()

    def poll_seconds(self, bot) -> float:
        left = POLL_TIMEOUT_S
        if bot.HasField("expire_time"):
            expires = bot.expire_time.ToDatetime(tzinfo=timezone.utc)
            left = (expires - datetime.now(timezone.utc)).total_seconds() / 3
        return max(MIN_POLL_S, min(POLL_TIMEOUT_S, left))

    def update(self, bot):
        """One UpdateBotSession; returns the server's session, or None when a slot finished
        first (the call is cancelled and made again at once with the news)."""
        call = self.bots.UpdateBotSession.future(
            bots_pb2.UpdateBotSessionRequest(name=bot.name, bot_session=bot),
            timeout=self.poll_seconds(bot))
        while not call.done():
            if self.wake.wait(0.05) and not call.done():
                call.cancel()
                return None
        return call.result()

    def connect(self):
        """A new bot session, retrying with backoff until the server answers (or stop)."""
        delay = BACKOFF_FIRST_S
        while True:
            try:
                bot = self.session()
                print(f"worker {self.args.name}: session {bot.name} slots {self.slots} "
                      f"properties {dict(self.props)}", flush=True)
                return bot
            except grpc.RpcError as e:
                if self.signals:
                    return None
                print(f"worker {self.args.name}: cannot open a session ({e.code().name}); "
                      f"retrying in {delay:g} s", flush=True)
                time.sleep(delay)
                delay = min(delay * 2, BACKOFF_MAX_S)

    def serve(self) -> int:
        try:
            grpc.channel_ready_future(self.channel).result(timeout=self.args.connect_timeout)
        except grpc.FutureTimeoutError:
            print(f"worker: no server at {self.args.server}", file=sys.stderr)
            return 2
        bot = self.connect()
        delay = BACKOFF_FIRST_S
        while bot is not None:
            if self.signals > 1:
                self.abandon_all("second signal")
                return 1
            self.wake.clear()
            self.sync_leases(bot)
            if self.stopping:
                bot.status = bots_pb2.BOT_TERMINATING
                if not any(not f.done() for f in self.running.values()):
                    self._last_update(bot)  # reports the last results
                    return 0
            try:
                reply = self.update(bot)
                delay = BACKOFF_FIRST_S
            except grpc.RpcError as e:
                code = e.code()
                if code in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED):
                    continue  # a long poll with no news
                if code.name in SESSION_LOST:
                    self.abandon_all(f"session lost ({code.name}: {e.details()})")
                    bot = self.connect()
                    continue
                print(f"worker {self.args.name}: server unreachable ({code.name}); "
                      f"retrying in {delay:g} s", flush=True)
                time.sleep(delay)
                # Keep the session: retry well inside its keepalive, however long the outage.
                delay = min(delay * 2, BACKOFF_SESSION_MAX_S)
                continue
            if reply is not None:
                # The server has our completed leases now; it echoes the running ones and
                # adds new ones. Our status (BOT_TERMINATING) is ours to say.
                self.forget_completed(bot)
                reply.status = bot.status
                bot = reply
        return 0

    def _last_update(self, bot) -> None:
        self.sync_leases(bot)
        try:
            self.bots.UpdateBotSession(
                bots_pb2.UpdateBotSessionRequest(name=bot.name, bot_session=bot),
                timeout=POLL_TIMEOUT_S)
        except grpc.RpcError:
            pass


def _reachable_by_others(path: Path) -> bool:
    """Whether every directory from / down to `path` lets other users pass (x bit)."""
    path = path.resolve()
    for part in [path, *path.parents]:
        if part.exists() and not os.stat(part).st_mode & 0o001:
            return False
    return True


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
    p.add_argument("--slots", type=int, default=os.cpu_count() or 1,
                   help="actions run at once (default: the number of cores)")
    p.add_argument("--cache-bytes", type=_size, default=_size("10G"),
                   help="bound of the blob cache, LRU (e.g. 500M, 10G; default 10G)")
    p.add_argument("--no-isolation", action="store_true",
                   help="run actions directly, without the bubblewrap jail")
    p.add_argument("--share-network", action="store_true",
                   help="jailed actions use the host's network (for actions that download "
                   "packages); by default they have none")
    p.add_argument("--tool-path", action="append", default=[], metavar="PATH",
                   help="a host path a jailed action may read (repeatable; default: "
                   "/usr, /etc/alternatives, /etc/ssl/certs, /etc/ld.so.cache)")
    p.add_argument("--caches-path", default=CACHES_PATH,
                   help="where jailed actions find the append-only caches (the client's "
                   "remote_execution_append_only_caches_base_path)")
    args = p.parse_args(argv)
    if not args.no_isolation:
        why = jail_available()
        if why:
            print(f"worker: {why}; install bubblewrap or pass --no-isolation",
                  file=sys.stderr)
            return 2
    worker = Worker(args)

    def stop(*_):
        worker.signals += 1
        worker.stopping = True
        worker.wake.set()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    return worker.serve()


def _size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    text = text.strip().upper().rstrip("B")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

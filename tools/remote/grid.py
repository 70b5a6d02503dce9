#!/usr/bin/env python3
"""A REAPI execution service on loopback: a PostgreSQL (the job queue of BuildGrid 0.4's
scheduler), BuildGrid (tools/remote/buildgrid-execution.yml) and any number of workers
(tools/remote/worker.py).

usage: grid.py [--work DIR] [--state DIR] [--port N] [--keepalive S] [--slots N]
               [--worker NAME:K=V,K=V[:RECORD_ONLY_REGEX]]... [--pool K=V,K=V]...
               [--respawn]
       (serves until interrupted; default: one worker "plain" with gpu=none)

Pools: the platforms this deployment serves (BuildGrid's static property set): every
worker's properties, plus `--pool` for workers that join from elsewhere (a GPU runner). An
action for any other platform fails at once, naming its properties.

Invariants: logs and worker directories live under the work directory. The state directory
holds what must survive a restart, the CAS blobs and PostgreSQL's data (fsync on); without
--state it is a fresh /tmp/mettle-grid-* directory that stop() removes. The database's
socket lives in a short /tmp/mettle-pg-* directory, because Unix socket paths are limited to
107 bytes, and PostgreSQL refuses to run as root: as root it runs as the `postgres` user (or
`nobody`), which must be able to reach the state directory. A worker that dies is reported
(and restarted with --respawn); BuildGrid and PostgreSQL keep serving the other workers and
clients. stop() ends every process it started, on every exit path.
"""
from __future__ import annotations

import argparse
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
INSTANCE = "mettle"
START_TIMEOUT_S = 120
PLAIN = {"OSFamily": "linux", "ISA": "x86-64", "gpu": "none"}
# A dead worker's jobs go back to the queue after this many seconds without a report.
KEEPALIVE_S = 30
# The workers' "image" PATH: what Pants finds by running `env` in a remote environment.
WORKER_PATH = "/usr/bin:/bin"


class GridError(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def postgres_bindir() -> Path | None:
    """The directory holding initdb and postgres (Debian keeps them off PATH)."""
    on_path = shutil.which("initdb")
    if on_path:
        return Path(on_path).resolve().parent
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    return found[-1].parent if found else None


def wait_for(what: str, ready, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise GridError(f"{what} exited with {proc.returncode}; see {log}")
        if ready():
            return
        time.sleep(0.2)
    raise GridError(f"{what} was not ready within {START_TIMEOUT_S} s; see {log}")


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def pools_yaml(pools) -> str:
    """The static property set's labels, one per pool, as YAML under `property-labels:`."""
    lines = []
    for index, props in enumerate(pools):
        lines.append(f"        - label: pool{index}")
        lines.append("          properties:")
        for key, value in sorted(props.items()):
            lines.append(f"            - [{json.dumps(key)}, {json.dumps(value)}]")
    return "\n".join(lines)


class Grid:
    def __init__(self, work: Path, bgd: Path, state: Path | None = None, pools=(),
                 keepalive_s: int = KEEPALIVE_S, port: int | None = None):
        self.work = Path(work)
        self.bgd = Path(bgd)
        self.python = self.bgd.parent / "python"
        self.port = port or free_port()
        self.keepalive_s = keepalive_s
        self.pools = [dict(p) for p in pools]
        self.keep_state = state is not None
        self.state = Path(state) if state else None
        self.procs = []
        self.workers = {}
        self.worker_specs = {}
        self.bgd_proc = None
        self.pg_proc = None
        self.socket_dir = None
        self.dsn = None

    @property
    def address(self) -> str:
        return f"grpc://127.0.0.1:{self.port}"

    # -- processes ------------------------------------------------------------------------
    def _bgd_env(self) -> dict:
        """BuildGrid's environment: its PostgreSQL driver comes from .bootstrap/buildgrid-pg
        (tools/bootstrap/45-buildgrid-execution.sh)."""
        env = dict(os.environ)
        driver = self.bgd.parents[2] / "buildgrid-pg"
        if driver.is_dir():
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(driver),
                                                              env.get("PYTHONPATH")]))
        return env

    def _spawn(self, argv, log: Path, user: str | None = None,
               env: dict | None = None) -> subprocess.Popen:
        out = open(log, "ab")
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env,
                                stdin=subprocess.DEVNULL, cwd=self.work, user=user)
        out.close()
        self.procs.append(proc)
        return proc

    def _db_user(self) -> str | None:
        if os.geteuid() != 0:
            return None
        for name in ("postgres", "nobody"):
            try:
                pwd.getpwnam(name)
                return name
            except KeyError:
                continue
        raise GridError("running as root and no `postgres` or `nobody` user for PostgreSQL")

    def _start_postgres(self) -> str:
        bindir = postgres_bindir()
        if bindir is None:
            raise GridError("no PostgreSQL server (initdb); install Debian's postgresql")
        user = self._db_user()
        self.socket_dir = Path(tempfile.mkdtemp(prefix="mettle-pg-", dir="/tmp"))
        data = self.state / "postgres"
        fresh = not (data / "PG_VERSION").exists()
        data.mkdir(parents=True, exist_ok=True)
        if user:
            uid = pwd.getpwnam(user).pw_uid
            for path in (data, self.socket_dir):
                os.chown(path, uid, -1)
            os.chmod(data, 0o700)
        log = self.work / "postgres.log"
        if fresh:
            init = subprocess.run([str(bindir / "initdb"), "-D", str(data), "-U", "bgd",
                                   "--auth=trust", "-E", "UTF8"],
                                  stdout=open(log, "ab"), stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, cwd="/", user=user)
            if init.returncode:
                raise GridError(f"initdb failed (can {user or 'this user'} reach "
                                f"{data}?); see {log}")
        port = free_port()
        # The queue is the service's memory of every job: durable (fsync on, the default).
        proc = self._spawn([str(bindir / "postgres"), "-D", str(data), "-p", str(port),
                            "-k", str(self.socket_dir), "-c", "listen_addresses="], log,
                           user=user)
        self.pg_proc = proc
        sock = self.socket_dir / f".s.PGSQL.{port}"
        wait_for("PostgreSQL", sock.exists, proc, log)
        return f"postgresql+psycopg2://bgd@/postgres?host={self.socket_dir}&port={port}"

    def start(self) -> "Grid":
        if not self.bgd.is_file():
            raise GridError(f"no BuildGrid at {self.bgd} (tools/bootstrap/40-buildgrid.sh)")
        self.work.mkdir(parents=True, exist_ok=True)
        if self.state is None:
            self.state = Path(tempfile.mkdtemp(prefix="mettle-grid-", dir="/tmp"))
            os.chmod(self.state, 0o711)
        self.state.mkdir(parents=True, exist_ok=True)
        try:
            self.dsn = self._start_postgres()
            log = self.work / "bgd.log"
            migrate = subprocess.run([str(self.bgd), "migrate", "apply", self.dsn],
                                     stdout=open(log, "ab"), stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, cwd=self.work,
                                     env=self._bgd_env())
            if migrate.returncode:
                raise GridError(f"`bgd migrate apply` failed; see {log}")
            self.start_server()
        except BaseException:
            self.stop()
            raise
        return self

    def config_text(self) -> str:
        pools = self.pools or [PLAIN]
        fields = {"@PORT@": str(self.port), "@DSN@": self.dsn,
                  "@CAS@": str(self.state / "cas"), "@KEEPALIVE@": str(self.keepalive_s),
                  "@POOLS@": pools_yaml(pools)}
        text = (HERE / "buildgrid-execution.yml").read_text()
        for key, value in fields.items():
            text = text.replace(key, value)
        return text

    def start_server(self) -> None:
        """Starts BuildGrid (again, after stop_server) on the same port and storage."""
        (self.state / "cas").mkdir(parents=True, exist_ok=True)
        config = self.work / "buildgrid.yml"
        config.write_text(self.config_text())
        log = self.work / "bgd.log"
        self.bgd_proc = self._spawn([str(self.bgd), "server", "start", str(config)], log,
                                    env=self._bgd_env())
        wait_for("BuildGrid", lambda: listening(self.port), self.bgd_proc, log)

    def stop_server(self, hard: bool = False) -> None:
        """Stops BuildGrid only (a restart test); PostgreSQL and the workers stay."""
        proc = self.bgd_proc
        if proc is None or proc.poll() is not None:
            return
        if hard:
            proc.kill()
        else:
            proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        self.procs.remove(proc)
        deadline = time.monotonic() + 30
        while listening(self.port) and time.monotonic() < deadline:
            time.sleep(0.2)

    def add_worker(self, name: str, properties: dict, record_only: str | None = None,
                   slots: int | None = None, extra=()) -> Path:
        """Starts a worker advertising `properties` (recording, not running, the actions whose
        argv matches `record_only`); returns its JSON-lines log. Its pool is served from now
        on only if it was declared when BuildGrid started (`pools`, or start's workers)."""
        log = self.work / f"worker-{name}.jsonl"
        argv = [str(self.python), str(HERE / "worker.py"), "--server", f"127.0.0.1:{self.port}",
                "--instance", INSTANCE, "--name", name, "--work", str(self.work / name),
                "--log", str(log)]
        for key, value in properties.items():
            argv += ["--property", f"{key}={value}"]
        argv += ["--base-env", f"PATH={WORKER_PATH}"]
        if record_only:
            argv += ["--record-only", record_only]
        if slots:
            argv += ["--slots", str(slots)]
        argv += list(extra)
        self.worker_specs[name] = (properties, record_only, slots, tuple(extra))
        self.workers[name] = self._spawn(argv, self.work / f"worker-{name}.out")
        return log

    def kill_worker(self, name: str, sig: int = signal.SIGKILL) -> int:
        """Sends `sig` to worker `name` (a fault test); returns its exit status."""
        proc = self.workers[name]
        proc.send_signal(sig)
        status = proc.wait(timeout=120)
        self.procs.remove(proc)
        return status

    def records(self, name: str) -> list:
        """What worker `name` leased so far, one dict per action (see worker.py)."""
        log = self.work / f"worker-{name}.jsonl"
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text().splitlines() if line]

    def dead_workers(self) -> list:
        """Workers that exited, with their status; the service goes on without them."""
        return [(name, proc.returncode) for name, proc in self.workers.items()
                if proc.poll() is not None]

    def check_workers(self) -> None:
        for name, status in self.dead_workers():
            raise GridError(f"worker {name} exited with {status}; see "
                            f"{self.work / f'worker-{name}.out'}")

    def respawn(self, name: str) -> None:
        props, record_only, slots, extra = self.worker_specs[name]
        self.procs.remove(self.workers[name])
        self.add_worker(name, props, record_only, slots, extra)

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
        for proc in reversed(self.procs):
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.procs.clear()
        if self.socket_dir:
            shutil.rmtree(self.socket_dir, ignore_errors=True)
        if self.state is not None and not self.keep_state:
            shutil.rmtree(self.state, ignore_errors=True)

    def __enter__(self) -> "Grid":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def parse_worker(spec: str) -> tuple:
    """NAME:K=V,K=V[:REGEX] -> (name, {K: V}, record-only regex or None)."""
    parts = spec.split(":", 2)
    if len(parts) < 2 or not parts[0]:
        raise argparse.ArgumentTypeError(f"bad worker {spec!r}: NAME:K=V,K=V[:REGEX]")
    props = dict(kv.split("=", 1) for kv in parts[1].split(",") if "=" in kv)
    return parts[0], props, parts[2] if len(parts) == 3 else None


def parse_pool(spec: str) -> dict:
    """K=V,K=V -> {K: V}."""
    props = dict(kv.split("=", 1) for kv in spec.split(",") if "=" in kv)
    if not props:
        raise argparse.ArgumentTypeError(f"bad pool {spec!r}: K=V,K=V")
    return props


def declared_pools(workers, pools) -> list:
    """Each distinct platform of the workers and of --pool, in order."""
    found = []
    for props in [w[1] for w in workers] + list(pools):
        if props not in found:
            found.append(props)
    return found


def main(argv: list) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bgd", default=str(ROOT / ".bootstrap/buildgrid/bin/bgd"))
    p.add_argument("--work", help="directory for logs and worker sandboxes")
    p.add_argument("--state", help="directory for the CAS and the database (kept)")
    p.add_argument("--port", type=int, help="BuildGrid's port (default: a free one)")
    p.add_argument("--keepalive", type=int, default=KEEPALIVE_S,
                   help="seconds after which a silent worker's jobs are requeued")
    p.add_argument("--slots", type=int, help="actions each local worker runs at once")
    p.add_argument("--worker", action="append", type=parse_worker, default=[])
    p.add_argument("--pool", action="append", type=parse_pool, default=[],
                   help="a platform served by workers that join from elsewhere")
    p.add_argument("--respawn", action="store_true", help="restart a worker that dies")
    args = p.parse_args(argv)
    work = Path(args.work or tempfile.mkdtemp(prefix="mettle-grid-"))
    workers = args.worker or [("plain", PLAIN, None)]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # unwinds through Grid.__exit__
    reported = set()
    try:
        with Grid(work, Path(args.bgd), state=args.state and Path(args.state),
                  pools=declared_pools(workers, args.pool), keepalive_s=args.keepalive,
                  port=args.port) as grid:
            for name, props, record_only in workers:
                grid.add_worker(name, props, record_only, args.slots)
            print(f"BuildGrid at {grid.address} (instance {INSTANCE}); work {work}; "
                  f"state {grid.state}", flush=True)
            flags = (f"--pants-config-files=tools/remote/pants.remote.toml "
                     f"--remote-execution-address={grid.address} "
                     f"--remote-store-address={grid.address}")
            print(f"python3 tools/remote/preflight.py {flags}", flush=True)
            print(f"./pants {flags} package //app:host", flush=True)
            while True:
                time.sleep(1)
                for name, status in grid.dead_workers():
                    if args.respawn:
                        print(f"grid: worker {name} exited with {status}; restarting it",
                              flush=True)
                        grid.respawn(name)
                    elif name not in reported:
                        reported.add(name)
                        print(f"grid: worker {name} exited with {status}; BuildGrid keeps "
                              f"serving the others (see {work / f'worker-{name}.out'})",
                              flush=True)
    except GridError as e:
        print(f"grid: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""A loopback REAPI execution service for tests and demonstrations: a private PostgreSQL (the
job queue of BuildGrid 0.4's scheduler), BuildGrid (tools/remote/buildgrid-execution.yml) and
any number of test workers (tools/remote/worker.py).

usage: grid.py [--work DIR] [--worker NAME:K=V,K=V[:RECORD_ONLY_REGEX]]...
       (serves until interrupted; default: one worker "plain" with gpu=none)

Invariants: logs and worker sandboxes live under the work directory; the database and its
socket live in a short /tmp/mettle-pg-* directory, removed by stop(), because Unix socket
paths are limited to 107 bytes and because PostgreSQL refuses to run as root: as root it runs
as the `postgres` user (or `nobody`), which cannot enter a root-only work directory (pytest's
tmp_path). stop() ends every process it started, on every exit path.
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


class Grid:
    def __init__(self, work: Path, bgd: Path):
        self.work = Path(work)
        self.bgd = Path(bgd)
        self.python = self.bgd.parent / "python"
        self.port = free_port()
        self.procs = []
        self.workers = {}
        self.socket_dir = None

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
        data = self.socket_dir / "data"
        data.mkdir()
        if user:
            uid = pwd.getpwnam(user).pw_uid
            for path in (data, self.socket_dir):
                os.chown(path, uid, -1)
        log = self.work / "postgres.log"
        init = subprocess.run([str(bindir / "initdb"), "-D", str(data), "-U", "bgd",
                               "--auth=trust", "-E", "UTF8", "--no-sync"],
                              stdout=open(log, "ab"), stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, cwd="/", user=user)
        if init.returncode:
            raise GridError(f"initdb failed; see {log}")
        port = free_port()
        # Durability is pointless for a throwaway queue; these make it fast on a busy disk.
        proc = self._spawn([str(bindir / "postgres"), "-D", str(data), "-p", str(port),
                            "-k", str(self.socket_dir), "-c", "listen_addresses=",
                            "-c", "fsync=off", "-c", "synchronous_commit=off",
                            "-c", "full_page_writes=off"], log, user=user)
        sock = self.socket_dir / f".s.PGSQL.{port}"
        wait_for("PostgreSQL", sock.exists, proc, log)
        return f"postgresql+psycopg2://bgd@/postgres?host={self.socket_dir}&port={port}"

    def start(self) -> "Grid":
        if not self.bgd.is_file():
            raise GridError(f"no BuildGrid at {self.bgd} (tools/bootstrap/40-buildgrid.sh)")
        self.work.mkdir(parents=True, exist_ok=True)
        try:
            dsn = self._start_postgres()
            log = self.work / "bgd.log"
            migrate = subprocess.run([str(self.bgd), "migrate", "apply", dsn],
                                     stdout=open(log, "ab"), stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, cwd=self.work,
                                     env=self._bgd_env())
            if migrate.returncode:
                raise GridError(f"`bgd migrate apply` failed; see {log}")
            config = self.work / "buildgrid.yml"
            text = (HERE / "buildgrid-execution.yml").read_text()
            config.write_text(text.replace("@PORT@", str(self.port)).replace("@DSN@", dsn))
            proc = self._spawn([str(self.bgd), "server", "start", str(config)], log,
                               env=self._bgd_env())
            wait_for("BuildGrid", lambda: listening(self.port), proc, log)
        except BaseException:
            self.stop()
            raise
        return self

    def add_worker(self, name: str, properties: dict, record_only: str | None = None) -> Path:
        """Starts a worker advertising `properties` (recording, not running, the actions whose
        argv matches `record_only`); returns its JSON-lines log."""
        log = self.work / f"worker-{name}.jsonl"
        argv = [str(self.python), str(HERE / "worker.py"), "--server", f"127.0.0.1:{self.port}",
                "--instance", INSTANCE, "--name", name, "--work", str(self.work / name),
                "--log", str(log)]
        for key, value in properties.items():
            argv += ["--property", f"{key}={value}"]
        argv += ["--base-env", f"PATH={WORKER_PATH}"]
        if record_only:
            argv += ["--record-only", record_only]
        self.workers[name] = self._spawn(argv, self.work / f"worker-{name}.out")
        return log

    def records(self, name: str) -> list:
        """What worker `name` leased so far, one dict per action (see worker.py)."""
        log = self.work / f"worker-{name}.jsonl"
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text().splitlines() if line]

    def check_workers(self) -> None:
        for name, proc in self.workers.items():
            if proc.poll() is not None:
                raise GridError(f"worker {name} exited with {proc.returncode}; see "
                                f"{self.work / f'worker-{name}.out'}")

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


def main(argv: list) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bgd", default=str(ROOT / ".bootstrap/buildgrid/bin/bgd"))
    p.add_argument("--work", help="directory for the database, logs and sandboxes")
    p.add_argument("--worker", action="append", type=parse_worker, default=[])
    args = p.parse_args(argv)
    work = Path(args.work or tempfile.mkdtemp(prefix="mettle-grid-"))
    workers = args.worker or [("plain", PLAIN, None)]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # unwinds through Grid.__exit__
    try:
        with Grid(work, Path(args.bgd)) as grid:
            for name, props, record_only in workers:
                grid.add_worker(name, props, record_only)
            print(f"BuildGrid at {grid.address} (instance {INSTANCE}); work {work}", flush=True)
            print(f"./pants --pants-config-files=tools/remote/pants.remote.toml "
                  f"--remote-execution-address={grid.address} "
                  f"--remote-store-address={grid.address} package //app:host", flush=True)
            while True:
                time.sleep(1)
                grid.check_workers()
    except GridError as e:
        print(f"grid: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

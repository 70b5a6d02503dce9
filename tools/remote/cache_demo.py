#!/usr/bin/env python3
"""Remote-cache demonstration: BuildGrid on loopback serves every Mettle compile action of a
second, clean checkout.

usage: cache_demo.py [--bgd PATH] [--work DIR] [--target SPEC]...

1. starts `bgd` (BuildGrid, in-memory CAS + Action Cache, tools/remote/buildgrid.yml)
   on a free 127.0.0.1 port;
2. clones this repository to checkout A, builds the targets with an empty local store and
   `--remote-cache-read --remote-cache-write` (every action runs and is uploaded);
3. clones it again to checkout B (another directory), builds with another empty local store;
4. passes (exit 0) only when A ran the Mettle compile actions, B ran none of them locally,
   the debug log reports a remote cache hit for each, and A and B's outputs are identical.

Invariants: nothing outside the temporary work directory changes; the server is stopped on
every exit path; the named caches (pip/pex downloads) are shared, the action caches are not.
Exit 1 on a failed check (with the reason), 2 when BuildGrid or Pants is unavailable.
"""
from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tools.remote.checkouts import (has_bootstrapped_pants, make_clone,  # noqa: E402
                                          run_pants, source_root, tail)

HERE = Path(__file__).resolve().parent
DEFAULT_TARGETS = ("//app:host",)
# Descriptions of the Mettle actions: compile/link, and the ptxas/spirv-val checks.
MARKER = ("Run mettle", "Run ptxas", "Run spirv-val")
SERVER_START_TIMEOUT_S = 180


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(bgd: Path, work: Path, port: int) -> subprocess.Popen:
    config = work / "buildgrid.yml"
    text = (HERE / "buildgrid.yml").read_text().replace("127.0.0.1:50051", f"127.0.0.1:{port}")
    config.write_text(text)
    log = open(work / "bgd.log", "w")
    proc = subprocess.Popen([str(bgd), "server", "start", str(config)], stdout=log,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=work)
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"bgd exited with {proc.returncode}; see {work / 'bgd.log'}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc
        except OSError:
            time.sleep(0.5)
    proc.terminate()
    raise RuntimeError(f"bgd did not listen on 127.0.0.1:{port} within "
                       f"{SERVER_START_TIMEOUT_S} s")


def remote_flags(port: int) -> tuple:
    return ("--remote-cache-read", "--remote-cache-write",
            f"--remote-store-address=grpc://127.0.0.1:{port}",
            "--remote-cache-warnings=backoff")


def build(clone: Path, store: Path, port: int, targets: tuple):
    env = {"PANTS_LOCAL_STORE_DIR": str(store)}
    return run_pants(clone, *remote_flags(port), "package", *targets, env=env)


def remote_hits(log: str) -> list:
    """Descriptions of the Mettle actions the remote cache served (Pants' debug log)."""
    hits = [ln.split("remote cache hit for: ", 1)[1] for ln in log.splitlines()
            if "remote cache hit for: " in ln]
    return [h.split('" digest=')[0].strip('"') for h in hits if h.strip('"').startswith(MARKER)]


def check(a, b, dist_a: dict, dist_b: dict) -> list:
    problems = []
    ran_a, ran_b, hits = a.spawned(MARKER), b.spawned(MARKER), remote_hits(b.log)
    if a.returncode or b.returncode:
        problems.append(f"a build failed (A rc={a.returncode}, B rc={b.returncode})")
    if not ran_a:
        problems.append("checkout A ran no Mettle action (was the local store not empty?)")
    if ran_b:
        problems.append(f"checkout B ran Mettle actions locally: {ran_b}")
    if sorted(set(hits)) != sorted(set(ran_a)):
        problems.append(f"remote cache hits {hits} are not the actions A ran {ran_a}")
    if dist_a != dist_b:
        problems.append("the two checkouts' outputs differ")
    return problems


def outputs(clone: Path) -> dict:
    dist = clone / "dist"
    return {str(p.relative_to(dist)): p.read_bytes() for p in dist.rglob("*") if p.is_file()}


def run(bgd: Path, work: Path, targets: tuple) -> int:
    root = source_root()
    port = free_port()
    server = start_server(bgd, work, port)
    try:
        a = build(make_clone(root, work / "a" / "checkout"), work / "store-a", port, targets)
        print(f"checkout A: rc={a.returncode} {a.seconds:.0f} s, ran: {a.spawned(MARKER)}")
        b = build(make_clone(root, work / "b" / "elsewhere", like=work / "a" / "checkout"),
                  work / "store-b", port, targets)
        print(f"checkout B: rc={b.returncode} {b.seconds:.0f} s, ran: {b.spawned(MARKER)}")
        for description in remote_hits(b.log):
            print(f"  remote cache hit: {description}")
        problems = check(a, b, outputs(work / "a" / "checkout"),
                         outputs(work / "b" / "elsewhere"))
    finally:
        server.terminate()
        server.wait(timeout=30)
    for p in problems:
        print(f"FAIL: {p}", file=sys.stderr)
    if problems:
        print(tail(b), file=sys.stderr)
        return 1
    print("PASS: every Mettle action of checkout B was served by the remote cache")
    return 0


def main(argv: list) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bgd", default=str(source_root() / ".bootstrap/buildgrid/bin/bgd"),
                   help="BuildGrid's bgd (default: .bootstrap/buildgrid/bin/bgd)")
    p.add_argument("--work", help="work directory to keep (default: a temporary one)")
    p.add_argument("--target", action="append", help=f"default: {DEFAULT_TARGETS}")
    args = p.parse_args(argv)
    if not Path(args.bgd).is_file():
        print(f"demo: no BuildGrid at {args.bgd} (tools/bootstrap/40-buildgrid.sh)",
              file=sys.stderr)
        return 2
    if not has_bootstrapped_pants(source_root()):
        print("demo: Pants is not bootstrapped (run ./pants once)", file=sys.stderr)
        return 2
    targets = tuple(args.target or DEFAULT_TARGETS)
    try:
        if args.work:
            Path(args.work).mkdir(parents=True, exist_ok=True)
            return run(Path(args.bgd), Path(args.work), targets)
        with tempfile.TemporaryDirectory(prefix="mettle-remote-cache-") as tmp:
            return run(Path(args.bgd), Path(tmp), targets)
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        print(f"demo: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

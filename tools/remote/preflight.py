#!/usr/bin/env python3
"""Checks, before a remote build, that the execution service serves every environment the
build uses, and names what is missing: the environment, its platform properties and the
targets that use it. Pants itself names an action refused for its platform only by digest.

usage: preflight.py [--pants-config-files=tools/remote/pants.remote.toml]
                    [--remote-execution-address=grpc://HOST:PORT]
                    [--remote-store-address=grpc://HOST:PORT] [--remote-instance-name=NAME]
                    [--environment NAME]... [--wait S]

The flags are the Pants command's own (the addresses default to the config file's); every
remote environment that pants.toml names is checked unless --environment picks some. Each
is probed with a trivial action carrying its platform properties (tools/remote/probe.py):
served when a worker runs it; unserved when the service refuses the properties (no worker
pool has them: Pants would stop at once) or no worker takes it within --wait seconds (none
connected, or all busy: Pants would wait). Runs on BuildGrid's interpreter, which has grpc;
under another Python it re-executes itself there (.bootstrap/buildgrid, set up by
tools/bootstrap/40-buildgrid.sh).

Exit 0 when every checked environment is served, 1 when one is not (each reported on
stderr), 2 when the service cannot be reached or the arguments are wrong.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tools.remote.build_files import environments, targets  # noqa: E402
from tools.remote.checkouts import source_root  # noqa: E402

CONFIG = "tools/remote/pants.remote.toml"
WAIT_S = 20
LISTED = 12  # targets named per environment; the rest are counted


def bgd_python(root: Path) -> Path:
    return root / ".bootstrap" / "buildgrid" / "bin" / "python"


def has_grpc() -> bool:
    try:
        import grpc  # noqa: F401  # pants: no-infer-dep
        import buildgrid  # noqa: F401  # pants: no-infer-dep
        return True
    except ImportError:
        return False


def settings(root: Path, args) -> dict:
    """The addresses and instance: the flags, else the config file's [GLOBAL] values."""
    config = {}
    for path in ",".join(args.pants_config_files or [CONFIG]).split(","):
        path = root / path.strip()
        if path.is_file():
            config.update(tomllib.loads(path.read_text()).get("GLOBAL", {}))
    execution = args.remote_execution_address or config.get("remote_execution_address")
    return {"execution": execution,
            "store": args.remote_store_address or config.get("remote_store_address") or execution,
            "instance": args.remote_instance_name or config.get("remote_instance_name", "")}


def properties_text(props) -> str:
    return " ".join(f"{k}={v}" for k, v in props)


def users_text(env, all_targets) -> list:
    users = [t for t in all_targets if t.environment == env.name]
    lines = [f"{t.address} ({t.kind}{', tags: ' + ' '.join(t.tags) if t.tags else ''})"
             for t in users[:LISTED]]
    if len(users) > LISTED:
        lines.append(f"... and {len(users) - LISTED} more")
    return lines or ["no target (nothing in this checkout sets environment="
                     f"\"{env.name}\")"]


def report(env, answer, service: str, wait_s: float, all_targets) -> None:
    if answer.served:
        print(f"preflight: environment `{env.name}` ({properties_text(env.properties)}): "
              f"served (the probe ran on worker `{answer.worker}` in {answer.seconds:.1f} s)")
        return
    tag_hint = " or ".join(sorted({f"--tag=-{t}" for u in all_targets
                                   if u.environment == env.name for t in u.tags[:1]}))
    lines = [f"preflight: error: environment `{env.name}` ({env.address}) is not served by "
             f"{service}",
             f"  platform properties: {properties_text(env.properties)}"]
    if answer.refused:
        lines += ["  why: no worker pool of the service has these properties; the service "
                  f"refused the probe: {answer.refused}",
                  "       (Pants stops at the first such action and names it only by its "
                  "digest)"]
    else:
        lines += [f"  why: the service accepts these properties, but no worker took the probe "
                  f"within {wait_s:g} s (none connected, or all busy); Pants would wait for "
                  "one until remote_execution_overall_deadline_secs"]
    users = users_text(env, all_targets)
    lines += [f"  used by: {users[0]}"] + [f"           {u}" for u in users[1:]]
    todo = ("declare a worker pool with these properties and start a worker advertising "
            "them" if answer.refused else "start a worker advertising these properties")
    lines += [f"  fix: {todo} (docs/reference/remote-execution.md), or leave these targets "
              "out of the goal" + (f" ({tag_hint})" if tag_hint else "")]
    print("\n".join(lines), file=sys.stderr)


def check(root: Path, args) -> int:
    from tools.remote.cas import Cas
    from tools.remote.probe import Unreachable, channel_for, probe

    known = environments(root)
    chosen = [e for e in known if not args.environment or e.name in args.environment]
    unknown = sorted(set(args.environment or ()) - {e.name for e in known})
    if unknown:
        print(f"preflight: error: no remote environment named {', '.join(unknown)} in "
              f"pants.toml (known: {', '.join(e.name for e in known)})", file=sys.stderr)
        return 2
    where = settings(root, args)
    if not where["execution"]:
        print("preflight: error: no --remote-execution-address (and none in the config)",
              file=sys.stderr)
        return 2
    service = f"{where['execution']} (instance {where['instance'] or '(none)'})"
    all_targets = targets(root)
    try:
        exec_channel = channel_for(where["execution"])
        store_channel = (exec_channel if where["store"] == where["execution"]
                         else channel_for(where["store"]))
        with tempfile.TemporaryDirectory(prefix="mettle-preflight-") as tmp:
            cas = Cas(store_channel, where["instance"], Path(tmp))
            with ThreadPoolExecutor(max(1, len(chosen))) as pool:
                answers = list(pool.map(
                    lambda e: probe(exec_channel, cas, where["instance"], e.properties,
                                    args.wait), chosen))
    except (Unreachable, ValueError) as e:
        print(f"preflight: error: cannot ask {service}: {e}", file=sys.stderr)
        return 2
    for env, answer in zip(chosen, answers):
        report(env, answer, service, args.wait, all_targets)
    unserved = [e.name for e, a in zip(chosen, answers) if not a.served]
    if unserved:
        print(f"preflight: {len(unserved)} of {len(chosen)} environments unserved: "
              f"{', '.join(unserved)}", file=sys.stderr)
        return 1
    count = f"{len(chosen)} environment{'' if len(chosen) == 1 else 's'}"
    print(f"preflight: every environment checked ({count}) is served by {service}")
    return 0


def main(argv: list) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--pants-config-files", action="append",
                   help=f"config files to read, in order (default: {CONFIG})")
    p.add_argument("--remote-execution-address")
    p.add_argument("--remote-store-address")
    p.add_argument("--remote-instance-name")
    p.add_argument("--environment", action="append",
                   help="check only this environment (repeatable; default: every one)")
    p.add_argument("--wait", type=float, default=WAIT_S,
                   help=f"seconds a probe may wait for a worker (default {WAIT_S})")
    p.add_argument("--root", help="the checkout whose BUILD files are read (default: this)")
    args = p.parse_args(argv)
    root = Path(args.root) if args.root else source_root()
    if not has_grpc():
        python = bgd_python(root)
        if python.is_file() and Path(sys.executable) != python:
            os.execv(python, [str(python), str(Path(__file__).resolve()), *argv])
        print(f"preflight: error: needs grpc and BuildGrid's protos: no {python} "
              "(tools/bootstrap/40-buildgrid.sh)", file=sys.stderr)
        return 2
    return check(root, args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

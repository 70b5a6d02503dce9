"""Fault drills of the remote-execution service (tools/remote/grid.py, worker.py) on
loopback: BuildGrid + PostgreSQL + workers, and a REAPI client (tools/remote/reapi_client.py)
that behaves like a build client. Each drill asserts the build's result and its outputs and
bounds its wait; each prints its recovery time (`-s` shows them):

- a worker killed mid-action: a second worker completes the action once the first one's
  session expires (the grid's keepalive, short here);
- BuildGrid restarted mid-action: the worker reconnects, the client asks again, the result
  arrives, and blobs written before the restart are still in the disk CAS;
- an action longer than the bot-session expiry completes on its worker (keepalive reports);
- two clients at once against a 4-slot worker: their actions run concurrently;
- a platform no pool serves fails at once, naming the properties;
- the preflight (tools/remote/preflight.py) names each unserved environment, its properties
  and the targets that use it, before Pants starts; with every pool served it passes;
- SIGTERM: the worker finishes and reports its running action, then exits 0.

Skipped (with the reason) without BuildGrid, PostgreSQL or bubblewrap (tools/bootstrap/
40-buildgrid.sh, 45-buildgrid-execution.sh; ./pants runs both before a test goal).
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from tools.remote.checkouts import source_root
from tools.remote.grid import PLAIN, Grid, free_port, postgres_bindir
from tools.remote.sandbox import jail_available

ROOT = source_root()
BGD = ROOT / ".bootstrap" / "buildgrid" / "bin" / "bgd"
DRIVER = ROOT / ".bootstrap" / "buildgrid-pg"
CLIENT = ROOT / "tools" / "remote" / "reapi_client.py"
PREFLIGHT = ROOT / "tools" / "remote" / "preflight.py"
# Short enough for a quick drill; the shipped default is 30 s (grid.KEEPALIVE_S).
KEEPALIVE_S = 10

pytestmark = [
    pytest.mark.skipif(not BGD.is_file(),
                       reason="BuildGrid missing: tools/bootstrap/40-buildgrid.sh"),
    pytest.mark.skipif(not DRIVER.is_dir() or postgres_bindir() is None,
                       reason="PostgreSQL or psycopg2 missing: "
                       "tools/bootstrap/45-buildgrid-execution.sh"),
    pytest.mark.skipif(jail_available() is not None,
                       reason=f"bubblewrap cannot isolate actions here: {jail_available()}"),
]


@pytest.fixture
def grid(tmp_path):
    with Grid(tmp_path / "grid", BGD, pools=[PLAIN], keepalive_s=KEEPALIVE_S) as g:
        yield g


def client(grid: Grid, script: str, outputs=("out.txt",), deadline=120, salt="",
           props=PLAIN) -> subprocess.Popen:
    argv = [str(grid.python), str(CLIENT), "--server", f"127.0.0.1:{grid.port}",
            "--deadline", str(deadline), "--salt", salt or str(time.time_ns())]
    argv += [f"--property={k}={v}" for k, v in props.items()]
    argv += [f"--output={o}" for o in outputs]
    argv += ["--", "/bin/sh", "-c", script]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT)


def answer(proc: subprocess.Popen, timeout=180) -> dict:
    out, err = proc.communicate(timeout=timeout)
    assert out.strip(), err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def wait_for_lease(grid: Grid, name: str, count: int = 1, timeout=60) -> None:
    log = grid.work / f"worker-{name}.out"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and log.read_text().count("started") >= count:
            return
        time.sleep(0.1)
    raise AssertionError(f"worker {name} leased nothing within {timeout} s: "
                         f"{log.read_text() if log.exists() else 'no log'}")


def test_a_killed_workers_action_is_completed_by_another_worker(grid):
    grid.add_worker("first", PLAIN, slots=1)
    proc = client(grid, "sleep 6; echo survived > out.txt")
    wait_for_lease(grid, "first")
    killed = time.monotonic()
    grid.kill_worker("first")
    grid.add_worker("second", PLAIN, slots=1)
    result = answer(proc)
    recovered = time.monotonic() - killed
    print(f"worker killed mid-action: result after {recovered:.1f} s "
          f"(keepalive {KEEPALIVE_S} s)")
    assert result.get("exit_code") == 0, result
    assert result["outputs"] == {"out.txt": "survived\n"}
    assert result["worker"] == "second"
    assert recovered < KEEPALIVE_S + 45


def test_the_build_survives_a_server_restart(tmp_path):
    # The shipped keepalive: a restart (stop, start, reconnect) fits inside it.
    with Grid(tmp_path / "grid", BGD, pools=[PLAIN]) as grid:
        _survives_a_restart(grid)


def _survives_a_restart(grid):
    grid.add_worker("w", PLAIN, slots=1)
    before = answer(client(grid, "echo kept > out.txt"))
    assert before.get("exit_code") == 0, before
    proc = client(grid, "sleep 5; echo after-restart > out.txt")
    wait_for_lease(grid, "w", count=2)
    down = time.monotonic()
    grid.stop_server()
    time.sleep(2)
    grid.start_server()
    result = answer(proc)
    print(f"server restarted mid-action: result {time.monotonic() - down:.1f} s after the "
          f"stop, {result.get('retries')} client retries")
    assert result.get("exit_code") == 0, result
    assert result["outputs"] == {"out.txt": "after-restart\n"}
    # The disk CAS kept the first action's output across the restart.
    blobs = list((grid.state / "cas").rglob("*"))
    assert any(p.is_file() and p.read_bytes() == b"kept\n" for p in blobs)
    assert grid.dead_workers() == []


def test_an_action_longer_than_the_session_expiry_completes(grid):
    grid.add_worker("w", PLAIN, slots=1)
    length = KEEPALIVE_S * 2 + 3
    result = answer(client(grid, f"sleep {length}; echo long > out.txt"), timeout=240)
    assert result.get("exit_code") == 0, result
    assert result["outputs"] == {"out.txt": "long\n"}
    assert result["worker"] == "w"
    log = (grid.work / "worker-w.out").read_text()
    assert log.count(": session ") == 1, log  # the first session lived through it
    assert "session lost" not in log


def test_two_clients_share_a_four_slot_worker(grid):
    grid.add_worker("w", PLAIN, slots=4)
    answer(client(grid, "echo warm > out.txt"))  # the session is up
    # Two clients (two processes each sending two actions at once): every action notes when
    # it started and ended; on 4 slots all four run at the same time. 10 s per action: on a
    # loaded 2-core machine the four client processes once took 4.3 s to all send theirs.
    script = "date +%s.%N > out.txt; sleep 10; date +%s.%N >> out.txt; echo {i} >> out.txt"
    procs = [client(grid, script.format(i=i), salt=f"c{i}") for i in range(4)]
    results = [answer(p) for p in procs]
    spans = []
    for i, r in enumerate(results):
        assert r.get("exit_code") == 0, r
        start, end, tag = r["outputs"]["out.txt"].split()
        assert tag == str(i)
        spans.append((float(start), float(end)))
    print(f"4 actions of 10 s on 4 slots: all running together for "
          f"{min(e for _, e in spans) - max(s for s, _ in spans):.1f} s")
    log = (grid.work / "worker-w.out").read_text()
    assert max(s for s, _ in spans) < min(e for _, e in spans), (spans, log[-3000:])


def test_an_unserved_platform_fails_at_once_naming_its_properties(grid):
    grid.add_worker("w", PLAIN, slots=1)
    gpu = dict(PLAIN, gpu="sm_90a")
    start = time.monotonic()
    result = answer(client(grid, "true", outputs=(), props=gpu))
    assert time.monotonic() - start < 30
    assert "FAILED_PRECONDITION" in result["error"]
    assert "('gpu', 'sm_90a')" in result["error"]


def preflight(grid: Grid, *args, python=None) -> subprocess.CompletedProcess:
    argv = [str(python or grid.python), str(PREFLIGHT), "--root", str(ROOT),
            "--pants-config-files=tools/remote/pants.remote.toml",
            f"--remote-execution-address={grid.address}",
            f"--remote-store-address={grid.address}", *args]
    return subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_the_preflight_names_an_unserved_environment_and_its_targets(grid):
    # Only the plain pool: the gpu and gb10 environments are refused by the service. Run
    # with the test interpreter (no grpc): the preflight re-executes on BuildGrid's.
    grid.add_worker("plain", PLAIN, slots=1)
    start = time.monotonic()
    proc = preflight(grid, python=sys.executable)
    assert time.monotonic() - start < 60, "refused platforms are reported without waiting"
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "environment `remote` (OSFamily=linux ISA=x86-64 gpu=none): served (the probe " \
           "ran on worker `plain`" in proc.stdout
    gpu = proc.stderr.split("environment `gpu` (//tools/remote:gpu_sm90a) is not served")[1]
    gpu = gpu.split("preflight:")[0]
    assert "platform properties: OSFamily=linux ISA=x86-64 gpu=sm_90a" in gpu
    assert "Could not find property set" in gpu and "('gpu', 'sm_90a')" in gpu
    assert "used by: tests/gpu:gpu (python_tests, tags: gpu)" in gpu
    assert "(--tag=-gpu)" in gpu
    assert "environment `gb10` (//tools/remote:gpu_gb10) is not served" in proc.stderr
    assert "tests/rules:gb10 (python_tests, tags: gpu gb10)" in proc.stderr
    assert "2 of 3 environments unserved: gpu, gb10" in proc.stderr


def test_the_preflight_waits_for_a_declared_pool_then_passes_with_both_workers(tmp_path):
    gpu = dict(PLAIN, gpu="sm_90a")
    chosen = ("--environment=remote", "--environment=gpu")
    with Grid(tmp_path / "grid", BGD, pools=[PLAIN, gpu], keepalive_s=KEEPALIVE_S) as g:
        g.add_worker("plain", PLAIN, slots=1)
        # The gpu pool is declared but no worker is connected: the probe waits, then the
        # preflight names the environment, and cancels the probe.
        start = time.monotonic()
        proc = preflight(g, *chosen, "--wait=5")
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert time.monotonic() - start < 60
        assert "environment `gpu` (//tools/remote:gpu_sm90a) is not served" in proc.stderr
        assert "no worker took the probe within 5 s" in proc.stderr
        assert "used by: tests/gpu:gpu" in proc.stderr
        assert "1 of 2 environments unserved: gpu" in proc.stderr
        g.add_worker("gpu", gpu, slots=1)
        proc = preflight(g, *chosen)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "environment `gpu` (OSFamily=linux ISA=x86-64 gpu=sm_90a): served (the probe " \
               "ran on worker `gpu`" in proc.stdout
        assert "every environment checked (2 environments) is served" in proc.stdout
        assert proc.stderr == ""
        # The cancelled probe never reached the gpu worker: it leased only the last one.
        assert (g.work / "worker-gpu.out").read_text().count("started") == 1


def test_the_preflight_reports_an_unreachable_service_without_a_traceback():
    address = f"grpc://127.0.0.1:{free_port()}"  # nothing listens there
    proc = subprocess.run([sys.executable, str(PREFLIGHT), "--root", str(ROOT),
                           f"--remote-execution-address={address}",
                           f"--remote-store-address={address}"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"preflight: error: cannot ask {address} (instance mettle)" in proc.stderr
    assert "UNAVAILABLE" in proc.stderr and "Traceback" not in proc.stderr


def test_sigterm_finishes_the_running_action_then_exits(grid):
    grid.add_worker("w", PLAIN, slots=1)
    proc = client(grid, "sleep 4; echo finished > out.txt")
    wait_for_lease(grid, "w")
    status = grid.kill_worker("w", signal.SIGTERM)
    result = answer(proc)
    assert status == 0
    assert result.get("exit_code") == 0, result
    assert result["outputs"] == {"out.txt": "finished\n"} and result["worker"] == "w"

"""Checks of the test worker's REAPI layer (tools/remote/worker.py, cas.py) against an
in-memory CAS. Run by tests/tools/test_remote_worker.py with BuildGrid's interpreter, which
has grpc and the REAPI protos (the test interpreter has neither); prints `ok: NAME` per
check and exits non-zero on the first failure.
"""
from __future__ import annotations

import hashlib
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from buildgrid._protos.build.bazel.remote.execution.v2 import (  # noqa: E402  # pants: no-infer-dep
    remote_execution_pb2 as re_pb2)  # pants: no-infer-dep
from buildgrid._protos.google.bytestream import bytestream_pb2  # noqa: E402  # pants: no-infer-dep
from google.protobuf import any_pb2  # noqa: E402  # pants: no-infer-dep

from tools.remote import cas as cas_mod  # noqa: E402
from tools.remote.worker import Worker, main  # noqa: E402


class FakeCas:
    """ContentAddressableStorage + ByteStream over a dict; counts the calls made."""

    def __init__(self):
        self.blobs = {}
        self.calls = []

    def put(self, data: bytes):
        d = cas_mod.digest_of(data)
        self.blobs[d.hash] = data
        return d

    def put_message(self, msg):
        return self.put(msg.SerializeToString())

    def BatchReadBlobs(self, req):
        self.calls.append("BatchReadBlobs")
        reply = re_pb2.BatchReadBlobsResponse()
        for d in req.digests:
            r = reply.responses.add(digest=d)
            if d.hash in self.blobs:
                r.data = self.blobs[d.hash]
            else:
                r.status.code = 5
        return reply

    def GetTree(self, req):
        self.calls.append("GetTree")
        out, todo = [], [req.root_digest]
        while todo:
            d = todo.pop()
            node = re_pb2.Directory()
            node.ParseFromString(self.blobs[d.hash])
            out.append(node)
            todo.extend(sub.digest for sub in node.directories)
        yield re_pb2.GetTreeResponse(directories=out)

    def FindMissingBlobs(self, req):
        return re_pb2.FindMissingBlobsResponse(
            missing_blob_digests=[d for d in req.blob_digests if d.hash not in self.blobs])

    def BatchUpdateBlobs(self, req):
        reply = re_pb2.BatchUpdateBlobsResponse()
        for r in req.requests:
            assert hashlib.sha256(r.data).hexdigest() == r.digest.hash
            self.blobs[r.digest.hash] = r.data
            reply.responses.add(digest=r.digest)
        return reply

    def Read(self, req):
        self.calls.append("Read")
        h = req.resource_name.split("blobs/")[1].split("/")[0]
        data = self.blobs[h]
        for i in range(0, len(data), 1 << 20):
            yield bytestream_pb2.ReadResponse(data=data[i:i + (1 << 20)])

    def Write(self, chunks):
        self.calls.append("Write")
        chunks = list(chunks)
        data = b"".join(c.data for c in chunks)
        h = chunks[0].resource_name.split("blobs/")[1].split("/")[0]
        assert hashlib.sha256(data).hexdigest() == h and chunks[-1].finish_write
        self.blobs[h] = data
        return bytestream_pb2.WriteResponse(committed_size=len(data))


def directory(fake: FakeCas, files=(), dirs=(), links=()):
    node = re_pb2.Directory()
    for name, data, executable in files:
        node.files.add(name=name, digest=fake.put(data), is_executable=executable)
    for name, digest in dirs:
        node.directories.add(name=name, digest=digest)
    for name, target in links:
        node.symlinks.add(name=name, target=target)
    return fake.put_message(node)


def make_worker(work: Path, fake: FakeCas, *extra) -> Worker:
    # The REAPI layer is checked here; the jail has its own tests (test_remote_sandbox.py,
    # test_remote_faults.py), and these checks look at files outside the action's directory.
    args = ["--server", "127.0.0.1:1", "--name", "t", "--work", str(work), "--no-isolation",
            *extra]
    worker = Worker(_parse(args))
    worker.cas.cas = worker.cas.bytestream = fake
    return worker


def _parse(argv):
    captured = {}

    class Stop(Exception):
        pass

    def fake_serve(self):
        captured["args"] = self.args
        raise Stop
    original = Worker.serve
    Worker.serve = fake_serve
    try:
        main(argv)
    except Stop:
        pass
    finally:
        Worker.serve = original
    return captured["args"]


def action_for(fake: FakeCas, argv, root, outputs_files=(), outputs_dirs=(), env=()):
    command = re_pb2.Command(arguments=argv, output_files=list(outputs_files),
                             output_directories=list(outputs_dirs))
    for k, v in env:
        command.environment_variables.add(name=k, value=v)
    action = re_pb2.Action(command_digest=fake.put_message(command), input_root_digest=root)
    payload = any_pb2.Any()
    payload.Pack(action)
    return payload


def tree_files(fake: FakeCas, tree_digest) -> dict:
    tree = re_pb2.Tree()
    tree.ParseFromString(fake.blobs[tree_digest.hash])
    by_hash = {cas_mod.digest_of(c.SerializeToString()).hash: c for c in tree.children}
    found = {}

    def walk(node, prefix):
        for f in node.files:
            found[prefix + f.name] = (fake.blobs[f.digest.hash], f.is_executable)
        for s in node.symlinks:
            found[prefix + s.name] = ("->", s.target)
        for d in node.directories:
            walk(by_hash[d.digest.hash], prefix + d.name + "/")
    walk(tree.root, "")
    return found


def check_runs_an_action(tmp: Path) -> None:
    fake = FakeCas()
    big = bytes(range(256)) * (12 * 1024)  # 3 MiB: read through ByteStream
    tool = (b"#!/bin/sh\nset -e\nenv > out/env.txt\nmkdir -p gen/sub\n"
            b"cp data/big.bin gen/; echo >> gen/big.bin\n"
            b"ln -s sub/x gen/link\necho x > gen/sub/x\nchmod +x gen/sub/x\necho done\n")
    data = directory(fake, files=[("big.bin", big, False)], links=[("alias", "big.bin")])
    empty = directory(fake)
    root = directory(fake, files=[("tool.sh", tool, True)],
                     dirs=[("data", data), ("empty", empty)])
    payload = action_for(fake, ["./tool.sh"], root, ["out/env.txt"], ["gen"],
                         env=[("ONLY", "this")])
    worker = make_worker(tmp / "w", fake)
    result, record = worker.execute(payload)
    assert result.exit_code == 0, fake.blobs.get(result.stderr_digest.hash)
    assert fake.blobs[result.stdout_digest.hash] == b"done\n"
    assert "Read" in fake.calls  # the 3 MiB input came through ByteStream
    (env_file,) = result.output_files
    assert env_file.path == "out/env.txt"
    seen = dict(line.split("=", 1) for line in
                fake.blobs[env_file.digest.hash].decode().splitlines())
    # Only the declared variable, plus what the shell itself sets (PWD, SHLVL, _).
    assert seen.pop("ONLY") == "this" and set(seen) <= {"PWD", "OLDPWD", "SHLVL", "_"}, seen
    (gen,) = result.output_directories
    files = tree_files(fake, gen.tree_digest)
    # A new 3 MiB output goes up through ByteStream.
    assert files["big.bin"] == (big + b"\n", False) and "Write" in fake.calls
    assert files["sub/x"] == (b"x\n", True)
    assert files["link"] == ("->", "sub/x")
    assert record["executed"] and record["exit_code"] == 0
    assert result.execution_metadata.worker == "t"
    assert not list(worker.sandboxes.iterdir()), "sandbox left behind"


def check_missing_output_and_failure(tmp: Path) -> None:
    fake = FakeCas()
    root = directory(fake)
    payload = action_for(fake, ["/bin/sh", "-c", "echo no >&2; exit 4"], root, ["never"])
    result, _ = make_worker(tmp / "w2", fake).execute(payload)
    assert result.exit_code == 4 and fake.blobs[result.stderr_digest.hash] == b"no\n"
    assert not result.output_files and not result.output_directories


def check_record_only(tmp: Path) -> None:
    fake = FakeCas()
    root = directory(fake)
    marker = tmp / "ran"
    shim = r"\./pytest_runner\.pex_pex_shim\.sh"
    worker = make_worker(tmp / "w3", fake, "--record-only", shim, "--property", "gpu=sm_90a")
    test_run = action_for(fake, ["/bin/sh", "-c", f"touch {marker}",
                                 "./pytest_runner.pex_pex_shim.sh"], root)
    result, record = worker.execute(test_run)
    assert result.exit_code == 1 and not marker.exists() and not record["executed"]
    assert b"recorded this action, did not execute it" in fake.blobs[result.stderr_digest.hash]
    # Building the runner PEX names it too, but is a setup step: it executes.
    build = action_for(fake, ["/bin/sh", "-c", f"touch {marker}", "--output-file",
                              "pytest_runner.pex"], root)
    result, record = worker.execute(build)
    assert result.exit_code == 0 and marker.exists() and record["executed"]


def check_refuses_another_platform(tmp: Path) -> None:
    fake = FakeCas()
    command = re_pb2.Command(arguments=["/bin/true"])
    command.platform.properties.add(name="gpu", value="sm_90a")
    action = re_pb2.Action(command_digest=fake.put_message(command),
                           input_root_digest=directory(fake))
    payload = any_pb2.Any()
    payload.Pack(action)
    worker = make_worker(tmp / "w5", fake, "--property", "gpu=none")
    try:
        worker.execute(payload)
    except cas_mod.ActionError as e:
        assert "needs {'gpu': 'sm_90a'}" in str(e)
    else:
        raise AssertionError("a gpu=none worker ran a gpu=sm_90a action")


def check_escaping_paths_fail_the_action(tmp: Path) -> None:
    fake = FakeCas()
    root = directory(fake)
    payload = action_for(fake, ["/bin/true"], root, ["../escape"])
    result, _ = make_worker(tmp / "w4", fake).execute(payload)
    assert result.exit_code == 1
    assert b"leaves the action's directory" in fake.blobs[result.stderr_digest.hash]


def check_blob_cache_is_lru_bounded(tmp: Path) -> None:
    cache = cas_mod.BlobCache(tmp / "blobs", max_bytes=250)
    held = lambda: sorted(cache.sizes)  # noqa: E731  (looks without touching)
    for name in ("a", "b", "c"):
        cache.put(name, name.encode() * 100)
    assert held() == ["b", "c"] and cache.total == 200  # a was the least recently used
    assert sorted(p.name for p in (tmp / "blobs").iterdir()) == ["b", "c"]
    assert cache.has("b")              # b is now the most recently used
    cache.use(["c", "d"])              # callers pin what they fetch (Cas.read, materialize)
    cache.put("d", b"d" * 100)         # over budget: b is the only one that may go
    assert held() == ["c", "d"]
    cache.use(["e"])
    cache.put("e", b"e" * 100)         # all pinned: over budget until they are released
    assert held() == ["c", "d", "e"] and cache.total == 300
    cache.release(["c", "d", "e"])     # then the least recently used goes
    assert held() == ["d", "e"] and cache.total == 200
    reopened = cas_mod.BlobCache(tmp / "blobs", max_bytes=250)  # the index comes from disk
    assert reopened.total == 200 and sorted(reopened.sizes) == ["d", "e"]


def main_checks() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        for check in (check_runs_an_action, check_missing_output_and_failure,
                      check_record_only, check_refuses_another_platform,
                      check_escaping_paths_fail_the_action, check_blob_cache_is_lru_bounded):
            sub = Path(tmp) / check.__name__
            sub.mkdir()
            check(sub)
            print(f"ok: {check.__name__}")
    return 0


if __name__ == "__main__":
    sys.exit(main_checks())

"""REAPI CAS client of the test worker: reads and writes blobs, materialises input roots and
turns scanned outputs into ActionResult fields. Runs on BuildGrid's interpreter
(.bootstrap/buildgrid), which has grpc and the REAPI protos; nothing else imports it.

Invariants: blobs are verified against their SHA-256 digest when read (a corrupt CAS fails
the action, never feeds it wrong bytes); the on-disk blob cache is keyed by digest and only
ever copied from, so an action that edits an input cannot poison later actions. The cache is
bounded: past `max_bytes` the least recently used blobs are deleted, never one that an input
root being written right now still needs (several actions share the cache at once).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import threading
import uuid
from collections import OrderedDict
from pathlib import Path

from buildgrid._protos.build.bazel.remote.execution.v2 import (  # pants: no-infer-dep
    remote_execution_pb2 as re_pb2, remote_execution_pb2_grpc as re_grpc)  # pants: no-infer-dep
from buildgrid._protos.google.bytestream import (  # pants: no-infer-dep
    bytestream_pb2, bytestream_pb2_grpc)  # pants: no-infer-dep

from tools.remote.sandbox import ActionError, Output, Tree, inside

# Batch calls stay well under gRPC's default 4 MiB message limit; bigger blobs use ByteStream.
BATCH_BYTES = 2 * 1024 * 1024
CHUNK = 1024 * 1024
# The empty blob (and so the empty Directory): a server need not store it.
EMPTY_HASH = hashlib.sha256(b"").hexdigest()


def digest_of(data: bytes):
    return re_pb2.Digest(hash=hashlib.sha256(data).hexdigest(), size_bytes=len(data))


class BlobCache:
    """The worker's blob files, LRU by bytes. `use` marks blobs as needed by a caller until
    `release`; eviction skips them. Thread-safe: the worker's slots share one cache."""

    def __init__(self, directory: Path, max_bytes: int | None):
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.max_bytes = max_bytes
        self.lock = threading.Lock()
        self.pins = {}
        self.sizes = OrderedDict()  # hash -> size, least recently used first
        found = []
        for entry in os.scandir(directory):
            if entry.name.startswith("."):
                os.unlink(entry.path)  # a write cut short by a crash
            else:
                stat = entry.stat()
                found.append((stat.st_mtime, entry.name, stat.st_size))
        for _, name, size in sorted(found):
            self.sizes[name] = size
        self.total = sum(self.sizes.values())

    def path(self, key: str) -> Path:
        return self.dir / key

    def has(self, key: str) -> bool:
        with self.lock:
            if key in self.sizes:
                self.sizes.move_to_end(key)
                return True
            return False

    def put(self, key: str, data: bytes) -> None:
        tmp = self.dir / f".{key}.{uuid.uuid4().hex}"
        tmp.write_bytes(data)
        os.replace(tmp, self.path(key))
        with self.lock:
            if key not in self.sizes:
                self.total += len(data)
            self.sizes[key] = len(data)
            self.sizes.move_to_end(key)
            self._evict()

    def use(self, keys) -> None:
        with self.lock:
            for key in keys:
                self.pins[key] = self.pins.get(key, 0) + 1

    def release(self, keys) -> None:
        with self.lock:
            for key in keys:
                left = self.pins.get(key, 0) - 1
                if left > 0:
                    self.pins[key] = left
                else:
                    self.pins.pop(key, None)
            self._evict()

    def _evict(self) -> None:
        if self.max_bytes is None or self.total <= self.max_bytes:
            return
        for key in list(self.sizes):
            if self.total <= self.max_bytes:
                break
            if key in self.pins:
                continue
            self.total -= self.sizes.pop(key)
            try:
                os.unlink(self.path(key))
            except FileNotFoundError:
                pass


class Cas:
    def __init__(self, channel, instance: str, cache_dir: Path, max_bytes: int | None = None):
        self.instance = instance
        self.cas = re_grpc.ContentAddressableStorageStub(channel)
        self.bytestream = bytestream_pb2_grpc.ByteStreamStub(channel)
        self.blobs = BlobCache(cache_dir, max_bytes)
        self.cache = cache_dir

    # -- reading --------------------------------------------------------------------------
    def _cached(self, digest) -> Path:
        return self.blobs.path(digest.hash)

    def fetch(self, digests) -> None:
        """Brings every digest into the blob cache (one batch per ~2 MiB, ByteStream above).
        A caller that needs the files to stay pins them first (BlobCache.use)."""
        missing = {d.hash: d for d in digests if not self.blobs.has(d.hash)}
        if EMPTY_HASH in missing:
            self._store(missing.pop(EMPTY_HASH), b"")
        small, batch, size = [], [], 0
        for d in missing.values():
            if d.size_bytes > BATCH_BYTES:
                self._store(d, self._read_stream(d))
                continue
            if size + d.size_bytes > BATCH_BYTES and batch:
                small.append(batch)
                batch, size = [], 0
            batch.append(d)
            size += d.size_bytes
        if batch:
            small.append(batch)
        for group in small:
            reply = self.cas.BatchReadBlobs(re_pb2.BatchReadBlobsRequest(
                instance_name=self.instance, digests=group))
            for r in reply.responses:
                if r.status.code != 0:
                    raise ActionError(f"CAS has no blob {r.digest.hash}/{r.digest.size_bytes}")
                self._store(r.digest, r.data)

    def _read_stream(self, digest) -> bytes:
        name = f"{self.instance}/blobs/{digest.hash}/{digest.size_bytes}".lstrip("/")
        return b"".join(c.data for c in self.bytestream.Read(
            bytestream_pb2.ReadRequest(resource_name=name)))

    def _store(self, digest, data: bytes) -> None:
        if digest_of(data).hash != digest.hash:
            raise ActionError(f"blob {digest.hash} read back with another digest")
        self.blobs.put(digest.hash, data)

    def read(self, digest) -> bytes:
        self.blobs.use([digest.hash])
        try:
            self.fetch([digest])
            return self._cached(digest).read_bytes()
        finally:
            self.blobs.release([digest.hash])

    def message(self, digest, cls):
        msg = cls()
        msg.ParseFromString(self.read(digest))
        return msg

    # -- input roots ----------------------------------------------------------------------
    def materialize(self, root_digest, dest: Path) -> None:
        """Writes the input root `root_digest` into the empty directory `dest`."""
        directories = {EMPTY_HASH: re_pb2.Directory()}
        token = "" if root_digest.hash != EMPTY_HASH else None
        while token is not None:
            request, token = token, None
            for page in self.cas.GetTree(re_pb2.GetTreeRequest(
                    instance_name=self.instance, root_digest=root_digest, page_token=request)):
                for d in page.directories:
                    directories[digest_of(d.SerializeToString()).hash] = d
                token = page.next_page_token or None
        files = [f.digest for d in directories.values() for f in d.files]
        keys = [d.hash for d in files]
        self.blobs.use(keys)
        try:
            self.fetch(files)
            self._write_dir(directories, root_digest.hash, dest)
        finally:
            self.blobs.release(keys)

    def _write_dir(self, directories: dict, key: str, dest: Path) -> None:
        node = directories.get(key)
        if node is None:
            raise ActionError(f"input directory {key} is missing from the CAS tree")
        dest.mkdir(parents=True, exist_ok=True)
        for f in node.files:
            path = inside(dest, f.name)
            shutil.copyfile(self._cached(f.digest), path)
            os.chmod(path, 0o755 if f.is_executable else 0o644)
        for s in node.symlinks:
            os.symlink(s.target, inside(dest, s.name))
        for sub in node.directories:
            self._write_dir(directories, sub.digest.hash, inside(dest, sub.name))

    # -- writing --------------------------------------------------------------------------
    def upload(self, blobs: dict) -> None:
        """Uploads {hash: (Digest, bytes)} that the CAS does not have yet."""
        if not blobs:
            return
        reply = self.cas.FindMissingBlobs(re_pb2.FindMissingBlobsRequest(
            instance_name=self.instance, blob_digests=[d for d, _ in blobs.values()]))
        batch, size = [], 0
        for d in reply.missing_blob_digests:
            digest, data = blobs[d.hash]
            if digest.size_bytes > BATCH_BYTES:
                self._write_stream(digest, data)
                continue
            if size + digest.size_bytes > BATCH_BYTES and batch:
                self._batch_update(batch)
                batch, size = [], 0
            batch.append(re_pb2.BatchUpdateBlobsRequest.Request(digest=digest, data=data))
            size += digest.size_bytes
        if batch:
            self._batch_update(batch)

    def _batch_update(self, requests) -> None:
        reply = self.cas.BatchUpdateBlobs(re_pb2.BatchUpdateBlobsRequest(
            instance_name=self.instance, requests=requests))
        for r in reply.responses:
            if r.status.code != 0:
                raise ActionError(f"CAS refused blob {r.digest.hash}: {r.status.message}")

    def _write_stream(self, digest, data: bytes) -> None:
        name = (f"{self.instance}/uploads/{uuid.uuid4()}/blobs/{digest.hash}/"
                f"{digest.size_bytes}").lstrip("/")

        def chunks():
            for offset in range(0, max(len(data), 1), CHUNK):
                yield bytestream_pb2.WriteRequest(
                    resource_name=name if offset == 0 else "", write_offset=offset,
                    data=data[offset:offset + CHUNK], finish_write=offset + CHUNK >= len(data))
        self.bytestream.Write(chunks())


class ResultBuilder:
    """Collects the blobs of an ActionResult while its fields are filled in."""

    def __init__(self):
        self.blobs = {}

    def add(self, data: bytes):
        d = digest_of(data)
        self.blobs[d.hash] = (d, data)
        return d

    def directory(self, tree: Tree, children: list):
        node = re_pb2.Directory()
        for name, (disk, executable) in sorted(tree.files.items()):
            node.files.add(name=name, digest=self.add(Path(disk).read_bytes()),
                           is_executable=executable)
        for name, sub in sorted(tree.dirs.items()):
            child = self.directory(sub, children)
            children.append(child)
            node.directories.add(name=name, digest=digest_of(child.SerializeToString()))
        for name, target in sorted(tree.symlinks.items()):
            node.symlinks.add(name=name, target=target)
        return node

    def output(self, result, out: Output, declared_as: str) -> None:
        """Adds one scanned output to `result` the way the client declared it."""
        if out.kind == "file":
            result.output_files.add(path=out.path, digest=self.add(out.disk.read_bytes()),
                                    is_executable=out.executable)
        elif out.kind == "dir":
            children = []
            root = self.directory(out.tree, children)
            tree = re_pb2.Tree(root=root, children=children)
            result.output_directories.add(path=out.path,
                                          tree_digest=self.add(tree.SerializeToString()))
        elif out.kind == "symlink":
            result.output_symlinks.add(path=out.path, target=out.target)
            legacy = (result.output_directory_symlinks if declared_as == "dir"
                      else result.output_file_symlinks)
            legacy.add(path=out.path, target=out.target)

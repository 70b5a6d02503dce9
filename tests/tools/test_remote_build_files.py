"""tools/remote/build_files.py: the environments and targets the remote-execution preflight
reports, read from pants.toml and BUILD files without Pants (the preflight against a live
service is in tests/tools/test_remote_faults.py)."""
from __future__ import annotations

from pathlib import Path

from tools.remote.build_files import Environment, environments, targets
from tools.remote.checkouts import source_root


def write(root: Path, files: dict) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_the_checkout_names_three_remote_environments_and_their_users():
    root = source_root()
    envs = {e.name: e for e in environments(root)}
    assert envs["gpu"] == Environment("gpu", "//tools/remote:gpu_sm90a", (
        ("OSFamily", "linux"), ("ISA", "x86-64"), ("gpu", "sm_90a")))
    assert set(envs) == {"remote", "gpu", "gb10"}
    by_env = {}
    for t in targets(root):
        by_env.setdefault(t.environment, []).append(t)
    assert [(t.address, t.tags) for t in by_env["gpu"]] == [("tests/gpu:gpu", ("gpu",))]
    assert [t.address for t in by_env["gb10"]] == ["tests/rules:gb10"]
    assert {"app:host", "app:kernels"} <= {t.address for t in by_env["remote"]}


def test_defaults_are_inherited_by_type_and_overridden_by_the_field(tmp_path):
    root = write(tmp_path, {
        "pants.toml": '[environments-preview]\nnames = { r = "//env:r", here = "//env:here" }\n',
        "env/BUILD": 'remote_environment(name="r", extra_platform_properties=["k=v", "g=1"])\n'
                     'local_environment(name="here")\n',
        "BUILD": '__defaults__({(kernel, binary): dict(environment="r")})\n'
                 'kernel(name="top")\n',
        "a/BUILD": 'kernel()\nbinary(name="b", environment="other")\ntests(name="t")\n'
                   'kernel(name=NAME)\n',
        "a/deep/BUILD": '__defaults__(all=dict(environment="d"))\nkernel(name="k")\n'
                        'tests(name="t", tags=["gpu", 3])\n',
        ".hidden/BUILD": 'kernel(name="no")\n',
    })
    # Local environments run nothing on the service: only `r` is probed.
    assert environments(root) == [Environment("r", "//env:r", (("k", "v"), ("g", "1")))]
    listed = targets(root)
    found = {t.address: (t.kind, t.environment, t.tags) for t in listed}
    assert len(found) == len(listed)  # a computed name is skipped, not guessed
    assert found == {
        "//:top": ("kernel", "r", ()),
        "a:a": ("kernel", "r", ()),                 # the name defaults to the directory's
        "a:b": ("binary", "other", ()),             # its own field wins
        "a:t": ("tests", None, ()),                 # no default for its type: local
        "a/deep:k": ("kernel", "d", ()),            # the nearest directory's default wins
        "a/deep:t": ("tests", "d", ("gpu",)),
        "env:r": ("remote_environment", None, ()),
        "env:here": ("local_environment", None, ()),
    }

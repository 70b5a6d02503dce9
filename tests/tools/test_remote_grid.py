"""tools/remote/grid.py's command line and lookups (the service itself is exercised by the
remote-execution demonstration, tests/rules/remote_exec_test.py)."""
from __future__ import annotations

import argparse

import pytest

from tools.remote.grid import PLAIN, WORKER_PATH, parse_worker


def test_worker_specs_parse_name_properties_and_record_only_pattern():
    assert parse_worker("plain:OSFamily=linux,ISA=x86-64,gpu=none") == (
        "plain", PLAIN, None)
    name, props, record = parse_worker(r"gpu:gpu=sm_90a:\./pytest_runner\.pex_pex_shim\.sh")
    assert (name, props, record) == ("gpu", {"gpu": "sm_90a"},
                                     r"\./pytest_runner\.pex_pex_shim\.sh")


@pytest.mark.parametrize("bad", ["plain", ":gpu=none"])
def test_bad_worker_specs_are_refused(bad):
    with pytest.raises(argparse.ArgumentTypeError, match="NAME:K=V,K=V"):
        parse_worker(bad)


def test_workers_get_a_minimal_image_path():
    # Pants learns a remote environment's PATH from `env`; bash, tar and cp must be on it.
    assert WORKER_PATH.split(":") == ["/usr/bin", "/bin"]


def test_pools_are_the_distinct_platforms_of_workers_and_declared_pools():
    from tools.remote.grid import declared_pools, parse_pool, pools_yaml
    gpu = parse_pool("OSFamily=linux,ISA=x86-64,gpu=sm_90a")
    workers = [("a", PLAIN, None), ("b", dict(PLAIN), None)]
    assert declared_pools(workers, [gpu, gpu]) == [PLAIN, gpu]
    text = pools_yaml([PLAIN, gpu])
    assert text.count("- label: pool") == 2 and '- ["gpu", "sm_90a"]' in text
    with pytest.raises(argparse.ArgumentTypeError):
        parse_pool("nothing")

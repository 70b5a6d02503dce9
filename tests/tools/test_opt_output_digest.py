"""tools/opt_output_digest.py records the same digests on every run of one checkout,
wherever it lies: no temporary or absolute path reaches a recorded output."""
from __future__ import annotations

import os

from tools import opt_output_digest as digest


def test_embedded_programs_have_fixed_relative_names():
    first, again = digest.test_programs(), digest.test_programs()
    assert first == again and first
    assert all(p.startswith(digest.EMBEDDED + "/") and not os.path.isabs(p) for p in first)


def test_an_embedded_program_records_its_fixed_path(monkeypatch):
    monkeypatch.chdir(digest.ROOT)
    name, text = next((p, t) for p, t in digest.test_programs().items()
                      if "test_runtime_checks_0" in p)
    ir = digest.outputs(name, text=text)["ir"]
    assert f"site='{name}:" in ir and "/tmp" not in ir


def test_module_keys_are_numbered_in_order_of_appearance():
    a = "@__import_575fcb09_lock @__import_af2bab3b_heap @__import_575fcb09_t"
    b = "@__import_19f55511_lock @__import_6dd0d6ad_heap @__import_19f55511_t"
    assert digest._import_keys(a) == digest._import_keys(b) == \
        "@__import_k1_lock @__import_k2_heap @__import_k1_t"
    assert digest._import_keys(a) != digest._import_keys(
        "@__import_575fcb09_lock @__import_af2bab3b_heap @__import_af2bab3b_t")

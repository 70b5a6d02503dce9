"""mettle.compile in process and its on-disk cache: what the key covers (source, every
imported module, options, target, compiler identity), atomic entries, and errors."""
from __future__ import annotations

import json
import os

import pytest

import mettle
from toolchain.runtime import cache
import toolchain.compiler.targets.spirv  # noqa: F401  (compiles SPIR-V: its backend)

KERNEL = """const N = 1;
kernel scale(x: float32*, n: int32, f: float32) {
    var i: int32 = (int32)(block.x * block_dim.x + thread.x);
    if (i < n) { x[i] = x[i] * f; }
}
"""
HELPER = "export fn twice(v: float32) -> float32 { return v * %s; }\n"
USES_HELPER = """import "helper";
kernel doubled(x: float32*, n: int32) {
    var i: int32 = (int32)(block.x * block_dim.x + thread.x);
    if (i < n) { x[i] = twice(x[i]); }
}
"""


def entries(cache_dir) -> list:
    return sorted(p for p in cache_dir.rglob("*") if p.is_file())


def test_compiles_source_text_in_process_and_reuses_the_cache(cache_dir):
    first = mettle.compile(KERNEL, arch="sm_90a")
    assert first.cache_hit is False and first.kernels == ["scale"]
    assert ".entry scale" in first.ptx and ".target sm_90a" in first.ptx
    second = mettle.compile(KERNEL, arch="sm_90a")
    assert second.cache_hit is True and second.ptx == first.ptx
    assert len(entries(cache_dir)) == 1


def test_signature_lists_typed_parameters():
    sig = mettle.compile(KERNEL, arch="sm_90a").scale.signature
    assert str(sig) == "scale(x: float32*, n: int32, f: float32)"
    assert [(p.kind, p.dtype, p.size) for p in sig.params] == [
        ("pointer", "float32", 8), ("scalar", None, 4), ("scalar", None, 4)]


@pytest.mark.parametrize("change", [
    dict(arch="sm_80"), dict(opt=False), dict(fp_contract=False), dict(target="spirv"),
    dict(ptx_version="8.5"), dict(consts={"N": 2}), dict(tile_wgmma=False),
])
def test_every_option_and_the_target_are_in_the_key(change):
    base = dict(arch="sm_90a", opt=True)
    assert mettle.compile(KERNEL, **base).cache_hit is False
    changed = mettle.compile(KERNEL, **{**base, **change})
    assert changed.cache_hit is False
    assert mettle.compile(KERNEL, **{**base, **change}).cache_hit is True


def test_an_edited_source_misses():
    mettle.compile(KERNEL, arch="sm_90a")
    assert mettle.compile(KERNEL.replace("x[i] * f", "x[i] + f"), arch="sm_90a").cache_hit \
        is False


def test_an_edited_imported_module_misses_and_an_unchanged_one_hits(tmp_path):
    (tmp_path / "helper.mettle").write_text(HELPER % "2.0")
    entry = tmp_path / "k.mettle"
    entry.write_text(USES_HELPER)
    first = mettle.compile(entry, arch="sm_90a")
    assert first.cache_hit is False
    assert mettle.compile(str(entry), arch="sm_90a").cache_hit is True
    (tmp_path / "helper.mettle").write_text(HELPER % "3.0")
    edited = mettle.compile(entry, arch="sm_90a")
    assert edited.cache_hit is False and edited.ptx != first.ptx
    assert mettle.compile(entry, arch="sm_90a").cache_hit is True


def test_the_entry_lists_every_file_read_with_its_digest(tmp_path, cache_dir):
    (tmp_path / "helper.mettle").write_text(HELPER % "2.0")
    entry = tmp_path / "k.mettle"
    entry.write_text(USES_HELPER)
    mettle.compile(entry, arch="sm_90a")
    [path] = entries(cache_dir)
    doc = json.loads(path.read_text())
    deps = {os.path.basename(p): d for p, d in doc["dependencies"]}
    assert deps == {"helper.mettle": cache.file_digest(str(tmp_path / "helper.mettle")),
                    "k.mettle": cache.file_digest(str(entry))}
    assert doc["signature"]["kernels"][0]["name"] == "doubled"


def test_the_compiler_identity_is_in_the_key(monkeypatch):
    mettle.compile(KERNEL, arch="sm_90a")
    monkeypatch.setattr(cache, "_IDENTITY", "another compiler")
    assert mettle.compile(KERNEL, arch="sm_90a").cache_hit is False


def test_entries_are_written_atomically_and_a_corrupt_entry_is_a_miss(cache_dir):
    mettle.compile(KERNEL, arch="sm_90a")
    [path] = entries(cache_dir)
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".mettle-")]
    path.write_text('{"format": "mettle.cache/1", "dependen')     # a torn write
    assert mettle.compile(KERNEL, arch="sm_90a").cache_hit is False
    assert json.loads(path.read_text())["format"] == "mettle.cache/1"   # rewritten whole


def test_cache_dir_follows_the_environment(cache_dir, monkeypatch, tmp_path):
    assert mettle.cache_dir() == cache_dir
    monkeypatch.delenv("METTLE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert mettle.cache_dir() == tmp_path / "xdg" / "mettle"


def test_cache_false_neither_reads_nor_writes(cache_dir):
    assert mettle.compile(KERNEL, arch="sm_90a", cache=False).cache_hit is None
    assert entries(cache_dir) == []


def test_clear_cache_removes_every_entry(cache_dir):
    mettle.compile(KERNEL, arch="sm_90a")
    mettle.clear_cache()
    assert not cache_dir.exists()


def test_an_unwritable_cache_still_compiles(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("METTLE_CACHE_DIR", str(blocker / "cache"))   # under a plain file
    assert mettle.compile(KERNEL, arch="sm_90a").cache_hit is False


def test_a_compile_error_is_the_located_report():
    with pytest.raises(mettle.CompileError) as info:
        mettle.compile("kernel k(a: int32*) {\n    a[0] = missing;\n}\n", arch="sm_90a")
    text = str(info.value)
    assert text.startswith("error[E0101]: undefined name `missing`")
    assert " --> <source>.mettle:2:12" in text and "a[0] = missing;" in text
    assert info.value.diagnostics[0].code == "E0101"


def test_a_compile_error_in_a_file_shows_its_line(tmp_path):
    path = tmp_path / "bad.mettle"
    path.write_text("kernel k(a: int32*) { a[0] = nope; }\n")
    with pytest.raises(mettle.CompileError) as info:
        mettle.compile(path)
    assert f"--> {path}:1:30" in str(info.value) and "a[0] = nope;" in str(info.value)


def test_bad_arguments_are_type_and_value_errors(tmp_path):
    with pytest.raises(TypeError, match="unknown option optimise"):
        mettle.compile(KERNEL, optimise=True)
    with pytest.raises(ValueError, match="target must be 'ptx' or 'spirv'"):
        mettle.compile(KERNEL, target="cuda")
    with pytest.raises(FileNotFoundError):
        mettle.compile(tmp_path / "absent.mettle")
    with pytest.raises(TypeError, match="expected a path or Mettle source text"):
        mettle.compile(b"kernel")


def test_spirv_modules_carry_the_binary_and_the_signature():
    mod = mettle.compile(KERNEL, target="spirv")
    assert mod.spirv[:4] == b"\x03\x02\x23\x07" and mod.target == "spirv"
    assert mod.signature.target == "spirv" and mod.kernels == ["scale"]
    with pytest.raises(ValueError, match="SPIR-V module"):
        mod.ptx


def test_consts_select_a_variant():
    """`consts=` is --const (docs/reference/tiles.md "Variants")."""
    src = "const D = 16;\nconst ELEM = f16;\nkernel(block = 128) k(x: float32*) {\n" \
          "    var a: tile<f32, D, D> = tile_load(x, 0, 0, D, D);\n" \
          "    tile_store(x, tile_convert(tile_convert(a, to: ELEM), to: f32), 0, 0, D, D);\n}\n"
    f16 = mettle.compile(src, arch="sm_80", cache=False)
    bf16 = mettle.compile(src, arch="sm_80", cache=False, consts={"ELEM": "bf16", "D": 32})
    assert "cvt.rn.f16.f32" in f16.ptx and "cvt.rn.bf16.f32" in bf16.ptx
    with pytest.raises(mettle.CompileError) as info:
        mettle.compile(src, arch="sm_80", cache=False, consts={"D": "wide"})
    assert "E0355" in str(info.value)

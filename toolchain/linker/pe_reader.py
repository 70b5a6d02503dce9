"""Read just enough of a PE image: its section table and, for DLLs, the exported names.

Used by the PE linker for `-l path/to/foo.dll` (which symbols the DLL exports). Malformed
input raises PeError (a ValueError) naming the file.
"""
from __future__ import annotations

import struct


class PeError(ValueError):
    pass


def _rva_to_offset(sections, rva: int) -> int:
    for va, vsize, raw, rawsize in sections:
        if va <= rva < va + max(vsize, rawsize):
            return raw + rva - va
    raise PeError(f"RVA {rva:#x} lies in no section")


def dll_exports(data: bytes, path: str = "<memory>") -> frozenset[str]:
    try:
        if data[:2] != b"MZ":
            raise PeError("no MZ header")
        pe = struct.unpack_from("<I", data, 0x3C)[0]
        if data[pe:pe + 4] != b"PE\0\0":
            raise PeError("no PE signature")
        nsec, opt_size = struct.unpack_from("<H", data, pe + 6)[0], \
            struct.unpack_from("<H", data, pe + 20)[0]
        opt = pe + 24
        magic = struct.unpack_from("<H", data, opt)[0]
        dirs = opt + (112 if magic == 0x20B else 96)
        exp_rva, exp_size = struct.unpack_from("<II", data, dirs)
        sections = []
        for i in range(nsec):
            at = opt + opt_size + 40 * i
            vsize, va, rawsize, raw = struct.unpack_from("<IIII", data, at + 8)
            sections.append((va, vsize, raw, rawsize))
        if not exp_rva:
            return frozenset()
        off = _rva_to_offset(sections, exp_rva)
        n_names, _funcs, names_rva = struct.unpack_from("<III", data, off + 24)[0], 0, \
            struct.unpack_from("<I", data, off + 32)[0]
        table = _rva_to_offset(sections, names_rva)
        out = set()
        for k in range(n_names):
            at = _rva_to_offset(sections, struct.unpack_from("<I", data, table + 4 * k)[0])
            out.add(data[at:data.index(b"\0", at)].decode("ascii", "replace"))
        return frozenset(out)
    except (struct.error, ValueError) as e:
        raise PeError(f"{path}: cannot read the DLL's exports: {e}") from None

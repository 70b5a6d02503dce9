"""The common `mettle` command lines parsed without argparse.

argparse's import, its gettext look-ups and the `locale` import they pull in cost a compile
process about 10 ms, a tenth of the whole run. `fast_parse` reads the forms build rules and
users type (an input, `-o`, an `--emit-*`, `-O`, `--gpu-arch`, the on/off switches) and
returns None for anything else, including every error, so argparse (cli.build_parser)
still parses, diagnoses and documents every other line. tests/cli/test_cli_args.py checks
on generated command lines that both parsers give the same namespace.
"""
from __future__ import annotations

# --target spelling -> host target registry name (targets/__init__.py)
HOST_TARGETS = {"x86_64-linux": "x86_64", "aarch64-linux": "aarch64-linux",
                "x86_64-windows": "x86_64-windows"}
# dest -> default, exactly build_parser()'s
DEFAULTS = {
    "file": None, "input": None, "output": None, "emit": None, "optimize": False,
    "release": False, "gpu_arch": None, "target": None, "ptx_version": None,
    "gpu_tensor_tuple_budget": 0, "gpu_wmma_staging": "on", "gpu_checks": False,
    "gpu_tile_mma": "on", "gpu_tile_wgmma": "on", "gpu_tile_wgmma_a": "shared",
    "gpu_tile_rescale_skip": "on", "gpu_tile_copy_wait": "load",
    "fp_contract": "on", "print_target": False, "dump_ir": False, "dump_spirv": False,
    "include": [], "stdlib": None, "error_format": "text", "link_arg": [], "libs": [],
    "verify": False, "dump_ir_after": [], "explain": False, "profile": False,
    "ml_opt": False, "emit_signature": None, "consts": [],
}
EMITS = {"--emit-ptx": "ptx", "--emit-spirv": "spirv", "--emit-obj": "obj", "--build": "exe"}
FLAGS = {"-O": "optimize", "-r": "release", "--release": "release",
         "--gpu-checks": "gpu_checks", "--print-target": "print_target",
         "--dump-ir": "dump_ir", "--dump-spirv": "dump_spirv", "--verify": "verify",
         "--verify-each": "verify", "--explain": "explain", "--profile": "profile",
         "--ml-opt": "ml_opt"}
# options with one value: flag -> (dest, allowed values or None for any string)
VALUES = {"-o": ("output", None), "-i": ("input", None), "--gpu-arch": ("gpu_arch", None),
          "--ptx-version": ("ptx_version", None), "--stdlib": ("stdlib", None),
          "--emit-signature": ("emit_signature", None),
          "--target": ("target", tuple(HOST_TARGETS)),
          "--gpu-wmma-staging": ("gpu_wmma_staging", ("on", "off")),
          "--gpu-tile-mma": ("gpu_tile_mma", ("on", "off")),
          "--gpu-tile-wgmma": ("gpu_tile_wgmma", ("on", "off")),
          "--gpu-tile-wgmma-a": ("gpu_tile_wgmma_a", ("registers", "shared")),
          "--gpu-tile-rescale-skip": ("gpu_tile_rescale_skip", ("on", "off")),
          "--gpu-tile-copy-wait": ("gpu_tile_copy_wait", ("load", "matmul")),
          "--fp-contract": ("fp_contract", ("on", "off")),
          "--error-format": ("error_format", ("text", "json")),
          "--gpu-tensor-tuple-budget": ("gpu_tensor_tuple_budget", "int")}


class Namespace:
    """What argparse.Namespace is to the rest of the CLI: attributes."""
    def __init__(self, values: dict):
        self.__dict__.update(values)


def fast_parse(argv: list[str]) -> Namespace | None:
    """The namespace argparse would produce for `argv`, or None where this reader does not
    know the line for certain (then argparse decides)."""
    ns = {k: (list(v) if isinstance(v, list) else v) for k, v in DEFAULTS.items()}
    seen: set[str] = set()
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if not arg.startswith("-"):
            if ns["file"] is not None:
                return None
            ns["file"] = arg
            continue
        name, eq, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if name in seen:                      # repeats: argparse's rules, not ours
            return None
        seen.add(name)
        if name in EMITS and not eq:
            if ns["emit"] is not None:        # two of a mutually exclusive group
                return None
            ns["emit"] = EMITS[name]
        elif name in FLAGS and not eq:
            ns[FLAGS[name]] = True
        elif name in VALUES:
            if not eq:
                if i >= len(argv):
                    return None
                value = argv[i]
                i += 1
            if not value or value.startswith("-"):
                return None
            dest, allowed = VALUES[name]
            if allowed == "int":
                if not value.isdigit() or not value.isascii():
                    return None
                value = int(value)
            elif allowed is not None and value not in allowed:
                return None
            ns[dest] = value
        else:
            return None
    return Namespace(ns)

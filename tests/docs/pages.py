"""The documentation's fenced code blocks, as the docs tests and the hardware suite see them.

Pages: README.md and every docs/**/*.md. A fence's info string is a language and attributes:

  ```mettle                compiled: a file with a kernel to PTX (sm_90a), else host code to
                           an object; one with `fn main` is also built and run, and when the
                           next block is ```output, its stdout must equal that block
  ```mettle spirv          a kernel that must also compile to SPIR-V
  ```mettle error=E0201    must fail with that diagnostic code, located, without a traceback
  ```mettle file=k.mettle  also written as k.mettle for the page's later sh/python blocks
  ```mettle partial=WRAP   a piece of a program: complete once wrapped (WRAPS below, or a
                           page's own <!-- wrap NAME ... {snippet} ... --> comment); the
                           test also checks that the piece alone does NOT compile
  ```sh                    each line run by bash in a temporary directory holding the page's
                           file= blocks (and links to the repository's top-level folders),
                           with `mettle` and `python` on PATH; ```output compares stdout
  ```sh synopsis           a usage line with CAPITALISED placeholders: checked to have them
  ```sh covered-by=PATH    too slow for the docs tests (Pants builds, the whole suite): each
                           command's program must appear in the named test file(s)
  ```python                run by python3 in the same temporary directory, against the fake
                           CUDA driver (toolchain/providers/cuda/fake)
  ```python partial=NAME   a piece of a script, run once put into the page's wrap comment
  ```python build-file     a BUILD-file excerpt: parsed, and every call names a target type
                           the Pants plugin registers
  ```mettle example=E0101  an error-code page example: run with its flags, and its output
                           compared, by tests/docs/test_error_codes.py
  gpu                      (sh, python) runs against the fake driver here and, on a GPU, the
                           hardware suite (tests/gpu/test_docs_gpu.py) runs it for real
  gpu-only                 (sh, python) needs a real GPU: run by the hardware suite only
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.M | re.S)
EXECUTED = ("mettle", "sh", "python")
ATTRIBUTES = {"mettle": {"spirv", "error", "file", "partial", "example", "proposed"},
              "sh": {"synopsis", "covered-by", "gpu", "gpu-only"},
              "python": {"build-file", "gpu", "gpu-only", "partial", "covered-by", "proposed"}}
# sh/python blocks the docs tests do not run here (the rest are a page's runnable steps).
RUN_ELSEWHERE = {"gpu-only", "synopsis", "covered-by", "build-file", "proposed"}
WRAP_COMMENT = re.compile(r"<!-- wrap (\S+)\n(.*?)-->", re.S)

# The wraps every page may name; a page defines others in a comment (see the docstring).
WRAPS = {
    # statements of a host function body
    "main": 'import "std/io";\n\nfn main() -> int32 {\n{snippet}\n    return 0;\n}\n',
    # statements of a kernel body with two float32 buffers and a count
    "kernel": "kernel example(x: float32*, y: float32*, n: int32) {\n{snippet}\n}\n",
}


@dataclass
class Block:
    page: Path
    line: int
    lang: str
    attrs: dict[str, str]
    text: str
    output: str | None = None           # the ```output block right after it, if any
    files: dict[str, str] = field(default_factory=dict)   # the page's file= blocks so far
    steps: list["Block"] = field(default_factory=list)    # the page's sh/python blocks so far

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def pages() -> list[Path]:
    return [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))


def parse_info(info: str) -> tuple[str, dict[str, str]]:
    words = info.split()
    if not words:
        return "", {}
    attrs = {}
    for word in words[1:]:
        key, _, value = word.partition("=")
        attrs[key] = value
    return words[0], attrs


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    out: list[Block] = []
    files: dict[str, str] = {}
    steps: list[Block] = []
    matches = list(FENCE.finditer(text))
    for i, m in enumerate(matches):
        lang, attrs = parse_info(m.group(1))
        if lang not in EXECUTED:
            continue
        block = Block(page, text.count("\n", 0, m.start()) + 1, lang, attrs, m.group(2),
                      files=dict(files), steps=list(steps))
        if i + 1 < len(matches):
            nxt = matches[i + 1]
            between = text[m.end():nxt.start()]
            if parse_info(nxt.group(1))[0] == "output" and not between.strip():
                block.output = nxt.group(2)
        if "file" in attrs:
            files[attrs["file"]] = m.group(2)
        if lang in ("sh", "python") and not RUN_ELSEWHERE & set(attrs):
            steps.append(block)
        out.append(block)
    return out


def all_blocks(lang: str | None = None) -> list[Block]:
    return [b for p in pages() for b in blocks(p) if lang is None or b.lang == lang]


def page_wraps(page: Path) -> dict[str, str]:
    return {m.group(1): m.group(2) for m in
            WRAP_COMMENT.finditer(page.read_text(encoding="utf-8"))}


def wrapped(block: Block) -> str:
    name = block.attrs["partial"]
    template = page_wraps(block.page).get(name) or WRAPS[name]
    return template.replace("{snippet}", block.text.rstrip("\n"))

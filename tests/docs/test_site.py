"""The docs site, built from docs/ by MkDocs (tools/docs/mkdocs.yml, as `./pants package
//docs:site` builds it) and opened in headless Chromium: the quickstart renders, Mettle code
is highlighted by the Mettle lexer, and the site's search finds "tensor_matmul".

Screenshots of the quickstart and of the search are kept in $METTLE_TEST_ARTIFACTS (default
dist/test-artifacts/ of the checkout). Chromium is Debian's `chromium` package
(tools/bootstrap/60-chromium.sh installs it before test goals); without it, or without
MkDocs, the test skips with the reason.
"""
from __future__ import annotations

import functools
import os
import subprocess
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from .browser import Browser, find_chromium
from .pages import ROOT

pytest.importorskip("mkdocs", reason="MkDocs is not installed (third_party/requirements.txt)")
pytest.importorskip("material", reason="mkdocs-material is not installed")
pytestmark = pytest.mark.skipif(find_chromium() is None,
                                reason="chromium is missing (tools/bootstrap/60-chromium.sh)")

ARTIFACTS = Path(os.environ.get("METTLE_TEST_ARTIFACTS", ROOT / "dist" / "test-artifacts"))


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--quiet", "-f",
                           str(ROOT / "tools" / "docs" / "mkdocs.yml"), "-d", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    handler = functools.partial(QuietHandler, directory=str(out))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def browser():
    with Browser() as b:
        yield b


def keep(name: str, png: bytes) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    path.write_bytes(png)
    return path


def test_quickstart_renders_with_highlighted_mettle(site, browser):
    browser.open(f"{site}/tutorial/quickstart.html")
    assert browser.eval("document.querySelector('article h1').firstChild.textContent.trim()") == \
        "Quickstart"
    headings = browser.eval("[...document.querySelectorAll('article h2')]"
                            ".map(h => h.firstChild.textContent.trim())")
    assert "1. Install" in headings[0] and any("Pants" in h for h in headings)
    # The kernel block: Pygments' Mettle lexer marks keywords, types and GPU built-ins.
    kernel = browser.eval("""(() => {
        const code = [...document.querySelectorAll('.highlight code')]
            .find(c => c.textContent.includes('kernel(block = 256) vadd'));
        if (!code) return null;
        const kinds = cls => [...code.querySelectorAll(cls)].map(e => e.textContent);
        return {keywords: kinds('.k'), types: kinds('.kt'), builtins: kinds('.nb')};
    })()""")
    assert kernel is not None, "the vadd kernel block is missing"
    assert "kernel" in kernel["keywords"] and "var" in kernel["keywords"]
    assert {"float32", "int32"} <= set(kernel["types"])
    assert {"thread", "block", "block_dim"} <= set(kernel["builtins"])
    # The fence attributes the docs tests read (file=vadd.mettle) are not shown.
    assert "file=" not in browser.eval("document.querySelector('article').textContent")
    path = keep("docs-site-quickstart.png", browser.screenshot())
    assert path.stat().st_size > 10_000


def test_search_finds_tensor_matmul(site, browser):
    browser.open(f"{site}/tutorial/quickstart.html")
    browser.eval("""(() => {
        document.querySelector('#__search').checked = true;
        const input = document.querySelector('[data-md-component=search-query]');
        input.focus();
        input.value = 'tensor_matmul';
        input.dispatchEvent(new Event('input', {bubbles: true}));
        input.dispatchEvent(new KeyboardEvent('keyup', {key: 'l', bubbles: true}));
    })()""")
    browser.wait_for("document.querySelectorAll('.md-search-result__item').length > 0", 60)
    titles = browser.eval("[...document.querySelectorAll('.md-search-result__item h1')]"
                          ".map(h => h.textContent)")
    assert any("GEMM" in t for t in titles), titles
    assert any("Error codes" in t for t in titles), titles
    keep("docs-site-search.png", browser.screenshot())

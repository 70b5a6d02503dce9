"""Links and references in README.md and docs/**: every relative link points to a file that
exists and, with `#anchor`, to a heading of that page; the tutorial and reference pages
carry no engineering log (commit hashes, issue or stop numbers, dated measurements), and
no page points users at files they do not have."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from .pages import ROOT, pages

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
CODE_SPAN = re.compile(r"`[^`\n]*`")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.M)
USER_PAGES = [p for p in pages() if p.parent.name in ("tutorial", "reference")]


def prose(text: str) -> str:
    """The page without its code blocks and code spans (links there are not links)."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """The anchor of a heading, as GitHub and MkDocs' toc extension make it."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)      # a link: its text
    text = re.sub(r"[`*]", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return re.sub(r"\s", "-", text)


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    found = set()
    for h in HEADING.findall(text):
        s = slug(h)
        found |= {s, re.sub(r"-+", "-", s)}      # GitHub keeps doubled dashes, MkDocs folds
    return found


def links(page: Path) -> list[str]:
    return [m.group(1) for m in LINK.finditer(prose(page.read_text(encoding="utf-8")))]


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_links_resolve(page):
    broken = []
    for target in links(page):
        if re.match(r"^[a-z]+:", target):             # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading #{anchor}")
    assert broken == []


def test_the_link_checker_sees_links():
    assert sum(len(links(p)) for p in pages()) > 60
    assert slug("Profiles: `--gpu-arch` and `--ptx-version`") == "profiles---gpu-arch-and---ptx-version"


ENGINEERING_LOG = [
    (re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b"), "a commit hash"),
    (re.compile(r"\b[Ii]ssue[- ]?#?\d+|#\d{2,}\b"), "an issue number"),
    (re.compile(r"\b[Ss]top \d+"), "a stop number"),
    (re.compile(r"\b20\d\d-\d\d-\d\d\b"), "a dated log entry"),
]


@pytest.mark.parametrize("page", USER_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_user_pages_carry_no_engineering_log(page):
    text = page.read_text(encoding="utf-8")
    found = [f"{what}: {m.group(0)}" for pattern, what in ENGINEERING_LOG
             for m in pattern.finditer(prose(text))]
    assert found == []


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_page_cites_files_users_do_not_have(page):
    text = page.read_text(encoding="utf-8")
    assert not re.search(r"LANGUAGE(-later)?\.md|§\d|\.\./shared|\bDESIGN\.md\b", text)


def test_the_index_lists_each_page_once():
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    targets = [t.partition("#")[0] for t in links(ROOT / "docs" / "README.md")]
    assert len(targets) == len(set(targets)), "a page is listed twice"
    missing = [str(p.relative_to(ROOT / "docs")) for p in pages()
               if p.parent != ROOT and p.name != "README.md"
               and str(p.relative_to(ROOT / "docs")) not in targets]
    assert missing == [], f"pages the index does not list: {missing}"
    assert "index" in index.lower() or "documentation" in index.lower()

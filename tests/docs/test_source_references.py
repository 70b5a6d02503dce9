"""References from the sources to the documentation: a comment or docstring that sends the
reader to `docs/<page>.md "<Section>"` names a page that exists and a section it has: a
heading or a paragraph's bold lead-in (such as **Split regions**) that is the quoted text
or begins with it as whole words ("Variants" names "Variants: format constants and
--const"). A section renamed or moved leaves such a pointer dangling, and nothing else
would notice."""
from __future__ import annotations

import re


from .pages import ROOT
from .test_links import FENCE, HEADING

# the page, then its quoted section, possibly after a line break and a comment marker
REFERENCE = re.compile(r"""(docs/[\w/.-]+\.md)(?:\s|\#|\*|"{3})*"([^"\n]+)\"""")
BOLD_LEAD = re.compile(r"\*\*([^*\n]+?)\.?\*\*")
SOURCE_DIRS = ("toolchain", "mettle", "bench", "tools", "tests", "examples", "pants-plugins")
SUFFIXES = {".py", ".sh", ".mettle"}


def sources():
    for top in SOURCE_DIRS:
        for path in sorted((ROOT / top).rglob("*")):
            if path.suffix in SUFFIXES and path.is_file():
                yield path


def references():
    for path in sources():
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in REFERENCE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            yield f"{path.relative_to(ROOT)}:{line}", m.group(1), m.group(2)


def sections(page) -> list[str]:
    """The page's headings and bold lead-ins, without their code and emphasis marks."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    found = HEADING.findall(text) + BOLD_LEAD.findall(text)
    return [re.sub(r"[`*]", "", s).strip() for s in found]


def names(section: str, titles: list[str]) -> bool:
    return any(t == section or (t.startswith(section) and not t[len(section)].isalnum())
               for t in titles)


def test_there_are_references_to_check():
    assert len(list(references())) > 20


def test_every_section_named_from_the_sources_exists():
    broken = []
    cache = {}
    for where, page, section in references():
        path = ROOT / page
        if not path.exists():
            broken.append(f"{where}: {page}: no such page")
            continue
        if page not in cache:
            cache[page] = sections(path)
        if not names(section, cache[page]):
            broken.append(f'{where}: {page} has no section "{section}"')
    assert broken == []

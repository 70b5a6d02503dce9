"""MkDocs hooks for the docs site (tools/docs/mkdocs.yml): make the Mettle lexer known to
Pygments under the name `mettle`, so ```mettle blocks are highlighted like any language.

Pygments finds lexers through its name table (or installed entry points); adding the
lexer to the table works from a plain checkout and from the Pants sandbox alike.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def on_startup(**_kwargs) -> None:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from pygments.lexers import _mapping

    from tools.docs.mettle_lexer import MettleLexer
    _mapping.LEXERS["MettleLexer"] = ("tools.docs.mettle_lexer", MettleLexer.name,
                                      tuple(MettleLexer.aliases),
                                      tuple(MettleLexer.filenames),
                                      tuple(MettleLexer.mimetypes))


SECTIONS = {"Tutorials": "tutorial", "Reference": "reference", "Internals": "internals"}


def on_config(config, **_kwargs):
    """mkdocs.yml's nav orders the pages it names; a page added to a section's folder later
    (docs/reference/NEW.md) joins the end of that section instead of falling out of the
    site's navigation."""
    docs = Path(config["docs_dir"])
    for entry in config["nav"] or ():
        for title, pages in entry.items():
            folder = SECTIONS.get(title)
            if folder is None or not isinstance(pages, list):
                continue
            listed = {p if isinstance(p, str) else next(iter(p.values())) for p in pages}
            for page in sorted((docs / folder).glob("*.md")):
                rel = f"{folder}/{page.name}"
                if rel not in listed:
                    pages.append(rel)
    return config


# A fence's attributes (```mettle file=k.mettle spirv) tell tests/docs how to check the
# block; the site shows only the language, which is all the highlighter understands.
FENCE_ATTRIBUTES = re.compile(r"^(\s*```+)([\w+-]+)[ \t]+[^`\n]*$", re.M)


def on_page_markdown(markdown: str, **_kwargs) -> str:
    return FENCE_ATTRIBUTES.sub(r"\1\2", markdown)

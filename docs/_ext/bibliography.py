"""A small Sphinx directive that lists the entries of a BibTeX file (no sphinxcontrib-bibtex needed).

``.. bibliography-list:: references.bib`` renders one paragraph per entry, in file order, each with an
anchor named after its key (``#dayi25``): the key, the authors, the title, the venue, the year and what
popdyn implements from it (the entry's ``note``). Only the flat ``key = {value}`` syntax of
``docs/references.bib`` is understood; braces that protect capitals are dropped.
"""
from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Directive, directives

_ENTRY = re.compile(r"@(\w+)\s*\{\s*([^,\s]+)\s*,")
_FIELD = re.compile(r"(\w+)\s*=\s*")
_ACCENT = re.compile(r"\\(['\"`^~])\{?([A-Za-z])\}?")
_COMBINING = {"'": "\u0301", '"': "\u0308", "`": "\u0300", "^": "\u0302", "~": "\u0303"}


def _latex_accents(s):
    """``\\'a`` -> ``\u00e1`` and the like (the only LaTeX in the file's fields)."""
    return _ACCENT.sub(lambda m: unicodedata.normalize("NFC", m.group(2) + _COMBINING[m.group(1)]), s)


def _braced(text, i):
    """The text inside the braces opening at ``text[i]`` and the index after the closing brace."""
    depth, j = 0, i
    while j < len(text):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[i + 1:j], j + 1
        j += 1
    raise ValueError(f"unbalanced braces after offset {i}")


def parse_bib(text):
    """``[(type, key, {field: value})]`` of a BibTeX file, in file order (``%`` comment lines skipped)."""
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("%"))
    out = []
    for m in _ENTRY.finditer(text):
        body, _ = _braced(text, text.index("{", m.start()))
        body = body[body.index(",") + 1:]
        fields, i = {}, 0
        while True:
            f = _FIELD.search(body, i)
            if f is None:
                break
            j = f.end()
            if body[j] == "{":
                value, i = _braced(body, j)
            else:
                end = body.find(",", j)
                value, i = body[j:end if end >= 0 else len(body)], (end if end >= 0 else len(body))
            value = _latex_accents(value)
            fields[f.group(1).lower()] = " ".join(value.replace("{", "").replace("}", "").split())
        out.append((m.group(1).lower(), m.group(2), fields))
    return out


def _authors(s):
    names = [a.strip() for a in s.split(" and ")]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


class BibliographyList(Directive):
    required_arguments = 1
    has_content = False

    def run(self):
        env = self.state.document.settings.env
        rel, path = env.relfn2path(directives.path(self.arguments[0]))
        env.note_dependency(rel)
        result = []
        for kind, key, f in parse_bib(Path(path).read_text(encoding="utf-8")):
            section = nodes.paragraph(ids=[nodes.make_id(key)])
            section += nodes.strong(text=f"[{key}]")
            section += nodes.Text(" ")
            if "author" in f:
                section += nodes.Text(_authors(f["author"]) + ". ")
            section += nodes.emphasis(text=f.get("title", "") + ".")
            venue = f.get("booktitle") or f.get("journal") or f.get("school") or ""
            parts = [venue] if venue else []
            if f.get("series"):
                parts.append(f["series"])
            if f.get("volume"):
                parts.append(f"vol. {f['volume']}")
            if f.get("pages"):
                parts.append("pp. " + f["pages"].replace("--", "\u2013"))
            parts.append(f.get("year", ""))
            section += nodes.Text(" " + ", ".join(p for p in parts if p) + ".")
            if f.get("eprint"):
                url = f"https://arxiv.org/abs/{f['eprint']}"
                section += nodes.Text(" ")
                section += nodes.reference(text=f"arXiv:{f['eprint']}", refuri=url)
                section += nodes.Text(".")
            if f.get("note"):
                section += nodes.Text(" ")
                section += nodes.emphasis(text="In popdyn: " + f["note"] + ".")
            result.append(section)
        return result


def setup(app):
    app.add_directive("bibliography-list", BibliographyList)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

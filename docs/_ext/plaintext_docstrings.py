"""Render popdyn's docstrings, written as plain text for ``help()``, as reStructuredText without surprises.

popdyn's docstrings write mathematics as plain text (``|m| <= 1``, ``||W||_F``) where reStructuredText reads
``|...|`` as a substitution reference; the package defines no substitutions and no tables, so every bare ``|``
outside inline literals, roles and literal or math blocks is an absolute value and is escaped here. Section
titles in module docstrings (``Public names`` followed by dashes) become rubrics, so that they do not join the
page's table of contents nor clash between pages. Connected after numpydoc, on the reST it produces.
"""
from __future__ import annotations

import re

# inline literals, roles with their content, interpreted text, and a bare pipe (group 1)
_INLINE = re.compile(r"``.+?``|:[\w:.+-]+:`[^`]*`|`[^`]+`_{0,2}|\\.|(\|)", re.S)
_UNDERLINE = re.compile(r"^\s*([-=~^\"'`#*+])\1{2,}\s*$")


def _escape(text):
    return _INLINE.sub(lambda m: "\\|" if m.group(1) else m.group(0), text)


_RAW_DIRECTIVES = {"math", "code", "code-block", "sourcecode", "highlight", "parsed-literal", "testcode", "doctest"}
_DIRECTIVE = re.compile(r"^\.\.\s+([\w-]+)::")


def _indent(line):
    return len(line) - len(line.lstrip())


def _raw_lines(lines):
    """Flags of the lines that reST does not parse inline: literal blocks (after ``::``), the bodies of
    ``.. math::`` and code directives, directive lines themselves, and doctest blocks."""
    n, raw, i = len(lines), [False] * len(lines), 0
    while i < n:
        s = lines[i].strip()
        if s.startswith(">>>"):
            while i < n and lines[i].strip():
                raw[i] = True
                i += 1
            continue
        d = _DIRECTIVE.match(s)
        if d:
            raw[i] = True
        if (d and d.group(1) in _RAW_DIRECTIVES) or (not d and s.endswith("::")):
            indent, i = _indent(lines[i]), i + 1
            while i < n and (not lines[i].strip() or _indent(lines[i]) > indent):
                raw[i] = True
                i += 1
            continue
        i += 1
    return raw


def escape_pipes(lines):
    """The lines with every bare ``|`` of running text escaped."""
    out, run = [], []
    for line, raw in zip(lines, _raw_lines(lines)):
        if raw:
            out += _escape("\n".join(run)).split("\n") if run else []
            out.append(line)
            run = []
        else:
            run.append(line)
    return out + (_escape("\n".join(run)).split("\n") if run else [])


def section_titles_to_rubrics(lines):
    out, i = [], 0
    while i < len(lines):
        if (i + 1 < len(lines) and lines[i].strip() and not lines[i].lstrip().startswith("..")
                and _UNDERLINE.match(lines[i + 1]) and len(lines[i + 1].strip()) >= len(lines[i].strip())):
            indent = lines[i][:len(lines[i]) - len(lines[i].lstrip())]
            out += [f"{indent}.. rubric:: {lines[i].strip()}", ""]
            i += 2
            continue
        out.append(lines[i])
        i += 1
    return out


def process_docstring(app, what, name, obj, options, lines):
    new = escape_pipes(lines)
    if what == "module":
        new = section_titles_to_rubrics(new)
    lines[:] = new


def setup(app):
    app.connect("autodoc-process-docstring", process_docstring, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

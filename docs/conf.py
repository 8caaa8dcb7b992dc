"""Sphinx configuration of popdyn's documentation site.

Build it with ``python -m sphinx -W -b html docs docs/_build`` (``pip install -e '.[docs]'``). The gallery
(``docs/gallery/``) is executed only when the environment variable ``POPDYN_DOCS_GALLERY`` is set to a
non-empty value other than ``0``; otherwise its pages show the code without running it, so the site builds
in a minute or two.
"""
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))          # the popdyn in this checkout, installed or not
sys.path.insert(0, str(HERE / "_ext"))

import popdyn  # noqa: E402

project = "popdyn"
author = "popdyn contributors"
copyright = "popdyn contributors"
release = version = popdyn.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "bibliography",
    "plaintext_docstrings",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "references.bib", "gallery/GALLERY_HEADER.rst", "**/README.md",
                    "Thumbs.db", ".DS_Store"]

# Markdown pages (myst-parser): $...$ and $$...$$ math, header anchors for [text](#heading) links.
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist", "attrs_inline"]
myst_heading_anchors = 4
myst_dmath_double_inline = True

# API reference: autodoc + numpydoc. torch is optional and never needed to document the theory.
autodoc_mock_imports = ["torch"]
autodoc_default_options = {"members": True, "member-order": "bysource"}
autodoc_typehints = "none"
autosummary_generate = False
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks = set()


# Gallery (sphinx-gallery): executed only with POPDYN_DOCS_GALLERY set.
_run_gallery = os.environ.get("POPDYN_DOCS_GALLERY", "") not in ("", "0")
os.environ.setdefault("MPLBACKEND", "Agg")
sphinx_gallery_conf = {
    "examples_dirs": "gallery",
    "gallery_dirs": "auto_gallery",
    "filename_pattern": r"plot_",
    "plot_gallery": _run_gallery,
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "min_reported_time": 1,
    "write_computation_times": _run_gallery,
    "show_signature": False,
}

html_theme = "furo"
html_title = f"popdyn {release}"
html_static_path = []
html_show_sourcelink = False

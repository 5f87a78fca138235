"""Sphinx configuration of the course site (`make site`): tooling, introduced in no notebook.

The source folder is the repository root (docs/build.py: `sphinx -c docs . OUT/html`), so the README's links
(`notebooks/01_patches.ipynb`, `benchmarks/README.md`) resolve as they do on GitHub; `include_patterns` picks the
pages: the README and its two neighbours, the ten notebooks (rendered from their committed outputs, never
re-executed) and docs/ (the front page and the API reference, generated from the package's docstrings).

Offline: MathJax 3 is copied into the site from the `django-static-mathjax` wheel (its files only; no Django), so
no page loads anything from another host, at build time or when read.

For a reader, two changes made while building and two small files of our own (docs/_static):
- the notebooks as they render, not as they are stored: the set-up cell (for Colab; it does nothing on a course
  machine) is removed from the page, and the test markers (`# NBVAL_IGNORE_OUTPUT`, `# profile-independent: ...`)
  are taken out of the code shown (`_notebook_for_readers`; the notebook files are not changed);
- the docstrings' notebook names (`Introduced in 03_transformer_encoder.ipynb.`) become links to those pages;
- minivit.css wraps long code lines in the content column; minivit.js makes every figure open at its full size over
  the page on a click (Escape or a click closes it; a ctrl-click opens the image file).
"""

import json
import re
import shutil
from pathlib import Path

import mathjax  # the django-static-mathjax package: MathJax's own files under static/mathjax/es5

import minivit

ROOT = Path(__file__).resolve().parents[1]
MATHJAX = Path(mathjax.__file__).resolve().parent / "static" / "mathjax" / "es5"

project = "minivit"
author = "the minivit authors"
copyright = "the minivit authors, MIT licence"
release = version = minivit.__version__

root_doc = "docs/index"
include_patterns = ["README.md", "benchmarks/README.md", "data/README.md", "notebooks/*.ipynb", "docs/**"]
# Folders never walked (a prepared data/ may hold many files; the environment holds thousands).
exclude_patterns = [".venv", "docs/_extra", "docs/_static", "**/.ipynb_checkpoints", "_site", "_build", "build", "dist",
                    "assignments", "data/cache", "data/checkpoints*", "data/fashion-mnist", "data/cifar*",
                    "data/imagenette*"]

extensions = [
    "myst_nb",  # .ipynb and .md pages (MyST markdown)
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
]

# Notebooks: the committed outputs, as they are (the notebooks' tests check them; the site never runs them).
nb_execution_mode = "off"
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3  # GitHub's heading slugs, so README links like benchmarks/README.md#results resolve

# API reference: one page per module, from the docstrings (docs/api.md's autosummary, stubs in docs/_autosummary).
autosummary_generate = True
autosummary_ignore_module_all = True  # every public member defined in the module (its __all__ may list re-exports)
# Each object once, on the page of the module that defines it (the package's __init__ re-exports many).
autodoc_default_options = {"members": True, "show-inheritance": True, "ignore-module-all": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_inherit_docstrings = False  # not nn.Module.forward's text under every module's forward
# The docstrings mark code with single backticks (`patchify`): render that as code, not as a title reference.
default_role = "code"

html_theme = "sphinx_book_theme"
html_title = "minivit: the Vision Transformer, built step by step"
html_theme_options = {
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "use_download_button": True,
}
# Light or dark as the reader's system asks (the theme reads it from the context; unset, it logs a console error).
html_context = {"default_mode": "auto"}
html_static_path = ["_static"]  # docs/_static: our CSS and JS, beside the theme's
html_css_files = ["minivit.css"]
html_js_files = ["minivit.js"]
html_extra_path = ["_extra"]  # index.html at the site's root: a redirect to docs/index.html, the front page

# MathJax 3 from the bundled copy (a path relative to _static; see _copy_mathjax).
mathjax_path = "mathjax/tex-chtml.js"


def _copy_mathjax(app, exception):
    """Put MathJax's files into the site's _static/mathjax (all of es5: the menu's accessibility options load
    more of them on demand)."""
    if exception is None and app.builder.format == "html":
        shutil.copytree(MATHJAX, Path(app.outdir) / "_static" / "mathjax", dirs_exist_ok=True)


BULLET = re.compile(r"([-*•]|\d+[.)]) ")  # the start of a list item


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def plain_text_to_rst(lines: list[str]) -> list[str]:
    """The package's docstrings are plain text written for `help()`; make them valid reStructuredText, wording
    untouched. An indented run after a blank line (a code example, a shape diagram) becomes a preformatted block;
    a hanging indent (a continuation right under a line) joins its paragraph; a list right under a sentence
    gets the blank line reST needs before it (and after it); a closing backtick followed by a letter
    (`Block`s) is escaped."""
    out: list[str] = []
    blank = True  # the previous line was blank (or there was none)
    literal = None  # indentation the current preformatted block must exceed, or None outside one
    para, body, is_list = 0, 0, False  # current paragraph: its first line's indent, its text's indent, a list item?
    text = re.sub(r"`[^`]+`(?=(\w?))", lambda m: m.group(0) + ("\\ " if m.group(1) else ""), "\n".join(lines))
    for raw in text.split("\n"):
        line = raw.rstrip()
        if not line.strip():
            out.append("")
            blank = True
            continue
        i = _indent(line)
        if literal is not None:
            if i > literal:
                out.append(line)
                blank = False
                continue
            literal = None
            if not blank:
                out.append("")
                blank = True
        bullet = BULLET.match(line.strip())
        if line.lstrip().startswith(".. "):  # reST's own explicit markup (a directive): its body is left alone
            out += ([] if blank else [""]) + [line]
            literal, blank = i, False
            continue
        if blank:
            if out and i > para and not out[-1 - (out[-1] == "")].rstrip().endswith("::") and any(out):
                out += [" " * para + ".. code-block:: none", "", line]
                literal = para
            else:
                out.append(line)
                para, is_list = i, bool(bullet)
                body = i + (bullet.end() if bullet else 0)
        elif bullet and (not is_list or i <= para):
            if not is_list:
                out.append("")  # a list right under a sentence
            out.append(line)
            para, body, is_list = i, i + bullet.end(), True
        elif i > body:
            out.append(" " * body + line.strip())  # a hanging indent: part of the paragraph above
        elif is_list and i < body:
            out += ["", line]  # prose right under a list item
            para, body, is_list = i, i, False
        else:
            out.append(line)
        blank = False
    return out


SETUP_CELL = "minivit-setup"  # the set-up cell's id (.ci/sync_first_cell.py)
MARKER = re.compile(r"^[ \t]*#[ \t]*(NBVAL_[A-Z_]+|profile-independent:.*)$\n?", re.M)  # a whole line: a test marker


def notebook_for_readers(text: str) -> str:
    """A notebook's JSON as the site renders it: the set-up cell tagged `remove-cell` (myst-nb leaves it out of
    the page) and the test markers' lines removed from every code cell's source. Outputs are untouched."""
    nb = json.loads(text)
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        if cell.get("id") == SETUP_CELL:
            tags = cell.setdefault("metadata", {}).setdefault("tags", [])
            tags.append("remove-cell")
        source = "".join(cell["source"])
        cell["source"] = MARKER.sub("", source)
    return json.dumps(nb)


def _notebook_for_readers(app, docname, source):
    if app.env.doc2path(docname).suffix == ".ipynb":
        source[0] = notebook_for_readers(source[0])


NOTEBOOK = re.compile(r"(?<![\w/.`-])(\d\d_\w+)\.ipynb(?![\w/`-])")  # 03_x.ipynb, not in a path or a word
INLINE_LITERAL = re.compile(r"(``.+?``|`[^`]+`)")


def link_notebooks(lines: list[str]) -> list[str]:
    """reST lines with each notebook's file name (`03_transformer_encoder.ipynb`, of a notebook that exists) as a
    link to its page; names in code (inline literals, preformatted blocks) stay text."""
    def link(m: re.Match) -> str:
        if not (ROOT / "notebooks" / f"{m.group(1)}.ipynb").is_file():
            return m.group(0)
        return f":doc:`{m.group(1)}.ipynb </notebooks/{m.group(1)}>`"

    out, literal = [], None  # literal: the indentation a preformatted block's lines exceed, or None outside one
    for line in lines:
        if literal is not None and (not line.strip() or _indent(line) > literal):
            out.append(line)
            continue
        literal = None
        if line.lstrip().startswith(".. ") or line.rstrip().endswith("::"):
            literal = _indent(line)
        parts = INLINE_LITERAL.split(line)
        out.append("".join(part if i % 2 else NOTEBOOK.sub(link, part) for i, part in enumerate(parts)))
    return out


def _docstring_to_rst(app, what, name, obj, options, lines):
    lines[:] = link_notebooks(plain_text_to_rst(lines))


def setup(app):
    app.connect("source-read", _notebook_for_readers)
    app.connect("autodoc-process-docstring", _docstring_to_rst)
    app.connect("build-finished", _copy_mathjax)

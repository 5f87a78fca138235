"""The course site (`make site`): built from scratch with warnings as errors, then every page opened in Chromium.

Tooling test. One build (docs/build.py, as `make site`) and one pass of headless Chromium over every page of it,
served from 127.0.0.1; the tests below read what that pass saw. Every page loads with no console error and
nothing from another host (MathJax is bundled), every equation is typeset (no raw `$$` or `\\(` left in the text,
no MathJax error), every notebook page shows as many figures as its notebook has image outputs, every internal
link (and its #anchor) resolves, and links to notebooks point to their pages, not to .ipynb files.

For a reader (issue 32): a notebook page starts with its title (the Colab set-up cell and the test markers are not
shown), no code block is wider than the content column (long lines wrap), the API pages' notebook names are links,
and, in screenshots taken at a desktop width, the widest figure of notebook 08 opens at its full size on a click and
the longest code line of the notebooks wraps in its cell.

Skipped, saying why, where the site's tools (the [docs] extra, in [dev]) or a system Chromium are missing:
Playwright drives the machine's Chromium and downloads no browser (set MINIVIT_CHROMIUM to its path if it is not
`chromium` on PATH); with MINIVIT_REQUIRE_BROWSER=1 (CI) it fails instead (tests/browser.py). An integration test
(`make integration`). MINIVIT_SITE_SCREENSHOTS=DIR saves screenshots of a few pages there.
"""

import contextlib
import functools
import importlib.util
import json
import os
import subprocess
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from tests.browser import CHROMIUM, CHROMIUM_ARGS, browser_marks

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
TOOLS = ("sphinx", "myst_nb", "sphinx_book_theme", "mathjax", "playwright")
# The pages README links to (moved out of it, issue 32): markdown in docs/, rendered as pages of the site.
PAGES = ["install", "profiles", "gpu", "package", "zoo", "results", "instructors", "site"]
REDIRECTS = {"index.html": "docs/index.html"}  # the site's root page only sends the browser to the front page
SCREENSHOTS = ["docs/index.html", "README.html", "notebooks/01_patches.html", "notebooks/03_transformer_encoder.html",
               "docs/_autosummary/minivit.attention.html"]

# Integration (make integration); skipped, saying why, or failed under MINIVIT_REQUIRE_BROWSER=1, without the
# tools or Chromium (tests/browser.py).
pytestmark = [pytest.mark.integration,
              *browser_marks("the site's browser test", TOOLS,
                             "pip install -e '.[docs]' (make install installs them with [dev])")]

# Run in each page once it has loaded (and MathJax has typeset it): what the tests below check.
INSPECT = """async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
  await document.fonts.ready;  // MathJax's fonts too: none may be cut off by the next page's load
  const skip = 'pre, code, script, style, textarea, mjx-container, .highlight';
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const raw = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.textContent;
    if (/\\$\\$|\\\\\\(|\\\\\\[|\\\\begin\\{/.test(text) && !node.parentElement.closest(skip)) {
      raw.push(text.trim().slice(0, 120));
    }
  }
  const maths = [...document.querySelectorAll('.math')];
  const article = document.querySelector('article') || document.body;
  const bare = [];  // notebook file names in the text that are not links (nor code)
  const words = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
  for (let node = words.nextNode(); node; node = words.nextNode()) {
    if (!node.parentElement.closest('a, pre, code, script')) {
      bare.push(...(node.textContent.match(/\\b\\d\\d_\\w+\\.ipynb\\b/g) || []));
    }
  }
  const longest = (text) => text.split('\\n').reduce((a, b) => (a.length >= b.length ? a : b), '');
  return {
    first: (article.querySelector('h1, div.cell') || {}).tagName || '',
    markers: article.innerText.match(/NBVAL_[A-Z_]+|# profile-independent|MINIVIT_REPO/g) || [],
    bare_notebooks: bare,
    wide_code: [...article.querySelectorAll('pre')].filter(p => !p.closest('.cell_output')
      && p.scrollWidth > p.clientWidth + 1).map(p => longest(p.textContent).slice(0, 100)),
    raw,
    math: maths.length,
    typeset: maths.filter(m => m.querySelector('mjx-container')).length,
    math_errors: document.querySelectorAll('mjx-merror').length,
    images: [...document.querySelectorAll('.cell_output img')].map(
      i => ({src: i.getAttribute('src'), ok: i.complete && i.naturalWidth > 0})),
    links: [...document.querySelectorAll('a[href]')].map(
      a => ({href: a.href, raw: a.getAttribute('href'), content: !!a.closest('article')})),
    ids: [...document.querySelectorAll('[id]')].map(e => e.id),
    title: document.title,
  };
}"""


NOTHING = {"raw": [], "math": 0, "typeset": 0, "math_errors": 0, "images": [], "links": [], "ids": [], "title": "",
           "first": "", "markers": [], "bare_notebooks": [], "wide_code": []}


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):  # no line per request in the test output
        pass


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site, built as `make site` builds it, with warnings as errors."""
    out = tmp_path_factory.mktemp("site")
    run = subprocess.run([sys.executable, str(ROOT / "docs" / "build.py"), str(out)], capture_output=True, text=True)
    assert run.returncode == 0, f"the site's build failed (warnings are errors):\n{run.stdout}\n{run.stderr}"
    return out / "html"


@contextlib.contextmanager
def _served(site: Path):
    """The site served from 127.0.0.1 while the block runs; yields its address."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()


def _open(pw, base: str, current: dict):
    """(browser, page): Chromium at a desktop width. Nothing may come from another host: such requests are refused
    and recorded in current["outside"]."""
    browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(base) else (
        current["outside"].append(route.request.url), route.abort()))
    return browser, context.new_page()


@pytest.fixture(scope="module")
def seen(site: Path) -> dict:
    """{page path: what Chromium saw on it} for every HTML page of the site, served from 127.0.0.1."""
    with _served(site) as base:
        return _see(site, base)


def _see(site: Path, base: str) -> dict:
    from playwright.sync_api import sync_playwright

    shots = os.environ.get("MINIVIT_SITE_SCREENSHOTS")
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html")
                   if not p.relative_to(site).as_posix().startswith("_static/"))  # the theme's templates are no pages
    seen, current = {}, {}
    with sync_playwright() as pw:
        browser, page = _open(pw, base, current)
        page.on("console", lambda m: m.type == "error" and current["errors"].append(f"console: {m.text}"))
        page.on("pageerror", lambda e: current["errors"].append(f"uncaught: {e}"))
        page.on("requestfailed", lambda r: current["errors"].append(f"failed: {r.url} ({r.failure})"))
        page.on("response", lambda r: r.status >= 400 and current["errors"].append(f"HTTP {r.status}: {r.url}"))
        for path in pages:
            current.update(errors=[], outside=[])
            page.goto(base + path, wait_until="load")
            if path in REDIRECTS:
                page.wait_for_url(base + REDIRECTS[path])
                found = {**NOTHING, "landed": page.url.removeprefix(base)}
            else:
                found = page.evaluate(INSPECT)
            seen[path] = {**found, "errors": list(current["errors"]), "outside": list(current["outside"])}
            if shots and path in SCREENSHOTS:  # the top of the page, its first figure and display equation
                stem = Path(shots) / path.replace("/", "__")
                Path(shots).mkdir(parents=True, exist_ok=True)
                page.screenshot(path=f"{stem}.png")
                for what, selector in (("figure", ".cell_output img"), ("equation", "div.math")):
                    if page.locator(selector).count():
                        page.locator(selector).first.screenshot(path=f"{stem}.{what}.png")
        browser.close()
    return {"base": base, "root": site, "pages": seen}


def test_the_site_has_every_page(seen):
    pages = seen["pages"]
    wanted = ["index.html", "docs/index.html", "README.html", "docs/api.html", "benchmarks/README.html",
              *(f"docs/{page}.html" for page in PAGES), *(f"notebooks/{nb.stem}.html" for nb in NOTEBOOKS)]
    assert not [p for p in wanted if p not in pages], f"pages missing from the site: {[p for p in wanted if p not in pages]}"
    modules = [p for p in pages if p.startswith("docs/_autosummary/minivit.")]
    assert "docs/_autosummary/minivit.vit.html" in modules and len(modules) >= 20, f"API pages: {modules}"


def test_the_root_sends_the_browser_to_the_front_page(seen):
    assert seen["pages"]["index.html"]["landed"] == "docs/index.html"


def test_every_page_loads_without_console_errors(seen):
    errors = {path: page["errors"] for path, page in seen["pages"].items() if page["errors"]}
    assert not errors, f"{len(errors)} pages with errors: {json.dumps(errors, indent=1)[:3000]}"


def test_nothing_is_loaded_from_another_host(seen):
    outside = {path: page["outside"] for path, page in seen["pages"].items() if page["outside"]}
    assert not outside, f"pages asking another host (the site must work offline): {json.dumps(outside)[:3000]}"


def test_every_equation_renders(seen):
    pages = seen["pages"]
    raw = {path: page["raw"] for path, page in pages.items() if page["raw"]}
    assert not raw, f"TeX left in the visible text: {json.dumps(raw, indent=1)[:3000]}"
    untypeset = {path: (p["typeset"], p["math"]) for path, p in pages.items() if p["typeset"] < p["math"]}
    assert not untypeset, f"equations not typeset by MathJax (typeset, all): {untypeset}"
    errors = {path: p["math_errors"] for path, p in pages.items() if p["math_errors"]}
    assert not errors, f"MathJax errors (TeX it could not read): {errors}"
    assert sum(p["math"] for p in pages.values()) > 20, "the notebooks' equations should be on the site"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_figure_of_a_notebook_is_on_its_page(seen, notebook):
    cells = json.loads(notebook.read_text())["cells"]
    figures = sum("image/png" in out.get("data", {}) for cell in cells for out in cell.get("outputs", []))
    page = seen["pages"][f"notebooks/{notebook.stem}.html"]
    broken = [img["src"] for img in page["images"] if not img["ok"]]
    assert not broken, f"figures that did not load: {broken}"
    assert len(page["images"]) == figures, f"{len(page['images'])} figures on the page, {figures} in the notebook"


def _target(seen, href: str) -> tuple[str, str] | None:
    """(page path, fragment) of an internal link, None for a link to another host."""
    if not href.startswith(seen["base"]):
        return None
    parts = urlsplit(href)
    path = unquote(parts.path).lstrip("/")
    return (path + "index.html" if path.endswith("/") or not path else path), parts.fragment


def test_every_internal_link_resolves(seen):
    root, pages, broken = seen["root"], seen["pages"], set()
    for path, page in pages.items():
        for link in page["links"]:
            target = _target(seen, link["href"])
            if target is None:
                continue
            file, fragment = target
            if not (root / file).is_file():
                broken.add(f"{path}: {link['raw']} (no file {file})")
            elif fragment and file in pages and unquote(fragment) not in pages[file]["ids"]:
                broken.add(f"{path}: {link['raw']} (no #{fragment} in {file})")
    assert not broken, f"{len(broken)} broken links: {sorted(broken)[:40]}"


def test_links_to_notebooks_point_to_their_pages(seen):
    pages = seen["pages"]
    to_ipynb = sorted({f"{path}: {link['raw']}" for path, page in pages.items() for link in page["links"]
                       if link["content"] and urlsplit(link["raw"]).path.endswith(".ipynb")
                       and _target(seen, link["href"])})  # "Open in Colab" opens the .ipynb on another host
    assert not to_ipynb, f"links to .ipynb files instead of the notebooks' pages: {to_ipynb}"
    readme = {_target(seen, link["href"])[0] for link in pages["README.html"]["links"]
              if _target(seen, link["href"])}
    missing = [nb.stem for nb in NOTEBOOKS if f"notebooks/{nb.stem}.html" not in readme]
    assert not missing, f"the README's page does not link to these notebooks' pages: {missing}"
    missing = [page for page in PAGES if f"docs/{page}.html" not in readme]
    assert not missing, f"the README's page does not link to these pages of the site: {missing}"


def test_notebook_pages_start_with_their_title_without_setup_cell_or_test_markers(seen):
    pages = {f"notebooks/{nb.stem}.html": seen["pages"][f"notebooks/{nb.stem}.html"] for nb in NOTEBOOKS}
    not_first = {path: page["first"] for path, page in pages.items() if page["first"] != "H1"}
    assert not not_first, f"notebook pages whose first element is not their title (a code cell?): {not_first}"
    markers = {path: sorted(set(page["markers"])) for path, page in pages.items() if page["markers"]}
    assert not markers, f"the set-up cell or test markers shown to readers: {markers}"


def test_code_fits_the_content_column(seen):
    wide = {path: page["wide_code"] for path, page in seen["pages"].items() if page["wide_code"]}
    assert not wide, f"code wider than the content column (it should wrap), by page: {json.dumps(wide)[:3000]}"


def test_api_pages_link_the_notebooks_they_name(seen):
    api = {path: page for path, page in seen["pages"].items() if path.startswith("docs/_autosummary/")}
    bare = {path: page["bare_notebooks"] for path, page in api.items() if page["bare_notebooks"]}
    assert not bare, f"notebook names that are not links on API pages: {bare}"
    links = {_target(seen, link["href"])[0] for link in api["docs/_autosummary/minivit.attention.html"]["links"]
             if link["content"] and _target(seen, link["href"])}
    assert "notebooks/03_transformer_encoder.html" in links, "minivit.attention's page does not link notebook 03"


def _longest_code_line() -> tuple[str, str]:
    """(notebook stem, line): the longest line of code in the notebooks, the set-up cell left out."""
    lines = [(len(line), nb.stem, line) for nb in NOTEBOOKS for cell in json.loads(nb.read_text())["cells"][1:]
             if cell["cell_type"] == "code" for line in "".join(cell["source"]).splitlines()]
    return max(lines)[1:]


def test_screenshots_a_wide_figure_opens_at_full_size_and_a_long_code_line_wraps(site, tmp_path):
    """At a desktop width (1280 x 900): the widest figure of notebook 08 opens at its full size on a click (or fits
    the column) and closes with Escape; the longest code line of the notebooks wraps inside its cell. Screenshots:
    tmp_path/*.png (figure.png in the column, figure-full.png opened, code.png the cell)."""
    from playwright.sync_api import sync_playwright

    stem, line = _longest_code_line()
    current = {"outside": []}
    with _served(site) as base, sync_playwright() as pw:
        browser, page = _open(pw, base, current)
        page.goto(base + "notebooks/08_inspecting_vit.html", wait_until="load")
        widest = page.evaluate("""() => {
          const imgs = [...document.querySelectorAll('.cell_output img')];
          const img = imgs.reduce((a, b) => (a.naturalWidth >= b.naturalWidth ? a : b));
          img.id = 'widest-figure';
          return {natural: img.naturalWidth, shown: img.getBoundingClientRect().width};
        }""")
        figure = page.locator("#widest-figure")
        figure.scroll_into_view_if_needed()
        figure.screenshot(path=tmp_path / "figure.png")
        if widest["shown"] < widest["natural"]:  # shown smaller than it is: a click must open it at full size
            figure.click()
            full = page.locator(".minivit-lightbox img")
            full.wait_for(state="visible")
            page.wait_for_function("() => document.querySelector('.minivit-lightbox img').complete")
            opened = full.evaluate("img => img.getBoundingClientRect().width")
            page.screenshot(path=tmp_path / "figure-full.png")
            assert opened >= widest["natural"] - 0.5, (
                f"notebook 08's widest figure ({widest['natural']} px) opened {opened:.0f} px wide, shown at "
                f"{widest['shown']:.0f} px in the column")
            page.keyboard.press("Escape")
            assert page.locator(".minivit-lightbox").count() == 0, "Escape did not close the full-size figure"

        page.goto(base + f"notebooks/{stem}.html", wait_until="load")
        cells = page.locator(".cell_input pre", has_text=line.strip())
        assert cells.count() == 1, f"the cell with the longest code line of {stem} is not on its page: {line!r}"
        cells.scroll_into_view_if_needed()
        cells.screenshot(path=tmp_path / "code.png")
        box = cells.evaluate("pre => ({scroll: pre.scrollWidth, client: pre.clientWidth})")
        assert box["scroll"] <= box["client"], (
            f"{stem}: the longest code line ({len(line)} characters) overflows its cell: {box}")
        browser.close()
    assert not current["outside"], f"requests to another host: {current['outside']}"


def _conf():
    spec = importlib.util.spec_from_file_location("_site_conf", ROOT / "docs" / "conf.py")
    conf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conf)
    return conf


def test_the_site_transforms_leave_code_and_outputs_alone():
    """docs/conf.py's two changes made while building, on small inputs: notebook names in code stay text; a marker is
    removed only where it is a whole line of code; the set-up cell is tagged, no output changes."""
    conf = _conf()
    lines = ["Introduced in 03_transformer_encoder.ipynb (then 09_masked_patch_prediction.ipynb).",
             "`03_transformer_encoder.ipynb` in code, 99_no_such_notebook.ipynb, notebooks/05_scaling.ipynb",
             ".. code-block:: none", "", "   05_scaling.ipynb in a preformatted block", "after it: 06_hybrid.ipynb"]
    assert conf.link_notebooks(lines) == [
        "Introduced in :doc:`03_transformer_encoder.ipynb </notebooks/03_transformer_encoder>` "
        "(then :doc:`09_masked_patch_prediction.ipynb </notebooks/09_masked_patch_prediction>`).",
        lines[1], *lines[2:5], "after it: :doc:`06_hybrid.ipynb </notebooks/06_hybrid>`"]
    out = [{"output_type": "stream", "name": "stdout", "text": ["# NBVAL_IGNORE_OUTPUT\n"]}]
    nb = {"cells": [{"cell_type": "code", "id": "minivit-setup", "metadata": {}, "outputs": [], "source": ["x = 1"]},
                    {"cell_type": "code", "id": "a", "metadata": {}, "outputs": out,
                     "source": ["# NBVAL_IGNORE_OUTPUT\n", "print('# NBVAL_IGNORE_OUTPUT')\n",
                                "  # profile-independent: shapes only\n", "y = 2  # profile-independent: kept"]},
                    {"cell_type": "markdown", "id": "b", "metadata": {}, "source": ["# NBVAL_SKIP is prose here"]}]}
    cells = json.loads(conf.notebook_for_readers(json.dumps(nb)))["cells"]
    assert cells[0]["metadata"]["tags"] == ["remove-cell"] and cells[0]["source"] == "x = 1"
    assert cells[1]["source"] == "print('# NBVAL_IGNORE_OUTPUT')\ny = 2  # profile-independent: kept"
    assert cells[1]["outputs"] == out and cells[2] == nb["cells"][2]

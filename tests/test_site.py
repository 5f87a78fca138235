"""The course site (`make site`): built from scratch with warnings as errors, then every page opened in Chromium.

Tooling test. One build (docs/build.py, as `make site`) and one pass of headless Chromium over every page of it,
served from 127.0.0.1; the tests below read what that pass saw. Every page loads with no console error and
nothing from another host (MathJax is bundled), every equation is typeset (no raw `$$` or `\\(` left in the text,
no MathJax error), every notebook page shows as many figures as its notebook has image outputs, every internal
link (and its #anchor) resolves, and links to notebooks point to their pages, not to .ipynb files.

Skipped, saying why, where the site's tools (the [docs] extra, in [dev]) or a system Chromium are missing:
Playwright drives the machine's Chromium and downloads no browser (set MINIVIT_CHROMIUM to its path if it is not
`chromium` on PATH). MINIVIT_SITE_SCREENSHOTS=DIR saves screenshots of a few pages there.
"""

import functools
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
TOOLS = ("sphinx", "myst_nb", "sphinx_book_theme", "mathjax", "playwright")
MISSING = [name for name in TOOLS if importlib.util.find_spec(name) is None]
CHROMIUM = os.environ.get("MINIVIT_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
# As root in a container, without the sandbox; no background traffic (this machine has no network).
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-sync",
                 "--disable-background-networking", "--disable-component-update"]
# The pages README links to (moved out of it, issue 32): markdown in docs/, rendered as pages of the site.
PAGES = ["install", "profiles", "gpu", "package", "zoo", "results", "instructors", "site"]
REDIRECTS = {"index.html": "docs/index.html"}  # the site's root page only sends the browser to the front page
SCREENSHOTS = ["docs/index.html", "README.html", "notebooks/01_patches.html", "notebooks/03_transformer_encoder.html",
               "docs/_autosummary/minivit.attention.html"]

pytestmark = [
    pytest.mark.skipif(bool(MISSING), reason=f"the site's tools are not installed ({', '.join(MISSING)}): "
                                             "pip install -e '.[docs]' (make install installs them with [dev])"),
    pytest.mark.skipif(CHROMIUM is None, reason="no system Chromium for the site's browser test (apt-get install "
                                                "chromium, or set MINIVIT_CHROMIUM=/path/to/chromium)"),
]

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
  return {
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


NOTHING = {"raw": [], "math": 0, "typeset": 0, "math_errors": 0, "images": [], "links": [], "ids": [], "title": ""}


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


@pytest.fixture(scope="module")
def seen(site: Path) -> dict:
    """{page path: what Chromium saw on it} for every HTML page of the site, served from 127.0.0.1."""
    from playwright.sync_api import sync_playwright

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    shots = os.environ.get("MINIVIT_SITE_SCREENSHOTS")
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html")
                   if not p.relative_to(site).as_posix().startswith("_static/"))  # the theme's templates are no pages
    seen = {}
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            current = {}
            # Nothing may come from another host: such requests are refused and recorded.
            context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(base) else (
                current["outside"].append(route.request.url), route.abort()))
            page = context.new_page()
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
    finally:
        server.shutdown()
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
                       if link["content"] and urlsplit(link["raw"]).path.endswith(".ipynb")})
    assert not to_ipynb, f"links to .ipynb files instead of the notebooks' pages: {to_ipynb}"
    readme = {_target(seen, link["href"])[0] for link in pages["README.html"]["links"]
              if _target(seen, link["href"])}
    missing = [nb.stem for nb in NOTEBOOKS if f"notebooks/{nb.stem}.html" not in readme]
    assert not missing, f"the README's page does not link to these notebooks' pages: {missing}"
    missing = [page for page in PAGES if f"docs/{page}.html" not in readme]
    assert not missing, f"the README's page does not link to these pages of the site: {missing}"

"""Grading offline (assignments/): nbgrader's Formgrader and its feedback files load nothing from another host.

Tooling test. Before the kit configured it (assignments/nbgrader_config.py, assignments/mathjax_templates/), both
loaded MathJax from cdnjs; offline the Formgrader's page stopped at "MathJax is not defined", its score boxes stayed
empty and a score typed for a written answer was not saved, and the feedback's equations stayed raw TeX.

In a course folder of its own (assignment A with the kit's configuration), a Jupyter server started there, as an
instructor starts `jupyter lab` in assignments/ (here `jupyter server`: the same server extensions, without the lab
page), generates the assignment and autogrades the instructor's source, submitted as a student's, through the
Formgrader's own API (what its Generate and Autograde buttons call). Headless Chromium, with every request to
another host refused and recorded, opens the Formgrader's page for that submission: nothing may come from another
host, no script may fail, MathJax 2 must typeset the equations, every score box must be wired to its grade, and a
score typed for the written answer (grade id `written_answer`) must reach the gradebook. Then
`nbgrader generate_feedback`: the feedback file must name no remote MathJax and, opened from disk as a student
opens it, typeset its equations with nothing from another host.

Skipped, saying why, where nbgrader, its MathJax packages (jupyter-server-mathjax, django-static-mathjax),
Playwright or a system Chromium are missing ([dev] installs the packages; Playwright drives the machine's Chromium
and downloads no browser: set MINIVIT_CHROMIUM to its path if it is not `chromium` on PATH); with
MINIVIT_REQUIRE_BROWSER=1 (CI) it fails instead (tests/browser.py). An integration test (`make integration`).
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.browser import CHROMIUM, CHROMIUM_ARGS, browser_marks

ROOT = Path(__file__).resolve().parents[1]
KIT = ROOT / "assignments"
NAME = "a_patches_and_attention"  # assignment A: the fastest to autograde
STUDENT = "offline"
WRITTEN = "written_answer"  # the grade id of A's written answer, graded by hand
TOOLS = ("nbgrader", "jupyter_server", "jupyter_server_mathjax", "mathjax", "playwright")

# Integration (make integration); skipped, saying why, or failed under MINIVIT_REQUIRE_BROWSER=1, without the
# tools or Chromium (tests/browser.py).
pytestmark = [pytest.mark.integration,
              *browser_marks("the Formgrader's browser test", TOOLS, "pip install -e '.[dev]'")]

# Text of a page's rendered markdown still holding TeX delimiters (MathJax left it untypeset); `skip` names what
# may hold them: code, MathJax's own output and the TeX it keeps in <script> elements.
RAW_TEX = """(skip) => {
  const raw = [];
  for (const cell of document.querySelectorAll('.text_cell_render')) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (/\\$|\\\\\\(|\\\\\\[|\\\\begin\\{/.test(node.textContent) && !node.parentElement.closest(skip)) {
        raw.push(node.textContent.trim().slice(0, 120));
      }
    }
  }
  return raw;
}"""
# The Formgrader's page once its script has run: formgrade.js sets MathJax.loaded when MathJax 2 has typeset the
# page, and formgrader.loaded at the end of its init (which stopped at "MathJax is not defined" before).
FORMGRADER_READY = ("() => window.MathJax && MathJax.loaded === true && window.formgrader && formgrader.loaded"
                    " && formgrader.grades.loaded")


def _env(tmp: Path) -> dict:
    """This environment's tools first on PATH (nbgrader runs `alembic`, the server its kernels); Jupyter's user
    config and runtime files in `tmp`, so that only the kit's configuration applies and nothing is left behind."""
    return {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
            "JUPYTER_CONFIG_DIR": str(tmp / "jupyter_config"), "JUPYTER_RUNTIME_DIR": str(tmp / "jupyter_runtime")}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A Jupyter server (with the Formgrader) started in a course folder holding assignment A, the kit's
    configuration and the instructor's source submitted as STUDENT's: {course, base (its URL), token, env}."""
    tmp = tmp_path_factory.mktemp("grading")
    course = tmp / "course"
    shutil.copytree(KIT / "source" / NAME, course / "source" / NAME)
    shutil.copytree(KIT / "mathjax_templates", course / "mathjax_templates")
    shutil.copy(KIT / "nbgrader_config.py", course)
    submitted = course / "submitted" / STUDENT / NAME
    submitted.mkdir(parents=True)
    shutil.copy(course / "source" / NAME / f"{NAME}.ipynb", submitted)

    env = _env(tmp)
    token = os.urandom(16).hex()
    log = (tmp / "server.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "server", "--no-browser", "--allow-root", "--ServerApp.ip=127.0.0.1",
         "--ServerApp.port=0", f"--ServerApp.root_dir={course}", f"--IdentityProvider.token={token}"],
        cwd=course, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        # The server writes its address (with the port it was given) to the runtime folder once it listens.
        info, base = Path(env["JUPYTER_RUNTIME_DIR"]) / f"jpserver-{proc.pid}.json", None
        deadline = time.monotonic() + 180
        while base is None:
            said = (tmp / "server.log").read_text()[-3000:]
            assert proc.poll() is None, f"the Jupyter server stopped:\n{said}"
            assert time.monotonic() < deadline, f"no Jupyter server after 180 s:\n{said}"
            try:
                base = json.loads(info.read_text())["url"].rstrip("/")
            except (FileNotFoundError, json.JSONDecodeError):  # not written yet, or being written
                time.sleep(0.2)
        yield {"course": course, "base": base, "token": token, "env": env}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _formgrader_api(server: dict, path: str) -> None:
    """POST to the Formgrader's API (as its buttons do); fail with nbgrader's log if the step failed."""
    request = urllib.request.Request(f"{server['base']}/formgrader/api/{path}", data=b"", method="POST",
                                     headers={"Authorization": f"token {server['token']}"})
    with urllib.request.urlopen(request, timeout=600) as response:
        result = json.loads(response.read())
    assert result["success"], \
        f"the Formgrader's {path} failed:\n{result.get('error', '')}\n{result.get('log', '')[-3000:]}"


@pytest.fixture(scope="module")
def autograded(server) -> dict:
    """The server's course with assignment A generated and STUDENT's submission autograded."""
    _formgrader_api(server, f"assignment/{NAME}/assign")
    _formgrader_api(server, f"submission/{NAME}/{STUDENT}/autograde")
    return server


@pytest.fixture(scope="module")
def browser(server):
    """Headless Chromium in which every request to a host other than the server's is refused and recorded:
    {page, outside (the URLs refused), errors (uncaught errors, console errors, failed requests)}."""
    from playwright.sync_api import sync_playwright

    seen = {"outside": [], "errors": []}

    def route(route):
        url = route.request.url
        if url.startswith(server["base"] + "/") or url.startswith("file:"):
            route.continue_()
        else:
            seen["outside"].append(url)
            route.abort()

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = chromium.new_context(viewport={"width": 1280, "height": 900})
        context.route("**/*", route)
        page = context.new_page()
        page.on("pageerror", lambda e: seen["errors"].append(f"uncaught: {e}"))
        page.on("console", lambda m: m.type == "error" and seen["errors"].append(f"console: {m.text}"))
        page.on("requestfailed", lambda r: seen["errors"].append(f"failed: {r.resource_type} {r.url} ({r.failure})"))
        page.on("response", lambda r: r.status >= 400 and seen["errors"].append(
            f"HTTP {r.status}: {r.request.resource_type} {r.url}"))
        yield {"page": page, **seen}
        chromium.close()


def _wait(page, condition: str, what: str, seen: dict, timeout_s: float = 120) -> None:
    """Wait until `condition` (a JavaScript function) is true in the page; fail with what the page saw if not."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(condition, timeout=timeout_s * 1000)
    except PlaywrightTimeout:
        pytest.fail(f"{what} not after {timeout_s} s; requests refused (other hosts): {seen['outside']}; "
                    f"errors: {seen['errors']}")


def _gradebook(course: Path):
    from nbgrader.api import Gradebook

    return Gradebook(f"sqlite:///{course / 'gradebook.db'}")


def _script_failures(errors: list[str]) -> list[str]:
    """The errors that stop a page's scripts: an uncaught error, or a script that did not load. Not fonts: MathJax 2
    probes the browser with a font at about:blank, and names TeX fonts that jupyter-server-mathjax's copy leaves out
    (it has STIX-Web, which the visible equations use) for the hidden MathML it adds for screen readers."""
    return [e for e in errors if e.startswith("uncaught:") or " script " in e or "is not defined" in e]


def test_the_formgrader_grades_offline(autograded, browser):
    course, base, page = autograded["course"], autograded["base"], browser["page"]
    with _gradebook(course) as gradebook:
        submission = gradebook.find_submission_notebook(NAME, NAME, STUDENT).id
        points = gradebook.find_grade(WRITTEN, NAME, NAME, STUDENT).max_score
    # Log in as opening JupyterLab's link with its token does (a token in the Formgrader page's own URL logs in that
    # page alone: its calls to the Formgrader's API were sent to the login page).
    page.goto(f"{base}/api/status?token={autograded['token']}")
    page.goto(f"{base}/formgrader/submissions/{submission}/", wait_until="load")
    _wait(page, FORMGRADER_READY, "the Formgrader's page (MathJax typeset, scores loaded)", browser)

    assert browser["outside"] == [], f"the Formgrader asked another host: {browser['outside']}"
    assert not _script_failures(browser["errors"]), f"script errors on the Formgrader's page: {browser['errors']}"
    typeset = page.evaluate("""async () => {
      await document.fonts.ready;
      return {
        jax: MathJax.Hub.getAllJax().map(j => j.outputJax),
        math_errors: document.querySelectorAll('.MathJax_Error, merror').length,
        fonts: [...document.fonts].filter(f => f.status === 'loaded').map(f => f.family),
        boxes: document.querySelectorAll('input.score').length,
        wired: formgrader.grade_uis.length,
      };
    }""")
    assert typeset["jax"] and set(typeset["jax"]) == {"HTML-CSS"}, f"equations typeset by MathJax: {typeset['jax']}"
    assert typeset["math_errors"] == 0, "MathJax could not read some TeX"
    # MathJax's glyphs come from the web font the server sends (STIX-Web), not from whatever the system has.
    assert any(f.startswith("STIXMathJax") for f in typeset["fonts"]), f"fonts loaded: {typeset['fonts']}"
    raw = page.evaluate(RAW_TEX, "script, code, pre, .MathJax, .MathJax_Display, .MathJax_Preview, "
                                 ".MJX_Assistive_MathML")
    assert not raw, f"TeX left untypeset on the Formgrader's page: {raw}"
    assert typeset["boxes"] >= 2 and typeset["wired"] == typeset["boxes"], \
        f"score boxes wired to their grades: {typeset['wired']} of {typeset['boxes']}"

    # Type a score for the written answer as an instructor does; leaving the box (Tab) saves it.
    score = points / 2
    box = page.locator(f"input.score#{WRITTEN}")
    with page.expect_response(lambda r: "/formgrader/api/grade/" in r.url and r.request.method == "PUT") as saved:
        box.fill(f"{score:g}")
        box.press("Tab")
    assert saved.value.ok, f"saving the score answered HTTP {saved.value.status}"
    with _gradebook(course) as gradebook:
        grade = gradebook.find_grade(WRITTEN, NAME, NAME, STUDENT)
        assert grade.manual_score == score, f"the gradebook holds {grade.manual_score}, {score} was typed"
    assert browser["outside"] == [], f"the Formgrader asked another host: {browser['outside']}"


def test_the_feedback_typesets_offline(autograded, browser):
    course, page = autograded["course"], browser["page"]
    run = subprocess.run([sys.executable, "-m", "nbgrader", "generate_feedback", NAME, "--force",
                          f"--CourseDirectory.root={course}"],
                         cwd=course, env=autograded["env"], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"nbgrader generate_feedback failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    feedback = course / "feedback" / STUDENT / NAME / f"{NAME}.html"
    html = feedback.read_text(encoding="utf-8")
    sources = re.findall(r"<script\b[^>]*\bsrc\s*=\s*[\"']([^\"']*)", html)
    assert not [s for s in sources if re.match(r"(https?:)?//", s)], f"scripts from another host: {sources}"
    assert "cdnjs" not in html and "MathJax" in html, "the feedback should carry its own MathJax"

    del browser["outside"][:], browser["errors"][:]
    page.goto(feedback.as_uri(), wait_until="load")  # from disk, as a student opens it
    _wait(page, "() => window.MathJax && MathJax.startup && MathJax.startup.document", "MathJax 3 in the feedback",
          browser)
    found = page.evaluate("""async () => {
      await MathJax.startup.promise;
      return {math: document.querySelectorAll('mjx-container').length,
              math_errors: document.querySelectorAll('mjx-merror').length};
    }""")
    assert found["math"] > 0 and found["math_errors"] == 0, f"equations typeset in the feedback: {found}"
    raw = page.evaluate(RAW_TEX, "script, code, pre, mjx-container")
    assert not raw, f"TeX left untypeset in the feedback: {raw}"
    assert browser["outside"] == [], f"the feedback asked another host: {browser['outside']}"
    assert browser["errors"] == [], f"errors in the feedback page: {browser['errors']}"

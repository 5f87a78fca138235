"""Where the browser tests (tests/test_site.py, tests/test_formgrader_offline.py) find Chromium, and what they do
without it: skip, saying why (pytest's `-rs` summary, in make's pytest lines, lists the reason); or, with
MINIVIT_REQUIRE_BROWSER=1 (set by .ci/run, which installs Chromium), fail, so that CI cannot pass without them.

Playwright drives the machine's Chromium and downloads no browser: set MINIVIT_CHROMIUM to its path if it is not
`chromium` (or `chromium-browser`) on PATH.
"""

import importlib.util
import os
import shutil

import pytest

CHROMIUM_VAR = "MINIVIT_CHROMIUM"


def find_chromium() -> str | None:
    """The path of the Chromium to drive: MINIVIT_CHROMIUM (a path or a name on PATH) when it is set, else `chromium`
    or `chromium-browser` on PATH; None when there is none (or MINIVIT_CHROMIUM names no executable)."""
    given = os.environ.get(CHROMIUM_VAR)
    if given:
        return shutil.which(given)
    return shutil.which("chromium") or shutil.which("chromium-browser")


CHROMIUM = find_chromium()
# As root in a container, without the sandbox; no background traffic (the machine may have no network).
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-sync",
                 "--disable-background-networking", "--disable-component-update"]
REQUIRE_VAR = "MINIVIT_REQUIRE_BROWSER"
MARK = "browser_unavailable"  # tests/conftest.py fails a test that carries it (registered in pyproject.toml)


def required() -> bool:
    """Whether a browser test may not skip for lack of its browser or tools (MINIVIT_REQUIRE_BROWSER=1)."""
    return os.environ.get(REQUIRE_VAR, "").strip() not in ("", "0")


def missing(tools) -> list[str]:
    """The names of `tools` (importable module names) that are not installed."""
    return [name for name in tools if importlib.util.find_spec(name) is None]


def browser_marks(what: str, tools, install: str, chromium: str | None = CHROMIUM) -> list:
    """A browser test module's `pytestmark`: nothing when `tools` are installed and Chromium is found; else a skip
    with the reason, or, when MINIVIT_REQUIRE_BROWSER=1, a mark that makes each test fail with that reason.
    `what` names the test ("the site's browser test"), `install` says how to install the missing tools."""
    reasons = []
    absent = missing(tools)
    if absent:
        reasons.append(f"{what}: its tools are not installed ({', '.join(absent)}): {install}")
    if chromium is None:
        given = os.environ.get(CHROMIUM_VAR)
        reasons.append(f"{what}: {CHROMIUM_VAR}={given} is not an executable" if given else
                       f"{what}: no system Chromium (apt-get install chromium, or set {CHROMIUM_VAR}=/path/to/it)")
    if not reasons:
        return []
    reason = "; ".join(reasons)
    if required():
        return [getattr(pytest.mark, MARK)(reason=f"{reason}; {REQUIRE_VAR}=1 forbids skipping it")]
    return [pytest.mark.skip(reason=reason)]

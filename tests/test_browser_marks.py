"""tests/browser.py: a browser test without Chromium or its tools skips, saying why; under MINIVIT_REQUIRE_BROWSER=1
(CI) it fails instead, before its fixtures run (tests/conftest.py's pytest_runtest_setup)."""

import sys

import pytest

from tests import browser
from tests import conftest

WHAT = "the demo's browser test"


def test_nothing_is_marked_when_the_tools_and_chromium_are_there(monkeypatch):
    monkeypatch.setenv(browser.REQUIRE_VAR, "1")
    assert browser.browser_marks(WHAT, ("os", "json"), "pip install it", chromium=sys.executable) == []


def test_without_them_the_test_skips_with_every_reason(monkeypatch):
    monkeypatch.delenv(browser.REQUIRE_VAR, raising=False)
    monkeypatch.delenv(browser.CHROMIUM_VAR, raising=False)
    [mark] = browser.browser_marks(WHAT, ("os", "no_such_module_for_minivit"), "pip install it", chromium=None)
    assert mark.name == "skip"
    reason = mark.kwargs["reason"]
    assert "no_such_module_for_minivit" in reason and "pip install it" in reason and "os," not in reason
    assert "no system Chromium" in reason and "apt-get install chromium" in reason and WHAT in reason


@pytest.mark.parametrize("value, required", [("1", True), ("yes", True), ("0", False), ("", False)])
def test_minivit_require_browser_turns_the_skip_into_a_failure(monkeypatch, value, required):
    monkeypatch.setenv(browser.REQUIRE_VAR, value)
    [mark] = browser.browser_marks(WHAT, ("os",), "pip install it", chromium=None)
    assert mark.name == (browser.MARK if required else "skip")
    if required:
        assert "no system Chromium" in mark.kwargs["reason"] and "MINIVIT_REQUIRE_BROWSER=1" in mark.kwargs["reason"]


class _Item:  # what pytest_runtest_setup reads of a test item
    def __init__(self, marks):
        self.marks = {m.name: m for m in marks}

    def get_closest_marker(self, name):
        return self.marks.get(name)


def test_the_hook_fails_a_marked_test_and_leaves_the_others(monkeypatch):
    monkeypatch.setenv(browser.REQUIRE_VAR, "1")
    marks = browser.browser_marks(WHAT, ("os",), "pip install it", chromium=None)
    with pytest.raises(pytest.fail.Exception, match="no system Chromium"):
        conftest.pytest_runtest_setup(_Item([m.mark for m in marks]))
    assert conftest.pytest_runtest_setup(_Item([pytest.mark.skip(reason="x").mark])) is None


def test_minivit_chromium_names_the_browser_or_none(monkeypatch):
    monkeypatch.setenv(browser.CHROMIUM_VAR, sys.executable)
    assert browser.find_chromium() == sys.executable
    monkeypatch.setenv(browser.CHROMIUM_VAR, "/nonexistent/chromium")
    assert browser.find_chromium() is None
    [mark] = browser.browser_marks(WHAT, ("os",), "pip install it", chromium=None)
    assert "MINIVIT_CHROMIUM=/nonexistent/chromium is not an executable" in mark.kwargs["reason"]

"""Tool approval in the web page: approve, edit and reject buttons, in headless Chromium.

``tenxgraph serve tests.server.approval_graph:graph`` runs in its own process;
the page shows a ``HumanApproval`` pause as the pending calls, each with its
arguments and a button per decision, and resumes the thread with them.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.server.test_web_page import (
    WebDriver,
    _by,
    _idle,
    _messages,
    _serve,
    _text,
    _wait,
    headless_chromium,
    httpx,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("approval")
    with _serve(folder, target="tests.server.approval_graph:graph", graph_id="approval") as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    with headless_chromium("--window-size=1400,900") as driver:
        yield driver


@pytest.fixture
def page(browser: WebDriver, base_url: str) -> WebDriver:
    browser.get(base_url + "/")
    _wait(browser, lambda d: _text(d, "status") == "Ready.", "the page to load")
    return browser


def _ask_to_delete(page: WebDriver, path: str) -> None:
    _by(page, "message-input").send_keys(f"delete {path}")
    _by(page, "send").click()
    _wait(page, lambda d: _by(d, "approval").is_displayed(), "the approval form")
    _wait(page, _idle, "the run to pause")
    assert _text(page, "interrupt-question") == "Delete this file?"
    assert not _by(page, "interrupt-submit").is_displayed()
    assert not _by(page, "interrupt-answer").is_displayed()
    assert "delete_file" in _text(page, "approval-call")


def _tool_result(base_url: str, thread_id: str) -> dict:
    values = httpx.get(f"{base_url}/threads/{thread_id}/state").json()["values"]
    [result] = [m for m in values["messages"] if m["type"] == "tool"]
    return result


def _thread_id(page: WebDriver) -> str:
    return page.execute_script("return decodeURIComponent(location.hash.slice(1))")


def test_approve_runs_the_call(page: WebDriver) -> None:
    _ask_to_delete(page, "notes.txt")
    _by(page, "approval-approve").click()
    _wait(page, lambda d: "delete_file said: deleted notes.txt" in _messages(d)[-1], "the answer")
    _wait(page, lambda d: not _by(d, "interrupt").is_displayed(), "the form to close")
    assert _by(page, "message-input").is_enabled()


def test_edit_runs_the_new_arguments(page: WebDriver, base_url: str) -> None:
    _ask_to_delete(page, "important.txt")
    box = _by(page, "approval-args")
    assert '"path": "important.txt"' in box.get_attribute("value")
    box.clear()
    box.send_keys('{"path": "scratch.txt"}')
    _by(page, "approval-edit").click()
    _wait(page, lambda d: "delete_file said: deleted scratch.txt" in _messages(d)[-1], "the answer")
    assert _tool_result(base_url, _thread_id(page))["content"] == "deleted scratch.txt"


def test_reject_tells_the_model_why(page: WebDriver, base_url: str) -> None:
    _ask_to_delete(page, "thesis.tex")
    _by(page, "approval-reason").send_keys("I still need it")
    _by(page, "approval-reject").click()
    _wait(page, lambda d: "I still need it" in _messages(d)[-1], "the rejection's answer")
    result = _tool_result(base_url, _thread_id(page))
    assert result["status"] == "error"
    assert "I still need it" in result["content"]

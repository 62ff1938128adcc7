"""``useStream`` (``@langchain/langgraph-sdk/react``) in a real React page, in headless Chromium.

langgraph_js/page/app.jsx is a small chat written as a LangGraph frontend
would write it; esbuild bundles it with React from the locked npm packages
(nothing comes from a CDN), a static server on its own port serves it, and
the page talks to ``tenxgraph serve`` (CORS open) on SQLite or Postgres +
Redis. Selenium drives Debian's ``chromium`` through ``chromedriver``,
offline. Each scenario of issue #33 is one test; what fails today is a strict
xfail naming why.
"""

from __future__ import annotations

import functools
import http.server
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote

import pytest

from tests.clients.langgraph.node import installed, needs_node, run

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")

from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from tenxgraph.testing.server import free_port  # noqa: E402
from tests.browser import headless_chromium  # noqa: E402

pytestmark = [pytest.mark.slow, needs_node]

WAIT = 20.0

_FORMAT = "#33: useStream reads LangChain messages; the server sends tenxgraph's own JSON"


@pytest.fixture(scope="module")
def page_url() -> Iterator[str]:
    """The bundled page, served by a static server of its own (another origin than the API)."""
    folder = installed() / "page"
    run("npm", "run", "-s", "bundle")
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/index.html"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        del format, args


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    """Debian's headless Chromium; skipped when it is not installed."""
    with headless_chromium() as driver:
        yield driver


Open = Callable[..., WebDriver]


@pytest.fixture
def open_page(browser: WebDriver, page_url: str, langgraph_server: str) -> Open:
    """``open_page(thread=None)``: the chat on a new thread (or on ``thread``), loaded."""

    def load(thread: str | None = None) -> WebDriver:
        query = f"?api={quote(langgraph_server)}" + (f"&thread={thread}" if thread else "")
        browser.get(page_url + query)
        _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "[data-testid=input]"), "page")
        return browser

    return load


def _wait(driver: WebDriver, condition: Callable[[WebDriver], Any], what: str) -> Any:
    def checked(d: WebDriver) -> Any:
        errors = _errors(d)
        assert not errors, f"the page failed while waiting for {what}: {errors}"
        return condition(d)

    waiting = WebDriverWait(driver, WAIT, ignored_exceptions=[StaleElementReferenceException])
    return waiting.until(checked, f"timed out waiting for {what}; page errors: {_errors(driver)}")


def _errors(driver: WebDriver) -> str:
    shown: str = driver.execute_script(
        "return [...document.querySelectorAll('[data-testid=errors]')]"
        ".map((e) => e.textContent).join('\\n').trim()"
    )
    return shown


def _messages(driver: WebDriver) -> list[dict[str, Any]]:
    """The shown messages: type, text, tool calls and branch count, read in one go."""
    shown: list[dict[str, Any]] = driver.execute_script(
        """return [...document.querySelectorAll('[data-testid=message]')].map((m) => ({
            type: m.dataset.type,
            branches: Number(m.dataset.branches),
            text: m.querySelector('[data-testid=text]').textContent,
            calls: [...m.querySelectorAll('[data-testid=tool-call]')].map((c) => c.textContent),
        }))"""
    )
    return shown


def _by(driver: WebDriver, testid: str) -> Any:
    """The element of ``testid``, or None (the page redraws as a run goes)."""
    found = driver.find_elements(By.CSS_SELECTOR, f"[data-testid={testid}]")
    return found[0] if found else None


def _text(driver: WebDriver, testid: str) -> str:
    """The text of ``testid``'s element, empty while it is not shown."""
    found = _by(driver, testid)
    return str(found.text) if found is not None else ""


def _loading(driver: WebDriver) -> bool:
    return _text(driver, "loading") == "true"


def _click(driver: WebDriver, testid: str, index: int = -1) -> None:
    driver.find_elements(By.CSS_SELECTOR, f"[data-testid={testid}]")[index].click()


def _say(driver: WebDriver, text: str) -> None:
    driver.find_element(By.CSS_SELECTOR, "[data-testid=input]").send_keys(text)
    _click(driver, "send")


def _answered(driver: WebDriver, expect: str) -> None:
    """Wait until an ai message shows ``expect`` and the run is over."""

    def shown(d: WebDriver) -> bool:
        ai = [m for m in _messages(d) if m["type"] == "ai"]
        return any(expect in m["text"] for m in ai) and not _loading(d)

    _wait(driver, shown, repr(expect))


def _said(driver: WebDriver, text: str, expect: str) -> None:
    _say(driver, text)
    _answered(driver, expect)


def _thread_id(driver: WebDriver) -> str:
    shown = _wait(driver, lambda d: _text(d, "thread-id"), "the thread id")
    return str(shown)


def test_submit_streams_tokens(open_page: Open) -> None:
    page = open_page()
    page.execute_script(
        """window.seen = [];
        new MutationObserver(() => {
          const ai = [...document.querySelectorAll('[data-testid=message][data-type=ai]')];
          if (ai.length) window.seen.push(ai.at(-1).textContent);
          window.most = Math.max(window.most ?? 0, ai.length);
        }).observe(document.body, {childList: true, subtree: true, characterData: true});"""
    )
    _said(page, "hi", "said: hi w0 w1 w2 w3 w4 w5 w6 w7 w8 w9")
    seen: list[str] = page.execute_script("return window.seen")
    partial = [text for text in seen if "said: hi" in text and "w9" not in text]
    assert partial, f"the answer never showed in pieces: {seen}"
    assert [m["type"] for m in _messages(page)] == ["human", "ai"]
    # the chunks have the stored answer's id: it replaced them, never shown beside them
    assert page.execute_script("return window.most") == 1


def test_every_stream_mode_a_handler_asks_for(open_page: Open) -> None:
    page = open_page()
    _said(page, "tool", "add says 5")
    seen = json.loads(_text(page, "seen"))
    assert seen["custom"] == [{"adding": [2, 3]}]
    assert seen["tools"] == ["on_tool_start", "on_tool_end"]
    assert seen["tasks"].count("tools") == 2  # its start and its result
    assert {"checkpoint", "task", "task_result"} <= set(seen["debug"])
    assert {"on_chain_start", "on_chat_model_end", "on_tool_end"} <= set(seen["events"])
    assert len(seen["checkpoints"]) == len(set(seen["checkpoints"])) >= 4


def test_tool_calls_are_shown(open_page: Open) -> None:
    page = open_page()
    _said(page, "tool", "add says 5")
    messages = _messages(page)
    assert [m["type"] for m in messages] == ["human", "ai", "tool", "ai"], messages
    assert messages[1]["calls"] == ['add({"a":2,"b":3})'], messages
    assert messages[2]["text"] == "5", messages


def test_interrupt_then_resume(open_page: Open) -> None:
    page = open_page()
    _say(page, "ask")
    question = _wait(page, lambda d: _text(d, "question"), "the question")
    assert "your name?" in question
    _click(page, "resume")
    _answered(page, "you answered: Ada")
    assert not page.find_elements(By.CSS_SELECTOR, "[data-testid=interrupt]")


def test_stop_ends_a_running_run(open_page: Open, langgraph_server: str) -> None:
    import httpx

    page = open_page()
    _say(page, "sleep 30")
    _wait(page, _loading, "the run to start")
    thread_id = _thread_id(page)
    _wait(page, lambda d: _run_status(langgraph_server, thread_id) == "running", "a running run")
    _click(page, "stop")
    _wait(page, lambda d: not _loading(d), "the page to stop loading")
    _wait(page, lambda d: _run_status(langgraph_server, thread_id) == "interrupted", "the cancel")
    assert httpx.get(f"{langgraph_server}/threads/{thread_id}").json()["status"] == "idle"


def _run_status(url: str, thread_id: str) -> str | None:
    import httpx

    runs = httpx.get(f"{url}/threads/{thread_id}/runs").json()
    return str(runs[0]["status"]) if runs else None


def test_regenerate_from_a_checkpoint(open_page: Open) -> None:
    page = open_page()
    _said(page, "hi", "w9")
    _click(page, "regenerate")
    _wait(page, lambda d: _messages(d)[-1]["branches"] == 2, "a second branch of the answer")
    _answered(page, "w9")
    assert [m["type"] for m in _messages(page)] == ["human", "ai"]


def test_edit_then_switch_branch(open_page: Open) -> None:
    page = open_page()
    _said(page, "hi", "said: hi w0")
    _click(page, "edit")
    _answered(page, "said: hi (edited) w0")
    assert _messages(page)[0]["branches"] == 2
    _click(page, "previous-branch", 0)
    _wait(page, lambda d: _messages(d)[-1]["text"].startswith("said: hi w0"), "the first branch")


def test_reopen_a_thread_from_history(open_page: Open) -> None:
    page = open_page()
    _said(page, "hi", "w9")
    thread_id = _thread_id(page)
    page = open_page(thread=thread_id)
    _wait(page, lambda d: len(_messages(d)) == 2, "the thread's two messages")
    assert [m["type"] for m in _messages(page)] == ["human", "ai"]
    assert _messages(page)[1]["text"].startswith("said: hi w0")


def test_thread_list_by_graph_id(open_page: Open) -> None:
    page = open_page()
    _said(page, "hi", "w9")
    thread_id = _thread_id(page)
    page = open_page()

    def listed(d: WebDriver) -> bool:
        items = d.find_elements(By.CSS_SELECTOR, "[data-testid=thread]")
        return thread_id in [item.get_attribute("data-thread-id") for item in items]

    _wait(page, listed, "the thread in the list")

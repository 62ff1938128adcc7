"""The web page `tenxgraph serve` serves at ``/``, driven in a real headless Chromium.

The real command serves ``examples/serve_demo.py``'s graph over SQLite in its
own process; Selenium drives Debian's ``chromium`` through its
``chromedriver``. Nothing is ever downloaded: the driver and browser paths
are given, and Selenium Manager is told to stay offline.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

WAIT = 15.0
REPO = Path(__file__).resolve().parents[2]

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
httpx = pytest.importorskip("httpx", reason="the client extra is not installed")
pytest.importorskip("uvicorn", reason="the server extra is not installed")

from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.remote.webelement import WebElement  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from tenxgraph.storage.media import FilesystemMediaStore  # noqa: E402
from tenxgraph.testing.server import free_port  # noqa: E402
from tests.browser import headless_chromium  # noqa: E402
from tests.server.conftest import Serve  # noqa: E402
from tests.server.test_web_origin import HOSTILE, png_1x1, upload  # noqa: E402


@contextmanager
def _serve(
    folder: Path, *options: str, target: str = "examples.serve_demo:graph", graph_id: str = "demo"
) -> Iterator[str]:
    """``tenxgraph serve examples.serve_demo:graph`` in its own process, until the block ends."""
    port = free_port()
    command = [sys.executable, "-m", "tenxgraph.cli", "serve", target]
    command += ["--graph-id", graph_id, "--db", str(folder / "threads.sqlite")]
    command += ["--port", str(port)]
    output = folder / "serve.log"
    with output.open("wb") as log:
        process = subprocess.Popen([*command, *options], cwd=REPO, stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + WAIT
        while not _answers(url):
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"tenxgraph serve did not start:\n{output.read_text()}")
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(WAIT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/ok", timeout=1.0).status_code == 200
    except httpx.TransportError:
        return False


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The demo graph served by the real command, with no key (loopback only)."""
    with _serve(tmp_path_factory.mktemp("served")) as url:
        yield url


@pytest.fixture(scope="module")
def keyed_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The same behind an API key."""
    with _serve(tmp_path_factory.mktemp("keyed"), "--api-key", "s3cret=ada") as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    """Debian's headless Chromium; skipped when it is not installed."""
    with headless_chromium("--window-size=1400,900", console_logs=True) as driver:
        yield driver


@pytest.fixture
def page(browser: WebDriver, base_url: str) -> WebDriver:
    """The page, opened on a new conversation and ready."""
    browser.get(base_url + "/")
    _wait(browser, lambda d: _text(d, "status") == "Ready.", "the page to load")
    return browser


def _wait(driver: WebDriver, condition, what: str):  # type: ignore[no-untyped-def]
    waiting = WebDriverWait(driver, WAIT, ignored_exceptions=[StaleElementReferenceException])
    return waiting.until(condition, f"timed out waiting for {what}")


def _by(driver: WebDriver, testid: str) -> WebElement:
    return driver.find_element(By.CSS_SELECTOR, f'[data-testid="{testid}"]')


def _text(driver: WebDriver, testid: str) -> str:
    return _by(driver, testid).text


def _messages(driver: WebDriver) -> list[str]:
    """The chat's messages as shown, read in one go (the list is redrawn as a run goes)."""
    texts: list[str] = driver.execute_script(
        "return [...document.querySelectorAll('#messages [data-testid=message]')]"
        ".map((item) => item.innerText)"
    )
    return texts


def _say(driver: WebDriver, text: str, expect: str) -> None:
    """Send ``text`` and wait until an assistant message contains ``expect`` and the run ended."""
    box = _by(driver, "message-input")
    box.send_keys(text)
    _by(driver, "send").click()
    _wait(driver, lambda d: any(expect in m for m in _messages(d)), repr(expect))
    _wait(driver, _idle, "the run to end")


def _idle(driver: WebDriver) -> bool:
    """No run is going on (the page marks its message list busy during one)."""
    return _by(driver, "messages").get_attribute("aria-busy") == "false"


def test_a_message_streams_its_answer(page: WebDriver) -> None:
    # Record the streaming bubble's text at every change, to see the answer arrive in pieces.
    page.execute_script(
        """
        window.streamed = [];
        new MutationObserver(() => {
          const bubble = document.querySelector('[data-testid="streaming"]');
          if (bubble && bubble.textContent) window.streamed.push(bubble.textContent);
        }).observe(document.getElementById('messages'),
                   {childList: true, subtree: true, characterData: true});
        """
    )
    _say(page, "hello there", "You said: hello there.")
    answer = "You said: hello there. Try 'weather in Paris', 'ask me' or 'what time is it?'."
    assert _messages(page)[-1].endswith(answer)
    streamed: list[str] = page.execute_script("return window.streamed")
    assert streamed, "no text was shown while the answer streamed"
    assert all(answer.startswith(piece) for piece in streamed), streamed
    assert len(streamed[0]) < len(answer)  # the first piece showed before the whole answer
    assert _text(page, "status") == "Done."


def test_the_inspector_asks_for_a_thread_before_one_is_chosen(page: WebDriver) -> None:
    assert page.find_element(By.ID, "log-hint").text == "Choose a thread to see its log."
    _say(page, "hello", "You said: hello.")
    assert page.find_element(By.ID, "log-hint").text == "Highlighted: in the window."


def test_threads_and_inspector(page: WebDriver, tmp_path: Path) -> None:
    _say(page, "hello", "You said: hello.")
    thread_id = page.execute_script("return location.hash.slice(1)")
    assert thread_id
    listed = _by(page, "thread-list").find_elements(By.CSS_SELECTOR, '[data-testid="thread"]')
    assert thread_id in [item.get_attribute("data-thread-id") for item in listed]

    _say(page, "weather in Paris", "get_weather says: sunny and 24C in Paris.")
    _say(page, "thanks", "You said: thanks.")

    # The window keeps the last two user turns; the log keeps all eight messages.
    assert _text(page, "window-count") == "6"
    assert _text(page, "log-count") == "8"
    log_items = page.find_elements(By.CSS_SELECTOR, "#log-list li")
    in_window = [item.get_attribute("class") == "in-window" for item in log_items]
    assert in_window == [False, False] + [True] * 6
    window_items = page.find_elements(By.CSS_SELECTOR, "#window-list li")
    assert [item.get_attribute("value") for item in window_items] == ["2", "3", "4", "5", "6", "7"]
    fields = page.find_element(By.ID, "state-fields")
    assert fields.find_element(By.CSS_SELECTOR, '[data-field="last_city"]').text == "Paris"
    rows = page.find_elements(By.CSS_SELECTOR, '[data-testid="tool-row"]')
    cells = [[cell.text for cell in row.find_elements(By.TAG_NAME, "td")] for row in rows]
    assert cells == [["get_weather", '{"city":"Paris"}', "sunny and 24C in Paris"]]

    # Picking the thread again from a fresh page shows the stored conversation.
    page.get(page.current_url.split("#")[0])
    _wait(page, lambda d: _text(d, "status") == "Ready.", "the page to reload")
    thread = _by(page, "thread-list").find_element(
        By.CSS_SELECTOR, f'[data-thread-id="{thread_id}"]'
    )
    thread.click()
    _wait(page, lambda d: _text(d, "log-count") == "8", "the thread to load")
    chat = _messages(page)  # the whole log, the turn outside the window included
    assert len(chat) == 8
    assert chat[0].endswith("hello")
    assert chat[-1].endswith(
        "You said: thanks. Try 'weather in Paris', 'ask me' or 'what time is it?'."
    )

    shot = tmp_path / "web_page.png"
    page.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000
    print(f"screenshot: {shot}")


def test_an_interrupt_is_answered(page: WebDriver) -> None:
    _say(page, "ask me", "ask_user")
    _wait(page, lambda d: _by(d, "interrupt").is_displayed(), "the interrupt question")
    assert _text(page, "interrupt-question") == "What is your favourite colour?"
    # A paused thread takes the answer, not a new message.
    assert not _by(page, "message-input").is_enabled()
    assert not _by(page, "send").is_enabled()
    _by(page, "interrupt-answer").send_keys("green")
    _by(page, "interrupt-submit").click()
    _wait(page, lambda d: "Thanks! You answered: green" in _messages(d)[-1], "the resumed answer")
    _wait(page, lambda d: not _by(d, "interrupt").is_displayed(), "the form to close")
    _wait(page, lambda d: _by(d, "send").is_enabled(), "the composer to come back")
    assert _by(page, "message-input").is_enabled()


def test_a_question_is_discarded_instead_of_answered(page: WebDriver) -> None:
    _say(page, "hello", "You said: hello.")
    _say(page, "ask me", "ask_user")
    _wait(page, lambda d: _by(d, "interrupt").is_displayed(), "the interrupt question")
    assert _text(page, "log-count") == "4"
    _by(page, "discard-interrupt").click()
    _wait(page, lambda d: _text(d, "status") == "Discarded the last turn.", "the rollback")
    assert not _by(page, "interrupt").is_displayed()
    assert _text(page, "log-count") == "2"  # the paused turn left the log whole
    assert _by(page, "message-input").is_enabled()
    _say(page, "weather in Paris", "get_weather says: sunny and 24C in Paris.")


def test_a_slow_run_is_stopped(page: WebDriver) -> None:
    _by(page, "message-input").send_keys("think about it")  # the demo model takes 30 s
    _by(page, "send").click()
    _wait(page, lambda d: _by(d, "stop").is_displayed(), "the Stop button")
    _by(page, "stop").click()
    _wait(page, lambda d: _text(d, "status") == "Stopped.", "the run to stop")  # well before 30 s
    _wait(page, _idle, "the page to settle")
    assert not _by(page, "stop").is_displayed()
    assert [m.split("\n")[-1] for m in _messages(page)] == ["think about it"]  # no answer
    _say(page, "hello", "You said: hello.")  # the thread takes the next message


def test_a_failed_turn_says_why_and_is_retried(page: WebDriver) -> None:
    _by(page, "message-input").send_keys("please fail")  # fails once, then answers
    _by(page, "send").click()
    _wait(page, lambda d: _text(d, "status").startswith("Run failed:"), "the failure")
    _wait(page, _idle, "the page to settle")
    assert "the demo model was asked to fail" in _text(page, "status")
    # The server refuses new messages until the failed turn is retried (or rolled back).
    assert _by(page, "failed").is_displayed()
    assert not _by(page, "message-input").is_enabled()
    _by(page, "retry").click()
    _wait(page, lambda d: _messages(d)[-1].endswith("This time it worked."), "the retried turn")
    _wait(page, _idle, "the page to settle")
    assert not _by(page, "failed").is_displayed()
    assert [m.split("\n")[-1] for m in _messages(page)] == ["please fail", "This time it worked."]
    _say(page, "hello", "You said: hello.")  # the thread goes on


def test_a_browser_tool_runs_and_the_run_goes_on(page: WebDriver, base_url: str) -> None:
    _say(page, "what time is it in the browser?", "get_browser_time says:")
    answer = _messages(page)[-1]
    match = re.search(r"get_browser_time says: (\S+Z) \((.+)\)\.", answer)
    assert match, answer
    sent = datetime.fromisoformat(match.group(1).replace("Z", "+00:00"))
    assert abs((datetime.now(UTC) - sent).total_seconds()) < 60
    rows = page.find_elements(By.CSS_SELECTOR, '[data-testid="tool-row"]')
    assert [row.find_element(By.TAG_NAME, "td").text for row in rows] == [
        "get_browser_time (browser)"
    ]
    # The page posted the result to the waiting run, and that same run went on to the answer.
    thread_id = page.execute_script("return location.hash.slice(1)")
    runs = httpx.get(f"{base_url}/threads/{thread_id}/runs").json()
    assert [run["status"] for run in runs] == ["success"]


def test_an_api_key_is_asked_for_and_kept_for_the_session(
    browser: WebDriver, keyed_url: str
) -> None:
    browser.get(keyed_url + "/")
    _wait(browser, lambda d: _by(d, "auth-form").is_displayed(), "the API key form")
    assert _text(browser, "status") == "This server needs an API key."
    _by(browser, "api-key").send_keys("wrong")
    _by(browser, "api-key").submit()
    _wait(browser, lambda d: _text(d, "status") == "The API key was refused.", "the refusal")
    _by(browser, "api-key").send_keys("s3cret")
    _by(browser, "api-key").submit()
    _wait(browser, lambda d: _text(d, "status") == "Ready.", "the page to load")
    assert not _by(browser, "auth-form").is_displayed()
    # A user with no threads is told where threads saved under another user_id are.
    assert "--api-key KEY=USER" in _text(browser, "no-threads")
    _say(browser, "hello", "You said: hello.")
    _wait(
        browser,
        lambda d: not d.find_elements(By.CSS_SELECTOR, '[data-testid="no-threads"]'),
        "the list",
    )
    assert browser.execute_script("return sessionStorage.getItem('tenxgraph.api_key')") == "s3cret"
    browser.refresh()  # the key stays for the tab's session
    _wait(browser, lambda d: _text(d, "status") == "Ready.", "the page to reload")
    browser.execute_script("sessionStorage.clear()")


def test_a_thread_waiting_for_a_browser_tool_runs_it_on_request(
    page: WebDriver, base_url: str
) -> None:
    # Another client started the run in the background; it waits for the browser tool.
    thread_id = httpx.post(f"{base_url}/threads", json={}).json()["thread_id"]
    message = {"role": "user", "content": "what time is it?"}
    run = {"assistant_id": "demo", "input": {"messages": [message]}}
    httpx.post(f"{base_url}/threads/{thread_id}/runs", json=run).raise_for_status()
    state_url = f"{base_url}/threads/{thread_id}/state"
    _wait(page, lambda d: httpx.get(state_url).json()["interrupts"], "the run to pause")

    page.get(f"{base_url}/#{thread_id}")
    _wait(page, lambda d: _by(d, "interrupt").is_displayed(), "the waiting browser tool")
    assert _text(page, "interrupt-question") == "Waiting for browser tools: get_browser_time"
    assert not _by(page, "interrupt-answer").is_displayed()
    assert _text(page, "interrupt-submit") == "Run them"
    _by(page, "interrupt-submit").click()
    _wait(page, lambda d: "get_browser_time says:" in _messages(d)[-1], "the answer")
    _wait(page, lambda d: not _by(d, "interrupt").is_displayed(), "the question to go")
    assert not httpx.get(state_url).json()["interrupts"]


def test_a_waiting_browser_tool_is_discarded(page: WebDriver, base_url: str) -> None:
    thread_id = httpx.post(f"{base_url}/threads", json={}).json()["thread_id"]
    message = {"role": "user", "content": "what time is it?"}
    run = {"assistant_id": "demo", "input": {"messages": [message]}}
    httpx.post(f"{base_url}/threads/{thread_id}/runs", json=run).raise_for_status()
    state_url = f"{base_url}/threads/{thread_id}/state"
    _wait(page, lambda d: httpx.get(state_url).json()["interrupts"], "the run to pause")

    page.get(f"{base_url}/#{thread_id}")
    _wait(page, lambda d: _by(d, "interrupt").is_displayed(), "the waiting browser tool")
    _by(page, "discard-interrupt").click()  # the run waiting for it is cancelled with its turn
    _wait(page, lambda d: _text(d, "status") == "Discarded the last turn.", "the rollback")
    assert not _by(page, "interrupt").is_displayed()
    assert _text(page, "log-count") == "0"
    thread = httpx.get(f"{base_url}/threads/{thread_id}").json()
    assert (thread["status"], thread["interrupts"]) == ("idle", {})


def _policy_violations(driver: WebDriver) -> list[str]:
    """The Content-Security-Policy refusals Chromium logged since the last call."""
    return [
        entry["message"]
        for entry in driver.get_log("browser")
        if "Content Security Policy" in entry["message"]
    ]


def test_the_page_works_under_its_policy(page: WebDriver) -> None:
    _policy_violations(page)  # drop what earlier tests logged
    page.refresh()
    _wait(page, lambda d: _text(d, "status") == "Ready.", "the page to load")
    _say(page, "weather in Paris", "get_weather says: sunny and 24C in Paris.")
    assert _policy_violations(page) == []
    # Markup that slipped into the page (as text from a message might) runs no inline handler.
    ran = page.execute_async_script(
        """
        const done = arguments[arguments.length - 1];
        document.body.insertAdjacentHTML(
          "beforeend", '<img id="injected" src="data:," onerror="window.injected = true">');
        const image = document.getElementById("injected");
        image.addEventListener("error", () => done(window.injected === true));
        """
    )
    assert ran is False
    assert any("inline event handler" in v for v in _policy_violations(page))


def test_uploaded_html_and_svg_run_no_script_in_the_page_origin(
    browser: WebDriver, serve: Serve, tmp_path: Path
) -> None:
    url = serve(media=FilesystemMediaStore(tmp_path / "media"))
    browser.get(url + "/")
    browser.execute_script("localStorage.clear()")
    for mime, data in HOSTILE.items():
        browser.get(upload(url, data, mime))  # opened as a user following a link would
        # Back on the page's origin: what a script of the upload left there is visible here.
        browser.get(url + "/")
        marks = browser.execute_script("return [localStorage.getItem('pwned'), document.cookie]")
        assert marks == [None, ""], f"the uploaded {mime} ran script in the page's origin"
    # A passive image is still shown in place (inline, in its sandbox).
    browser.get(upload(url, png_1x1(), "image/png"))
    width = browser.execute_script(
        "return document.images.length && document.images[0].naturalWidth"
    )
    assert width == 1


def _resources(driver: WebDriver) -> list[str]:
    """Every URL the open document loaded (its own and each script, style, image, fetch)."""
    urls: list[str] = driver.execute_script(
        "return [location.href, ...performance.getEntriesByType('resource').map((e) => e.name)]"
    )
    return urls


def test_docs_and_redoc_render_from_the_server_alone(browser: WebDriver, base_url: str) -> None:
    pytest.importorskip("fastapi_offline", reason="the server extra is not installed")
    _policy_violations(browser)
    browser.get(base_url + "/docs")
    title = (By.CSS_SELECTOR, ".swagger-ui .info .title")
    _wait(browser, lambda d: "tenxgraph" in d.find_element(*title).text, "Swagger UI to draw")
    _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".opblock"), "the operations")
    swagger = _resources(browser)
    browser.get(base_url + "/redoc")
    heading = (By.CSS_SELECTOR, ".api-info h1")
    _wait(browser, lambda d: "tenxgraph" in d.find_element(*heading).text, "ReDoc to draw")
    redoc = _resources(browser)
    # Each URL refused by the policy (ReDoc's footer asks for its maker's logo); none of the
    # server's own, and nothing run inline without the page's nonce.
    refused = []
    for violation in _policy_violations(browser):
        named = re.search(r"'(https?://[^']+)'", violation)
        assert named and not named.group(1).startswith(base_url + "/"), violation
        refused.append(named.group(1))
    for loaded in (swagger, redoc):
        assert any(url.endswith("/openapi.json") for url in loaded), loaded
        outside = [url for url in loaded if not url.startswith((base_url + "/", "data:", "blob:"))]
        assert set(outside) <= set(refused), f"loaded from outside the server: {outside}"

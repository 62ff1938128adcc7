"""The inspector's waterfall of a run (spans ``tenxgraph serve --traces`` keeps), in Chromium."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402

from tests.server.test_web_page import _say, _serve, _text, _wait  # noqa: E402
from tests.server.test_web_page import browser as browser  # noqa: E402 - the fixture


@pytest.fixture(scope="module")
def traced_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The demo graph served by the real command, keeping its recent traces."""
    with _serve(tmp_path_factory.mktemp("traced"), "--traces", "20") as url:
        yield url


def _rows(driver: WebDriver) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = driver.execute_script(
        "return [...document.querySelectorAll('#trace-list [data-testid=span]')].map((row) => ({"
        "name: row.dataset.name, kind: row.dataset.kind,"
        "took: row.querySelector('.took').innerText,"
        "width: row.querySelector('.span-bar').style.width}))"
    )
    return rows


def test_the_inspector_draws_the_last_run_as_a_waterfall(
    browser: WebDriver, traced_url: str, tmp_path: Path
) -> None:
    browser.get(traced_url + "/")
    _wait(browser, lambda d: _text(d, "status") == "Ready.", "the page to load")
    _say(browser, "weather in Paris", "get_weather says: sunny and 24C in Paris.")
    _wait(browser, lambda d: _rows(d) and _rows(d)[0]["took"] != "running", "the run's waterfall")
    rows = _rows(browser)
    assert rows[0]["kind"] == "run" and rows[0]["name"].startswith("invoke_agent")
    assert rows[0]["width"] == "100%"
    kinds = [row["kind"] for row in rows]
    assert kinds.count("chat") == 2 and kinds.count("tool") == 1
    assert [row["name"] for row in rows if row["kind"] == "node"] == [
        "node agent",
        "node tools",
        "node agent",
    ]
    assert all(row["took"].endswith(("ms", " s")) for row in rows)
    tool = browser.find_element(By.CSS_SELECTOR, '[data-name="execute_tool get_weather"]')
    assert "ms" in (tool.get_attribute("title") or "")
    shot = tmp_path / "waterfall.png"
    browser.find_element(By.CSS_SELECTOR, '[data-testid="trace"]').screenshot(str(shot))
    assert shot.stat().st_size > 1000
    print(f"screenshot: {shot}")

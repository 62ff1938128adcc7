"""The docs site builds strict, documents every public name, and a real browser finds things in it.

``mkdocs build --strict`` (``mkdocs.yml``, the ``docs`` extra) runs once per
module into a temporary folder: a broken link or anchor, a page left out of the
navigation or an API reference that does not resolve fails it (about ten
seconds, so it runs in ``make check``). The browser tests (slow) serve the built
site on a loopback port and drive Debian's headless Chromium through
``chromedriver``, as a reader would: the search box finds ``AgentState``, and
the reference page of ``StateGraph`` lists ``add_node``. Nothing is downloaded:
the site loads nothing from another host, and Selenium Manager stays offline.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.browser import headless_chromium

REPO = Path(__file__).resolve().parents[2]
WAIT = 20.0

pytest.importorskip("mkdocs", reason="the docs extra is not installed (pip install -e '.[docs]')")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built strict from the checkout."""
    out = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=REPO,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stderr[-6000:]}"
    return out


def test_every_docs_page_is_on_the_site(site: Path) -> None:
    for page in (REPO / "docs").glob("*.md"):
        built = site / "index.html" if page.stem == "README" else site / page.stem / "index.html"
        assert built.is_file(), f"docs/{page.name} was not built"
    assert "getting-started/" in (site / "index.html").read_text()  # in the navigation


def test_the_api_reference_documents_every_public_name(site: Path) -> None:
    surface: dict[str, list[str]] = json.loads((REPO / "tests" / "public_api.json").read_text())
    pages = {module: (site / "api" / module / "index.html").read_text() for module in surface}
    ids = {module: set(re.findall(r'id="([^"]+)"', html)) for module, html in pages.items()}
    missing = []
    for module, names in surface.items():
        for name in names:
            if f"{module}.{name}" in ids[module]:
                continue  # documented on this module's page
            linked = re.findall(rf'href="[^"]*#([\w.]+\.{re.escape(name)})"', pages[module])
            homes = [target for target in linked if any(target in found for found in ids.values())]
            if not homes:
                missing.append(f"{module}.{name}")
    assert missing == [], f"public names with no entry in the API reference: {missing}"


def test_the_search_index_holds_the_pages_and_the_reference(site: Path) -> None:
    index = json.loads((site / "search" / "search_index.json").read_text())
    locations = {doc["location"] for doc in index["docs"]}
    assert "getting-started/" in locations
    assert "api/tenxgraph.core.graph/#tenxgraph.core.graph.StateGraph.add_node" in locations


# --- in a real browser ------------------------------------------------------------------


@pytest.fixture(scope="module")
def site_url(site: Path) -> Iterator[str]:
    """The built site over HTTP on a loopback port (its search worker cannot read file://)."""

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's headless Chromium; skipped when it is not installed."""
    with headless_chromium("--window-size=1400,900") as driver:
        yield driver


def _wait(driver: Any, condition: Any, what: str) -> Any:
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, WAIT, ignored_exceptions=[StaleElementReferenceException]).until(
        condition, f"timed out waiting for {what}"
    )


@pytest.mark.slow
def test_the_search_box_finds_agent_state(browser: Any, site_url: str) -> None:
    from selenium.webdriver.common.by import By

    browser.get(site_url + "/")
    search = (By.CSS_SELECTOR, "input.md-search__input")
    box = _wait(browser, lambda d: d.find_element(*search), "the search box")
    box.click()
    box.send_keys("AgentState")

    def results(driver: Any) -> list[Any]:
        return driver.find_elements(By.CSS_SELECTOR, ".md-search-result__item a")

    found = _wait(browser, lambda d: results(d) or False, "search results for AgentState")
    texts = [item.text for item in found]
    hrefs = [item.get_attribute("href") for item in found]
    assert any("AgentState" in text for text in texts), texts
    assert any("state-and-messages" in href for href in hrefs), hrefs
    found[0].click()
    _wait(browser, lambda d: "AgentState" in d.find_element(By.TAG_NAME, "article").text, "a page")


@pytest.mark.slow
def test_the_state_graph_reference_lists_add_node(browser: Any, site_url: str) -> None:
    from selenium.webdriver.common.by import By

    browser.get(site_url + "/api/tenxgraph.core.graph/#tenxgraph.core.graph.StateGraph")
    heading = _wait(
        browser, lambda d: d.find_element(By.ID, "tenxgraph.core.graph.StateGraph"), "StateGraph"
    )
    assert heading.text.startswith("StateGraph")
    method = browser.find_element(By.ID, "tenxgraph.core.graph.StateGraph.add_node")
    browser.execute_script("arguments[0].scrollIntoView()", method)
    _wait(browser, lambda d: method.is_displayed(), "add_node to show")
    assert method.text.startswith("add_node")
    section = method.find_element(By.XPATH, "following-sibling::div[1]")
    assert "node" in section.text  # its signature and docstring follow the heading
    toc = browser.find_elements(By.CSS_SELECTOR, "nav.md-nav--secondary a.md-nav__link")
    targets = [link.get_attribute("href").rsplit("#", 1)[-1] for link in toc]
    assert "tenxgraph.core.graph.StateGraph.add_node" in targets  # the page's contents list it

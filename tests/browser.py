"""Debian's headless Chromium, for the tests that drive a real page.

The web page (tests/server/test_web_page.py), ``useStream`` in a React page
(tests/clients/langgraph/test_use_stream.py) and the docs site
(tests/release/test_docs_site.py) open it the same way: the browser and its
driver from Debian (``chromium``, ``chromium-driver``) by their paths, headless as
root, and Selenium Manager told to stay offline, so nothing is ever downloaded.
A missing browser or Selenium skips the test with the reason.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


@contextmanager
def headless_chromium(*arguments: str, console_logs: bool = False) -> Iterator[Any]:
    """A ``selenium`` Chrome driver on Debian's Chromium, quit when the block ends.

    ``arguments`` are more command-line switches (a window size);
    ``console_logs`` keeps the page's console (CSP violations land there).
    """
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    from selenium.webdriver.chrome.service import Service

    for path in (CHROMIUM, CHROMEDRIVER):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)) and not shutil.which(path):
            pytest.skip(f"{path} is missing: install Debian's chromium and chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", *arguments):
        options.add_argument(argument)
    if console_logs:
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SE_OFFLINE", "true")  # Selenium Manager must never download
        driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()

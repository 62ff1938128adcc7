"""LangChain's Agent Chat UI, unmodified but for its web font, against ``tenxgraph serve``.

The UI is the ``nextjs`` template of the npm package ``create-agent-chat-app``
(pinned with everything it needs in package-lock.json here; a warm npm cache
installs it without the network). The test copies the template out of
``node_modules`` into ``app/`` (not in git), with two changes that keep the
build offline and tolerant: no Google web font (``next/font/google`` fetches
it while building) and a ``next.config.mjs`` that skips type checks and lint.
``next build`` takes minutes, so ``app/`` is reused while the lock file is the
same. ``next start`` serves it on its own port (another origin than the API,
which lists ``*`` in CORS), and headless Chromium opens it with the API URL and
the graph id in its address, as the UI's setup form would put them. On SQLite
and on Postgres + Redis, each test is one thing the UI must do.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tenxgraph.testing.server import free_port, served
from tests.browser import headless_chromium
from tests.clients.agent_chat_ui.graph import build
from tests.clients.langgraph.node import needs_node
from tests.server.conftest import _checkpointer

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")

from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

pytestmark = [pytest.mark.slow, needs_node]

PACKAGE = Path(__file__).resolve().parent
APP = PACKAGE / "app"
TEMPLATE = PACKAGE / "node_modules" / "create-agent-chat-app" / "templates" / "nextjs"
NEXT = PACKAGE / "node_modules" / "next" / "dist" / "bin" / "next"
WAIT = 30.0
_NEXT_CONFIG = """export default {
  typescript: { ignoreBuildErrors: true },
  eslint: { ignoreDuringBuilds: true },
};
"""

BACKENDS = [
    "sqlite",
    pytest.param("postgres+redis", marks=[pytest.mark.postgres, pytest.mark.redis]),
]


def _run(*command: str, cwd: Path, timeout: float = 900) -> None:
    result = subprocess.run(
        list(command), cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )
    if result.returncode != 0:
        pytest.fail(f"{' '.join(command)} failed:\n{result.stdout[-3000:]}\n{result.stderr}")


def _built() -> Path:
    """``app/``: the template built, reused while package-lock.json is unchanged."""
    stamp = hashlib.sha256((PACKAGE / "package-lock.json").read_bytes()).hexdigest()
    if (APP / ".next" / "BUILD_ID").is_file() and (APP / "stamp").read_text() == stamp:
        return APP
    _run("npm", "ci", "--prefer-offline", "--no-audit", "--no-fund", cwd=PACKAGE)
    shutil.rmtree(APP, ignore_errors=True)
    shutil.copytree(TEMPLATE, APP, ignore=shutil.ignore_patterns("package.json", "*.md"))
    layout = APP / "src" / "app" / "layout.tsx"
    source = layout.read_text()
    font = source[source.index("const inter = Inter(") :]
    font = font[: font.index("});") + 3]
    source = source.replace('import { Inter } from "next/font/google";\n', "")
    layout.write_text(source.replace(font, 'const inter = { className: "" };'))
    (APP / "next.config.mjs").write_text(_NEXT_CONFIG)
    _run("node", str(NEXT), "build", cwd=APP)
    (APP / "stamp").write_text(stamp)
    return APP


@pytest.fixture(scope="module")
def ui() -> Iterator[str]:
    """The built UI, served by ``next start`` on a port of its own."""
    app, port = _built(), free_port()
    process = subprocess.Popen(
        ["node", str(NEXT), "start", "-p", str(port), "-H", "127.0.0.1"],
        cwd=app,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(url, timeout=2).close()
                break
            except OSError:
                time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture(scope="module", params=BACKENDS)
def api(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server of this folder's graph on the parameter's backend, open to any origin."""
    from tenxgraph.server.app import create_app

    backend: str = request.param
    folder = tmp_path_factory.mktemp(f"agent-chat-ui-{backend.replace('+', '-')}")
    cleanups: list[Callable[[], None]] = []
    checkpointer = _checkpointer(backend, folder, uuid.uuid4().hex[:12], cleanups)
    app = create_app(build(checkpointer), graph_id="agent", cors_origins=["*"])
    app.state.context.on_shutdown.append(checkpointer.aclose)
    try:
        with served(app) as url:
            yield url
    finally:
        for cleanup in cleanups:
            cleanup()


@pytest.fixture
def page(ui: str, api: str) -> Iterator[WebDriver]:
    with headless_chromium("--window-size=1280,900") as driver:
        driver.get(f"{ui}?apiUrl={quote(api, safe='')}&assistantId=agent")
        yield driver


def _wait(driver: WebDriver) -> WebDriverWait[WebDriver]:
    """A wait that looks again when React replaced the element it found meanwhile."""
    return WebDriverWait(driver, WAIT, ignored_exceptions=(StaleElementReferenceException,))


def _send(driver: WebDriver, text: str) -> None:
    box = _wait(driver).until(lambda d: d.find_element(By.TAG_NAME, "textarea"))
    box.send_keys(text)
    box.send_keys(Keys.ENTER)


def _shows(driver: WebDriver, text: str) -> Any:
    return _wait(driver).until(lambda d: text in d.find_element(By.TAG_NAME, "body").text)


def _click(driver: WebDriver, label: str) -> None:
    def clicked(d: WebDriver) -> bool:
        for button in d.find_elements(By.TAG_NAME, "button"):
            if button.text.strip() == label:
                button.click()
                return True
        return False

    _wait(driver).until(clicked)


def test_the_first_message_is_answered(page: WebDriver) -> None:
    _send(page, "hello")
    _shows(page, "echo: hello")


def test_an_interrupt_is_approved(page: WebDriver) -> None:
    _send(page, "send hi")
    _click(page, "Accept")
    _shows(page, "done, sent: hi")

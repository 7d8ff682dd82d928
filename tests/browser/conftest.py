"""Fixtures for the admin's browser tests: a real ``vykhukhol serve`` on a free
local port and one headless Chromium driven by Selenium.

The server runs over the ``site`` fixture's data directory (outbox transport,
working mode, English pages) with ``site_url`` pointing at itself, so every
link in a letter leads back to it. One browser serves the whole session (it
takes seconds to start); each test begins with no cookies and a blank page.
Screenshots go to ``tests/artifacts/`` (git-ignored) for a person to look at.
"""

from __future__ import annotations

import base64
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from selenium import webdriver
from selenium.common.exceptions import (
    NoAlertPresentException,
    UnexpectedAlertPresentException,
    WebDriverException,
)
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

from support.servetools import PASSWORD, ServeProcess

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
CHROMIUM_FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--disable-quic",
                  "--window-size=1280,900"]
WAIT = 10.0          # seconds a page may take to load after a click


def free_port() -> int:
    """A local port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- the server -------------------------------------------------------------------


class Server(ServeProcess):
    """One ``vykhukhol serve`` process (see tests/support/servetools.py)."""


@pytest.fixture
def server(site: Any, tmp_path: Path) -> Iterator[Server]:
    """``vykhukhol serve`` over ``site`` (outbox transport), pages in English."""
    port = free_port()
    site.set(site_url=f"http://127.0.0.1:{port}", language="en")
    running = Server(site, port, tmp_path / "serve")
    running.start()
    yield running
    code, out, err = running.stop()
    assert code == 0, f"serve did not stop cleanly on SIGTERM (exit {code}): {err}"
    assert "Traceback" not in err, err


# --- the browser ------------------------------------------------------------------


@pytest.fixture(scope="session")
def chromium() -> Iterator[WebDriver]:
    """One headless Chromium for the session, with a throw-away profile."""
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.skip("chromium and chromium-driver are not installed (apt-get install chromium chromium-driver)")
    profile = tempfile.mkdtemp(prefix="vykhukhol-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def browser(chromium: WebDriver, server: Server) -> Iterator[Browser]:
    """The session's Chromium pointed at this test's server, with no cookies."""
    chromium.execute_cdp_cmd("Network.clearBrowserCookies", {})
    chromium.get("about:blank")
    yield Browser(chromium, server)
    try:  # never leave a dialog open for the next test
        chromium.switch_to.alert.dismiss()
    except NoAlertPresentException:
        pass
    chromium.execute_cdp_cmd("Network.clearBrowserCookies", {})
    chromium.get("about:blank")


def _new_page_loaded(driver: WebDriver) -> bool:
    try:
        return driver.execute_script("return window.__vykhukhol_old_page === undefined"
                                     " && document.readyState === 'complete'")
    except UnexpectedAlertPresentException:
        raise  # a dialog opened: that is for the test to see, not to wait out
    except WebDriverException:
        return False  # the page is between two documents: ask again


class Browser:
    """The admin as a person uses it: open a page, fill fields, press buttons."""

    def __init__(self, driver: WebDriver, server: Server) -> None:
        self.driver = driver
        self.server = server

    # -- moving around -----------------------------------------------------------
    def open(self, path: str) -> None:
        """Open ``path`` (``/admin/...``, ``/cgi/...``) or a full URL."""
        self.driver.get(path if "://" in path else self.server.url + path)
        self._loaded()

    def press(self, element: WebElement | str) -> None:
        """Click a button or link (an element or a CSS selector) and wait for the
        page it leads to."""
        if isinstance(element, str):
            element = self.find(element)
        # Mark the old document; the next one comes without the mark. (Selenium's
        # staleness_of trips over chromedriver's "Node ... does not belong to the
        # document" while a navigation is half done.)
        self.driver.execute_script("window.__vykhukhol_old_page = true;")
        element.click()
        WebDriverWait(self.driver, WAIT).until(_new_page_loaded)

    def _loaded(self) -> None:
        WebDriverWait(self.driver, WAIT).until(
            lambda d: d.execute_script("return document.readyState") == "complete")

    def reload(self) -> None:
        self.driver.refresh()
        self._loaded()

    # -- reading -----------------------------------------------------------------
    def find(self, css: str) -> WebElement:
        return self.driver.find_element(By.CSS_SELECTOR, css)

    def all(self, css: str) -> list[WebElement]:
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def text(self, css: str = "body") -> str:
        return self.find(css).text

    @property
    def path(self) -> str:
        """The current page's path, without the query (flash messages ride there)."""
        return urlsplit(self.driver.current_url).path

    def flash(self) -> str:
        return " ".join(e.text for e in self.all(".flash"))

    def link(self, text: str) -> WebElement:
        return self.driver.find_element(By.LINK_TEXT, text)

    # -- writing -----------------------------------------------------------------
    def fill(self, css: str, value: str) -> None:
        """Type into a text field, or choose the option of a <select>."""
        field = self.find(css)
        if field.tag_name == "select":
            from selenium.webdriver.support.select import Select

            Select(field).select_by_value(value)
            return
        field.clear()
        if value:
            field.send_keys(value)

    def set_value(self, css: str, value: str) -> None:
        """Set a field through the DOM (datetime-local inputs take keys by locale)."""
        self.driver.execute_script("arguments[0].value = arguments[1];", self.find(css), value)

    def log_in(self, password: str | None = None) -> None:
        """Log in with ``password`` (default: the right one, ``conftest.PASSWORD``)."""
        self.open("/admin/login")
        self.fill("#password", PASSWORD if password is None else password)
        self.press("form button[type=submit]")

    # -- evidence ----------------------------------------------------------------
    def screenshot(self, name: str) -> Path:
        """A full-page PNG in tests/artifacts/, taken through the DevTools protocol
        (a headless window does not grow past its screen)."""
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        size = self.driver.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
        shot = self.driver.execute_cdp_cmd("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}})
        path = ARTIFACTS / f"{name}.png"
        path.write_bytes(base64.b64decode(shot["data"]))
        return path

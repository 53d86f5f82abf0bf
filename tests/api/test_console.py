"""The console page in a real headless browser: labels, self-refresh, and a screenshot.

Needs Debian's chromium and chromedriver (`apt-get install -y chromium chromium-driver`)
and selenium; skips with the reason otherwise. The screenshot goes to
$SIM_SCREENSHOT_DIR (default: the test's tmp dir).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sim.api import SimClient, in_process_client
from tests.api.conftest import Live, make_project

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        pytest.skip("no headless browser: apt-get install -y chromium chromium-driver")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="sim-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run", "--window-size=1360,1500",
                f"--user-data-dir={profile}"):
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def populate(api: SimClient) -> None:
    """shop: an active primary and an idle replica; blog: a primary still starting."""
    shop = make_project(api, "shop", default_endpoint_settings={
        "autoscaling_limit_min_cu": 0.25, "autoscaling_limit_max_cu": 2})
    pid, branch = shop["project"]["id"], shop["branch"]["id"]
    replica = api.post(f"projects/{pid}/endpoints", json={"endpoint": {
        "branch_id": branch, "type": "read_only", "autoscaling_limit_min_cu": 1,
        "autoscaling_limit_max_cu": 1}}).json()["endpoint"]["id"]
    api.advance(20)
    api.sim("POST", "connections", json={"project_id": pid,
                                         "endpoint_id": shop["endpoints"][0]["id"],
                                         "count": 3, "duration_seconds": 40})
    api.post(f"projects/{pid}/endpoints/{replica}/suspend")
    api.advance(30)
    make_project(api, "blog")


def test_console_shows_computes_and_operations(live: Live, browser, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    populate(in_process_client(live.server, api_key=live.key))
    browser.get(f"{live.base}/#key={live.key}")
    WebDriverWait(browser, 15).until(lambda d: "Read Replica" in d.find_element(
        By.TAG_NAME, "main").text)
    text = browser.find_element(By.TAG_NAME, "body").text
    for label in ("Primary", "Read Replica", "Active", "Idle", "Starting…", "0.25 ↔ 2 CU",
                  "1 CU", "OK", "In progress", "Create timeline", "Start compute",
                  "Suspend compute", "Simulated time: 2026-01-05 00:00:50 UTC", "manual clock"):
        assert label in text, label
    assert "#key" not in browser.current_url  # the key left the address bar...
    assert browser.execute_script("return localStorage.getItem('sim-api-key')") == live.key
    out = Path(os.environ.get("SIM_SCREENSHOT_DIR") or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(str(out / "console.png"))

    # ...and the page refreshes itself: time moves, the blog's primary becomes Active
    live.server.advance(60)
    WebDriverWait(browser, 15).until(
        lambda d: "Starting…" not in d.find_element(By.TAG_NAME, "main").text)
    blog = browser.find_elements(By.CSS_SELECTOR, "section.card")[-1].text
    assert "blog" in blog and "Active" in blog


def test_console_asks_for_a_key(live: Live, browser) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(f"{live.base}/")
    browser.execute_script("localStorage.removeItem('sim-api-key'); location.reload()")
    form = WebDriverWait(browser, 10).until(
        lambda d: d.find_element(By.CSS_SELECTOR, "form.key"))
    form.find_element(By.TAG_NAME, "input").send_keys("wrong-key")
    form.find_element(By.TAG_NAME, "button").click()
    WebDriverWait(browser, 10).until(
        lambda d: "That key was refused" in d.find_element(By.TAG_NAME, "main").text)

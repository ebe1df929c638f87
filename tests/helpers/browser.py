"""A real browser: Debian's headless Chromium driven by selenium through Debian's chromedriver.

Run as a script, it takes the screenshot of a served page that docs/ shows:
    python tests/helpers/browser.py 'http://127.0.0.1:8000/?text=...' docs/explorer.png
"""

from __future__ import annotations

import os
import shutil
import sys

import pytest

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")


def need_chromium() -> None:
    """Skip where the browser is not installed, except in CI (.ci/run installs it: there it must run)."""
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not shutil.which(p)]
    if missing and not os.environ.get("CI"):
        pytest.skip(f"no {', '.join(missing)} here (apt-get install chromium chromium-driver)")


def chromium(width: int = 1400, height: int = 1000):
    """A headless Chromium (selenium's driver), its own, offline: nothing is downloaded."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--window-size={width},{height}",
    ):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


if __name__ == "__main__":
    url, out = sys.argv[1], sys.argv[2]
    driver = chromium(1400, int(sys.argv[3]) if len(sys.argv) > 3 else 900)
    try:
        driver.get(url)
        driver.save_screenshot(out)
    finally:
        driver.quit()
    print(f"{url} -> {out}")

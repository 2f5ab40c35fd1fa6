"""Headless Chromium (Debian's ``chromium``) for the pages a person opens: the report page,
the site. One place for how it is found and driven."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest


def chromium_path() -> str:
    """Chromium's path; in CI its absence fails (``make browser`` installs it), elsewhere it skips."""
    path = shutil.which("chromium")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing in CI: .ci/run runs `make browser` before the tests")
        pytest.skip("Debian's chromium is not installed: `make browser` (as root) installs it")
    return path


def dom(chromium: str, page: Path, hash_: str = "", budget_ms: int = 10000) -> tuple[str, str]:
    """The page's DOM after its script ran (with ``hash_`` in its URL), and Chromium's log
    (console messages show as ``:CONSOLE``)."""
    done = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            f"--virtual-time-budget={budget_ms}",
            "--dump-dom",
            page.as_uri() + hash_,
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, done.stderr

"""Issue 22: `kitab refresh --source live` refuses what it can know before the run (no
KITAB_CONTACT, a service host that does not resolve) in one line and within seconds, through
the real command. `.invalid` never resolves (RFC 2606), so the test needs no network and
holds on a machine that has one."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

KITAB = str(Path(sys.executable).with_name("kitab"))


def refresh_live(tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess, float]:
    run_env = {k: v for k, v in os.environ.items() if k not in ("KITAB_CONTACT", "KITAB_DEBUG")}
    run_env.update(env)
    started = time.monotonic()
    done = subprocess.run(
        [KITAB, "refresh", "--source", "live", "--authors", "5", "--warehouse", str(tmp_path / "wh")],
        capture_output=True,
        text=True,
        env=run_env,
        timeout=120,
    )
    return done, time.monotonic() - started


def test_live_without_a_contact_is_refused_at_once_in_one_line(tmp_path):
    done, seconds = refresh_live(tmp_path)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("kitab: error: ")
    assert "KITAB_CONTACT" in done.stderr
    assert seconds < 20
    assert not (tmp_path / "wh" / "tables").exists()  # nothing written


def test_live_with_hosts_that_do_not_resolve_is_refused_before_the_run(tmp_path):
    done, seconds = refresh_live(
        tmp_path,
        KITAB_CONTACT="someone@example.org",
        KITAB_WIKIDATA_ENDPOINT="https://query.wikidata.invalid/sparql",
        KITAB_OPENLIBRARY_BASE="https://openlibrary.invalid",
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("kitab: error: "), done.stderr
    assert "query.wikidata.invalid" in done.stderr and "openlibrary.invalid" in done.stderr
    assert "Traceback" not in done.stderr and "requests" not in done.stdout
    assert seconds < 20
    assert not (tmp_path / "wh" / "tables").exists()


def test_preflight_resolves_the_hosts_it_is_given():
    """The check itself on names that resolve without a network (localhost) and that never do."""
    from kitab.sources.preflight import unresolved_hosts

    assert unresolved_hosts(["http://localhost:1/sparql", "http://127.0.0.1:2"], timeout=5) == []
    assert unresolved_hosts(["https://a.invalid/x", "http://localhost:1"], timeout=5) == ["a.invalid"]

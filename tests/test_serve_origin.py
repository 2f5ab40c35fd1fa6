"""``kitab serve`` off Docker (issue 30): prefect.yaml's compose mirror host does not answer
here, so serve runs a mirror of its own; a --mirror-url that does not answer is refused in one
line before the Prefect server is even asked (no Prefect server is started by these tests)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from kitab.app.commands.refresh import _yaml_mirror_url
from kitab.app.processes import free_port  # a port nothing listens on
from kitab.app.serve_origin import answers, served_mirror_url
from kitab.core.env import BUNDLED_SNAPSHOT
from kitab.core.errors import BadValue

KITAB = str(Path(sys.executable).with_name("kitab"))


def test_prefect_yaml_names_compose_host_which_does_not_answer_here():
    assert _yaml_mirror_url() == "http://mirror:8089"
    assert not answers("http://mirror:8089")


def test_an_unanswered_default_is_replaced_by_a_mirror_serve_runs_itself():
    with served_mirror_url(True, None, "http://mirror:8089", BUNDLED_SNAPSHOT) as url:
        assert url.startswith("http://127.0.0.1:") and answers(url)
        # the mirror serves the snapshot's data in the services' own formats
        doc = requests.get(f"{url}/search.json", params={"author": "Toni Morrison", "limit": 1}, timeout=10)
        assert doc.status_code == 200 and doc.json()["numFound"] > 0
    assert not answers(url)  # gone with serve


def test_a_source_without_a_mirror_gets_none_and_an_answering_url_is_kept():
    with served_mirror_url(False, None, "http://mirror:8089", BUNDLED_SNAPSHOT) as url:
        assert url is None
    with served_mirror_url(True, None, "http://mirror:8089", BUNDLED_SNAPSHOT) as running:
        with served_mirror_url(True, running, None, BUNDLED_SNAPSHOT) as url:
            assert url == running


def test_a_given_mirror_url_that_does_not_answer_is_refused():
    with pytest.raises(BadValue, match="no mirror answers at --mirror-url"):
        with served_mirror_url(True, f"http://127.0.0.1:{free_port()}", None, BUNDLED_SNAPSHOT):
            pass


def test_serve_refuses_in_one_line_before_asking_for_a_prefect_server(tmp_path):
    url = f"http://127.0.0.1:{free_port()}"
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "KITAB_DEBUG")}
    done = subprocess.run(
        [KITAB, "serve", "--mirror-url", url, "--warehouse", str(tmp_path / "wh")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    # one line, about the mirror: the missing PREFECT_API_URL would have been the next refusal
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("kitab: error: no mirror answers at --mirror-url")

"""Test environment: Prefect quiet and offline in a throwaway home, Hugging Face offline,
and one local mirror of the bundled snapshot per session (the real clients talk to it)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

_HOME = Path(tempfile.mkdtemp(prefix="kitab-tests-"))
os.environ["PREFECT_HOME"] = str(_HOME / "prefect")
os.environ.setdefault("KITAB_WAREHOUSE", str(_HOME / "warehouse"))

from kitab.core.env import BUNDLED_SNAPSHOT, quiet_prefect_env  # noqa: E402

quiet_prefect_env(_HOME / "prefect")

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

from kitab.core.config import Settings  # noqa: E402

# No per-example deadline: the suite runs two workers on two cores beside servers and subprocesses,
# where a first example that imports a registry can take over Hypothesis' 200 ms and fail a test
# whose property holds. Speed is measured by benchmarks/, not by tests.
settings.register_profile("kitab", deadline=None)
settings.load_profile("kitab")


@pytest.fixture(scope="session")
def snapshot_dir() -> Path:
    return BUNDLED_SNAPSHOT


@pytest.fixture(scope="session")
def manifest(snapshot_dir):
    from kitab.sources.snapshot.format import read_manifest

    return read_manifest(snapshot_dir)


@pytest.fixture(scope="session")
def mirror(snapshot_dir):
    from kitab.simulate.mirror.server import Mirror

    with Mirror(snapshot_dir, ol_rate=None) as m:
        yield m


@pytest.fixture
def settings(tmp_path) -> Settings:
    """A private warehouse (and so a private HTTP cache) per test; quick backoff."""
    return Settings(warehouse=tmp_path / "warehouse", backoff_initial=0.05, backoff_max=0.2, mirror_ol_rate=200.0)

"""Process environment that keeps Prefect quiet, offline and CI-safe (and Arrow on the C heap).

Prefect reads its settings from the environment when it is first imported, so this runs
from ``kitab/__init__`` before any stage or flow module imports prefect. Values already
set by the user win (``setdefault``).
"""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
BUNDLED_SNAPSHOT = PROJECT_ROOT / "snapshots" / "bundled"


def quiet_prefect_env(prefect_home: Path | None = None) -> None:
    """Set defaults; ``prefect_home`` (the warehouse's ``.prefect``) is where Prefect keeps
    its database and the persisted task results that make reruns free."""
    defaults = {
        "DO_NOT_TRACK": "1",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_UI_ENABLED": "false",
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90",
        "PREFECT_LOGGING_LEVEL": "WARNING",
        "PREFECT_RESULTS_PERSIST_BY_DEFAULT": "true",
        # --task-runner dask: the cluster's own INFO lines (scheduler, nannies) are noise here
        "DASK_LOGGING__DISTRIBUTED": "warning",
        # Hugging Face libraries never reach the Hub unless an export is pushed explicitly.
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_XET_TELEMETRY_ENABLED": "false",
        # Arrow's buffers from the C heap, not its mimalloc, which kept what a step freed (the
        # refresh ~0.1 GiB, each worker 40-50 MiB): glibc's free pages go back after every step
        # (kitab/core/step_memory.py). Read when pyarrow is first imported, so here.
        "ARROW_DEFAULT_MEMORY_POOL": "system",
    }
    if prefect_home is not None:
        defaults["PREFECT_HOME"] = str(prefect_home)
    for key, value in defaults.items():
        os.environ.setdefault(key, value)

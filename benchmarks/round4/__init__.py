"""Issue 39's probes (reliability round 4), one module per surface: each module here defines
``probes(clean: Path, out: Path) -> list[dict]`` returning ``faults.probe(...)`` rows, run by
``benchmarks/faults.py --cases issue39`` on the clean release (``clean``; copy it with
``faults.copy_release`` before anything destructive) in the scratch folder ``out``. A module
imports the helpers with ``from benchmarks import faults`` (faults.probe, kitab_cli, spoke)."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path


def all_probes(clean: Path, out: Path) -> list[dict]:
    rows: list[dict] = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        rows.extend(module.probes(clean, out))
    return rows

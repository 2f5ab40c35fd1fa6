"""A refresh's work folder: each step's output files, and checkpoints that make a rerun resume.

``<warehouse>/.work/<release>/<step>/<part>.<table>.parquet`` holds what a step wrote;
``<step>/<part>.json`` records the step's key and result. The key hashes what the result
depends on: the step's name and parameters, the sha256 of every input file (the refs, not
the rows) and the code digest. A rerun whose key matches, and whose files are still there
with the recorded checksums, takes the recorded result instead of running the step. This
is the refresh's cache, the same with or without Prefect and on any runner; Prefect's own
result cache is not used because a cached result would outlive the files it points to.
The folder is removed once the release is published.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, is_dataclass
from pathlib import Path
from typing import Any

from kitab.core.cycles import cycle_collection_paused
from kitab.core.files import sha256_file, write_bytes
from kitab.core.refs import TableRef
from kitab.core.step_memory import after_step
from kitab.core.version import code_digest


@dataclass(frozen=True)
class StepResult:
    """What a step returns: references to its output tables and its stats (for the run report)."""

    outputs: dict[str, TableRef] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"outputs": {k: asdict(v) for k, v in self.outputs.items()}, "stats": self.stats}

    @classmethod
    def from_json(cls, data: dict) -> StepResult:
        return cls({k: TableRef(**v) for k, v in data["outputs"].items()}, data["stats"])


def _plain(value: Any) -> Any:
    if isinstance(value, TableRef):
        return {"table": value.table, "rows": value.rows, "sha256": value.sha256}  # not the path: content
    if is_dataclass(value):
        return _plain(asdict(value))
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in sorted(value.items())}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [_plain(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, (set, frozenset)) else items
    return value


def step_key(step: str, **inputs: Any) -> str:
    """sha256 over the step name, its inputs (refs by checksum) and the code digest."""
    material = json.dumps({"step": step, "inputs": _plain(inputs), "code": code_digest()}, sort_keys=True, default=str)
    return hashlib.sha256(material.encode()).hexdigest()


@dataclass(frozen=True)
class WorkDir:
    root: str

    def path(self, step: str, part: str, table: str) -> Path:
        return Path(self.root) / step / f"{part}.{table}.parquet"

    def _marker(self, step: str, part: str) -> Path:
        return Path(self.root) / step / f"{part}.json"

    def cached(self, step: str, part: str, key: str) -> StepResult | None:
        marker = self._marker(step, part)
        try:
            recorded = json.loads(marker.read_text())
        except (FileNotFoundError, ValueError):
            return None
        if recorded.get("key") != key:
            return None
        result = StepResult.from_json(recorded["result"])
        for ref in result.outputs.values():
            if not ref.exists() or sha256_file(ref.path) != ref.sha256:
                return None
        return result

    def record(self, step: str, part: str, key: str, result: StepResult) -> None:
        marker = self._marker(step, part)
        write_bytes(marker, json.dumps({"key": key, "result": result.to_json()}, sort_keys=True, default=str).encode())

    def run(
        self,
        step: str,
        part: str,
        compute: Callable[[], StepResult],
        *,
        final: Callable[[StepResult], bool] = lambda result: True,
        **inputs: Any,
    ) -> StepResult:
        """The recorded result if the inputs and code are unchanged, else ``compute()``, recorded
        only if ``final(result)``: a result that a rerun could improve (a source that did not
        answer this time) is not kept, so the rerun computes it again. ``compute`` runs with
        the cycle collector paused (kitab/core/cycles.py); after it, the process keeps nothing
        of the batch (kitab/core/step_memory.py: per-step caches emptied, free heap returned)."""
        key = step_key(step, part=part, **inputs)
        found = self.cached(step, part, key)
        if found is not None:
            # a resumed step sent nothing this time (its recorded count was the first run's)
            stats = {**found.stats, "resumed": True}
            if "requests_sent" in stats:
                stats["requests_sent"] = 0
            return StepResult(found.outputs, stats)
        try:
            with cycle_collection_paused():  # a step's rows are millions of objects in no cycle
                result = compute()
        finally:
            after_step()
        if final(result):
            self.record(step, part, key, result)
        return result

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

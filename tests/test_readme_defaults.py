"""The README's stated defaults are the code's (issue 30: it named human_v4/city_v4 when v6 was
the default). Each check reads the number or name out of the README's own sentence."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from kitab.app.commands.refresh import demo, refresh
from kitab.core.params import DEFAULTS
from tasks.taggers.registry import DEFAULT as DEFAULT_TAGGERS

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def stated(pattern: str) -> re.Match:
    found = re.search(pattern, README)
    assert found, f"the README no longer says {pattern!r}"
    return found


def option_default(command, name: str):
    return inspect.signature(command).parameters[name].default.default


def test_default_taggers():
    assert tuple(stated(r"them: (\w+), (\w+) by default").groups()) == DEFAULT_TAGGERS


def test_demo_seed_authors_and_release():
    seed, authors, release = stated(
        r"`make demo` runs `kitab demo`: seed (\d+), (\d+) authors requested, release `(\w+)`"
    ).groups()
    assert int(seed) == option_default(demo, "seed")
    assert int(authors) == option_default(demo, "authors") == DEFAULTS.authors
    assert release == "demo" and stated(r"overrides \(the demo uses `(\w+)`\)").group(1) == release


def test_refresh_defaults():
    assert stated(r"`--source (\w+)` \(default\)").group(1) == DEFAULTS.source == option_default(refresh, "source")
    from kitab.core.params import MAX_BATCH_SIZE, batch_size_for

    assert int(stated(r"`--batch-size`, default (\d+)").group(1)) == batch_size_for(10_000) == batch_size_for(1)
    assert int(stated(r"takes a hundredth of its size, up to ([\d,]+) authors").group(1).replace(",", "")) == (
        MAX_BATCH_SIZE
    )
    assert DEFAULTS.batch_size is None and option_default(refresh, "batch_size") is None  # (by the run's size)
    assert float(stated(r"sampled authors \(default ([\d.]+)\)").group(1)) == DEFAULTS.max_failed_share
    assert stated(r"`--task-runner (\w+)` \(default\)").group(1) == option_default(refresh, "task_runner")


def test_schedule_default():
    from flows.deploy import DEFAULT_CRON

    assert stated(r"cron schedule \(default Mondays 03:00 UTC\)") and DEFAULT_CRON == "0 3 * * 1"

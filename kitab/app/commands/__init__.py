"""The ``kitab`` commands, one module per group; kitab/app/cli.py registers them in this order.

- ``warehouse``: sql, describe, test (reading the warehouse)
- ``releases``: releases, verify (the committed releases and their files)
- ``refresh``: refresh, demo, serve (making a release: once, on the bundled snapshot, on a schedule)
- ``publish``: export, report (a release for the Hub and for people)
- ``snapshot``: mirror serve, snapshot generate / from-dumps / manifest (the inputs)
- ``text``: dedup, tag, constraints (one stage's logic on lines of stdin)
- ``evaluate``: evaluate, answer, prompts (models on a release)
- ``review``: review export / import (labels for the key's unsure books)
- ``site``: site build (the static site over every release)
- ``cycle``: cycle (a release, every model of a models file scored on it, the site, the export)
- ``model``: model serve (a fake or a small real model endpoint on 127.0.0.1)

What they share (the ``--warehouse`` option, output formats, errors) is in ``common``. A new
group is one module here with its ``app`` and one line in :data:`GROUPS`.
"""

from __future__ import annotations

from kitab.app.commands import (
    cycle,
    evaluate,
    model,
    publish,
    refresh,
    releases,
    review,
    site,
    snapshot,
    text,
    warehouse,
)

GROUPS = (warehouse, releases, refresh, publish, snapshot, text, evaluate, review, site, cycle, model)

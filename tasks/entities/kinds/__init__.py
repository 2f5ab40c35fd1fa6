"""One module per entity kind. Importing this package imports every module in it, so a new
kind registers itself by existing (as tasks/constraints/kinds/ does for constraint types)."""

from __future__ import annotations

import importlib
import pkgutil

for _module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if not _module.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_module.name}")

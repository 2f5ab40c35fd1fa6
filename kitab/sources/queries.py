"""Query texts kept in files under sql/ (SPARQL in sql/sparql/), filled in with
string.Template so SPARQL's own braces need no escaping."""

from __future__ import annotations

from functools import cache
from string import Template

from kitab.core.env import PROJECT_ROOT

SQL_DIR = PROJECT_ROOT / "sql"


@cache
def _template(name: str) -> Template:
    return Template((SQL_DIR / "sparql" / f"{name}.rq").read_text())


def sparql(name: str, **values: object) -> str:
    """The query sql/sparql/<name>.rq with $placeholders filled; a missing value is an error."""
    return _template(name).substitute({k: str(v) for k, v in values.items()})


def sparql_string(value: str) -> str:
    """A SPARQL string literal with an English language tag, safely escaped."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return f'"{escaped}"@en'

"""Query texts kept in files under sql/ (SPARQL in sql/sparql/), filled in with
string.Template so SPARQL's own braces need no escaping; and what other implementations of a
query read from its text (one list, not two)."""

from __future__ import annotations

import re
from functools import cache
from string import Template

from kitab.core.env import PROJECT_ROOT

# The works rule (kitab.core.params.WORKS_RULE): the queries get its classes through ``$scholarly``,
# the dump store and the from-dumps builder import these names from here. One list, not several.
from kitab.core.params import SCHOLARLY_CLASSES as SCHOLARLY_CLASSES
from kitab.core.params import SCHOLARLY_PROPERTY as SCHOLARLY_PROPERTY
from kitab.core.params import WORKS_RULE as WORKS_RULE
from kitab.sources.snapshot.format import WD

SQL_DIR = PROJECT_ROOT / "sql"


@cache
def _template(name: str) -> Template:
    return Template((SQL_DIR / "sparql" / f"{name}.rq").read_text())


def sparql(name: str, **values: object) -> str:
    """The query sql/sparql/<name>.rq with $placeholders filled; a missing value is an error.
    ``$scholarly`` (the works rule's classes) is always filled."""
    filled = {"scholarly": " ".join(f"wd:{q}" for q in SCHOLARLY_CLASSES)}
    return _template(name).substitute(filled | {k: str(v) for k, v in values.items()})


def sparql_titles(titles) -> str:
    """The VALUES of works_by_titles.rq: each title as an ``@en`` and a ``@mul`` literal."""
    return " ".join(f"{sparql_string(t)} {sparql_string(t, 'mul')}" for t in sorted(set(titles)))


def sparql_string(value: str, lang: str = "en") -> str:
    """A SPARQL string literal with an English language tag, safely escaped."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return f'"{escaped}"@{lang}'


def occupations(query_text: str) -> list[str]:
    """The occupation IRIs of ``VALUES ?occupation { ... }`` in candidate_authors.rq (one list, not two)."""
    block = re.search(r"VALUES\s+\?occupation\s*\{([^}]*)\}", query_text)
    if not block:
        raise ValueError("candidate_authors.rq has no VALUES ?occupation { ... } block")
    body = re.sub(r"#[^\n]*", "", block.group(1))
    found = [WD + q for q in re.findall(r"\bwd:(Q\d+)\b", body)] + re.findall(r"<([^>]+)>", body)
    if not found:
        raise ValueError("candidate_authors.rq: VALUES ?occupation is empty")
    return found

"""Model answers: the answers file a user brings, and the book list inside one answer.

An answers file is either

- **JSON lines**, one object per query: ``{"query_id": "...", "response": "<the model's raw
  text>"}``, optionally with ``finish_reason`` (the endpoint's, e.g. "length" for a cut
  answer) and ``sample`` (0, 1, ... with ``kitab answer --samples N``: one line per query and
  sample) and ``model`` (``kitab answer`` names the model on every line: ``kitab evaluate``
  takes it as the evaluation's name unless ``--model`` is given; two names in one file are
  refused) and ``limit`` / ``limit_seed`` (``kitab answer --limit``: the sample it answers, which
  ``kitab evaluate`` then scores over, evaluation/population.py); other keys are ignored (``reasoning`` is kept in the file, never read for titles),
  so ``kitab prompts`` lines with a ``response`` added are a valid answers file; or
- **CSV** with the columns of KITAB's published sample responses: KITAB's query columns
  (``Author``, ``constraint_type``, ``constraints``, ... as in the exported configs, or
  kitab's ``query_id``) and one more column holding the model's text. That column is found
  by elimination, or named with ``response_column``.

Every problem is a ``KitabError`` naming the line, never a silently skipped answer.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import io
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kitab.core import jsonl
from kitab.core.errors import KitabError
from kitab.core.text import is_unicode

# KITAB's columns of a query row, plus ours (exported configs and the warehouse views)
KITAB_COLUMNS = (
    "Author",
    "Birth Year",
    "# of sitelinks",
    "constraint_id",
    "constraint_type",
    "constraints",
    "mapped_books",
    "all_books",
    "raw_books",
    "query_id",
    "release",
    "WikiData ID",
    "OpenLibrary ID",
)
# Bounds that keep time and memory small for any file (a model's book list is a few thousand
# characters; KITAB's longest sample answers are under 20,000): a bigger file, or a response
# beyond MAX_RESPONSE_CHARS, is refused naming it (parse.MAX_LINE_CHARS bounds a title line).
MAX_FILE_BYTES = 256 * 2**20
MAX_RESPONSE_CHARS = 200_000


@dataclass(frozen=True)
class Answer:
    """One model answer: its query (by id, or by KITAB's columns) and the model's raw text."""

    line: int  # 1-based line (JSON lines) or data row (CSV) in the file, for error messages
    response: str
    query_id: str | None = None
    kitab_key: tuple[str, str, str] | None = None  # (Author, constraint_type, constraints)
    finish_reason: str | None = None  # the endpoint's ("stop", "length": cut), when the file has it
    sample: int = 0  # which of kitab answer --samples N
    reasoning: str | None = (
        None  # a reasoning model's separate reasoning text, when the file has it (never read for titles)
    )
    model: str | None = None  # the model the line names (kitab answer writes it on every line)
    limit: int | None = None  # kitab answer --limit: the sample the file answers (evaluation/population.py)
    limit_seed: int | None = None


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_answers(path: Path, *, response_column: str | None = None) -> tuple[list[Answer], str]:
    """The answers in ``path`` and the sha256 of its bytes. JSON lines or CSV, by suffix
    (``.jsonl``/``.json``/``.csv``), else by the first character ("{": JSON lines). JSON lines
    are read one line at a time and split by ``"\\n"`` only (kitab/core/jsonl.py): a U+2028
    inside a response, as a file written before kept it, is text, not a line's end."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise KitabError(
                f"{path}: {size:,} bytes, more than an answers file may have ({MAX_FILE_BYTES:,}); split it"
            )
        with open(path, "rb") as fh:
            head = fh.read(4096).removeprefix(codecs.BOM_UTF8)
            fh.seek(0)
            suffix = path.suffix.lower()
            is_json = suffix in (".jsonl", ".json") or (suffix != ".csv" and head.lstrip().startswith(b"{"))
            digest = hashlib.sha256()
            if is_json:
                answers = _read_json_lines(path, jsonl.iter_lines(fh, on_bytes=digest.update))
            else:
                data = fh.read()
                digest.update(data)
                answers = _read_csv(path, _decoded(path, data), response_column)
    except OSError as exc:
        raise KitabError(f"cannot read the answers file {path}: {exc.strerror or exc}") from None
    except jsonl.NotUTF8 as exc:
        raise KitabError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.byte})") from None
    if not answers:
        raise KitabError(f"{path}: no answers in the file")
    for answer in answers:
        if len(answer.response) > MAX_RESPONSE_CHARS:
            raise KitabError(
                f"{path}:{answer.line}: a response of {len(answer.response):,} characters "
                f"(at most {MAX_RESPONSE_CHARS:,}): not a model's book list"
            )
    return answers, digest.hexdigest()


def _decoded(path: Path, data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise KitabError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def _read_json_lines(path: Path, lines: Iterable[tuple[int, str]]) -> list[Answer]:
    answers = []
    for number, line in lines:
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise KitabError(f"{path}:{number}: not JSON ({exc.msg})") from None
        except ValueError:  # an integer past Python's 4,300-digit conversion limit
            raise KitabError(f"{path}:{number}: a number too long to be a value of an answer") from None
        except RecursionError:
            raise KitabError(f"{path}:{number}: JSON nested too deeply to be an answer") from None
        if not isinstance(row, dict):
            raise KitabError(f"{path}:{number}: expected an object with query_id and response")
        missing = [key for key in ("query_id", "response") if key not in row]
        if missing:
            raise KitabError(
                f"{path}:{number}: missing {' and '.join(missing)} "
                '(each line: {"query_id": "...", "response": "<the model\'s text>"})'
            )
        if not isinstance(row["query_id"], str) or not (row["response"] is None or isinstance(row["response"], str)):
            raise KitabError(f"{path}:{number}: query_id must be a string and response a string or null")
        finish_reason, sample = row.get("finish_reason"), row.get("sample", 0)
        if not (finish_reason is None or isinstance(finish_reason, str)):
            raise KitabError(f"{path}:{number}: finish_reason must be a string or null")
        if not isinstance(sample, int) or isinstance(sample, bool) or sample < 0:
            raise KitabError(f"{path}:{number}: sample must be a whole number >= 0")
        reasoning = row.get("reasoning")
        if not (reasoning is None or isinstance(reasoning, str)):
            raise KitabError(f"{path}:{number}: reasoning must be a string or null")
        model = row.get("model")
        if not (model is None or isinstance(model, str)):
            raise KitabError(f"{path}:{number}: model must be a string or null")
        limit, limit_seed = row.get("limit"), row.get("limit_seed")
        for key, value in (("limit", limit), ("limit_seed", limit_seed)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                raise KitabError(f"{path}:{number}: {key} must be a whole number >= 0 or null")
        if limit == 0:
            raise KitabError(f"{path}:{number}: limit must be 1 or more")
        for key in ("query_id", "response", "finish_reason", "reasoning", "model"):
            if isinstance(row.get(key), str) and not is_unicode(row[key]):
                raise KitabError(f"{path}:{number}: {key} is not valid Unicode (a lone surrogate escape)")
        answers.append(
            Answer(
                number,
                row["response"] or "",
                query_id=row["query_id"],
                finish_reason=finish_reason,
                sample=sample,
                reasoning=reasoning,
                model=model if model and model.strip() else None,  # a blank name names nothing
                limit=limit,
                limit_seed=limit_seed if limit is not None else None,
            )
        )
    return answers


def answers_model(answers: list[Answer], path: Path) -> str | None:
    """The model the answers name (``kitab answer`` writes ``model`` on every line), None when no
    line names one; two different names are refused, naming the first line of each."""
    first: dict[str, int] = {}
    for answer in answers:
        if answer.model is not None:
            first.setdefault(answer.model, answer.line)
    if len(first) > 1:
        (a, la), (b, lb) = sorted(first.items(), key=lambda kv: kv[1])[:2]
        raise KitabError(
            f"{path}: lines name two models, {a!r} (line {la}) and {b!r} (line {lb}); "
            "one answers file holds one model's answers: split it"
        )
    return next(iter(first), None)


def _read_csv(path: Path, text: str, response_column: str | None) -> list[Answer]:
    try:
        return _read_csv_rows(path, text, response_column)
    except csv.Error as exc:  # e.g. a cell over the csv module's field limit (131,072 characters)
        raise KitabError(f"{path}: not a CSV file this reads ({exc})") from None


def _read_csv_rows(path: Path, text: str, response_column: str | None) -> list[Answer]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    columns = reader.fieldnames or []
    if response_column is None:
        others = [c for c in columns if c not in KITAB_COLUMNS and c.strip() and c != "Unnamed: 0"]
        if len(others) != 1:
            raise KitabError(
                f"{path}: cannot tell which column holds the model's text "
                f"(candidates: {others or 'none'}); name it with --response-column"
            )
        response_column = others[0]
    elif response_column not in columns:
        raise KitabError(f"{path}: no column {response_column!r} (columns: {columns})")
    by_id = "query_id" in columns
    if not by_id and not {"Author", "constraint_type", "constraints"} <= set(columns):
        raise KitabError(
            f"{path}: a CSV needs query_id, or KITAB's Author, constraint_type and constraints "
            f"columns, to know which query each row answers (columns: {columns})"
        )
    answers = []
    for number, row in enumerate(reader, start=1):
        if None in row:  # more cells than the header has columns
            raise KitabError(f"{path}: data row {number} has more cells than the header")
        response = row.get(response_column) or ""
        if by_id:
            answers.append(Answer(number, response, query_id=row["query_id"]))
        else:
            answers.append(
                Answer(number, response, kitab_key=(row["Author"], row["constraint_type"], row["constraints"]))
            )
    return answers

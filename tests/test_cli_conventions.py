"""Command-line conventions, through the real ``kitab`` command at 80 columns (issue 36 item 7):
a flag shows no ``<bool>`` and an option names its value; help paragraphs wrap where the
terminal does, not where a docstring's source line broke; ``kitab releases --output json|csv``
parse; and a table piped at 80 columns shows every value whole (no "…" cells)."""

from __future__ import annotations

import csv
import functools
import io
import json
import re

import pytest

from tests.releases import dump_release
from tests.test_cli_errors import kitab

AT_80 = {"COLUMNS": "80", "LINES": "50"}
RELEASE = "conv"


@functools.cache  # each page once: all_commands reads the groups' pages, which `pages` needs again
def help_of(*command: str) -> str:
    result = kitab(*command, "--help", env=AT_80, timeout=120)
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout.decode()


def commands_panel(text: str) -> list[tuple[str, list[str]]]:
    """The Commands panel of a help page: (name, its description's lines)."""
    entries: list[tuple[str, list[str]]] = []
    inside = False
    for line in text.splitlines():
        if line.startswith("╭─ Commands"):
            inside = True
            continue
        if inside and line.startswith("╰"):
            break
        if inside:
            body = line.strip("│").rstrip()
            if body[1:2].strip():  # a new entry: " name   description"
                name = body.split()[0]
                entries.append((name, [body[body.index(name) + len(name) :].strip()]))
            else:  # its description, continued
                entries[-1][1].append(body.strip())
    return entries


def all_commands() -> list[tuple[str, ...]]:
    """Every command and subcommand, read from the help pages themselves."""
    out = []
    for name, _ in commands_panel(help_of()):
        sub = commands_panel(help_of(name))
        out += [(name, s) for s, _ in sub] if sub else [(name,)]
    return out


@pytest.fixture(scope="module")
def commands() -> list[tuple[str, ...]]:
    found = all_commands()
    assert ("refresh",) in found and ("review", "export") in found and len(found) >= 20
    return found


@pytest.fixture(scope="module")
def pages(commands) -> dict[tuple[str, ...], str]:
    every = {(), *commands, *((c[0],) for c in commands)}
    return {c: help_of(*c) for c in sorted(every)}


def test_flags_show_no_type_and_options_name_their_value(pages):
    for command, text in pages.items():
        assert "<bool>" not in text, (command, text)
        for line in text.splitlines():  # an option's row: "│ --name  METAVAR  help"
            match = re.match(r"│\s+(--[a-z-]+)\s+(?:-\w\s+)?(\S+)", line)
            if match and match.group(2).startswith("<"):
                pytest.fail(f"{' '.join(command)} {match.group(1)} shows {match.group(2)}")
    refresh = pages[("refresh",)]
    assert re.search(r"--seed\s+SEED\b", refresh) and re.search(r"--snapshot\s+PATH\b", refresh)
    assert re.search(r"--authors\s+N\b", refresh)
    assert re.search(r"│ --allow-fewer\s+fewer eligible", refresh)  # a flag: its help right after it


def _broken_early(lines: list[str], width: int) -> str | None:
    """A line of one wrapped paragraph that ends although the next line's first word would have
    fitted on it: the paragraph broke where its source line did, mid-sentence."""
    for cur, nxt in zip(lines, lines[1:]):
        if not cur or not nxt or nxt.startswith("["):  # ("[default: …]" goes on its own line)
            continue
        if len(cur) + 1 + len(nxt.split()[0]) <= width:
            return f"{cur!r} then {nxt!r}"
    return None


def test_help_text_does_not_break_mid_sentence(pages):
    for command, text in pages.items():
        lines = text.splitlines()
        # the command's own description: the indented paragraph under "Usage:", 79 columns wide
        start = next(i for i, line in enumerate(lines) if line.strip().startswith("Usage:")) + 2
        end = next(i for i in range(start, len(lines)) if not lines[i].strip())
        assert (problem := _broken_early([x.strip() for x in lines[start:end]], 78)) is None, (command, problem)
        # each entry of a Commands panel: its description column, from its first line's offset
        panel = [line for line in lines if line.startswith("│")]
        for name, description in commands_panel(text):
            first = next(x for x in panel if x.strip("│").split() and x.strip("│").split()[0] == name)
            width = len(first) - 2 - first.index(description[0]) - 1
            assert (problem := _broken_early(description, width)) is None, (command, name, problem)
            assert description[-1].endswith((".", ")", ".)")), (command, name, description)


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    return dump_release(tmp_path_factory.mktemp("conventions") / "wh", authors=8, seed=42, release=RELEASE)


def test_releases_output_json_and_csv_parse(warehouse):
    as_json = kitab("releases", "--output", "json", "--warehouse", warehouse)
    assert as_json.returncode == 0, as_json.stderr.decode()
    (row,) = json.loads(as_json.stdout)
    assert row["release"] == RELEASE and row["authors"] == 8 and row["seed"] == 42
    assert row["publish_rows"] > 0 and row["total_seconds"] > 0
    as_csv = kitab("releases", "--output", "csv", "--warehouse", warehouse)
    assert as_csv.returncode == 0, as_csv.stderr.decode()
    (line,) = list(csv.DictReader(io.StringIO(as_csv.stdout.decode())))
    assert {k: str(v) if v is not None else "" for k, v in row.items()} == line
    bad = kitab("releases", "--output", "xml", "--warehouse", warehouse)
    assert bad.returncode == 2 and "table, json, csv" in bad.stderr.decode()


@pytest.mark.parametrize(
    "command",
    [("releases",), ("sql", "select * from releases"), ("describe",), ("describe", "releases")],
    ids=["releases", "sql", "describe", "describe-table"],
)
def test_piped_output_at_80_columns_shows_every_value_whole(warehouse, command):
    result = kitab(*command, "--warehouse", warehouse, env=AT_80)
    assert result.returncode == 0, result.stderr.decode()
    text = result.stdout.decode()
    assert "…" not in text, text
    if command[0] == "describe":  # a table that fits: at most 80 columns, long words folded
        assert max(len(line) for line in text.splitlines()) <= 80
    if command == ("releases",):  # too wide for 80 columns: one "column: value" line per value
        assert re.search(rf"^release:\s+{RELEASE}$", text, re.M) and re.search(r"^authors:\s+8$", text, re.M)
    if command[0] == "sql":
        assert re.search(r'^checksums:\s+\{"authors": "[0-9a-f]{64}"', text, re.M)

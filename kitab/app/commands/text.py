"""One stage's logic on lines of stdin, for a person to probe: ``kitab dedup``,
``kitab tag``, ``kitab constraints``."""

from __future__ import annotations

import sys

import typer

from kitab.app.commands.common import warn

app = typer.Typer()


def _stdin_lines(with_year: bool) -> list[str]:
    """The probe's input lines: any bytes decoded (invalid UTF-8 replaced), titles over the
    bound skipped; a warning line on stderr for each."""
    from kitab.app.probe_input import decode_lines

    if sys.stdin.isatty():
        raise typer.BadParameter("expected lines on standard input (pipe a file or use <<EOF)")
    lines, invalid = decode_lines(sys.stdin.buffer.read())
    if invalid:
        warn(
            f"{invalid} input line{'s' if invalid > 1 else ''} had invalid UTF-8, read with U+FFFD in place "
            "of the bad bytes"
        )
    return _short_titles(lines, with_year)


def _short_titles(lines: list[str], with_year: bool, noun: str = "line") -> list[str]:
    from kitab.app.probe_input import line_list, without_long_titles
    from tasks.text import MAX_TITLE_CHARS, split_title_year

    kept, skipped = without_long_titles(lines, (lambda line: split_title_year(line)[0]) if with_year else str.strip)
    if skipped:
        warn(f"skipped {line_list(skipped, noun)}: a title longer than {MAX_TITLE_CHARS:,} characters is not a title")
    return kept


@app.command()
def dedup() -> None:
    """One author's titles on stdin (one per line, optional "(YYYY)") -> clusters as JSON lines."""
    from tasks.dedup_titles import dedup_probe

    for line in dedup_probe(_stdin_lines(with_year=True)):
        print(line)


TAGGERS_HELP = "tagger versions, comma-separated, one per kind (default: $KITAB_TAGGERS, else human_v7,city_v7)"


def _taggers(taggers: str | None, kinds: set[str] | None = None) -> list:
    """The selected taggers (``--taggers``, else $KITAB_TAGGERS, else the default kinds'),
    constructed; ``kinds``: only those of these entity kinds, each of which must be selected."""
    import os

    from kitab.app.runs import ENV_TAGGERS
    from kitab.core.errors import BadValue
    from tasks.taggers.registry import make_taggers, selected_versions

    chosen = make_taggers(selected_versions(taggers or os.environ.get(ENV_TAGGERS) or None))
    if kinds is None:
        return chosen
    missing = sorted(kinds - {t.name for t in chosen})
    if missing:
        raise BadValue(f"no selected tagger finds {', '.join(missing)} (select one with --taggers)")
    return [t for t in chosen if t.name in kinds]


@app.command()
def tag(
    titles: list[str] | None = typer.Argument(None, help="titles; none: one per line on stdin"),
    explain: bool = typer.Option(False, "--explain", help="add each kind's evidence (what decided its state)"),
    taggers: str | None = typer.Option(None, "--taggers", help=TAGGERS_HELP),
) -> None:
    """Titles -> JSON lines {"title", "<kind>_names", ..., "<kind>": state, ...}, per selected
    entity kind (human and city by default): the names the taggers found and each kind's state,
    yes / no / unsure (docs/tagging.md)."""
    from kitab.app.probe_input import valid_text
    from tasks.tag_entities import tag_probe

    if titles:
        checked = [valid_text(t) for t in titles]
        invalid = sum(bad for _, bad in checked)
        if invalid:
            warn(
                f"{invalid} argument{'s' if invalid > 1 else ''} had invalid UTF-8, read with U+FFFD in place "
                "of the bad bytes"
            )
        lines = _short_titles([t for t, _ in checked], with_year=False, noun="argument")
    else:  # a blank line is no title: no output line for it (as dedup and constraints skip it)
        lines = [line for line in _stdin_lines(with_year=False) if line.strip()]
    chosen = _taggers(taggers)
    for line in tag_probe(lines, taggers=chosen, explain=explain):
        print(line)


@app.command()
def constraints(
    kinds: str | None = typer.Option(
        None, "--kinds", help="entity kinds to add constraints for, comma-separated (e.g. human,city,country)"
    ),
    human: bool = typer.Option(False, "--human", help="add human-name constraints (same as --kinds human)"),
    city: bool = typer.Option(False, "--city", help="add city-name constraints (same as --kinds city)"),
    taggers: str | None = typer.Option(None, "--taggers", help=TAGGERS_HELP),
) -> None:
    """One author's books on stdin ("Title (YYYY)" per line) -> every candidate constraint as JSON lines."""
    from tasks.constraints import constraints_probe
    from tasks.entities.registry import entity_kind
    from tasks.text import split_title_year

    wanted = {k.strip() for k in (kinds or "").split(",") if k.strip()}
    wanted |= {name for name, flag in (("human", human), ("city", city)) if flag}  # the README's aliases
    for name in sorted(wanted):
        entity_kind(name)  # an unknown kind: one line naming the registered ones
    lines = _stdin_lines(with_year=True)
    found: dict[str, dict[str, bool]] = {}
    if wanted:  # tag every title in one batch (one parse per title), then look up
        from tasks.tag_entities import tag_titles

        chosen = _taggers(taggers, wanted)
        titles = sorted({split_title_year(line)[0] for line in lines if line.strip()})
        spans = tag_titles(titles, chosen)
        found = {t.name: {title: bool(spans[t.name][i]) for i, title in enumerate(titles)} for t in chosen}

    for line in constraints_probe(lines, taggers={kind: flags.get for kind, flags in found.items()}):
        print(line)

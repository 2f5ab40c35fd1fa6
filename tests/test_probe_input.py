"""kitab/app/probe_input.py: what the probes make of any bytes."""

from __future__ import annotations

from kitab.app.probe_input import decode_lines, line_list, valid_text, without_long_titles
from tasks.text import MAX_TITLE_CHARS, split_title_year


def test_invalid_utf8_is_replaced_and_counted_per_line():
    data = "\ufeffBeloved (1987)\r\n".encode() + b"Caf\xe9\n\xff\xfe\xfd (1999)\r" + "Gödel\n".encode()
    lines, invalid = decode_lines(data)
    assert lines == ["Beloved (1987)", "Caf\ufffd", "\ufffd\ufffd\ufffd (1999)", "Gödel"] and invalid == 2
    assert decode_lines(b"") == ([], 0)


def test_an_argument_with_invalid_bytes_becomes_printable_text():
    # what Python hands over for the argv bytes b"Caf\xe9": a lone surrogate, which print() refuses
    assert valid_text(b"Caf\xe9".decode("utf-8", "surrogateescape")) == ("Caf\ufffd", True)
    assert valid_text("Gödel") == ("Gödel", False)


def test_titles_over_the_bound_are_left_out_by_line_number():
    at_bound, over = "a" * MAX_TITLE_CHARS, "b" * (MAX_TITLE_CHARS + 1)
    lines = [f"{at_bound} (1990)", over, "Jazz (1992)", f"{over} (1991)"]
    kept, skipped = without_long_titles(lines, lambda line: split_title_year(line)[0])
    assert kept == [f"{at_bound} (1990)", "Jazz (1992)"] and skipped == [2, 4]
    assert line_list([3]) == "line 3" and line_list(list(range(1, 9))) == "lines 1, 2, 3, 4, 5 and 3 more"

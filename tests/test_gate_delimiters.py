"""A delimited file whose separator changed, on workflows written for this test: a bank
statement export and the ledger import that reads it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gatekit import proc, verdict
from memproc.gate import Step
from memproc.gate.delimiters import separator


@pytest.mark.parametrize(
    ("text", "char"),
    [
        ("write statements.csv, pipe-delimited, one row per booking", "|"),
        ("read_csv(path, sep=';')", ";"),
        ("use '\\t' as the field separator", "\t"),
        ("rows split on semicolons", ";"),
        ("csv.reader(f), left at its default delimiter", ","),
        ("write statements.csv, one booking per row", None),
    ],
)
def test_the_separator_a_text_states(text: str, char: str | None) -> None:
    assert separator(text) == char


OLD = proc(
    "a",
    "export bank statements",
    ["statement export"],
    [("Write", "statements_{date}.csv as comma-separated rows, one per booking")],
)
NEW = replace(OLD, steps=(Step("Write", "statements_{date}.csv, '|' as the field separator"),))


@pytest.mark.parametrize(
    ("parse", "breaks"),
    [
        ("rows = list(csv.reader(f))  # default delimiter kept", True),
        ("read_csv('statements.csv', sep=',')", True),
        ("read_csv('statements.csv', sep='|')", False),
        ("open statements.csv in the viewer", False),
    ],
)
def test_a_reader_that_splits_on_the_old_separator_breaks(parse: str, breaks: bool) -> None:
    ledger = proc("b", "import statements", ["statement export"], [("Parse", parse)])
    assert verdict(OLD, NEW, ledger) == (["changed_format"] if breaks else [])

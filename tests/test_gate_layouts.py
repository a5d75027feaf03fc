"""Templates whose placeholders change order (paths, and IDs read by position), on workflows
written for this test."""

from __future__ import annotations

import pytest

from memproc.gate import Procedure, Step, assess
from memproc.gate.identifiers import find, same
from memproc.gate.templates import expand_command, field, follows, segments


def proc(pid: str, name: str, *steps: str) -> Procedure:
    return Procedure(id=pid, name=name, steps=tuple(Step(*s.split(" | ")) for s in steps))


def outcome(old: Procedure, new: Procedure, dependent: Procedure) -> list[str]:
    result = assess(old, new, [dependent])
    return [f.pattern for f in result.findings] + [f"undecided:{u.why}" for u in result.undecided]


ARCHIVE = "Archive | upload to gs://telemetry-archive/{site}/{yyyy}/{mm}/{dd}/readings.parquet"
RELAID = "Archive | upload to gs://telemetry-archive/{yyyy}/{mm}/{dd}/{site}/readings.parquet"


def archiver(*steps: str) -> Procedure:
    return proc("arch", "archive sensor readings", "Collect | poll the gateways", *steps)


# -- reading placeholders --------------------------------------------------------------------------


def test_placeholder_spellings_share_one_canonical_name() -> None:
    assert field("${SITE}") == field("{site}") == field("<Site>") == field(":site") == "site"
    assert field("%Y") == field("{yyyy}") == field("{YEAR}") == "year"
    assert field("%m") == field("{mm}") == "month"
    assert field("%d") == field("{DD}") == "day"
    assert field("%H") == "hour" and field("%M") == "minute"


def test_a_date_command_substitution_becomes_its_fields() -> None:
    assert expand_command("date +%Y/%m/%d") == "{year}/{month}/{day}"
    assert expand_command("date -u -d yesterday '+%Y-%m-%d'") == "{year}-{month}-{day}"
    assert expand_command("hostname -s") == "{hostname}"


def test_a_path_does_not_end_at_a_command_substitution() -> None:
    [url] = [
        i for i in find("gsutil ls gs://bkt/$(date +%Y)/$(date +%m)/out.csv") if i.kind == "url"
    ]
    assert url.text == "gs://bkt/$(date +%Y)/$(date +%m)/out.csv"
    assert url.layout == "gs://bkt/{year}/{month}/out.csv"
    assert url.norm == "gs://bkt/*/*/out.csv"


def test_names_inside_a_command_substitution_are_still_found() -> None:
    found = {i.norm for i in find('--dsn "$(vault read -field=uri kv/reporting.primary)"')}
    assert "kv/reporting.primary" in found


def test_different_placeholders_in_one_position_are_still_one_location() -> None:
    a = next(i for i in find("read /spool/{date}/batch.csv") if i.kind == "path")
    b = next(i for i in find("read /spool/{yesterday}/batch.csv") if i.kind == "path")
    assert same(a, b)


def test_a_path_follows_a_layout_field_by_field() -> None:
    old, new = segments("/d/{site}/{yyyy}/x.csv"), segments("/d/{yyyy}/{site}/x.csv")
    mine = segments("/d/${SITE}/{year}/x.csv")
    assert follows(mine, old) is True and follows(mine, new) is False
    literal = segments("/d/oslo/2024/x.csv")
    assert follows(literal, old) is True and follows(literal, new) is False
    unknown = segments("/d/{plant}/{when}/x.csv")
    assert follows(unknown, old) is None


# -- the rule ---------------------------------------------------------------------------------


def test_a_dependent_on_the_old_layout_breaks_when_placeholders_change_order() -> None:
    reader = proc(
        "rd",
        "chart site readings",
        "Fetch | gsutil cp gs://telemetry-archive/${SITE}/$(date +%Y/%m/%d)/readings.parquet .",
    )
    assert outcome(archiver(ARCHIVE), archiver(RELAID), reader) == ["changed_location"]


def test_a_dependent_with_literal_values_on_the_old_layout_breaks() -> None:
    reader = proc(
        "rd", "chart bergen readings", "Fetch | gs://telemetry-archive/bergen/2024/05/01/"
    )
    assert outcome(archiver(ARCHIVE), archiver(RELAID), reader) == ["changed_location"]


def test_a_dependent_already_on_the_new_layout_is_safe() -> None:
    reader = proc(
        "rd",
        "chart site readings",
        "Fetch | gs://telemetry-archive/$(date +%Y)/$(date +%m)/$(date +%d)/${SITE}/",
    )
    assert outcome(archiver(ARCHIVE), archiver(RELAID), reader) == []


def test_the_same_layout_reworded_is_safe() -> None:
    reader = proc(
        "rd", "chart site readings", "Fetch | gs://telemetry-archive/${SITE}/$(date +%Y)/"
    )
    reworded = archiver(ARCHIVE + " (nightly)")
    assert outcome(archiver(ARCHIVE), reworded, reader) == []


def test_placeholders_matched_to_neither_layout_are_a_question() -> None:
    reader = proc("rd", "chart plant readings", "Fetch | gs://telemetry-archive/{plant}/{when}/")
    assert outcome(archiver(ARCHIVE), archiver(RELAID), reader) == ["undecided:low_confidence"]


def test_a_dependent_on_another_bucket_is_not_asked_about() -> None:
    reader = proc("rd", "chart site readings", "Fetch | gs://other-archive/${SITE}/$(date +%Y)/")
    assert outcome(archiver(ARCHIVE), archiver(RELAID), reader) == []


@pytest.mark.parametrize(
    ("split", "breaks"),
    [
        ("Split | region, store, till = receipt_code.split('-')", True),
        ("Split | store, region, till = receipt_code.split('-')", False),
        ("Split | look the receipt up by its full code", False),
    ],
)
def test_an_id_template_whose_fields_changed_order_breaks_a_positional_reader(
    split: str, breaks: bool
) -> None:
    old = proc("a", "issue receipts", "Number | receipt code {region}-{store}-{till}")
    new = proc("a", "issue receipts", "Number | receipt code {store}-{region}-{till}")
    reader = proc("b", "reconcile receipts", split)
    assert outcome(old, new, reader) == (["changed_format"] if breaks else [])

"""An added step that deletes what a dependent reads, on workflows written for this test."""

from __future__ import annotations

from memproc.gate import Procedure, Step, assess, deletions
from memproc.gate.deletions import _deleted
from memproc.gate.facts import Facts


def proc(pid: str, name: str, *steps: str, trigger: str = "") -> Procedure:
    built = tuple(Step(*s.split(" | ")) for s in steps)
    return Procedure(id=pid, name=name, steps=built, trigger=trigger)


def outcome(old: Procedure, new: Procedure, dependent: Procedure) -> list[str]:
    result = assess(old, new, [dependent])
    return [f.pattern for f in result.findings] + [f"undecided:{u.why}" for u in result.undecided]


def rule(old: Procedure, new: Procedure, dependent: Procedure) -> str:
    """This rule's verdict alone: "breaks", "ask" or "safe"."""
    facts = Facts.read(old), Facts.read(new), Facts.read(dependent)
    if deletions.deleted_inputs(*facts):
        return "breaks"
    return "ask" if deletions.undecided(*facts) else "safe"


PUBLISH = "Publish | copy the catalogue to www/static/catalogue.json"


def publisher(*steps: str) -> Procedure:
    return proc("pub", "publish the price catalogue", "Begin | at 04:00", *steps)


# -- reading a deletion ------------------------------------------------------------------------


def test_the_deleted_names_are_the_objects_of_the_verb() -> None:
    assert [i.norm for i in _deleted("Tidy | rm -f /srv/cache/thumbs.db")] == [
        "/srv/cache/thumbs.db"
    ]
    assert [i.norm for i in _deleted("DROP TABLE sales.daily_totals")] == ["sales.daily_totals"]
    assert _deleted("do not delete sales.daily_totals") == []
    # rows deleted from a table, a name removed from a list: the container stays
    assert _deleted("delete stale rows from sales.daily_totals") == []
    assert _deleted("remove the carrier from shipping.carrier_list") == []


# -- the rule ----------------------------------------------------------------------------------


def test_deleting_a_file_a_dependent_fetches_by_url_breaks_it() -> None:
    reader = proc(
        "rd", "mirror prices", "Fetch | curl https://shop.example.net/static/catalogue.json"
    )
    new = publisher(PUBLISH, "Clean | rm www/static/catalogue.json", "Audit | count the rows")
    assert outcome(publisher(PUBLISH), new, reader) == ["removed_output"]


def test_dropping_a_table_a_dependent_reads_breaks_it() -> None:
    old = proc("ld", "load sales", "Load | COPY INTO sales.daily_totals")
    new = proc(
        "ld",
        "load sales",
        "Load | COPY INTO sales.daily_totals",
        "Tidy | DROP TABLE sales.daily_totals",
    )
    reader = proc("rp", "weekly report", "Query | SELECT * FROM sales.daily_totals")
    assert outcome(old, new, reader) == ["removed_output"]


def test_deleting_a_scratch_file_nobody_reads_is_safe() -> None:
    old = proc(
        "ld",
        "load sales",
        "Stage | write /tmp/sales_stage.csv",
        "Load | COPY INTO sales.daily_totals",
    )
    new = proc(
        *("ld", "load sales"),
        *[f"{s.action} | {s.detail}" for s in old.steps],
        "Tidy | rm /tmp/sales_stage.csv",
    )
    reader = proc("rp", "weekly report", "Query | SELECT * FROM sales.daily_totals")
    assert outcome(old, new, reader) == []


def test_a_dependent_that_says_it_does_not_read_the_resource_is_safe() -> None:
    reader = proc("rd", "mirror prices", "Fetch | never reads www/static/catalogue.json")
    new = publisher(PUBLISH, "Clean | rm www/static/catalogue.json")
    assert rule(publisher(PUBLISH), new, reader) == "safe"


def test_a_deletion_the_old_version_already_made_is_not_new() -> None:
    steps = ("Load | COPY INTO sales.daily_totals", "Tidy | DROP TABLE sales.daily_totals")
    old, new = proc("ld", "load sales", *steps), proc("ld", "load sales", *steps, "Notify | #sales")
    reader = proc("rp", "weekly report", "Query | SELECT * FROM sales.daily_totals")
    assert outcome(old, new, reader) == []


# -- a deletion rewritten later: the gap ------------------------------------------------------

REBUILD = (
    "Clear | rm www/static/catalogue.json",
    "Rebuild | write www/static/catalogue.json again (about 30 minutes)",
)


def test_a_dependent_at_a_time_inside_the_gap_breaks() -> None:
    reader = proc(
        "rd",
        "mirror prices",
        "Fetch | daily at 04:10, curl https://shop.example.net/static/catalogue.json",
    )
    assert rule(publisher(PUBLISH), publisher(*REBUILD), reader) == "breaks"


def test_a_dependent_at_a_time_outside_the_gap_is_safe() -> None:
    reader = proc(
        "rd",
        "mirror prices",
        "Fetch | daily at 06:00, curl https://shop.example.net/static/catalogue.json",
    )
    assert rule(publisher(PUBLISH), publisher(*REBUILD), reader) == "safe"


def test_a_dependent_started_by_the_completion_signal_is_safe() -> None:
    reader = proc(
        "rd",
        "mirror prices",
        "Fetch | curl https://shop.example.net/static/catalogue.json",
        trigger="when the catalogue publish has finished",
    )
    assert rule(publisher(PUBLISH), publisher(*REBUILD), reader) == "safe"


def test_a_later_step_that_only_checks_the_resource_does_not_rewrite_it() -> None:
    reader = proc(
        "rd",
        "mirror prices",
        "Fetch | curl https://shop.example.net/static/catalogue.json",
        trigger="when the catalogue publish has finished",
    )
    checked = publisher(REBUILD[0], "Check | confirm www/static/catalogue.json is absent")
    assert rule(publisher(PUBLISH), checked, reader) == "breaks"


def test_a_dependent_with_no_stated_time_may_hit_the_gap() -> None:
    reader = proc(
        "rd", "mirror prices", "Fetch | curl https://shop.example.net/static/catalogue.json"
    )
    assert rule(publisher(PUBLISH), publisher(*REBUILD), reader) == "breaks"


def test_a_clock_time_against_an_unstated_window_is_a_question() -> None:
    def unscheduled(*steps: str) -> Procedure:
        return proc("pub", "publish the price catalogue", *steps)

    reader = proc(
        "rd",
        "mirror prices",
        "Fetch | daily at 04:10, curl https://shop.example.net/static/catalogue.json",
    )
    steps = ("Clear | rm www/static/catalogue.json", "Rebuild | write www/static/catalogue.json")
    assert outcome(unscheduled(PUBLISH), unscheduled(*steps), reader) == [
        "undecided:low_confidence"
    ]

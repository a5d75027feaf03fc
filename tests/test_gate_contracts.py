"""Declared contracts, decided exactly: each kind of break, its safe twin, and the citation.

Each case is a small workflow written for this test: a producer's old and revised contract
and a consumer's declared inputs (and schedule, where timing matters).
"""

from __future__ import annotations

from typing import Any

import pytest

from memproc.gate import Consumed, Procedure, Produced, Step, assess
from memproc.gate.reach import infer
from memproc.gate.schedule import Moment, available_after, misses, schedule
from memproc.gate.versions import satisfies

OUT = Produced(
    "orders", format="csv", version="2.1", location="s3://b/orders/", available_after="02:00"
)


def producer(pid: str = "p", **changes: Any) -> Procedure:
    produced = (
        Produced(**{**OUT.__dict__, **changes}) if changes.get("id", "") is not None else None
    )
    return Procedure(
        id=pid,
        name="export orders",
        steps=(Step("export the orders"),),
        produces=(produced,) if produced else (),
    )


def consumer(trigger: str = "", **wanted: Any) -> Procedure:
    consumed = Consumed("orders", source="export orders", **wanted)
    return Procedure(
        id="c",
        name="load orders",
        steps=(Step("load them"),),
        consumes=(consumed,),
        trigger=trigger,
    )


def patterns(old: Procedure, new: Procedure, dependent: Procedure) -> list[str]:
    return [f.pattern for f in assess(old, new, [dependent]).findings]


def test_an_unchanged_contract_is_safe() -> None:
    assert patterns(producer(), producer(), consumer(format="csv")) == []


def test_a_removed_output_a_consumer_declares_breaks_and_cites_the_contract() -> None:
    new = Procedure(id="p", name="export orders", steps=(Step("export"),))
    new = Procedure(**{**new.__dict__, "produces": (Produced("invoices"),)})
    old = Procedure(**{**new.__dict__, "produces": (OUT, Produced("invoices"))})
    findings = assess(old, new, [consumer()]).findings
    assert [f.pattern for f in findings] == ["removed_output"]
    assert findings[0].evidence["contract"] == "produces[id=orders]"


def test_an_output_gone_with_a_new_id_beside_it_is_renamed() -> None:
    new = Procedure(
        id="p", name="export orders", steps=(Step("export"),), produces=(Produced("orders_v2"),)
    )
    assert patterns(producer(), new, consumer()) == ["renamed_output"]


def test_a_format_change_breaks_unless_the_consumer_declares_the_new_format() -> None:
    finding = assess(producer(), producer(format="parquet"), [consumer(format="csv")]).findings
    assert [f.pattern for f in finding] == ["changed_format"]
    assert finding[0].evidence == {
        "contract": "produces[id=orders].format",
        "old": "csv",
        "new": "parquet",
        "consumes": "consumes[id=orders].format=csv",
    }
    assert patterns(producer(), producer(format="parquet"), consumer(format="parquet")) == []


def test_a_version_outside_the_constraint_breaks_and_inside_is_safe() -> None:
    ranged = consumer(version=">=2,<3")
    assert patterns(producer(), producer(version="3.0"), ranged) == ["changed_version"]
    assert patterns(producer(), producer(version="2.9"), ranged) == []
    assert patterns(producer(), producer(version="3.0"), consumer()) == []  # no range: any


def test_a_moved_location_breaks() -> None:
    new = producer(location="gs://b/orders/")
    assert patterns(producer(), new, consumer()) == ["changed_location"]
    assert patterns(producer(), producer(location="s3://b/orders"), consumer()) == []


def test_a_location_whose_placeholders_change_order_has_moved() -> None:
    old = producer(location="s3://b/{region}/{yyyy}/")
    relaid = producer(location="s3://b/{yyyy}/{region}/")
    assert patterns(old, relaid, consumer()) == ["changed_location"]
    renamed = producer(location="s3://b/{REGION}/{year}/")  # the same fields, spelled anew
    assert patterns(old, renamed, consumer()) == []


@pytest.mark.parametrize(
    ("new_time", "trigger", "flags"),
    [
        ("04:30", "daily at 04:00 UTC", True),
        ("03:30", "daily at 04:00 UTC", False),  # later, still before the consumer runs
        ("01:00", "daily at 04:00 UTC", False),  # earlier
        ("04:30", "when the export completes", False),  # waits on the event
        ("04:30", "", False),  # no schedule: nothing says it is early
    ],
)
def test_available_after_against_the_consumers_schedule(
    new_time: str, trigger: str, flags: bool
) -> None:
    found = patterns(producer(), producer(available_after=new_time), consumer(trigger))
    assert found == (["later_output"] if flags else [])


def test_an_offset_against_a_clock_with_no_known_start_is_left_undecided() -> None:
    old, new = producer(available_after="30m"), producer(available_after="90m")
    result = assess(old, new, [consumer("daily at 04:00")])
    assert result.findings == [] and [u.why for u in result.undecided] == ["low_confidence"]


def test_changes_to_outputs_nobody_consumes_are_safe() -> None:
    other = Consumed("invoices", source="export orders")
    dependent = Procedure(id="c", name="bill", steps=(Step("bill"),), consumes=(other,))
    assert patterns(producer(), producer(format="json"), dependent) == []


def bound(text: str, binds: str | None) -> Procedure:
    return Procedure(
        id="p",
        name="export orders",
        steps=(Step("export the orders"),),
        produces=(OUT,),
        preconditions=(text,),
        binds=((text, binds),) if binds else (),  # type: ignore[arg-type]
    )


def test_a_consumer_bound_precondition_binds_consumers_only() -> None:
    text = "consumers must drop repeats by delivery_id"
    reader = consumer()
    stranger = Procedure(
        id="s", name="x", steps=(Step("read"),), consumes=(Consumed("y", source="other"),)
    )
    findings = assess(producer(), bound(text, "consumers"), [reader, stranger]).findings
    assert [(f.dependent_id, f.pattern) for f in findings] == [("c", "unmet_precondition")]
    assert findings[0].evidence["contract"] == "preconditions[binds=consumers]"
    assert assess(producer(), bound(text, "self"), [reader]).findings == []


def test_a_scope_bound_precondition_the_dependent_meets_is_safe() -> None:
    text = "everyone pulls translations with the crowdin CLI"
    meets = Procedure(
        id="c",
        name="bundle translations",
        steps=(Step("pull translations with the crowdin CLI"),),
        consumes=(Consumed("orders", source="export orders"),),
    )
    assert assess(producer(), bound(text, "scope"), [meets]).findings == []


@pytest.mark.parametrize(
    ("schedule", "met"),
    [
        ("hourly: archive the orders file to cold storage", True),
        ("every 6 hours archive the orders file", True),
        ("archive the orders file weekly", False),
        ("archive the orders file every 2 days", False),
    ],
)
def test_a_demand_of_frequency_is_met_by_comparing_periods(schedule: str, met: bool) -> None:
    text = "consumers must archive what they read at least every 12 hours"
    reader = Procedure(
        id="c",
        name="load orders",
        steps=(Step("load them"), Step(schedule)),
        consumes=(Consumed("orders", source="export orders"),),
    )
    findings = assess(producer(), bound(text, "consumers"), [reader]).findings
    assert [f.pattern for f in findings] == ([] if met else ["unmet_precondition"])


def test_an_undeclared_reach_is_inferred_and_the_finding_says_so() -> None:
    text = "consumers must drop repeats by delivery_id"
    findings = assess(producer(), bound(text, None), [consumer()]).findings
    assert findings[0].evidence["contract"] == "preconditions[binds=consumers (inferred)]"
    assert "inferred" in findings[0].detail


@pytest.mark.parametrize(
    ("text", "binds"),
    [
        ("every workflow must declare its permissions", "scope"),
        ("consumers must drop repeats by delivery_id", "consumers"),
        ("clients connect over TLS", "consumers"),
        ("launch with at least 8g executor memory", "self"),
        ("acknowledge notifications within 10 seconds", "self"),
    ],
)
def test_reach_is_read_from_the_subject(text: str, binds: str) -> None:
    assert infer(text) == binds


def test_versions_and_constraints() -> None:
    assert satisfies("1.3.0", ">=1.3,<2") and not satisfies("2.0", ">=1.3,<2")
    assert satisfies("5.1", "5") and not satisfies("6", "5")
    assert satisfies("1.2.9", "~=1.2") and not satisfies("2.0", "~=1.2")


def test_schedules_and_moments() -> None:
    assert schedule("daily at 04:00 UTC") == schedule("cron 0 4 * * *")
    offset = schedule("1h after 'ingest' starts")
    assert offset is not None and offset.moment == Moment("offset", 60.0)
    assert offset.after == "ingest"
    compound = schedule("1h45m after 'ingest' starts")  # every part of the duration counts
    assert compound is not None and compound.moment == Moment("offset", 105.0)
    late, early = available_after("45m"), available_after("30m")
    assert late is not None and early is not None
    assert misses(early, late, Moment("offset", 40.0)) is True
    assert misses(early, late, Moment("clock", 240.0)) is None
    assert misses(early, late, Moment("clock", 40.0), start=0) is True


def reader_doing(*steps: str) -> Procedure:
    return Procedure(
        id="c",
        name="load orders",
        steps=tuple(Step(s) for s in steps),
        consumes=(Consumed("orders", source="export orders"),),
    )


def test_a_bound_demand_met_partly_in_other_words_is_asked_not_quarantined() -> None:
    text = "consumers must authenticate to /v2/orders with a client certificate"
    reader = reader_doing("curl --cert /etc/pki/loader.pem https://shop.example/v2/orders")
    result = assess(producer(), bound(text, "consumers"), [reader])
    assert result.findings == []
    assert [(u.dependent_id, u.why) for u in result.undecided] == [("c", "low_confidence")]
    assert result.undecided[0].findings[0].pattern == "unmet_precondition"


def test_a_bound_demand_sharing_a_word_with_the_dependent_is_asked() -> None:
    text = "consumers must store the orders in an encrypted bucket in eu-west-1"
    reader = reader_doing("copy the order export to the reporting share")
    result = assess(producer(), bound(text, "scope"), [reader])
    assert result.findings == []
    assert len(result.undecided) == 1


def test_a_bound_demand_the_dependent_shares_nothing_of_is_quarantined() -> None:
    text = "consumers must drop repeats by delivery_id"
    result = assess(producer(), bound(text, "consumers"), [reader_doing("load into the warehouse")])
    assert [f.pattern for f in result.findings] == ["unmet_precondition"]
    assert result.undecided == []


def test_a_bound_demand_done_too_rarely_is_quarantined_even_in_its_own_words() -> None:
    text = "consumers must archive what they read at least every 12 hours"
    reader = reader_doing("archive the orders file every 2 days")
    result = assess(producer(), bound(text, "consumers"), [reader])
    assert [f.pattern for f in result.findings] == ["unmet_precondition"]

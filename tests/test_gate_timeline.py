"""When each step of a procedure is done, and dependents that a later output now misses.

Workflows written for this test: a kiln, a nightly report, a build farm, a print run.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from gatekit import proc, verdict
from memproc.gate import Step, timeline


@pytest.mark.parametrize(
    ("detail", "minutes"),
    [
        ("25 min at 60 °C in the oven", 25.0),
        ("glaze, then about two hours to cool", 120.0),
        ("hold the setpoint for half an hour", 30.0),
        ("cure it, roughly three and a half minutes", 3.5),
        ("the queue pauses for up to 8 minutes", 8.0),
        ("takes 40 minutes", 40.0),
        ("open the valve 12 min after firing starts", 0.0),
        ("check every 5 minutes", 0.0),
    ],
)
def test_the_durations_a_step_states_for_itself(detail: str, minutes: float) -> None:
    assert timeline.step_minutes(Step("Fire", detail)) == pytest.approx(minutes)


def test_a_step_kept_word_for_word_takes_as_long_as_it_did_when_its_stated_end_is_stale() -> None:
    old = proc(
        "a",
        "nightly ledger",
        ["ledger"],
        [("Start", "begins at 01:00"), ("Summarise", "build ledger_daily, done by 02:30")],
    )
    new = replace(
        old,
        steps=(old.steps[0], Step("Re-key", "re-key the archive (about 2 h)"), old.steps[1]),
    )
    before, after = timeline.revised(old, new)
    assert before.done == (60.0, 150.0)
    assert after.done == (60.0, 180.0, 270.0)  # 90 minutes of summarising after the re-key


def test_a_revision_that_states_no_time_of_day_starts_when_the_old_version_did() -> None:
    old = proc("a", "kiln", ["kiln"], [("Load", "starts 22:00"), ("Fire", "about 3 hours")])
    new = replace(old, steps=(Step("Dry", "about 1 hour"), Step("Fire", "about 3 hours")))
    _, after = timeline.revised(old, new)
    assert after.frame == "clock"
    assert after.done == (1380.0, 1560.0)


def test_an_output_moved_behind_a_long_step_is_late_for_a_dependent_at_a_clock_time() -> None:
    old = proc(
        "a",
        "nightly ledger",
        ["ledger"],
        [("Start", "begins at 01:00"), ("Summarise", "build ledger_daily, done by 02:30")],
    )
    slow = replace(
        old,
        steps=(old.steps[0], Step("Re-key", "re-key the archive (about 2 h)"), old.steps[1]),
    )
    after = replace(
        old,
        steps=(old.steps[0], old.steps[1], Step("Re-key", "re-key the archive (about 2 h)")),
    )
    report = proc("b", "ledger report", ["ledger"], [("Read", "daily at 03:30 read ledger_daily")])
    assert verdict(old, slow, report) == ["later_output"]
    assert verdict(old, after, report) == []


def test_arriving_just_as_the_dependent_runs_is_late() -> None:
    old = proc(
        "a",
        "nightly ledger",
        ["ledger"],
        [("Start", "begins at 01:00, ~30 min"), ("Write", "write ledger_daily.csv")],
    )
    new = replace(old, steps=(old.steps[0], Step("Check", "~30 min"), old.steps[1]))
    on_time = proc("b", "ledger import", ["ledger"], [("Read", "cron at 02:00 ledger_daily.csv")])
    early = replace(on_time, steps=(Step("Read", "cron at 02:30 ledger_daily.csv"),))
    assert verdict(old, new, on_time) == ["later_output"]
    assert verdict(old, new, early) == []


def test_an_output_later_than_a_fixed_wait_after_the_start_is_late() -> None:
    old = proc(
        "a",
        "bake the base image",
        ["image farm"],
        [("Build", "about 10 minutes"), ("Tag", "tag base-image as latest")],
    )
    hardened = replace(
        old, steps=(Step("Scan", "CVE scan, about 20 minutes"), old.steps[0], old.steps[1])
    )
    rollout = proc(
        "b",
        "roll the fleet",
        ["image farm"],
        [("Trigger", "15m after 'bake the base image' starts"), ("Roll", "use base-image")],
    )
    patient = replace(rollout, steps=(Step("Trigger", "45m after 'bake' starts"), rollout.steps[1]))
    assert verdict(old, hardened, rollout) == ["later_output"]
    assert verdict(old, hardened, patient) == []


def test_a_stated_moment_after_the_start_is_pushed_back_by_a_step_inserted_before_it() -> None:
    old = proc(
        "a",
        "print run",
        ["press"],
        [
            ("Plate", "about 10 min"),
            ("Ship", "proofs to /proofs/ about 15 minutes after it starts"),
        ],
    )
    new = replace(old, steps=(old.steps[0], Step("Colour check", "about 25 min"), old.steps[1]))
    before, after = timeline.revised(old, new)
    assert before.after_start(1) == 15.0
    assert after.after_start(2) == 35.0


def test_an_output_whose_stated_time_moved_past_the_dependent_is_late() -> None:
    old = proc(
        "a",
        "close the books",
        ["ledger"],
        [("Accrue", "post accruals to the ledger, done by 18:00"), ("Lock", "lock the period")],
    )
    new = replace(
        old, steps=(Step("Accrue", "post accruals to the ledger around 20:30"), old.steps[1])
    )
    pack = proc("b", "board pack", ["ledger"], [("Pull", "at 19:00 pull the accruals")])
    assert verdict(old, new, pack) == ["later_output"]


def test_a_chain_past_midnight_is_compared_on_the_same_night() -> None:
    old = proc("a", "night edition", ["press"], [("Lock", "lock the pages at 22:45")])
    new = replace(old, steps=(Step("Lock", "lock the pages at 00:20"),))
    plates = proc(
        "b", "make plates", ["press"], [("Plates", "plate-making runs in its 23:50 slot")]
    )
    assert verdict(old, new, plates) == ["later_output"]


def test_a_step_inserted_before_one_whose_time_is_an_estimate_pushes_that_time_back() -> None:
    old = proc(
        "a",
        "overnight render",
        ["render farm"],
        [("Queue", "21:00, 400 frames"), ("Collect", "frames to /renders/out/, around 02:15")],
    )
    denoised = replace(
        old, steps=(old.steps[0], Step("Denoise", "takes about 90 minutes"), old.steps[1])
    )
    fixed = proc(
        "a",
        "overnight render",
        ["render farm"],
        [("Queue", "21:00, 400 frames"), ("Collect", "frames to /renders/out/ at 02:15")],
    )
    fixed_denoised = replace(
        fixed, steps=(fixed.steps[0], Step("Denoise", "takes about 90 minutes"), fixed.steps[1])
    )
    edit = proc("b", "morning edit", ["editing"], [("Pull", "daily at 03:00 pull /renders/out/")])
    assert verdict(old, denoised, edit) == ["later_output"]
    # a time the step waits for stays put: the inserted work ends long before it
    assert verdict(fixed, fixed_denoised, edit) == []


def test_a_dependent_whose_step_is_labelled_with_its_schedule_runs_then() -> None:
    old = proc(
        "a",
        "train the ranker",
        ["ranker"],
        [
            ("Train", "starts 22:30, about 60 minutes"),
            ("Publish", "push ranker-model to the store"),
        ],
    )
    new = replace(old, steps=(Step("Tune", "about 4 hours"), *old.steps))
    serve = proc(
        "b", "nightly scoring", ["scoring"], [("Scheduled 01:00 UTC", ""), ("Load", "ranker-model")]
    )
    assert verdict(old, new, serve) == ["later_output"]


def test_a_marker_written_before_the_files_it_announces_breaks_a_dependent_polling_for_it() -> None:
    old = proc(
        "a",
        "publish the tiles",
        ["tiles"],
        [("Upload", "rsync tiles/ to /srv/tiles/z12/"), ("Mark", "touch /srv/tiles/z12/DONE")],
    )
    new = replace(old, steps=(old.steps[1], old.steps[0]))
    mirror = proc(
        "b",
        "mirror the tiles",
        ["cdn"],
        [("Poll for /srv/tiles/z12/DONE", "every minute"), ("Copy", "push z12 to the CDN")],
    )
    assert verdict(old, new, mirror) == ["reordered_output"]


@pytest.mark.parametrize(("reads_at", "late"), [("07:00", True), ("08:00", False)])
def test_what_a_dependent_reads_is_the_step_that_shares_the_most_with_it(
    reads_at: str, late: bool
) -> None:
    steps = [
        ("Publish stock report", "at 06:00"),
        ("Reconcile", "at 06:15, variances"),
        ("Archive", "a copy of the stock report at 08:30"),
    ]
    old = proc("a", "prepare the morning stock report", ["stock report"], steps)
    new = replace(
        old,
        steps=(
            Step("Reconcile", "at 06:15, variances"),
            Step("Publish stock report", "at 07:30"),
            old.steps[2],
        ),
    )
    buyer = proc(
        "b",
        "order from suppliers",
        ["stock report"],
        [("Read", f"at {reads_at} read the published stock report")],
    )
    assert verdict(old, new, buyer) == (["later_output"] if late else [])

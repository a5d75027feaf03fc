"""A dependent that says it goes without what the revision now requires.

Workflows written for this test: a parts API, a lab instrument share, a mail relay.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from gatekit import proc, verdict
from memproc.gate import Step
from memproc.gate.lacks import required_terms


@pytest.mark.parametrize(
    ("text", "required"),
    [
        ("uploads without a checksum header are refused with 412", {"checksum", "header"}),
        ("reachable only over the lab VLAN", {"lab", "vlan"}),
        ("senders are expected to authenticate", {"authenticate"}),
        ("uploads are accepted", set()),
        ("the relay now rejects unencrypted sessions", {"encrypted"}),
        ("deny all non-authenticated pushes", {"authenticated"}),
        ("during the reindex, clients must queue their writes", {"queue"}),
        ("clients must not cache the token", set()),
        ("the cage opens only after the escort badges in", {"escort", "badges"}),
        ("Require TLS 1.2 | on every listener", {"tls"}),
    ],
)
def test_what_a_step_says_is_required(text: str, required: set[str]) -> None:
    assert set(required_terms(text).values()) == required


OLD = proc(
    "a",
    "operate the parts API",
    ["parts API"],
    [("Serve", "PUT /v1/parts accepts uploads; a checksum header is optional")],
)
NEW = replace(
    OLD, steps=(Step("Serve", "PUT /v1/parts: uploads without a checksum header are refused"),)
)


@pytest.mark.parametrize(
    ("upload", "breaks"),
    [
        ("PUT /v1/parts for each drawing, without a checksum header", True),
        ("PUT /v1/parts for each drawing with its checksum header", False),
        ("PUT /v1/parts for each drawing; no retries on failure", False),
    ],
)
def test_a_dependent_that_says_it_goes_without_a_new_requirement_breaks(
    upload: str, breaks: bool
) -> None:
    sync = proc("b", "sync drawings", ["parts API", "CAD vault"], [("Upload", upload)])
    assert verdict(OLD, NEW, sync) == (["unmet_precondition"] if breaks else [])


def test_a_requirement_the_old_version_already_had_is_not_new() -> None:
    old = replace(NEW, steps=(*NEW.steps, Step("Log", "log every upload")))
    sync = proc(
        "b", "sync drawings", ["parts API"], [("Upload", "PUT /v1/parts without a checksum header")]
    )
    assert "unmet_precondition" not in verdict(old, NEW, sync)


@pytest.mark.parametrize(
    ("send", "breaks"),
    [
        ("relay via mail.lab.internal:25 in plain text, the scanner cannot encrypt", True),
        ("relay via mail.lab.internal:587 with STARTTLS", False),
    ],
)
def test_a_dependent_without_the_quality_a_refusal_now_demands_breaks(
    send: str, breaks: bool
) -> None:
    old = proc("a", "run the mail relay", ["mail relay"], [("Accept", "accept mail from the lab")])
    new = replace(
        old, steps=(Step("Accept", "accept mail from the lab; reject unencrypted sessions"),)
    )
    scanner = proc("b", "scan to mail", ["mail relay"], [("Send", send)])
    assert ("unmet_precondition" in verdict(old, new, scanner)) is breaks


@pytest.mark.parametrize(
    ("load", "breaks"),
    [
        ("unload the centrifuge when the rotor stops, without a second operator", True),
        ("unload the centrifuge with a second operator present", False),
    ],
)
def test_a_step_done_only_after_something_the_dependent_goes_without_breaks(
    load: str, breaks: bool
) -> None:
    old = proc("a", "run the ultracentrifuge", ["ultracentrifuge"], [("Run", "spin at 40k rpm")])
    new = replace(
        old,
        steps=(*old.steps, Step("Open", "the lid is opened only after another operator checks")),
    )
    unload = proc("b", "unload the rotor", ["ultracentrifuge"], [("Unload", load)])
    assert ("unmet_precondition" in verdict(old, new, unload)) is breaks


@pytest.mark.parametrize(
    ("connect", "breaks"),
    [
        ("syslog to logs.lab.internal:514 in plain text", True),
        ("syslog to logs.lab.internal:6514, no TLS", True),
        ("syslog to logs.lab.internal:6514 over TLS, lab CA pinned", False),
    ],
)
def test_a_dependent_without_any_protection_breaks_a_new_security_requirement(
    connect: str, breaks: bool
) -> None:
    old = proc("a", "run the log collector", ["log collector"], [("Listen", "accept syslog")])
    new = replace(old, steps=(Step("Listen", "accept syslog; require message signing"),))
    device = proc("b", "ship device logs", ["log collector"], [("Ship", connect)])
    assert ("unmet_precondition" in verdict(old, new, device)) is breaks

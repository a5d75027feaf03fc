"""Order: a step the dependent relies on now comes after the signal it waits for.

A dependent that starts on a signal of the revised procedure (its trigger, or a first step
such as "on: push tags v*" or "subscribe to the 'invalidation complete' topic") assumes that
everything the procedure did before that signal is done. The step-sequence diff shows which
steps moved: one that came before the signal in the old version and comes after it in the
revision (the tag is now pushed before the wheels are built; the invalidation now runs
before the upload) breaks that assumption. Notifications moving around change nothing.
"""

from __future__ import annotations

import re

from memproc.gate import identifiers, sequence
from memproc.gate import lexicon as lx
from memproc.gate.facts import Facts
from memproc.gate.model import Finding, Procedure
from memproc.gate.text import equivalent, split_clauses, stem

# Words that open a step waiting for an event: English subordinators of time, and the verbs
# of subscribing and listening (general vocabulary).
EVENT_OPENERS = lx.words("on when whenever once after upon triggered subscribe listen wait await")
_QUOTED = re.compile(r"['\"‘“]([^'\"’”]{3,})['\"’”]")
_NOTIFY = frozenset(stem(w) for w in lx.NOTIFY_VERBS)
_GENERIC = frozenset(stem(w) for w in lx.GENERIC_VERBS | EVENT_OPENERS)


def cues(dependent: Procedure) -> list[str]:
    """What the dependent waits for: its trigger, and a first step that waits for an event."""
    found = [dependent.trigger] if dependent.trigger else []
    if dependent.steps:
        first = dependent.steps[0]
        words = re.findall(r"[a-z]+", first.action.lower())
        if words and words[0] in EVENT_OPENERS:
            found.append(f"{first.action} {first.detail}")
    return found


def _content(text: str) -> list[str]:
    return [
        s
        for c in split_clauses(text, "", 0)
        for s in c.stems()
        if s not in _GENERIC and s not in lx.STOPWORDS
    ]


def signal_step(procedure: Procedure, cue: str) -> int | None:
    """The step of `procedure` a cue names: a quoted message it sends, an identifier they
    share, or most of the cue's content words."""
    quoted = [q.lower() for q in _QUOTED.findall(cue)]
    cue_ids = [i for i in identifiers.find(cue) if i.kind in identifiers.CODE_KINDS]
    wanted = _content(cue)
    best, best_share = None, 0.0
    for index, step in enumerate(procedure.steps):
        text = f"{step.action} {step.detail}"
        if any(q in text.lower() for q in quoted):
            return index
        if any(identifiers.same(a, b) for a in cue_ids for b in identifiers.find(text)):
            return index
        have = _content(step.action)
        shared = [w for w in wanted if any(equivalent(w, h) for h in have)]
        share = len(shared) / len(wanted) if wanted else 0.0
        if len(shared) >= 2 and share > best_share:
            best, best_share = index, share
    return best if best_share >= 0.5 else None


def _notification(procedure: Procedure, index: int) -> bool:
    action = procedure.steps[index].action.lower().split()
    return bool(action) and stem(action[0]) in _NOTIFY


def moved_past_signal(old: Facts, revision: Facts, dependent: Facts) -> list[Finding]:
    before, after = old.procedure, revision.procedure
    pairing = sequence.pair(before, after)
    back = {j: i for i, j in pairing.pairs.items()}
    for cue in cues(dependent.procedure):
        signal = signal_step(after, cue)
        if signal is None or signal not in back:
            continue
        old_signal = back[signal]
        for i, j in sorted(pairing.pairs.items()):
            if i < old_signal and j > signal and not _notification(before, i):
                step = before.steps[i]
                return [
                    Finding(
                        dependent_id=dependent.procedure.id,
                        pattern="reordered_output",
                        detail=(
                            f"'{step.action}' used to come before "
                            f"'{after.steps[signal].action}' and now comes after it; the "
                            "dependent starts on that signal and expects it done"
                        ),
                        evidence={"moved": step.action, "signal": after.steps[signal].action},
                    )
                ]
    return []

"""Order and timing: a step the dependent relies on now comes after the signal it waits for,
or the revised procedure is done later than the dependent runs.

A dependent that starts on a signal of the revised procedure (its trigger, or a first step
such as "on: release published" or "listen for the 'catalog synced' event") assumes that
everything the procedure did before that signal is done. The step-sequence diff shows which
steps moved: one that came before the signal in the old version and comes after it in the
revision (the signal is now sent before the files it announces are written) breaks that
assumption. Notifications moving around change nothing.

A dependent that runs at a clock time ("at 07:15") or a fixed time after the procedure starts
("90m after 'import' starts") assumes the procedure is done by then: one now done later than
that ("done by 08:00", or a step that "takes about 40 minutes" more) breaks it.
"""

from __future__ import annotations

import re

from memproc.gate import identifiers, schedule, sequence, timeline
from memproc.gate import lexicon as lx
from memproc.gate.exposure import content_tokens
from memproc.gate.facts import Facts
from memproc.gate.model import Finding, Procedure, Step, Undecided
from memproc.gate.text import equivalent, split_clauses, stem

# Words that open a step waiting for an event: English subordinators of time, and the verbs
# of subscribing, listening and polling (general vocabulary).
EVENT_OPENERS = lx.words(
    """on when whenever once after upon trigger triggers triggered subscribe listen wait await
    poll polls polling"""
)
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


# -- timing ----------------------------------------------------------------------------------------

_END = re.compile(rf"\b(?:{timeline.END_WORDS})\b{timeline.CLOCK_TEXT}", re.I)
_WAIT = re.compile(
    r"\b(?:wait\w*|sleep\w*|pause\w*|after)\s+(?:for\s+)?(?:about\s+|~)?(\d+(?:\.\d+)?\s*"
    r"(?:seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h))\b",
    re.I,
)
# Words that make a time of day in a step the time it runs (English): "daily at 06:00",
# "cron 0 3 * * *", "runs in the 23:30 slot", "scheduled 04:10".
_SCHEDULED = re.compile(r"\b(?:at|daily|nightly|hourly|every|cron|runs?|slot|schedul\w*)\b", re.I)


def _ready_at(procedure: Procedure) -> int | None:
    """When the procedure says it is done, as a time of day (the last one it gives)."""
    found = None
    for step in procedure.steps:
        for match in _END.finditer(f"{step.action} {step.detail}"):
            found = schedule.clock(match.group(1))
    return found


def runs_at(dependent: Procedure) -> int | None:
    """The time of day the dependent runs: its trigger, or a step that says "at 07:15" or
    opens with its time of day ("07:15: import the files")."""
    texts = [dependent.trigger] + [f"{s.action} {s.detail}" for s in dependent.steps]
    for text, step in zip(texts, [None, *dependent.steps], strict=True):
        scheduled = bool(text) and bool(_SCHEDULED.search(text))
        opens = step is not None and any(
            _OPENING_CLOCK.match(t) for t in (step.action, step.detail)
        )
        if scheduled or opens:
            at = schedule.clock(text)
            if at is not None:
                return at
    return None


# A time of day that opens a step, as a label of when it runs ("07:15: import", "7.15 - run").
_OPENING_CLOCK = re.compile(r"\s*\d{1,2}[:.h]\d{2}(?:\s*(?:am|pm))?\s*[:\-–]", re.I)


def _waits(dependent: Procedure) -> float | None:
    """A fixed wait of the dependent after the revised procedure starts, in minutes: its
    trigger or a step that says so ("20m after 'build' starts", "sleep 600")."""
    for text in [dependent.trigger] + [f"{s.action} {s.detail}" for s in dependent.steps]:
        when = schedule.schedule(text)
        if when is not None and when.moment is not None and when.moment.frame == "offset":
            return when.moment.minutes
    for step in dependent.steps:  # the first fixed wait, however it is written
        text = f"{step.action} {step.detail}"
        match = _WAIT.search(text)
        if match:
            return schedule.duration(match.group(1))
        match = _SLEEP.search(text)
        if match:
            return float(match.group(1)) / 60.0
    return None


# `sleep 90`: the shell's sleep counts seconds when no unit follows (POSIX).
_SLEEP = re.compile(r"\bsleep\s+(\d+)(?![\w.])", re.I)


def finishes_later(old: Facts, revision: Facts, dependent: Facts) -> list[Finding]:
    """The revised procedure is now done after the time the dependent runs (a clock time or
    a fixed wait after it starts), where it used to be done before."""
    before, after, other = old.procedure, revision.procedure, dependent.procedure
    old_at, new_at, due = _ready_at(before), _ready_at(after), runs_at(other)
    if old_at is not None and new_at is not None and due is not None and old_at <= due < new_at:
        return [_late(dependent, f"done by {_hhmm(new_at)} (was {_hhmm(old_at)})", _hhmm(due))]
    wait = _waits(other)
    if (due is not None or wait is not None) and before.steps and after.steps:
        late = _output_later(before, after, dependent, due, wait)
        if late:
            return [late]
    old_total, new_total = timeline.stated_minutes(before), timeline.stated_minutes(after)
    if wait is not None and new_total > old_total and old_total <= wait < new_total:
        said = f"about {new_total:g} minutes of stated work (was {old_total:g})"
        return [_late(dependent, said, f"{wait:g} minutes after it starts")]
    return []


def _hhmm(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _late(dependent: Facts, what: str, due: str) -> Finding:
    return Finding(
        dependent_id=dependent.procedure.id,
        pattern="later_output",
        detail=f"the revised procedure is now {what}; the dependent runs at {due}",
        evidence={"revision": what, "dependent": due},
    )


def _output_step(procedure: Procedure, dependent: Facts) -> int:
    """The step of `procedure` that shares the most identifiers and content words with the
    dependent, the last of equals: what the dependent reads was made by then ("publish the stock
    report" over a later "file a copy of the report"). The last step if none shares."""
    theirs: set[str] = set()
    for _, text in dependent.texts:
        theirs |= content_tokens(text)
    best, shared = len(procedure.steps) - 1, 0
    for index, step in enumerate(procedure.steps):
        count = len(content_tokens(f"{step.action} {step.detail}") & theirs)
        if count and count >= shared:
            best, shared = index, count
    return best


def _output_later(
    before: Procedure, after: Procedure, dependent: Facts, due: int | None, wait: float | None
) -> Finding | None:
    """What the dependent reads is now done after the time it runs (a time of day `due`,
    or `wait` minutes after the procedure starts), and was done before it. Arriving just
    as the dependent runs is late: nothing says which comes first."""
    j = _output_step(after, dependent)
    back = {b: a for a, b in sequence.pair(before, after).pairs.items()}
    i = back.get(j, _output_step(before, dependent))
    old, new = timeline.revised(before, after)
    step = after.steps[j].action
    if due is not None and old.frame == new.frame == "clock":
        deadline = due + (1440 if due < old.start else 0)
        was, now = old.done[i], new.done[j]
        if was <= deadline <= now and now > was:
            at, then = _hhmm(int(now) % 1440), _hhmm(int(was) % 1440)
            said = f"done with '{step}' at about {at} (was {then})"
            return _late(dependent, said, _hhmm(due))
    if due is not None:
        moved = _stated_clock_moved(before.steps[i], after.steps[j], due)
        if moved:
            return _late(dependent, moved, _hhmm(due))
    if wait is not None and old.frame == new.frame:
        was, now = old.after_start(i), new.after_start(j)
        if was <= wait <= now and now > was:
            said = f"done with '{step}' about {now:g} minutes after it starts (was {was:g})"
            return _late(dependent, said, f"{wait:g} minutes after it starts")
    return None


def _stated_clock_moved(was: Step, now: Step, due: int) -> str | None:
    """The step that makes what the dependent reads states a time of day (when it is done,
    or when it happens) that moved from before the dependent's time to after it."""
    old_at = schedule.clock(f"{was.action} {was.detail}")
    new_at = schedule.clock(f"{now.action} {now.detail}")
    if old_at is None or new_at is None or not old_at <= due < new_at:
        return None
    return f"at about {_hhmm(new_at)} with '{now.action}' (was {_hhmm(old_at)})"


# -- a step moved onto the dependent's clock time ----------------------------------------------


def moved_onto(old: Facts, revision: Facts, dependent: Facts) -> Undecided | None:
    """A step of the revision now runs over the time of day the dependent runs (it starts at
    a stated time and is done by a stated or computed later one), where its old version did
    not: two procedures on one system at once. Whether they contend (locks, load, a shared
    window) takes knowledge of the system, so it is a question, not a finding."""
    due = runs_at(dependent.procedure)
    if due is None:
        return None
    before, after = old.procedure, revision.procedure
    old_windows, new_windows = _windows(before), _windows(after)
    back = {j: i for i, j in sequence.pair(before, after).pairs.items()}
    for j, window in new_windows.items():
        if window is None or not _covers(window, due):
            continue
        was = old_windows.get(back[j]) if j in back else None
        if was is not None and _covers(was, due):
            continue
        step = after.steps[j].action
        return Undecided(
            dependent.procedure.id,
            "low_confidence",
            f"the revision now runs '{step}' from {_hhmm(int(window[0]) % 1440)} to about "
            f"{_hhmm(int(window[1]) % 1440)}; the dependent runs at {_hhmm(due)}, inside it",
        )
    return None


def _windows(procedure: Procedure) -> dict[int, tuple[float, float] | None]:
    """Each step's (start, done) in minutes, for a step that states its own start time."""
    chain = timeline.read(procedure)
    found: dict[int, tuple[float, float] | None] = {}
    for index, step in enumerate(procedure.steps):
        start = timeline.start_at(f"{step.action} {step.detail}")
        clocked = start is not None and chain.frame == "clock"
        found[index] = (start, chain.done[index]) if clocked and start is not None else None
    return found


def _covers(window: tuple[float, float], at: int) -> bool:
    """The time of day `at` falls inside the window (which may run past midnight)."""
    start, end = window
    if end <= start:
        return False
    moment = at + 1440 if at < start and at + 1440 < end else at
    return start <= moment < end

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

from memproc.gate import identifiers, schedule, sequence
from memproc.gate import lexicon as lx
from memproc.gate.exposure import content_tokens
from memproc.gate.facts import Facts
from memproc.gate.model import Finding, Procedure, Undecided
from memproc.gate.text import equivalent, split_clauses, stem

# Words that open a step waiting for an event: English subordinators of time, and the verbs
# of subscribing and listening (general vocabulary).
EVENT_OPENERS = lx.words(
    "on when whenever once after upon trigger triggers triggered subscribe listen wait await"
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

# Words that say when something is over (English): "done by 07:00", "ends ~05:30".
_END_WORDS = r"finish\w*|ends?|ended|done|ready|complet\w*|until|lands?"
_CLOCK_TEXT = r"\D{0,12}?(\d{1,2}[:.h]\d{2}\s*(?:am|pm)?)"
_END = re.compile(rf"\b(?:{_END_WORDS})\b{_CLOCK_TEXT}", re.I)
_WAIT = re.compile(
    r"\b(?:wait\w*|sleep\w*|pause\w*|after)\s+(?:for\s+)?(?:about\s+|~)?(\d+(?:\.\d+)?\s*"
    r"(?:seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h))\b",
    re.I,
)
_TAKES = re.compile(
    r"\b(?:takes?|took|adds?|lasts?|runs? for|needs?|for)\s+(?:about\s+|around\s+|~)?(\d+(?:\.\d+)?"
    r"\s*(?:seconds?|secs?|minutes?|mins?|hours?|hrs?|h|m))\b|~(\d+(?:\.\d+)?\s*(?:min\w*|h\w*))",
    re.I,
)


# A duration a step states for itself: "(about 75 min)", "about 5 hours", "~25 minutes".
_ABOUT = re.compile(
    r"(?:\babout|\baround|\broughly|\bapprox\w*|~)\s*(\d+(?:\.\d+)?\s*(?:seconds?|secs?|minutes?|mins?|"
    r"hours?|hrs?|h|m))\b",
    re.I,
)


def _ready_at(procedure: Procedure) -> int | None:
    """When the procedure says it is done, as a time of day (the last one it gives)."""
    found = None
    for step in procedure.steps:
        for match in _END.finditer(f"{step.action} {step.detail}"):
            found = schedule.clock(match.group(1))
    return found


def _runs_at(dependent: Procedure) -> int | None:
    """The time of day the dependent runs: its trigger, or a step that says "at 07:15" or
    opens with its time of day ("07:15: import the files")."""
    texts = [dependent.trigger] + [f"{s.action} {s.detail}" for s in dependent.steps]
    for text, step in zip(texts, [None, *dependent.steps], strict=True):
        scheduled = bool(text) and bool(re.search(r"\b(?:at|daily|every|cron)\b", text, re.I))
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


def _stated_minutes(procedure: Procedure) -> float:
    return sum(_step_minutes(f"{step.action} {step.detail}") for step in procedure.steps)


def _step_minutes(text: str) -> float:
    """The durations a step states for itself: "takes 40 minutes", "(about 2.5 h)", "watch
    it for half an hour"."""
    text = schedule.with_digits(text)
    total = 0.0
    for match in _ABOUT.finditer(text):
        total += schedule.duration(match.group(1)) or 0.0
    for match in _TAKES.finditer(text):
        if not _ABOUT.search(match.group(0)):
            total += schedule.duration(match.group(1) or match.group(2)) or 0.0
    return total


def _waits(dependent: Procedure) -> float | None:
    """A fixed wait of the dependent after the revised procedure starts, in minutes."""
    when = schedule.schedule(dependent.trigger)
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
    old_at, new_at, due = _ready_at(before), _ready_at(after), _runs_at(other)
    if old_at is not None and new_at is not None and due is not None and old_at <= due < new_at:
        return [_late(dependent, f"done by {_hhmm(new_at)} (was {_hhmm(old_at)})", _hhmm(due))]
    if due is not None:
        late = _output_later(before, after, dependent, due)
        if late:
            return [late]
    wait = _waits(other)
    old_total, new_total = _stated_minutes(before), _stated_minutes(after)
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


# -- the timeline: when each step is done ----------------------------------------------------------

# The same, and "by 06:40": in a step's own text, a time it is done by.
_END_CLOCK = re.compile(rf"\b(?:by|{_END_WORDS})\b{_CLOCK_TEXT}", re.I)


def timeline(procedure: Procedure) -> list[float | None]:
    """When each step is done, in minutes after midnight of the day it starts (past 1440 on
    the next day); None where the procedure states no time at all.

    The procedure starts at the first time of day it states (its trigger, or a step "at
    01:00"): a step written before that one runs in the same chain, so it runs from then. A
    step that states its own time waits for it; one that states a duration takes it; one
    that says when it is done ("by about 06:40") is done no earlier than that. The stated
    times can be stale after a revision inserts a long step; the durations keep the
    chain honest."""
    texts = [f"{step.action} {step.detail}" for step in procedure.steps]
    start = _first_time(procedure)
    if start is None:
        return [None] * len(texts)
    now, done = float(start), list[float | None]()
    for text in texts:
        at = _start(text)
        if at is not None:
            now = max(now, at + (1440 if at + 720 < start else 0))
        now += _step_minutes(text)
        for match in _END_CLOCK.finditer(text):
            end = schedule.clock(match.group(1))
            if end is not None:
                now = max(now, end + (1440 if end + 720 < start else 0))
        done.append(now)
    return done


def _start(text: str) -> int | None:
    """A time of day the text starts something at, not one it is done by."""
    without_ends = _END_CLOCK.sub(" ", text)
    return schedule.clock(without_ends)


def _output_step(procedure: Procedure, dependent: Facts) -> int:
    """The last step of `procedure` that shares an identifier or a content word with the
    dependent: what the dependent reads was made by then. The last step if none does."""
    theirs: set[str] = set()
    for _, text in dependent.texts:
        theirs |= content_tokens(text)
    for index in range(len(procedure.steps) - 1, -1, -1):
        step = procedure.steps[index]
        if content_tokens(f"{step.action} {step.detail}") & theirs:
            return index
    return len(procedure.steps) - 1


def _output_later(
    before: Procedure, after: Procedure, dependent: Facts, due: int
) -> Finding | None:
    """What the dependent reads is now done after the time it runs, and was done before it."""
    if not before.steps or not after.steps:
        return None
    old_times, new_times = timeline(before), timeline(after)
    j = _output_step(after, dependent)
    pairing = sequence.pair(before, after)
    back = {b: a for a, b in pairing.pairs.items()}
    i = back.get(j, _output_step(before, dependent))
    old_done, new_done, start = old_times[i], new_times[j], _first_time(before)
    if old_done is None or new_done is None or start is None:
        return None
    deadline = due + (1440 if due < start else 0)
    if old_done <= deadline < new_done:
        step = after.steps[j].action
        return _late(
            dependent,
            f"done with '{step}' at about {_hhmm(int(new_done) % 1440)} "
            f"(was {_hhmm(int(old_done) % 1440)})",
            _hhmm(due),
        )
    return None


def _first_time(procedure: Procedure) -> int | None:
    """The first time of day the procedure starts something at: its trigger, else a step."""
    for text in [procedure.trigger or ""] + [f"{s.action} {s.detail}" for s in procedure.steps]:
        at = _start(text)
        if at is not None:
            return at
    return None


# -- a step moved onto the dependent's clock time ----------------------------------------------


def moved_onto(old: Facts, revision: Facts, dependent: Facts) -> Undecided | None:
    """A step of the revision now runs over the time of day the dependent runs (it starts at
    a stated time and is done by a stated or computed later one), where its old version did
    not: two procedures on one system at once. Whether they contend (locks, load, a shared
    window) takes knowledge of the system, so it is a question, not a finding."""
    due = _runs_at(dependent.procedure)
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
    done = timeline(procedure)
    found: dict[int, tuple[float, float] | None] = {}
    for index, step in enumerate(procedure.steps):
        start, end = _start(f"{step.action} {step.detail}"), done[index]
        found[index] = (start, end) if start is not None and end is not None else None
    return found


def _covers(window: tuple[float, float], at: int) -> bool:
    """The time of day `at` falls inside the window (which may run past midnight)."""
    start, end = window
    if end <= start:
        return False
    moment = at + 1440 if at < start and at + 1440 < end else at
    return start <= moment < end

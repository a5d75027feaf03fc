"""What a revision stops producing, or produces differently, or later, that a dependent uses.

An output is an artifact named in `outputs` or by a producing step (paths, tables, topics,
env vars, URLs...). A dependent consumes it when it names it. Removing an output nobody names
is safe; so is anything the dependent already handles (it names the new format or version).
"""

from __future__ import annotations

import re

from memproc.gate import lexicon as lx
from memproc.gate.facts import Facts
from memproc.gate.model import Finding
from memproc.gate.surface import Surface, entities
from memproc.gate.text import Clause, artifacts, equivalent, formats, stem, versions

# Artifact kinds that are not outputs anyone consumes: command-line flags, chat channels.
_NOT_OUTPUTS = ("flag:", "channel:")
_GENERIC = frozenset(stem(w) for w in lx.GENERIC_VERBS | lx.PRODUCER_VERBS)


def _kind(artifact: str) -> str:
    return artifact.split(":", 1)[0]


def _replacements(old: Facts, revision: Facts, artifact: str) -> list[str]:
    """Artifacts of the same kind the revision names instead: the same file name elsewhere
    (relocated), or named by the step that named the old one (renamed)."""
    named_by = _naming_unit(old, artifact)
    found = []
    for new in sorted(revision.mentioned - old.mentioned):
        if _kind(new) != _kind(artifact):
            continue
        if (_kind(new) in ("path", "url") and _basename(new) == _basename(artifact)) or _similar(
            named_by, _naming_unit(revision, new)
        ):
            found.append(new)
    return found


def _basename(artifact: str) -> str:
    return artifact.rsplit("/", 1)[-1]


def _naming_unit(facts: Facts, artifact: str) -> set[str]:
    for clauses in facts.units.values():
        if any(artifact in artifacts(c) for c in clauses):
            return {s for c in clauses for s in c.stems()}
    return set()


def _similar(a: set[str], b: set[str]) -> bool:
    return bool(a and b) and len(a & b) * 2 >= len(a | b)


def _passed_by_flag(artifact: str, dependent: Facts) -> bool:
    """The dependent passes the resource's name as a flag's value ("-q mailers" for the
    queue mailers): a command line names resources without their kind."""
    name = artifact.split(":", 1)[1]
    if not re.fullmatch(r"[\w.-]{3,}", name):
        return False
    pattern = re.compile(rf"(?<![\w-])--?[\w-]+[ =]{re.escape(name)}(?![\w.-])", re.I)
    return any(pattern.search(text) for _, text in dependent.texts)


def removed_outputs(old: Facts, revision: Facts, dependent: Facts) -> list[Finding]:
    """Outputs the revision no longer produces, and anything it now names differently."""
    findings = []
    for artifact in sorted(old.mentioned - revision.mentioned):
        if artifact.startswith(_NOT_OUTPUTS):
            continue
        if artifact not in dependent.mentioned and not _passed_by_flag(artifact, dependent):
            continue  # gone, but nobody here consumes it
        replacements = _replacements(old, revision, artifact)
        if artifact not in old.produced and not replacements:
            continue  # the old version only read it: a dependent can still read it
        clause = old.produced.get(artifact) or _naming_clause(old, artifact)
        pattern = "renamed_output" if replacements else "removed_output"
        what = f"now produces {', '.join(replacements)} instead" if replacements else "no longer"
        findings.append(
            Finding(
                dependent_id=dependent.procedure.id,
                pattern=pattern,
                detail=(
                    f"the old version had {artifact} ({clause.source}); the revision "
                    f"{what}; the dependent uses {artifact}"
                ),
                evidence={"old": clause.text, "dependent": _naming(dependent, artifact)},
            )
        )
    return findings


def _naming(facts: Facts, artifact: str) -> str:
    return _naming_clause(facts, artifact).text


def _naming_clause(facts: Facts, artifact: str) -> Clause:
    for clause in facts.clauses:
        if artifact in artifacts(clause):
            return clause
    raise LookupError(artifact)


def _output_formats(facts: Facts) -> set[str]:
    """Formats the outputs are said to have: a named format wins over a file extension
    ("write exports/day.tsv as Avro" is Avro)."""
    found = set()
    for clause in facts.output_clauses:
        named = formats(clause, extensions=False)
        found |= named or formats(clause)
    return found


def _consumes_output(old: Facts, dependent: Facts, changed: set[str]) -> Clause | None:
    """The dependent clause that reads an old output: names a produced artifact, the old
    format, or the output's own words (beyond entity names and generic verbs)."""
    produced = set(old.produced)
    names = {stem(w) for n in entities(old.procedure) for w in n.split()}
    for clause in dependent.clauses:
        if artifacts(clause) & produced or formats(clause) & changed:
            return clause
    for out in old.output_clauses:
        if not (formats(out) & changed or _versions_of(out)):
            continue
        wanted = [s for s in out.stems() if s not in _GENERIC and s not in names]
        wanted = [s for s in wanted if s not in changed and not s.isdigit()]
        for clause in dependent.clauses:
            shared = [w for w in wanted if any(equivalent(w, s) for s in clause.stems())]
            if len(shared) >= min(2, len(wanted)) and shared:
                return clause
    return None


def _versions_of(clause: Clause) -> set[tuple[str, str]]:
    return versions(clause)


def changed_formats(old: Facts, revision: Facts, dependent: Facts) -> list[Finding]:
    before, after = _output_formats(old), _output_formats(revision)
    gone, new = before - after, after - before
    if not gone or not new:
        return []
    if {f for c in dependent.clauses for f in formats(c)} & new:
        return []  # the dependent already reads the new format
    clause = _consumes_output(old, dependent, gone)
    if clause is None:
        return []
    return [
        Finding(
            dependent_id=dependent.procedure.id,
            pattern="changed_format",
            detail=(
                f"the revision's output changed format from {', '.join(sorted(gone))} to "
                f"{', '.join(sorted(new))}; the dependent reads that output ({clause.source})"
            ),
            evidence={"dependent": clause.text, "old": ", ".join(sorted(gone))},
        )
    ]


def changed_versions(old: Facts, revision: Facts, dependent: Facts) -> list[Finding]:
    before = {v for c in old.output_clauses for v in versions(c)}
    after = {v for c in revision.output_clauses for v in versions(c)}
    findings = []
    for subject, value in sorted(before - after):
        new = sorted(v for s, v in after if equivalent(s, subject) and v != value)
        if not new or not subject:
            continue
        used = _uses_subject(dependent, subject, new)
        if used is None:
            continue
        findings.append(
            Finding(
                dependent_id=dependent.procedure.id,
                pattern="changed_version",
                detail=(
                    f"the revision moved its output {subject} from version {value} to "
                    f"{', '.join(new)}; the dependent uses {subject} ({used.source})"
                ),
                evidence={"dependent": used.text, "old": value, "new": ", ".join(new)},
            )
        )
    return findings


def _uses_subject(dependent: Facts, subject: str, new: list[str]) -> Clause | None:
    """A dependent clause using the subject and not already on a new version."""
    hit = None
    for clause in dependent.clauses:
        if any(equivalent(subject, s) for s in clause.stems()):
            if any(v in new for _, v in versions(clause)):
                return None
            hit = hit or clause
    return hit


# -- ordering ---------------------------------------------------------------------------------


def reordered_outputs(
    old: Facts, revision: Facts, dependent: Facts, surface: Surface
) -> list[Finding]:
    """An output the dependent uses now comes after the step the dependent waits for."""
    findings = []
    points = _waiting_points(revision, dependent)
    for artifact in sorted(set(old.produced) & set(revision.produced) & dependent.mentioned):
        new_at = revision.produced[artifact].position
        old_at = old.produced[artifact].position
        for point in points:
            if point.position >= new_at:
                continue
            old_point = _matching_step(old, point)
            if old_point is None or old_at >= old_point:
                continue
            findings.append(
                Finding(
                    dependent_id=dependent.procedure.id,
                    pattern="reordered_output",
                    detail=(
                        f"{artifact} used to be ready before '{point.text}'; the revision "
                        f"produces it after (step {new_at}), and the dependent waits for that "
                        "point, then uses it"
                    ),
                    evidence={"revision": revision.produced[artifact].text, "point": point.text},
                )
            )
            break
    return findings


def _waiting_points(revision: Facts, dependent: Facts) -> list[Clause]:
    """Revision steps the dependent waits on: named by its trigger or preconditions (shared
    artifact or most of their words), or a signalling step when the dependent is triggered."""
    cues = [c for c in dependent.clauses if not c.source.startswith(("step", "output"))]
    points = []
    for clause in revision.step_clauses:
        words = [s for s in clause.stems() if s not in _GENERIC]
        for cue in cues:
            shared = [w for w in words if any(equivalent(w, s) for s in cue.stems())]
            if artifacts(clause) & artifacts(cue) or (words and len(shared) * 3 >= len(words) * 2):
                points.append(clause)
                break
        else:
            if dependent.procedure.trigger and clause.verb in {stem(v) for v in lx.NOTIFY_VERBS}:
                points.append(clause)
    return points


def _matching_step(old: Facts, point: Clause) -> int | None:
    """The old position of the step a revision clause corresponds to."""
    wanted = set(point.stems())
    best, best_share = None, 0.0
    for clause in old.step_clauses:
        have = set(clause.stems())
        share = len(wanted & have) / max(1, len(wanted | have))
        if artifacts(clause) & artifacts(point):
            share = max(share, 0.9)
        if share > best_share:
            best, best_share = clause.position, share
    return best if best_share >= 0.5 else None

"""A path template whose placeholders changed order: the same files, laid out differently.

`exports/{tenant}/{yyyy}/...` becoming `exports/{yyyy}/{tenant}/...` is the same location
under wildcards, so identifiers call the two the same; yet a dependent that builds the old
path (`exports/acme/$(date +%Y)/...`) now finds nothing. The revision's layout is compared
with the old one field by field (see `templates`), and the dependent's path with both:

- it follows the former layout, never the new one: an exact finding;
- it already follows the new one: safe;
- its placeholders cannot be matched to either layout: a question for the judge, never a
  pass.
"""

from __future__ import annotations

from collections.abc import Iterator

from memproc.gate import templates
from memproc.gate.facts import Facts
from memproc.gate.identifiers import Identifier
from memproc.gate.model import Finding, Undecided
from memproc.gate.templates import Segment

_PATHS = ("path", "url")


def _relaid(old: Facts, revision: Facts) -> Iterator[tuple[Identifier, Identifier]]:
    """(old template, new template) pairs: the same under wildcards, their placeholders the
    same fields in another order."""
    new = [i for i in revision.identifiers if i.kind in _PATHS]
    for before in old.identifiers:
        if before.kind not in _PATHS:
            continue
        for after in new:
            same_files = after.kind == before.kind and after.norm == before.norm
            if same_files and templates.reordered(before.layout, after.layout):
                yield before, after


def _aligned(dependent: Identifier, layout: Identifier) -> tuple[Segment, ...] | None:
    """The layout's segments set beside the dependent's path: a URL beside a path loses its
    host. None when the two are not the same kind of name at all."""
    if dependent.kind not in _PATHS:
        return None
    host = dependent.kind == layout.kind
    return templates.segments(layout.layout, host=host)


def _anchored(path: tuple[Segment, ...], layout: tuple[Segment, ...]) -> bool:
    """The dependent's path shares a literal segment with the layout (its host, a folder,
    the file name): a path of placeholders alone could be anything."""
    return any(
        a.pattern == b.pattern and not a.fields and not b.fields
        for a, b in zip(path, layout, strict=False)
    )


def _verdicts(
    old: Facts, revision: Facts, dependent: Facts
) -> Iterator[tuple[Identifier, Identifier, Identifier, bool | None]]:
    """For each relaid template and each dependent path it may be: whether the dependent
    is broken (True), or cannot be told (None)."""
    for before, after in _relaid(old, revision):
        for theirs in dependent.identifiers:
            old_layout, new_layout = _aligned(theirs, before), _aligned(theirs, after)
            if old_layout is None or new_layout is None:
                continue
            path = templates.segments(theirs.layout, host=theirs.kind == before.kind)
            if not _anchored(path, old_layout):
                continue
            was, now = templates.follows(path, old_layout), templates.follows(path, new_layout)
            if now is True or was is False:
                continue
            yield before, after, theirs, (True if was and now is False else None)


def changed_layouts(old: Facts, revision: Facts, dependent: Facts) -> list[Finding]:
    for before, after, theirs, broken in _verdicts(old, revision, dependent):
        if broken:
            return [
                Finding(
                    dependent_id=dependent.procedure.id,
                    pattern="changed_location",
                    detail=(
                        f"the revision lays out {before.text} as {after.text} (placeholders "
                        f"{_order(before)} now {_order(after)}); the dependent's "
                        f"{theirs.text} follows the old layout"
                    ),
                    evidence={"old": before.text, "new": after.text, "dependent": theirs.text},
                )
            ]
    return []


def undecided(old: Facts, revision: Facts, dependent: Facts) -> Undecided | None:
    """A relaid template the dependent's path may follow, though its placeholders cannot be
    matched to either layout."""
    for before, after, theirs, broken in _verdicts(old, revision, dependent):
        if broken is None:
            return Undecided(
                dependent.procedure.id,
                "low_confidence",
                f"the revision lays out {before.text} as {after.text}; whether the "
                f"dependent's {theirs.text} follows the old layout cannot be told from its "
                "placeholders",
            )
    return None


def _order(ident: Identifier) -> str:
    return "/".join(templates.fields(ident.layout))

"""Grants narrowed to fewer kinds of action, and dependents that do one of those left out.

A grant is a step that gives a role, user or key permissions (a policy, a GRANT, an RBAC
rule, an ACL). What it allows is read as kinds of action (read, list, write, update,
delete) from the words and action names it lists (`sqs:SendMessage`, `GRANT SELECT, INSERT`,
`verbs: [get, list]`); a wildcard (`sqs:*`, `"*"`, `ALL PRIVILEGES`) allows every kind. The
revision narrows it when a paired step now allows fewer kinds. A dependent sharing its
surface breaks when one of its steps does a kind of action the grant no longer allows, on
the service or resource the grant names (`sqs.purge_queue`, `DELETE FROM ledger.rows`).

Callers who present no credentials are one principal under many names. When the revision
takes from it what it could do before, a dependent on the same system that calls without
credentials loses that access, whatever the grant's own wording.
"""

from __future__ import annotations

import re

from memproc.gate import identifiers, sequence
from memproc.gate import lexicon as lx
from memproc.gate.facts import Facts
from memproc.gate.model import Finding

# Kinds of action and the verbs that name them: the CRUD operations as HTTP methods, SQL
# statements, object-store and cloud IAM action names and Kubernetes RBAC verbs spell them.
ACTION_KINDS: dict[str, frozenset[str]] = {
    "read": lx.words("get read select describe head view download fetch watch"),
    "list": lx.words("list scan"),
    "write": lx.words("put write insert upload create post copy"),
    "update": lx.words("update patch modify alter"),
    "delete": lx.words("delete remove drop purge truncate"),
}
# Words that make a step a grant (access control vocabulary: SQL's GRANT and privileges,
# cloud IAM policies and roles, RBAC verbs, ACLs). A user, key or table named in passing
# does not make a step about loading rows a grant.
GRANT_WORDS = lx.words(
    """grant grants granted allow allows allowed privilege privileges permission permissions
    policy policies role roles verbs actions acl acls rbac iam"""
)
_WILDCARD = re.compile(r"(?:\w:\*(?![\w/])|[\"']\*[\"']|\ball\s+privileges\b)", re.I)
_WORDS = re.compile(r"[A-Za-z][a-z]+|[A-Z]+(?![a-z])")


# The names access-control systems give to callers who present no credentials: RBAC's
# unauthenticated group, object stores' all-users grantee, file shares' guest, web servers'
# and build servers' anonymous user (general knowledge of access control).
ANONYMOUS_PRINCIPALS = lx.words("anonymous unauthenticated allusers guest guests everyone")
# A call made without credentials, as runbooks say it (English).
_NO_CREDENTIALS = re.compile(
    r"\b(?:no|without)\s+(?:any\s+)?(?:credentials?|auth\w*|login|token|api[\s_-]?key)\b"
    r"|\banonymous(?:ly)?\b|\bunauthenticated\b",
    re.I,
)
# A principal given nothing: "no access", "without any permissions", "revoked" (English).
_NOTHING = re.compile(
    r"\b(?:no|without)\s+(?:\w+\s+){0,2}?(?:permissions?|access|rights|privileges)\b"
    r"|\b(?:revoked?|removed|denied)\b",
    re.I,
)


def _kinds(text: str) -> set[str]:
    """The kinds of action a text names; every kind for a wildcard."""
    if _WILDCARD.search(text):
        return set(ACTION_KINDS)
    words = {w.lower() for w in _WORDS.findall(text)}
    return {kind for kind, verbs in ACTION_KINDS.items() if words & verbs}


def _is_grant(text: str) -> bool:
    return bool({w.lower() for w in re.findall(r"[A-Za-z]+", text)} & GRANT_WORDS)


def _targets(text: str) -> set[str]:
    """What a grant is on: the services its action names are prefixed with (`s3:` in
    `sqs:SendMessage`) and the names of its resources."""
    found = {m.lower() for m in re.findall(r"\b([a-z][a-z0-9-]*):(?=[A-Z*])", text)}
    for ident in identifiers.find(text):
        if ident.kind in identifiers.NAMING_KINDS:
            found |= {p for p in re.split(r"[^a-z0-9]+", ident.norm.replace("_", "-")) if p}
    return {t for t in found if len(t) > 1 and t not in ("arn", "aws")}


def narrowed(old: Facts, revision: Facts) -> list[tuple[str, set[str], set[str]]]:
    """(where, the kinds no longer allowed, what the grant is on) for each narrowed grant."""
    found = []
    before, after = old.procedure.steps, revision.procedure.steps
    for i, j in sorted(sequence.pair(old.procedure, revision.procedure).pairs.items()):
        was, now = before[i].text, after[j].text
        if was == now or not (_is_grant(was) and _is_grant(now)):
            continue
        lost = _kinds(was) - _kinds(now)
        if lost and _kinds(now):
            found.append((f"step {j + 1}", lost, _targets(was) | _targets(now)))
    return found


def narrowed_grants(old: Facts, revision: Facts, dependent: Facts) -> list[Finding]:
    for where, lost, targets in narrowed(old, revision):
        for source, text in dependent.texts:
            if not source.startswith("step") or not _targets(text) & targets:
                continue
            done = _kinds(text.replace("*", "")) & lost
            if done:
                return [_finding(dependent, where, source, done)]
    return []


def _anonymous_kinds(text: str) -> set[str] | None:
    """What the no-credentials principal may do per a step's text; None when the step does
    not name it. Read clause by clause: "guests may read; staff may write" gives guests
    read only."""
    found: set[str] | None = None
    for clause in re.split(r"[;\n]|\.\s", text):
        names = {w.lower() for w in re.findall(r"[A-Za-z]+", clause)}
        if not names & ANONYMOUS_PRINCIPALS:
            continue
        kinds = set() if _NOTHING.search(clause) else _kinds(clause)
        found = (found or set()) | kinds
    return found


def anonymous_access_lost(old: Facts, revision: Facts) -> list[tuple[str, set[str]]]:
    """(where, kinds) for each paired step that takes kinds of action from callers with no
    credentials."""
    found = []
    before, after = old.procedure.steps, revision.procedure.steps
    for i, j in sorted(sequence.pair(old.procedure, revision.procedure).pairs.items()):
        was = _anonymous_kinds(before[i].text)
        if not was:
            continue
        now = _anonymous_kinds(after[j].text) or set()
        if was - now:
            found.append((f"step {j + 1}", was - now))
    return found


def anonymous_callers(old: Facts, revision: Facts, dependent: Facts) -> list[Finding]:
    """A dependent that calls without credentials, where the revision takes from such
    callers a kind of action it does (a bare call at least reads)."""
    for where, lost in anonymous_access_lost(old, revision):
        for source, text in dependent.texts:
            if not source.startswith("step") or not _NO_CREDENTIALS.search(text):
                continue
            done = (_kinds(text) or {"read"}) & lost
            if done:
                kinds = ", ".join(sorted(done))
                detail = (
                    f"the revision takes {kinds} from callers without credentials ({where}); "
                    f"the dependent calls without credentials ({source})"
                )
                evidence = {"revision": where, "dependent": source, "kinds": kinds}
                return [Finding(dependent.procedure.id, "tightened_limit", detail, evidence)]
    return []


def _finding(dependent: Facts, where: str, source: str, done: set[str]) -> Finding:
    kinds = ", ".join(sorted(done))
    return Finding(
        dependent_id=dependent.procedure.id,
        pattern="tightened_limit",
        detail=(
            f"the revision narrows a grant ({where}) so that it no longer allows {kinds}; "
            f"the dependent does that ({source})"
        ),
        evidence={"revision": where, "dependent": source, "kinds": kinds},
    )

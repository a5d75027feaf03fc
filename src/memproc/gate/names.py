"""Other names of common software: one table of short names, and how names compare.

Source: well-known short names, nicknames and product families of widely used software and
cloud services, written from general knowledge (vendor documentation and everyday usage:
"k8s" is Kubernetes, "psql" PostgreSQL's client, "bq" BigQuery, "AKS" a managed Kubernetes).
It is not drawn from any benchmark case. A short name that stands for several systems lists
them all, and such a name links two procedures only with corroboration (see `surface`).
Short names that are also everyday English words ("node", "rails", "argo") are left out:
they would link everything. A scope can add its own names with `entity.alias`.

Names compare by their canonical systems: two names match when they share one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

# short name or other spelling -> the canonical systems it may stand for
ABBREVIATIONS: dict[str, tuple[str, ...]] = {
    # containers and orchestration
    "k8s": ("kubernetes",),
    "kube": ("kubernetes",),
    "kubectl": ("kubernetes",),
    "eks": ("amazon eks",),
    "gke": ("google kubernetes engine",),
    "aks": ("azure kubernetes service",),
    "hpa": ("kubernetes",),
    "ocp": ("openshift",),
    "docker compose": ("docker",),
    # databases and data
    "pg": ("postgresql",),
    "postgres": ("postgresql",),
    "psql": ("postgresql",),
    "mongo": ("mongodb",),
    "mssql": ("sql server",),
    "ms sql": ("sql server",),
    "ddb": ("dynamodb",),
    "dynamo": ("dynamodb",),
    "cw": ("cloudwatch",),
    "bb": ("bitbucket",),
    "ghes": ("github enterprise server",),
    "tfc": ("terraform cloud",),
    "cosmos": ("azure cosmos db",),
    "es": ("elasticsearch", "ecmascript"),
    "rmq": ("rabbitmq",),
    "bq": ("bigquery",),
    "sf": ("snowflake", "salesforce"),
    "sfdc": ("salesforce",),
    "msk": ("amazon msk",),
    "gcs": ("google cloud storage",),
    "cloud storage": ("google cloud storage",),
    "s3": ("amazon s3",),
    "amazon s3": ("amazon s3",),
    # cloud and infrastructure
    "aws": ("amazon web services",),
    "gcp": ("google cloud",),
    "tf": ("terraform", "tensorflow"),
    "cf": ("cloudformation", "cloudflare", "cloud foundry"),
    "cfn": ("cloudformation",),
    "alb": ("application load balancer",),
    "elb": ("elastic load balancing",),
    "nlb": ("network load balancer",),
    "ec2": ("amazon ec2",),
    "ecr": ("amazon ecr",),
    "ecs": ("amazon ecs",),
    "rds": ("amazon rds",),
    "amazon rds": ("amazon rds",),
    "sqs": ("amazon sqs",),
    "sns": ("amazon sns",),
    # identity and directories
    "ad": ("active directory",),
    "ms ad": ("active directory",),
    "aad": ("microsoft entra id",),
    "azure ad": ("microsoft entra id",),
    "entra id": ("microsoft entra id",),
    # source control and CI
    "gh": ("github",),
    "gha": ("github actions",),
    "github workflows": ("github actions",),
    "gl": ("gitlab",),
    "gitlab ci": ("gitlab",),
    # languages, runtimes and tools
    "js": ("javascript",),
    "ts": ("typescript",),
    "python3": ("python",),
    "nodejs": ("node.js",),
    "node js": ("node.js",),
    "golang": ("go",),
    "ror": ("ruby on rails",),
    "sklearn": ("scikit-learn",),
    "hf": ("hugging face",),
    "hugging face hub": ("hugging face",),
    "ghcr": ("github container registry",),
    "ghcr.io": ("github container registry",),
    "gcr": ("google container registry",),
    "hashicorp vault": ("vault",),
    "argocd": ("argo cd",),
    "otel": ("opentelemetry",),
}

# A managed service or a part of a larger system -> that system: a dependent of the family
# is a dependent of the member.
FAMILIES: dict[str, str] = {
    "amazon eks": "kubernetes",
    "google kubernetes engine": "kubernetes",
    "azure kubernetes service": "kubernetes",
    "openshift": "kubernetes",
    "github actions": "github",
    "github container registry": "github",
    "github enterprise server": "github",
    "terraform cloud": "terraform",
    "amazon msk": "kafka",
}

_SPACE = re.compile(r"[^a-z0-9.']+")


def norm(name: str) -> str:
    """Lowercase words: "PostgreSQL" -> "postgresql", "GitHub-Actions" -> "github actions"."""
    return _SPACE.sub(" ", name.lower()).strip(" .")


def canonical(name: str, extra: Mapping[str, Iterable[str]] | None = None) -> frozenset[str]:
    """The systems a name may stand for: its table entry, or itself. `extra` holds a scope's
    aliases (name -> other names), read both ways."""
    key = norm(name)
    found = set(ABBREVIATIONS.get(key, (key,)))
    for entity, others in (extra or {}).items():
        names = {norm(entity), *(norm(o) for o in others)}
        if key in names:
            found |= {n for other in names for n in ABBREVIATIONS.get(other, (other,))}
    return frozenset(found | {FAMILIES[n] for n in found if n in FAMILIES})


def other_names(name: str, extra: Mapping[str, Iterable[str]] | None = None) -> set[str]:
    """A scope's aliases of `name`, read both ways (the entity's aliases, or the entity and
    its other aliases when `name` is itself an alias)."""
    key = norm(name)
    found: set[str] = set()
    for entity, others in (extra or {}).items():
        names = {norm(entity), *(norm(o) for o in others)}
        if key in names:
            found |= names
    return found - {key}


def systems(name: str, extra: Mapping[str, Iterable[str]] | None = None) -> frozenset[str]:
    """The systems a name stands for itself, without the families they belong to."""
    return frozenset(n for n in canonical(name, extra) if not _is_family_only(name, n, extra))


def _is_family_only(name: str, system: str, extra: Mapping[str, Iterable[str]] | None) -> bool:
    key = norm(name)
    direct = set(ABBREVIATIONS.get(key, (key,)))
    for entity, others in (extra or {}).items():
        names = {norm(entity), *(norm(o) for o in others)}
        if key in names:
            direct |= {n for other in names for n in ABBREVIATIONS.get(other, (other,))}
    return system not in direct


def same_system(a: str, b: str, extra: Mapping[str, Iterable[str]] | None = None) -> bool:
    """Whether two names stand for one system: the same one, or one is the family the other
    belongs to ("EKS" and "kubectl" both run Kubernetes; "GitHub Actions" and "GHCR" do not
    match through "GitHub")."""
    return bool(systems(a, extra) & canonical(b, extra) or systems(b, extra) & canonical(a, extra))


def ambiguous(name: str) -> bool:
    return len(ABBREVIATIONS.get(norm(name), ())) > 1


def short_names(name: str) -> set[str]:
    """The table's short names and spellings of the system `name` stands for ("k8s" and
    "kubectl" for Kubernetes), not `name` itself."""
    wanted = systems(name)
    return {short for short, targets in ABBREVIATIONS.items() if wanted & set(targets)} - {
        norm(name)
    }


def expansions(name: str) -> set[str]:
    """Every name that may stand for the same system, for looking candidates up."""
    systems = canonical(name)
    found = {norm(name), *systems}
    for short, targets in ABBREVIATIONS.items():
        if systems & set(targets):
            found.add(short)
    return found

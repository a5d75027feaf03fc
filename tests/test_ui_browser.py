"""The viewer in a real headless browser: Debian's chromium, driven by Playwright, against
`memproc ui` running as a child process on a store filled through the real ops with the real
MiniLM. A person's path: search and see the memory, open its history, approve a quarantined
procedure revision; then the store, not the page, says whether the revision became current.

A browser that cannot start fails the test (with the reason), never skips it: `make test`
installs chromium first. On failure the page's screenshot is saved in the test's tmp dir.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import msgspec
import pytest
from playwright.sync_api import Browser, Error, Page, expect, sync_playwright

from evidencekit import put_params
from memproc.config import Config
from memproc.ops.context import OpContext
from memproc.ops.evidence import evidence as evidence_ops
from memproc.ops.memories import memory as memory_ops
from memproc.ops.memories import revisions as revision_ops
from memproc.ops.procedures import procedures as procedure_ops
from memproc.runtime import Runtime
from memproc.wire import messages as m
from memproc.wire import procedure_messages as pm
from searchkit import CORPUS, PARAPHRASE
from uikit import Viewer, running_viewer

CHROMIUM = "/usr/bin/chromium"
# This machine's network is closed: without the background-networking flags chromium keeps
# trying Google's hosts. The sandbox needs user namespaces, which a root CI run lacks.
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCOPE = "/work/shop"
# A ceiling for each wait on the page (Playwright polls until then), never a pause.
PAGE_DEADLINE_MS = 60_000
expect.set_options(timeout=PAGE_DEADLINE_MS)
EDITED = "The release cache is rebuilt nightly by the cron job on build-2."
ORIGINAL = "The release cache is rebuilt nightly by the cron job on build-1."


@dataclass(frozen=True)
class Filled:
    db: Path
    edited_id: str
    deploy_id: str
    quarantined_id: str


def _fill(db: Path, models_dir: Path) -> Filled:
    """Memories (one edited twice over), evidence, and a procedure whose breaking revision
    the gate quarantined, each written by the op its protocol method runs."""
    config = Config(db=str(db), models_dir=str(models_dir), reranker="none", defer_embedding=False)
    runtime = Runtime(config)
    try:
        runtime.open_store()
        runtime.models.load_now()
        ctx = OpContext(runtime=runtime)
        for content in CORPUS.values():
            memory_ops.remember(ctx, m.RememberParams(scope=SCOPE, kind="fact", content=content))
        edited = memory_ops.remember(
            ctx, m.RememberParams(scope=SCOPE, kind="note", content=ORIGINAL)
        )
        revision_ops.edit(
            ctx,
            m.EditParams(scope=SCOPE, id=edited.id, content=EDITED, reason="moved to build-2"),
        )
        evidence_ops.put(ctx, put_params("ci-1", scope=SCOPE))
        deploy, quarantined = _quarantined_revision(ctx)
    finally:
        runtime.close()
    return Filled(db, edited.id, deploy, quarantined)


def _quarantined_revision(ctx: OpContext) -> tuple[str, str]:
    """`deploy` and a dependent, `seed`, on the same system; a revision of deploy that makes
    migrations a precondition breaks seed, and the gate quarantines it."""

    def create(name: str, action: str) -> str:
        raw = {
            "scope": SCOPE,
            "name": name,
            "entity_names": ["Postgres"],
            "steps": [{"action": action}],
        }
        return procedure_ops.create(ctx, msgspec.convert(raw, pm.CreateProcedureParams)).id

    deploy = create("deploy", "push the release")
    create("seed", "insert demo rows into the accounts table")
    raw = {
        "scope": SCOPE,
        "id": deploy,
        "reason": "the last push failed on a missing column",
        "steps": [{"action": "run migrations"}, {"action": "push"}],
        "preconditions": ["every job must run migrations before it writes"],
    }
    evolved = procedure_ops.evolve(ctx, msgspec.convert(raw, pm.EvolveProcedureParams))
    assert evolved.status == "quarantined", evolved
    return deploy, evolved.version_id


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory, minilm_dir: Path) -> Filled:
    return _fill(tmp_path_factory.mktemp("ui-browser") / "memory.db", minilm_dir.parent)


@pytest.fixture(scope="module")
def viewer(filled: Filled, minilm_dir: Path) -> Iterator[Viewer]:
    with running_viewer(filled.db, minilm_dir.parent) as started:
        yield started


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if shutil.which(CHROMIUM) is None:
        pytest.fail(f"{CHROMIUM} is missing: `make test` installs Debian's chromium", pytrace=False)
    with sync_playwright() as playwright:
        try:
            launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        except Error as exc:
            pytest.fail(f"chromium did not start: {exc.message}", pytrace=False)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Browser, viewer: Viewer, tmp_path: Path) -> Iterator[Page]:
    context = browser.new_context()
    opened = context.new_page()
    opened.set_default_timeout(PAGE_DEADLINE_MS)
    try:
        yield opened
    finally:
        context.close()


def on_page(page: Page, tmp_path: Path, viewer: Viewer, steps: Callable[[], None]) -> None:
    """Run `steps`; on failure save a screenshot and name it, with the viewer's stderr."""
    try:
        steps()
    except (AssertionError, Error) as exc:
        shot = tmp_path / "failure.png"
        page.screenshot(path=str(shot), full_page=True)
        raise AssertionError(f"{exc}\nscreenshot: {shot}\nviewer stderr:\n{viewer.said()}") from exc


def test_search_history_and_approval_in_the_browser(
    page: Page, viewer: Viewer, filled: Filled, tmp_path: Path
) -> None:
    def steps() -> None:
        page.goto(viewer.url)
        expect(page.locator("#scope")).to_have_value(SCOPE)
        search(page)
        open_history(page, filled)
        see_evidence(page)
        see_versions(page)
        approve(page, filled)

    on_page(page, tmp_path, viewer, steps)
    current = current_version(filled)
    assert current.version_id == filled.quarantined_id and current.status == "current"


def search(page: Page) -> None:
    """A query that shares no word with the memory it means: found by the dense channel."""
    page.fill("#search", PARAPHRASE)
    page.click("#search-form button[type=submit]")
    expect(page.locator("#search-note")).to_contain_text("(hybrid)")
    expect(page.locator("#memory-list .memory").first).to_contain_text(CORPUS["cat"])


def open_history(page: Page, filled: Filled) -> None:
    page.click("#list-all")
    card = page.locator(f'#memory-list .memory[data-id="{filled.edited_id}"]')
    card.locator("button.show-history").click()
    history = page.locator("#history")
    expect(history.locator(".timeline li.revision")).to_have_count(2)
    expect(history.locator(".timeline li.revision").nth(0)).to_contain_text(ORIGINAL)
    expect(history.locator(".timeline li.revision").nth(1)).to_contain_text(EDITED)
    expect(history).to_contain_text("reason: moved to build-2")


def see_evidence(page: Page) -> None:
    page.click('.tab[data-tab="evidence"]')
    card = page.locator("#evidence-list .evidence")
    expect(card).to_have_count(1)
    expect(card).to_contain_text("the test suite passes on main")
    expect(card.locator(".badge").first).to_have_text("supported")  # its computed state


def see_versions(page: Page) -> None:
    """Both versions of deploy, the quarantined one with the gate's finding."""
    page.click('.tab[data-tab="procedures"]')
    page.locator("#procedure-list .procedure", has_text="deploy").locator("button").click()
    versions = page.locator("#procedure .version")
    expect(versions).to_have_count(2)
    expect(versions.nth(0)).to_contain_text("current")
    expect(versions.nth(1)).to_contain_text("quarantined")
    expect(versions.nth(1).locator(".finding")).to_contain_text("unmet_precondition")


def approve(page: Page, filled: Filled) -> None:
    page.click('.tab[data-tab="review"]')
    item = page.locator(f'#review-list .review-item[data-revision="{filled.quarantined_id}"]')
    expect(item).to_contain_text("unmet_precondition")
    item.locator(".decision-reason").fill("seed runs after migrations now")
    item.locator("button.approve").click()
    expect(page.locator("#status")).to_have_text("deploy version 2: current")
    expect(item).to_have_count(0)


def current_version(filled: Filled) -> pm.ProcedureView:
    runtime = Runtime(Config(db=str(filled.db), embedder="none", reranker="none"))
    try:
        params = pm.GetProcedureParams(scope=SCOPE, id=filled.deploy_id)
        return procedure_ops.get(OpContext(runtime=runtime), params).procedure
    finally:
        runtime.close()

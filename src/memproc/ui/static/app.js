// The viewer's page: plain DOM, no build step. Every piece of stored text is put in the page
// as textContent, never as HTML, so a memory cannot inject markup or script.
"use strict";

const $ = (id) => document.getElementById(id);
let scope = null;

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (name === "onclick") node.addEventListener("click", value);
    else node.setAttribute(name, value);
  }
  for (const child of children) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

function badge(text) {
  return el("span", { class: `badge ${text}` }, text);
}

// A line of small facts; each string in its own span, so the flex gap separates them.
function meta(...parts) {
  const kept = parts.filter((p) => p !== null && p !== "");
  return el("div", { class: "meta" }, ...kept.map((p) => (typeof p === "string" ? el("span", {}, p) : p)));
}

function say(text, isError) {
  const status = $("status");
  status.textContent = text;
  status.className = isError ? "error" : "";
}

// GET /api/<method> with the params as a query string; the answer's JSON, or an Error whose
// message is the server's.
async function api(method, params, body) {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params || {})) {
    if (Array.isArray(value)) value.forEach((v) => query.append(name, v));
    else if (value !== null && value !== undefined && value !== "") query.set(name, value);
  }
  const init = body === undefined ? {} : {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  };
  const response = await fetch(`/api/${method}?${query}`, init);
  const answer = await response.json();
  if (!response.ok) throw new Error(`${answer.error.kind}: ${answer.error.message}`);
  return answer;
}

async function guarded(work) {
  try {
    say("");
    await work();
  } catch (error) {
    say(error.message, true);
  }
}

// -- tabs and scopes ---------------------------------------------------------------------------

const loaders = {
  memories: () => listMemories(),
  evidence: () => listEvidence(),
  procedures: () => listProcedures(),
  review: () => listReview(),
};

function show(tab) {
  for (const section of document.querySelectorAll(".view")) section.hidden = section.id !== tab;
  for (const button of document.querySelectorAll(".tab")) {
    button.setAttribute("aria-selected", String(button.dataset.tab === tab));
  }
  location.hash = tab;
  if (scope !== null) guarded(loaders[tab]);
}

async function loadScopes() {
  const { scopes } = await api("scopes");
  const select = $("scope");
  select.replaceChildren(...scopes.map((s) => el("option", { value: s }, s)));
  scope = scopes.length ? scopes[0] : null;
  if (scope === null) say("this store holds no records yet");
}

// -- memories ------------------------------------------------------------------------------------

function memoryCard(item) {
  return el(
    "li",
    { class: "card memory", "data-id": item.id },
    meta(
      badge(item.kind),
      badge(item.status),
      item.score === undefined ? null : `score ${item.score.toFixed(3)}`,
      (item.occurred_at || item.created_at).slice(0, 19).replace("T", " "),
      item.revision > 1 ? `revision ${item.revision}` : null,
      el("code", {}, item.id),
    ),
    el("div", { class: "content" }, item.content),
    el("button", { type: "button", class: "show-history", onclick: () => guarded(() => showHistory(item.id)) }, "History"),
  );
}

async function listMemories() {
  const result = await api("memory.list", { scope, limit: 50 });
  $("search-note").textContent = `${result.items.length} newest memories`;
  $("memory-list").replaceChildren(...result.items.map(memoryCard));
}

async function searchMemories(event) {
  event.preventDefault();
  const query = $("search").value.trim();
  if (!query) return guarded(listMemories);
  await guarded(async () => {
    const result = await api("memory.search", { scope, query, mode: $("search-mode").value, limit: 20 });
    const note = `${result.results.length} found (${result.mode})`;
    $("search-note").textContent = result.degraded ? `${note}: ${result.degraded}` : note;
    $("memory-list").replaceChildren(...result.results.map(memoryCard));
  });
}

// Revisions and state changes of one memory, merged into one timeline, oldest first.
async function showHistory(id) {
  const history = await api("memory.history", { scope, id });
  const events = [
    ...history.revisions.map((r) => ({
      at: r.created_at,
      title: `revision ${r.revision}`,
      text: r.content,
      reason: r.reason,
      kind: "revision",
    })),
    ...history.changes.map((c) => ({
      at: c.at,
      title: `${c.action}: ${c.previous || "new"} → ${c.status}`,
      text: c.successor ? `successor ${c.successor}` : "",
      reason: c.reason,
      kind: "change",
    })),
  ].sort((a, b) => a.at.localeCompare(b.at));
  const panel = $("history");
  panel.replaceChildren(
    el("h2", {}, "History ", badge(history.status)),
    el("p", { class: "meta" }, el("code", {}, history.id)),
    el("ol", { class: "timeline" }, ...events.map((e) => el(
      "li",
      { class: e.kind },
      meta(e.at.slice(0, 19).replace("T", " "), el("strong", {}, e.title)),
      e.text ? el("div", { class: "content" }, e.text) : null,
      e.reason ? el("div", { class: "note" }, `reason: ${e.reason}`) : null,
    ))),
  );
  panel.hidden = false;
  panel.scrollIntoView();
}

// -- evidence ------------------------------------------------------------------------------------

function evidenceCard(item) {
  return el(
    "li",
    { class: "card evidence" },
    meta(badge(item.state), `outcome ${item.outcome}`, item.eligible ? "eligible" : "not eligible",
      item.reason ? `(${item.reason})` : null, `observed ${item.observed_at}`,
      item.expires_at ? `expires ${item.expires_at}` : null, el("code", {}, item.evidence_id)),
    el("div", { class: "content" }, item.claim),
    el("div", { class: "note" }, JSON.stringify(item.observation)),
  );
}

async function listEvidence() {
  const result = await api("evidence.list", { scope, limit: 100 });
  $("evidence-list").replaceChildren(...result.items.map(evidenceCard));
  if (!result.items.length) say("no evidence in this scope");
}

// -- procedures ------------------------------------------------------------------------------

function findingsList(findings) {
  return findings.map((f) => el(
    "div",
    { class: "finding" },
    el("strong", {}, f.pattern), ` on ${f.dependent_id}: `, f.detail,
  ));
}

function stepsList(steps) {
  return el("ol", {}, ...steps.map((s) => el("li", {}, s.detail ? `${s.action} (${s.detail})` : s.action)));
}

async function listProcedures() {
  const result = await api("procedure.list", { scope, limit: 100 });
  $("procedure-list").replaceChildren(...result.items.map((p) => el(
    "li",
    { class: "card procedure" },
    meta(badge(p.status), `version ${p.version}`, `${p.success_count} ok / ${p.failure_count} failed`),
    el("strong", {}, p.name),
    " ",
    el("button", { type: "button", onclick: () => guarded(() => showProcedure(p.id)) }, "Versions"),
  )));
  if (!result.items.length) say("no procedures in this scope");
}

// Every version the audit log names, each with its status and gate findings, then the log.
async function showProcedure(id) {
  const audit = await api("procedure.audit", { scope, procedure_id: id, limit: 100 });
  const versionIds = [...new Set(audit.items.map((e) => e.version_id).filter(Boolean))];
  const versions = await Promise.all(
    versionIds.map((v) => api("procedure.get", { scope, id, version_id: v })),
  );
  const panel = $("procedure");
  panel.replaceChildren(
    el("h2", {}, versions.length ? versions[0].procedure.name : id),
    ...versions.map(({ procedure: v }) => el(
      "div",
      { class: "card version" },
      meta(`version ${v.version}`, badge(v.status), v.created_at, el("code", {}, v.version_id)),
      v.reason ? el("div", { class: "note" }, `reason: ${v.reason}`) : null,
      stepsList(v.steps),
      ...findingsList(v.findings),
    )),
    el("h3", {}, "Audit"),
    el("ol", { class: "timeline" }, ...audit.items.map((e) => el(
      "li",
      {},
      meta(e.at, el("strong", {}, e.event), e.actor ? `by ${e.actor}` : null),
      e.reason ? el("div", { class: "note" }, e.reason) : null,
    ))),
  );
  panel.hidden = false;
  panel.scrollIntoView();
}

// -- the review queue ----------------------------------------------------------------------------

function reviewCard(item) {
  const reason = el("input", { class: "decision-reason", placeholder: "reason (required)", "aria-label": "reason" });
  const decide = (decision) => guarded(async () => {
    const result = await api("procedure.review.decide", {}, {
      scope,
      revision_id: item.revision_id,
      decision,
      reason: reason.value.trim(),
      actor: $("actor").value.trim(),
    });
    await listReview();
    say(`${item.name} version ${item.version}: ${result.status}`);
  });
  return el(
    "li",
    { class: "card review-item", "data-revision": item.revision_id },
    meta(badge("quarantined"), `version ${item.version}`, item.created_at, el("code", {}, item.revision_id)),
    el("strong", {}, item.name),
    item.reason ? el("div", { class: "note" }, `reason: ${item.reason}`) : null,
    ...findingsList(item.findings),
    el("div", {}, reason, " ",
      el("button", { type: "button", class: "approve", onclick: () => decide("approve") }, "Approve"), " ",
      el("button", { type: "button", class: "reject", onclick: () => decide("reject") }, "Reject")),
  );
}

async function listReview() {
  const result = await api("procedure.review.list", { scope, limit: 100 });
  $("review-list").replaceChildren(...result.items.map(reviewCard));
  if (!result.items.length) say("nothing awaits review in this scope");
}

// -- start ---------------------------------------------------------------------------------------

document.addEventListener("DOMContentLoaded", () => guarded(async () => {
  for (const button of document.querySelectorAll(".tab")) {
    button.addEventListener("click", () => show(button.dataset.tab));
  }
  $("search-form").addEventListener("submit", searchMemories);
  $("list-all").addEventListener("click", () => guarded(listMemories));
  $("scope").addEventListener("change", (event) => {
    scope = event.target.value;
    show(location.hash.slice(1) || "memories");
  });
  await loadScopes();
  show(location.hash.slice(1) in loaders ? location.hash.slice(1) : "memories");
}));

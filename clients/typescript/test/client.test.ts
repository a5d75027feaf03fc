// The client against the real `memproc serve` (no models: --embedder none --reranker none).
// Every request sent, every answer and every line received is checked against schemas/ at
// run time (the Schemas validator), and the calls below type-check against the types
// generated from the same files at compile time.
//
// The server command is MEMPROC_TS_SERVE (a JSON array, e.g. ["python", "-m", "memproc",
// "serve"]), else the repository's .venv; MEMPROC_TS_SCHEMAS overrides the schemas directory.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import {
  MemprocClient,
  RpcError,
  RpcTimeout,
  Schemas,
  SchemaViolation,
  ServerGone,
  validate,
  type RememberParams,
} from "../src/client.js";

const REPO = fileURLToPath(new URL("../../../../", import.meta.url)); // from dist/test/
const SERVE: string[] = process.env.MEMPROC_TS_SERVE
  ? (JSON.parse(process.env.MEMPROC_TS_SERVE) as string[])
  : [join(REPO, ".venv/bin/python"), "-m", "memproc", "serve"];
const SCHEMAS_DIR = process.env.MEMPROC_TS_SCHEMAS ?? join(REPO, "schemas");
const SCOPE = "ts-client";

const schemas = new Schemas(SCHEMAS_DIR);
const directories: string[] = [];
const clients: MemprocClient[] = [];

/** A server on a fresh database, its MEMPROC_* settings cleared, checked against schemas/. */
function serve(validating = true): MemprocClient {
  const directory = mkdtempSync(join(tmpdir(), "memproc-ts-"));
  directories.push(directory);
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !key.startsWith("MEMPROC_")),
  );
  const argv = [
    ...SERVE,
    ...["--db", join(directory, "memory.db"), "--models-dir", join(directory, "no-models")],
    ...["--embedder", "none", "--reranker", "none"],
  ];
  const client = new MemprocClient(argv, {
    env,
    timeoutMs: 20_000,
    ...(validating ? { schemas } : {}),
  });
  clients.push(client);
  return client;
}

/** A stand-in process written in JavaScript, for what no real server does on purpose. */
function fake(script: string): MemprocClient {
  const client = new MemprocClient([process.execPath, "-e", script], { timeoutMs: 5_000 });
  clients.push(client);
  return client;
}

async function initialize(client: MemprocClient, judge = false): Promise<void> {
  const capabilities = judge ? { requests: { "gate/judge": {} } } : {};
  const init = await client.call("initialize", {
    protocolVersion: "1.0",
    clientInfo: { name: "memproc-ts-test", version: "0.1.0" },
    capabilities,
  });
  assert.equal(init.protocolVersion, "1.0");
}

after(async () => {
  for (const client of clients) {
    await client.close(5_000);
    assert.deepEqual(client.protocolErrors, [], `stdout of ${client.pid} broke the protocol`);
  }
  for (const directory of directories) rmSync(directory, { recursive: true, force: true });
});

describe("memories through the real process", () => {
  let server: MemprocClient;
  before(async () => {
    server = serve();
    await initialize(server);
  });

  test("remember, get, search (lexical), list", async () => {
    const first = await server.call("memory.remember", {
      scope: SCOPE,
      kind: "fact",
      content: "the staging database runs PostgreSQL 16 on port 5433",
      tags: ["db"],
    });
    assert.equal(first.created, true);
    const second = await server.call("memory.remember", {
      scope: SCOPE,
      kind: "decision",
      content: "we deploy on Tuesdays after the standup",
    });

    const got = await server.call("memory.get", { scope: SCOPE, id: first.id });
    assert.equal(got.memory.content, "the staging database runs PostgreSQL 16 on port 5433");
    assert.equal(got.memory.status, "active");
    assert.deepEqual(got.memory.tags, ["db"]);

    const found = await server.call("memory.search", {
      scope: SCOPE,
      query: "which port does staging postgres use",
      mode: "lexical",
    });
    assert.equal(found.mode, "lexical");
    assert.deepEqual(
      found.results.map((hit) => hit.id),
      [first.id],
    );

    const listed = await server.call("memory.list", { scope: SCOPE });
    assert.deepEqual(
      listed.items.map((memory) => memory.id),
      [second.id, first.id], // newest first
    );
  });

  test("remembering the same content again returns the first id", async () => {
    const params: RememberParams = { scope: SCOPE, kind: "note", content: "said twice" };
    const once = await server.call("memory.remember", params);
    const twice = await server.call("memory.remember", params);
    assert.deepEqual([twice.id, twice.created], [once.id, false]);
  });

  test("pipelined calls: a search sent right after a remember finds it", async () => {
    const [remembered, found] = await Promise.all([
      server.call("memory.remember", { scope: SCOPE, kind: "note", content: "zebra crossings" }),
      server.call("memory.search", { scope: SCOPE, query: "zebra", mode: "lexical" }),
    ]);
    assert.deepEqual(
      found.results.map((hit) => hit.id),
      [remembered.id],
    );
  });

  test("an unknown id is a typed not_found error", async () => {
    const missing = server.call("memory.get", { scope: SCOPE, id: "no-such-memory" });
    await assert.rejects(missing, (error) => {
      assert.ok(error instanceof RpcError);
      assert.equal(error.code, -32002);
      assert.equal(error.kind, "not_found");
      assert.equal(error.retryable, false);
      return true;
    });
  });

  test("dense search without an embedder is not_ready, and not retryable", async () => {
    const dense = server.call("memory.search", { scope: SCOPE, query: "x", mode: "dense" });
    await assert.rejects(dense, (error) => {
      assert.ok(error instanceof RpcError);
      assert.deepEqual([error.code, error.kind, error.retryable], [-32001, "not_ready", false]);
      return true;
    });
  });

  test("every message so far was checked against its schema file", () => {
    for (const file of [
      "initialize.params.json",
      "initialize.result.json",
      "memory.remember.params.json",
      "memory.remember.result.json",
      "memory.get.params.json",
      "memory.get.result.json",
      "memory.search.params.json",
      "memory.search.result.json",
      "memory.list.params.json",
      "memory.list.result.json",
      "envelope.json",
    ]) {
      assert.ok((schemas.checked.get(file) ?? 0) > 0, `${file} checked nothing`);
    }
  });
});

describe("the schemas and the server agree on what is invalid", () => {
  // @ts-expect-error: the generated type allows only the kinds the schema lists
  const bogus: RememberParams = { scope: SCOPE, kind: "rumour", content: "x" };

  test("the client refuses to send it", async () => {
    const server = serve();
    await initialize(server);
    await assert.rejects(server.call("memory.remember", bogus), (error) => {
      assert.ok(error instanceof SchemaViolation);
      assert.equal(error.schemaFile, "memory.remember.params.json");
      assert.equal(error.violations[0]?.path, "$.kind");
      return true;
    });
  });

  test("and the server, sent it anyway, answers invalid_params", async () => {
    const server = serve(false);
    await assert.rejects(server.call("memory.remember", bogus), (error) => {
      assert.ok(error instanceof RpcError);
      assert.deepEqual([error.code, error.kind], [-32602, "invalid_params"]);
      return true;
    });
  });
});

describe("the gate asks the client's judge", () => {
  const steps = (...actions: string[]) => actions.map((action) => ({ action }));

  test("a gate/judge request is answered by the handler; gate/settled follows", async () => {
    const server = serve();
    const asked: string[] = [];
    server.onRequest("gate/judge", (question) => {
      asked.push(question.revision_id);
      return { verdict: "safe", reason: "3.13 runs the suite" };
    });
    await initialize(server, true);
    const producer = await server.call("procedure.create", {
      scope: SCOPE,
      name: "build the api base image",
      steps: steps(
        "set FROM python:3.11-slim in docker/api.Dockerfile",
        "build docker/api.Dockerfile and push it",
      ),
    });
    await server.call("procedure.create", {
      scope: SCOPE,
      name: "run the api test suite",
      steps: steps("build docker/api.Dockerfile locally", "run pytest in the image"),
    });
    const settled = server.nextNotification("gate/settled");
    const evolved = await server.call("procedure.evolve", {
      scope: SCOPE,
      id: producer.id,
      reason: "newer python",
      steps: steps(
        "set FROM python:3.13-slim in docker/api.Dockerfile",
        "build docker/api.Dockerfile and push it",
      ),
    });
    assert.equal(evolved.status, "quarantined");
    assert.deepEqual(
      evolved.undecided?.map((pair) => pair.outcome),
      ["asked"],
    );
    const outcome = await settled;
    assert.deepEqual([outcome.revision_id, outcome.status], [evolved.version_id, "current"]);
    assert.deepEqual(asked, [evolved.version_id]);
    const current = await server.call("procedure.get", { scope: SCOPE, id: producer.id });
    assert.equal(current.procedure.version_id, evolved.version_id);
    for (const file of ["to_client.gate.judge.params.json", "to_client.gate.judge.result.json"]) {
      assert.ok((schemas.checked.get(file) ?? 0) > 0, `${file} checked nothing`);
    }
  });
});

describe("the process's life", () => {
  test("closing stdin ends the server with exit code 0", async () => {
    const server = serve();
    await initialize(server);
    await server.call("ping", {});
    assert.equal(await server.close(), 0);
    await assert.rejects(server.call("ping", {}), ServerGone);
  });

  test("calls pending when the process exits are rejected with its exit code", async () => {
    const client = fake("process.stdin.resume(); setTimeout(() => process.exit(3), 200)");
    await assert.rejects(client.call("ping", {}), (error) => {
      assert.ok(error instanceof ServerGone);
      assert.equal(error.exitCode, 3);
      return true;
    });
  });

  test("a program that cannot start rejects calls, with the reason", async () => {
    const client = new MemprocClient(["/nonexistent/memproc", "serve"]);
    clients.push(client);
    await assert.rejects(client.call("ping", {}), /ENOENT/);
  });

  test("a call with no answer times out and the server is told to cancel it", async () => {
    const echo = "require('readline').createInterface({input: process.stdin})" +
      ".on('line', (line) => process.stderr.write(line + '\\n'))";
    const client = fake(echo);
    await assert.rejects(client.call("ping", {}, { timeoutMs: 100 }), RpcTimeout);
    await client.close();
    const cancelled = client.stderr.trim().split("\n").map((line) => JSON.parse(line));
    assert.deepEqual(cancelled.at(-1), {
      jsonrpc: "2.0",
      method: "notifications/cancelled",
      params: { requestId: 1, reason: "client timed out" },
    });
  });
});

describe("the validator", () => {
  const schema = {
    type: "object",
    properties: {
      name: { type: "string", minLength: 1, maxLength: 3 },
      n: { anyOf: [{ type: "integer", minimum: 0 }, { type: "null" }] },
      refs: { type: "array", items: { type: "string", pattern: "^memory:\\S+$" }, maxItems: 2 },
    },
    required: ["name"],
    additionalProperties: false,
  };

  test("accepts what conforms and says where the rest breaks", () => {
    assert.deepEqual(validate({ name: "abc", n: null, refs: ["memory:1"] }, schema), []);
    assert.deepEqual(validate({ name: "😀😀😀" }, schema), []); // lengths count code points
    const paths = (value: unknown) => validate(value, schema).map((v) => v.path);
    assert.deepEqual(paths({}), ["$"]);
    assert.deepEqual(paths({ name: "abcd" }), ["$.name"]);
    assert.deepEqual(paths({ name: "a", n: 1.5 }), ["$.n"]);
    assert.deepEqual(paths({ name: "a", refs: ["x"] }), ["$.refs[0]"]);
    assert.deepEqual(paths({ name: "a", other: 1 }), ["$"]);
  });

  test("a keyword it does not know is an error, not a pass", () => {
    assert.throws(() => validate("x", { format: "date-time" }), /not supported/);
  });
});

// A minimal memproc client: spawns `memproc serve`, speaks JSON-RPC 2.0 as one JSON object per
// line over its stdin/stdout, and matches responses to calls by id (they may come out of
// order). Every type here comes from src/generated.ts, which gen-types.mjs writes from
// schemas/; with `schemas` given, every message is also checked against its schema file at
// run time.

import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createInterface } from "node:readline";
import type { Methods, ServerNotifications, ServerRequests } from "./generated.js";
import { Schemas, type Part } from "./schema.js";

export * from "./generated.js";
export { Schemas, SchemaViolation, validate } from "./schema.js";

type Id = number | string;
type Json = Record<string, unknown>;
type Table = "methods" | "serverRequests" | "serverNotifications";

/** A JSON-RPC error answer: `kind` and `retryable` are memproc's `data.kind`, `data.retryable`. */
export class RpcError extends Error {
  readonly kind: string | undefined;
  readonly retryable: boolean | undefined;
  constructor(
    readonly method: string,
    readonly code: number,
    message: string,
    readonly data: Json = {},
  ) {
    super(`${method}: ${code} ${message}`);
    this.name = "RpcError";
    this.kind = typeof data.kind === "string" ? data.kind : undefined;
    this.retryable = typeof data.retryable === "boolean" ? data.retryable : undefined;
  }
}

/** No answer in time; the server was told to cancel the call. */
export class RpcTimeout extends Error {
  constructor(
    readonly method: string,
    readonly timeoutMs: number,
  ) {
    super(`${method}: no response within ${timeoutMs} ms`);
    this.name = "RpcTimeout";
  }
}

/** The process ended (or was closed) with the call still unanswered. */
export class ServerGone extends Error {
  constructor(
    readonly method: string,
    readonly exitCode: number | null,
    readonly signal: string | null,
    readonly stderr: string,
  ) {
    super(
      `${method}: memproc exited (code ${exitCode}, signal ${signal}) before answering\n` + stderr,
    );
    this.name = "ServerGone";
  }
}

export type RequestHandler<M extends keyof ServerRequests> = (
  params: ServerRequests[M]["params"],
) => ServerRequests[M]["result"] | Promise<ServerRequests[M]["result"]>;

type NotificationListener<M extends keyof ServerNotifications> = (
  params: ServerNotifications[M],
) => void;

export interface ClientOptions {
  /** The child's whole environment (default: the parent's). */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Default time a call waits for its answer. */
  timeoutMs?: number;
  /** Check every message sent and received against the schema files of this directory. */
  schemas?: Schemas;
}

interface Pending {
  method: string;
  resolve: (result: unknown) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

const STDERR_KEEP = 8000;

export class MemprocClient {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly pending = new Map<Id, Pending>();
  /** Calls given up on (timed out): a late answer to one is dropped, not an error. */
  private readonly abandoned = new Set<Id>();
  private readonly handlers = new Map<string, (params: never) => unknown>();
  private readonly listeners = new Map<string, Set<(params: never) => void>>();
  private readonly timeoutMs: number;
  private readonly schemas: Schemas | undefined;
  private nextId = 1;
  private stderrTail = "";
  /** Lines on stdout that were not protocol messages, or answered no pending call. */
  readonly protocolErrors: string[] = [];
  /** Resolves with the exit code (null if killed by a signal) once the process has ended. */
  readonly exited: Promise<number | null>;
  private gone: { code: number | null; signal: string | null } | undefined;

  constructor(command: string[], options: ClientOptions = {}) {
    const [program, ...args] = command;
    if (!program) throw new Error("an empty command");
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.schemas = options.schemas;
    this.child = spawn(program, args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    this.child.stdin.on("error", () => {}); // a dead child's EPIPE: `exited` reports it
    this.child.stderr.setEncoding("utf8");
    this.child.stderr.on("data", (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-STDERR_KEEP);
    });
    const lines = createInterface({ input: this.child.stdout, crlfDelay: Infinity });
    lines.on("line", (line) => this.receive(line));
    const stdoutClosed = new Promise<void>((resolve) => lines.once("close", resolve));
    this.exited = new Promise((resolve) => {
      this.child.once("close", (code, signal) => resolve(code));
      this.child.once("error", (error) => {
        this.stderrTail += `\nspawn failed: ${error.message}`;
        resolve(null);
      });
    });
    // Whatever the process wrote before it ended is read first; then nothing else can answer.
    void Promise.all([this.exited, stdoutClosed]).then(() => {
      this.gone = { code: this.child.exitCode, signal: this.child.signalCode };
      for (const [id, call] of this.pending) {
        this.settle(id, call, (c) => c.reject(this.goneError(c.method)));
      }
    });
  }

  get stderr(): string {
    return this.stderrTail;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Call a method and wait for its result; rejects with RpcError, RpcTimeout or ServerGone. */
  call<M extends keyof Methods>(
    method: M,
    params: Methods[M]["params"],
    options: { timeoutMs?: number } = {},
  ): Promise<Methods[M]["result"]> {
    const id = this.nextId++;
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;
    return new Promise((resolve, reject) => {
      if (this.gone) return reject(this.goneError(method));
      this.check("methods", method, "params", params);
      const timer = setTimeout(() => {
        const call = this.pending.get(id);
        if (!call) return;
        this.settle(id, call, (c) => c.reject(new RpcTimeout(method, timeoutMs)));
        this.abandoned.add(id);
        this.notify("notifications/cancelled", { requestId: id, reason: "client timed out" });
      }, timeoutMs);
      this.pending.set(id, {
        method,
        resolve: resolve as (result: unknown) => void,
        reject,
        timer,
      });
      this.write({ jsonrpc: "2.0", id, method, params });
    });
  }

  /** Send a notification (no id, no answer), e.g. `notifications/cancelled`. */
  notify<M extends keyof Methods>(method: M, params: Methods[M]["params"]): void {
    this.check("methods", method, "params", params);
    this.write({ jsonrpc: "2.0", method, params });
  }

  /** Answer what the server asks (`gate/judge`): the handler's result, or its error. */
  onRequest<M extends keyof ServerRequests>(method: M, handler: RequestHandler<M>): void {
    this.handlers.set(method, handler as (params: never) => unknown);
  }

  /** Hear what the server tells (`gate/settled`, `notifications/progress`). */
  onNotification<M extends keyof ServerNotifications>(
    method: M,
    listener: NotificationListener<M>,
  ): () => void {
    const set = this.listeners.get(method) ?? new Set();
    set.add(listener as (params: never) => void);
    this.listeners.set(method, set);
    return () => set.delete(listener as (params: never) => void);
  }

  /** The next notification of `method` that satisfies `accept`. */
  nextNotification<M extends keyof ServerNotifications>(
    method: M,
    accept: (params: ServerNotifications[M]) => boolean = () => true,
    timeoutMs = this.timeoutMs,
  ): Promise<ServerNotifications[M]> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        stop();
        reject(new RpcTimeout(method, timeoutMs));
      }, timeoutMs);
      const stop = this.onNotification(method, (params) => {
        if (!accept(params)) return;
        clearTimeout(timer);
        stop();
        resolve(params);
      });
    });
  }

  /** Close stdin (the server finishes what it has and exits) and wait for the exit code; kill
   * the process if it is still there after `graceMs`. */
  async close(graceMs = 10_000): Promise<number | null> {
    this.child.stdin.end();
    const timer = setTimeout(() => this.child.kill("SIGKILL"), graceMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  private write(message: Json): void {
    this.child.stdin.write(`${JSON.stringify(message)}\n`);
  }

  private check(table: Table, method: string, part: Part, value: unknown): void {
    if (!this.schemas) return;
    const file = Schemas.fileOf(table, method, part);
    if (!file) throw new Error(`no schema for ${method} ${part}`);
    this.schemas.check(file, value);
  }

  private settle(id: Id, call: Pending, finish: (call: Pending) => void): void {
    clearTimeout(call.timer);
    this.pending.delete(id);
    finish(call);
  }

  private goneError(method: string): ServerGone {
    const { code = null, signal = null } = this.gone ?? {};
    return new ServerGone(method, code, signal, this.stderrTail);
  }

  private receive(line: string): void {
    if (line.trim() === "") return;
    let message: Json;
    try {
      message = JSON.parse(line) as Json;
    } catch {
      this.protocolErrors.push(`not JSON: ${line.slice(0, 500)}`);
      return;
    }
    // A message that breaks envelope.json is recorded, and still settles what it answers or
    // asks, so neither side waits for a time-out.
    let broken: Error | undefined;
    try {
      this.schemas?.check("envelope.json", message);
    } catch (violation) {
      broken = violation as Error;
      this.protocolErrors.push(`${broken.message}: ${line.slice(0, 500)}`);
    }
    if (typeof message.method === "string") {
      if (!("id" in message)) {
        if (!broken) this.hear(message.method, message.params);
      } else if (broken) {
        const error = { code: -32600, message: broken.message };
        this.write({ jsonrpc: "2.0", id: message.id, error });
      } else {
        void this.answer(message.id as Id, message.method, message.params);
      }
      return;
    }
    const call = this.pending.get(message.id as Id);
    if (!call) {
      if (this.abandoned.delete(message.id as Id)) return;
      this.protocolErrors.push(`an answer to no pending call: ${line.slice(0, 500)}`);
      return;
    }
    this.settle(message.id as Id, call, (c) => {
      if (broken) return c.reject(broken);
      if ("error" in message) {
        const error = message.error as { code: number; message: string; data?: Json };
        return c.reject(new RpcError(c.method, error.code, error.message, error.data));
      }
      try {
        this.check("methods", c.method, "result", message.result);
        c.resolve(message.result);
      } catch (violation) {
        c.reject(violation as Error);
      }
    });
  }

  private async answer(id: Id, method: string, params: unknown): Promise<void> {
    const handler = this.handlers.get(method);
    if (!handler) {
      const error = { code: -32601, message: `this client does not answer ${method}` };
      this.write({ jsonrpc: "2.0", id, error });
      return;
    }
    try {
      this.check("serverRequests", method, "params", params);
      const result = await handler(params as never);
      this.check("serverRequests", method, "result", result);
      this.write({ jsonrpc: "2.0", id, result });
    } catch (error) {
      this.write({ jsonrpc: "2.0", id, error: { code: -32603, message: String(error) } });
    }
  }

  private hear(method: string, params: unknown): void {
    try {
      this.check("serverNotifications", method, "params", params);
    } catch (violation) {
      this.protocolErrors.push((violation as Error).message);
      return;
    }
    for (const listener of this.listeners.get(method) ?? []) listener(params as never);
  }
}

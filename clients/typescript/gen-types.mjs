#!/usr/bin/env node
// Turns the JSON Schema files in schemas/ into TypeScript: one type per `$defs` entry and a
// map from each method to its params and result types. Everything the client knows about
// the protocol's shapes comes from here, so the schemas alone are what the client is written
// against.
//
//   node gen-types.mjs <schemas dir> <out.ts>
//
// The method name is read from each file's title ("memory.get params", "gate/judge params
// (server to client)"). Files named `to_client.*` are what the server sends unasked: a
// request when a `.result.json` sits beside it, else a notification. `envelope.json` is left
// to the runtime validator. A keyword this generator does not understand is an error, never a
// silently looser type.

import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

// `discriminator` (OpenAPI's) only names the tag property each member of its union pins already.
const ANNOTATIONS = new Set([
  "title", "description", "default", "$schema", "examples", "discriminator",
]);
const VALIDATION_ONLY = new Set([
  "minLength", "maxLength", "minimum", "maximum", "minItems", "maxItems", "pattern",
]);

const [schemasDir, outPath] = process.argv.slice(2);
if (!schemasDir || !outPath) {
  console.error("usage: node gen-types.mjs <schemas dir> <out.ts>");
  process.exit(2);
}

const defs = new Map(); // name -> [schema JSON text, schema, file]
const methods = new Map(); // method -> {params, result, file stem}
const serverRequests = new Map();
const serverNotifications = new Map();

const ident = (name) => {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`not an identifier: ${name}`);
  return name;
};
const refName = (ref, file) => {
  const match = /^#\/\$defs\/(.+)$/.exec(ref);
  if (!match) throw new Error(`${file}: only local $defs refs are understood, not ${ref}`);
  return ident(match[1]);
};

/** The TypeScript type of one schema, indented to `depth`. */
function tsType(schema, file, depth = 0) {
  for (const key of Object.keys(schema)) {
    const known = ANNOTATIONS.has(key) || VALIDATION_ONLY.has(key) || [
      "$ref", "anyOf", "oneOf", "enum", "const", "type", "properties", "required",
      "additionalProperties", "items",
    ].includes(key);
    if (!known) throw new Error(`${file}: keyword ${key} is not understood`);
  }
  if (schema.$ref) return refName(schema.$ref, file);
  if (schema.anyOf || schema.oneOf) {
    return (schema.anyOf ?? schema.oneOf).map((s) => tsType(s, file, depth)).join(" | ");
  }
  if (schema.enum) return schema.enum.map((v) => JSON.stringify(v)).join(" | ");
  if ("const" in schema) return JSON.stringify(schema.const);
  switch (schema.type) {
    case undefined:
      return "unknown";
    case "string":
      return "string";
    case "integer":
    case "number":
      return "number";
    case "boolean":
      return "boolean";
    case "null":
      return "null";
    case "array":
      return `Array<${schema.items ? tsType(schema.items, file, depth) : "unknown"}>`;
    case "object":
      return objectType(schema, file, depth);
    default:
      throw new Error(`${file}: type ${JSON.stringify(schema.type)} is not understood`);
  }
}

function objectType(schema, file, depth) {
  const properties = schema.properties ?? {};
  const required = new Set(schema.required ?? []);
  const extra = schema.additionalProperties;
  const names = Object.keys(properties);
  if (names.length === 0) {
    if (extra === false) return "Record<string, never>";
    const value = extra && extra !== true ? tsType(extra, file, depth) : "unknown";
    return `Record<string, ${value}>`;
  }
  const pad = "  ".repeat(depth + 1);
  const lines = names.map((name) => {
    const property = properties[name];
    const doc = property.description ? `${pad}/** ${docText(property.description)} */\n` : "";
    const optional = required.has(name) ? "" : "?";
    return `${doc}${pad}${JSON.stringify(name)}${optional}: ${tsType(property, file, depth + 1)};`;
  });
  if (extra && extra !== true) {
    lines.push(`${pad}[key: string]: unknown; // additionalProperties: ${JSON.stringify(extra)}`);
  }
  return `{\n${lines.join("\n")}\n${"  ".repeat(depth)}}`;
}

const docText = (text) => text.replace(/\*\//g, "*\\/").replace(/\s*\n\s*/g, " ");

function addDefs(schema, file) {
  for (const [name, def] of Object.entries(schema.$defs ?? {})) {
    const text = JSON.stringify(def);
    const seen = defs.get(ident(name));
    if (seen && seen[0] !== text) {
      throw new Error(`$defs/${name} differs between ${seen[2]} and ${file}`);
    }
    if (!seen) defs.set(name, [text, def, file]);
  }
}

const files = readdirSync(schemasDir).filter((f) => f.endsWith(".json")).sort();
for (const file of files) {
  if (file === "envelope.json") continue;
  const schema = JSON.parse(readFileSync(join(schemasDir, file), "utf8"));
  const title = /^(\S+) (params|result)( \((server to client|client to server)\))?$/.exec(
    schema.title ?? "",
  );
  if (!title) throw new Error(`${file}: title ${JSON.stringify(schema.title)} names no method`);
  const [, method, part] = title;
  const stem = file.replace(/\.(params|result)\.json$/, "");
  addDefs(schema, file);
  const type = refName(schema.$ref, file);
  const table = file.startsWith("to_client.") ? serverRequests : methods;
  const entry = table.get(method) ?? { stem };
  entry[part] = type;
  table.set(method, entry);
}
for (const [method, entry] of [...serverRequests]) {
  if (!entry.result) {
    serverRequests.delete(method);
    serverNotifications.set(method, entry);
  }
}

const out = [
  "// Generated by gen-types.mjs from schemas/*.json: do not edit, run `npm run gen`.",
  "/* eslint-disable */",
  "",
];
for (const [name, [, def, file]] of [...defs].sort(([a], [b]) => a.localeCompare(b))) {
  if (def.description) out.push(`/** ${docText(def.description)} */`);
  out.push(`// from ${file}`);
  out.push(`export type ${name} = ${tsType(def, file)};`, "");
}
const table = (name, doc, entries, body) => {
  out.push(`/** ${doc} */`, `export interface ${name} {`);
  for (const [method, entry] of entries) out.push(`  ${JSON.stringify(method)}: ${body(entry)};`);
  out.push("}", "");
};
const pair = (e) => {
  if (!e.params || !e.result) throw new Error(`${e.stem}: a method needs params and result`);
  return `{ params: ${e.params}; result: ${e.result} }`;
};
table("Methods", "What the client may call.", methods, pair);
table("ServerRequests", "What the server may ask the client (it answers).", serverRequests, pair);
table(
  "ServerNotifications",
  "What the server may tell the client (no answer).",
  serverNotifications,
  (e) => e.params,
);
const stems = (entries) =>
  Object.fromEntries([...entries].map(([method, e]) => [method, e.stem]));
out.push(
  "/** The schema file stem (`<stem>.params.json`, `<stem>.result.json`) of each method. */",
  `export const schemaStems = ${JSON.stringify(
    {
      methods: stems(methods),
      serverRequests: stems(serverRequests),
      serverNotifications: stems(serverNotifications),
    },
    null,
    2,
  )} as const;`,
  "",
);
writeFileSync(outPath, out.join("\n"));
console.log(
  `${outPath}: ${defs.size} types, ${methods.size} methods, ` +
    `${serverRequests.size} server requests, ${serverNotifications.size} notifications`,
);

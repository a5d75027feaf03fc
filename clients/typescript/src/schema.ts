// A validator for the subset of JSON Schema (2020-12) that schemas/ uses, and a loader that
// finds each method's schema file by the stems gen-types.mjs read from the same directory.
// A keyword it does not know is an error, so it never passes a value by ignoring a rule.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { schemaStems } from "./generated.js";

type Schema = { [keyword: string]: unknown };

const ANNOTATIONS = new Set(["title", "description", "default", "$schema", "examples"]);

/** Where a value broke its schema: a JSON path and what was wrong. */
export interface Violation {
  path: string;
  message: string;
}

export class SchemaViolation extends Error {
  constructor(
    readonly schemaFile: string,
    readonly violations: Violation[],
  ) {
    const first = violations.slice(0, 5).map((v) => `${v.path}: ${v.message}`);
    super(`does not conform to ${schemaFile}: ${first.join("; ")}`);
    this.name = "SchemaViolation";
  }
}

const typeOf = (value: unknown): string => {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
};

const isObject = (value: unknown): value is Record<string, unknown> => typeOf(value) === "object";

const deepEqual = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/** Every violation of `schema` by `value` (empty when it conforms). `root` holds `$defs`. */
export function validate(
  value: unknown,
  schema: Schema,
  root: Schema = schema,
  path = "$",
): Violation[] {
  const out: Violation[] = [];
  const fail = (message: string, at = path) => out.push({ path: at, message });
  for (const [keyword, rule] of Object.entries(schema)) {
    if (ANNOTATIONS.has(keyword) || keyword === "$defs" || keyword === "discriminator") continue;
    switch (keyword) {
      case "$ref": {
        const match = /^#\/\$defs\/(.+)$/.exec(rule as string);
        const target = match && (root.$defs as Record<string, Schema> | undefined)?.[match[1]!];
        if (!target) throw new Error(`unresolvable $ref ${String(rule)}`);
        out.push(...validate(value, target, root, path));
        break;
      }
      case "anyOf":
      case "oneOf": {
        const branches = rule as Schema[];
        const results = branches.map((branch) => validate(value, branch, root, path));
        const passed = results.filter((r) => r.length === 0).length;
        if (passed === 0) {
          const closest = results.reduce((a, b) => (b.length < a.length ? b : a));
          const why = closest.slice(0, 3).map((v) => `${v.path}: ${v.message}`);
          fail(`matches none of ${keyword} (closest: ${why.join("; ")})`);
        } else if (keyword === "oneOf" && passed > 1) {
          fail(`matches ${passed} branches of oneOf`);
        }
        break;
      }
      case "enum":
        if (!(rule as unknown[]).some((v) => deepEqual(v, value))) {
          fail(`${JSON.stringify(value)} is not one of ${JSON.stringify(rule)}`);
        }
        break;
      case "const":
        if (!deepEqual(rule, value)) fail(`must be ${JSON.stringify(rule)}`);
        break;
      case "type": {
        const actual = typeOf(value);
        const ok = rule === actual || (rule === "number" && actual === "integer");
        if (!ok) fail(`expected ${String(rule)}, got ${actual}`);
        break;
      }
      case "properties":
        if (isObject(value)) {
          for (const [name, sub] of Object.entries(rule as Record<string, Schema>)) {
            if (name in value) out.push(...validate(value[name], sub, root, `${path}.${name}`));
          }
        }
        break;
      case "required":
        if (isObject(value)) {
          for (const name of rule as string[]) {
            if (!(name in value)) fail(`missing required property ${name}`);
          }
        }
        break;
      case "additionalProperties":
        if (isObject(value)) {
          const declared = (schema.properties ?? {}) as Record<string, unknown>;
          for (const [name, item] of Object.entries(value)) {
            if (name in declared) continue;
            if (rule === false) fail(`unexpected property ${name}`);
            else if (isObject(rule)) out.push(...validate(item, rule, root, `${path}.${name}`));
          }
        }
        break;
      case "items":
        if (Array.isArray(value)) {
          value.forEach((item, i) => {
            out.push(...validate(item, rule as Schema, root, `${path}[${i}]`));
          });
        }
        break;
      case "minLength":
      case "maxLength":
        if (typeof value === "string") {
          const length = [...value].length; // code points, as JSON Schema counts
          if (keyword === "minLength" ? length < (rule as number) : length > (rule as number)) {
            fail(`length ${length} breaks ${keyword} ${String(rule)}`);
          }
        }
        break;
      case "minItems":
      case "maxItems":
        if (Array.isArray(value)) {
          const n = value.length;
          if (keyword === "minItems" ? n < (rule as number) : n > (rule as number)) {
            fail(`${n} items break ${keyword} ${String(rule)}`);
          }
        }
        break;
      case "minimum":
      case "maximum":
        if (typeof value === "number") {
          if (keyword === "minimum" ? value < (rule as number) : value > (rule as number)) {
            fail(`${value} breaks ${keyword} ${String(rule)}`);
          }
        }
        break;
      case "pattern":
        if (typeof value === "string" && !new RegExp(rule as string, "u").test(value)) {
          fail(`does not match ${String(rule)}`);
        }
        break;
      default:
        throw new Error(`JSON Schema keyword ${keyword} is not supported by this validator`);
    }
  }
  return out;
}

type Stems = typeof schemaStems;
/** Which schema of a method: what the client sends or gets back, or what the server sends. */
export type Part = "params" | "result";

/** The schema files of one directory, loaded on first use and counted as they are checked. */
export class Schemas {
  private readonly cache = new Map<string, Schema>();
  /** How many values each schema file has checked: a test can prove validation ran. */
  readonly checked = new Map<string, number>();

  constructor(readonly directory: string) {}

  file(name: string): Schema {
    let schema = this.cache.get(name);
    if (!schema) {
      schema = JSON.parse(readFileSync(join(this.directory, name), "utf8")) as Schema;
      this.cache.set(name, schema);
    }
    return schema;
  }

  /** Throws SchemaViolation unless `value` conforms to schema file `name`. */
  check(name: string, value: unknown): void {
    const violations = validate(value, this.file(name));
    this.checked.set(name, (this.checked.get(name) ?? 0) + 1);
    if (violations.length > 0) throw new SchemaViolation(name, violations);
  }

  /** The file name of a method's params or result, or undefined for an unknown method. */
  static fileOf(table: keyof Stems, method: string, part: Part): string | undefined {
    const stem = (schemaStems[table] as Record<string, string>)[method];
    return stem === undefined ? undefined : `${stem}.${part}.json`;
  }
}

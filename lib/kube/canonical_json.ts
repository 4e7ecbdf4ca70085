/**
 * JSON with object keys sorted, so equal values always serialize (and hash) the same. Its text is in every hash
 * espejo writes (the hash annotation) and keeps (a cached object's content hash), so it must never change: a property
 * test holds it to the first version (`tests/unit/canonical_json_test.ts`).
 *
 * Written by the engine's own JSON.stringify from a copy of the value whose objects have their keys in order. A
 * restart hashes every object espejo manages as it arrives, twice, and the first version (a string built at every
 * level with `map`, `filter` and `join`) allocated 15 KB for an object of 1 KB, most of what the restart allocated;
 * this allocates half as much, in less time.
 */
import { setOwnKey } from "./own_key.ts";

/**
 * Marks a value the engine's JSON.stringify would write otherwise than the first version: an object with an
 * array-index key ("0", "42", which JS orders first, by number), or what JSON cannot hold (a method toJSON, a
 * function, a hole in an array). Rare, and a tenant can cause only the first: it is written by the first version.
 */
const FIRST_VERSION = Symbol("first version");

export function canonicalJson(v: unknown): string {
  const ordered = inKeyOrder(v);
  return ordered === FIRST_VERSION ? joinedCanonicalJson(v) : JSON.stringify(ordered) ?? "null";
}

/**
 * `v` with every object's keys in sorted order: `v` itself where they are already (the maps the API server writes),
 * a copy where not. {@link FIRST_VERSION} when an object has a key JS would not keep in the order given.
 */
function inKeyOrder(v: unknown): unknown {
  if (Array.isArray(v)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < v.length; i++) {
      if (!(i in v)) return FIRST_VERSION;
      const element = inKeyOrder(v[i]);
      if (element === FIRST_VERSION) return FIRST_VERSION;
      if (element !== v[i]) (copy ??= v.slice())[i] = element;
    }
    return copy ?? v;
  }
  if (typeof v === "function" || typeof v === "symbol") return FIRST_VERSION;
  if (typeof v !== "object" || v === null) return v;
  const o = v as Record<string, unknown>;
  if (typeof o.toJSON === "function") return FIRST_VERSION;
  const keys = Object.keys(o);
  let sorted = true;
  for (let i = 0; i < keys.length; i++) {
    if (isArrayIndex(keys[i])) return FIRST_VERSION;
    if (i > 0 && keys[i - 1] > keys[i]) sorted = false;
  }
  if (!sorted) keys.sort();
  let copy: Record<string, unknown> | undefined = sorted ? undefined : {};
  for (let i = 0; i < keys.length; i++) {
    const value = o[keys[i]];
    const ordered = inKeyOrder(value);
    if (ordered === FIRST_VERSION) return FIRST_VERSION;
    if (!copy && ordered !== value) {
      copy = {};
      for (let j = 0; j < i; j++) setOwnKey(copy, keys[j], o[keys[j]]);
    }
    if (copy) setOwnKey(copy, keys[i], ordered);
  }
  return copy ?? o;
}

function isArrayIndex(key: string): boolean {
  const c = key.charCodeAt(0);
  return c >= 48 && c <= 57 && /^(?:0|[1-9][0-9]*)$/.test(key) && Number(key) < 2 ** 32 - 1;
}

/** The first version: slower, and it takes anything ({@link FIRST_VERSION}). */
function joinedCanonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(joinedCanonicalJson).join(",")}]`;
  if (typeof v === "object" && v !== null) {
    const o = v as Record<string, unknown>;
    return `{${
      Object.keys(o).sort().filter((k) => o[k] !== undefined).map((k) =>
        `${JSON.stringify(k)}:${joinedCanonicalJson(o[k])}`
      ).join(",")
    }}`;
  }
  return JSON.stringify(v ?? null);
}

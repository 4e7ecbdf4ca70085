/**
 * JSON with object keys sorted, so equal values always serialize (and hash) the same. Its text is in every hash
 * espejo writes (the hash annotation) and keeps (a cached object's content hash), so it must never change: a property
 * test holds it to the first version (`tests/unit/canonical_json_test.ts`).
 *
 * Written by the engine's own JSON.stringify from a copy of the value whose objects have their keys in order. A
 * restart hashes every object espejo manages as it arrives, twice, and the first version (a string built at every
 * level with `map`, `filter` and `join`) allocated 15 KB for an object of 1 KB, most of what the restart allocated;
 * this allocates half as much, in less time.
 *
 * A tenant chooses how deep what it writes nests (up to about 10,000 levels: lib/kube/json_depth.ts), and both the
 * walk that orders the keys and the engine's JSON.stringify (off its fast path) recurse: a value nested deeper than
 * {@link MAX_WALK_DEPTH} is written by the first version, whose text this is, in a loop.
 */
import { deeperThan, MAX_WALK_DEPTH } from "./json_depth.ts";
import { setOwnKey } from "./own_key.ts";

/**
 * Marks a value the engine's JSON.stringify would write otherwise than the first version: an object with an
 * array-index key ("0", "42", which JS orders first, by number), or what JSON cannot hold (a method toJSON, a
 * function, a hole in an array). Rare, and a tenant can cause only the first: it is written by the first version.
 * So is a value nested deeper than {@link MAX_WALK_DEPTH}, which a tenant can cause too.
 */
const FIRST_VERSION = Symbol("first version");

/** The text of `v` with object keys sorted, at any depth (what JSON cannot hold: see {@link FIRST_VERSION}). */
export function canonicalJson(v: unknown): string {
  const ordered = inKeyOrder(v, 1);
  return ordered === FIRST_VERSION ? firstVersionJson(v) : JSON.stringify(ordered) ?? "null";
}

/**
 * The JSON text of `v`, at any depth: the engine's JSON.stringify within {@link MAX_WALK_DEPTH} levels, the
 * canonical text (keys sorted) of a deeper value. Either parses back to the same value.
 */
export function jsonText(v: unknown): string {
  return deeperThan(v, MAX_WALK_DEPTH) ? firstVersionJson(v) : JSON.stringify(v);
}

/**
 * `v` with every object's keys in sorted order: `v` itself where they are already (the maps the API server writes),
 * a copy where not. {@link FIRST_VERSION} when an object has a key JS would not keep in the order given, or when `v`
 * (at `depth`, the top being 1) nests deeper than {@link MAX_WALK_DEPTH}.
 */
function inKeyOrder(v: unknown, depth: number): unknown {
  if (Array.isArray(v)) {
    if (depth > MAX_WALK_DEPTH) return FIRST_VERSION;
    let copy: unknown[] | undefined;
    for (let i = 0; i < v.length; i++) {
      if (!(i in v)) return FIRST_VERSION;
      const element = inKeyOrder(v[i], depth + 1);
      if (element === FIRST_VERSION) return FIRST_VERSION;
      if (element !== v[i]) (copy ??= v.slice())[i] = element;
    }
    return copy ?? v;
  }
  if (typeof v === "function" || typeof v === "symbol") return FIRST_VERSION;
  if (typeof v !== "object" || v === null) return v;
  if (depth > MAX_WALK_DEPTH) return FIRST_VERSION;
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
    const ordered = inKeyOrder(value, depth + 1);
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

/** What a piece of {@link firstVersionJson}'s work is: a value in one of three places, or the end of a container. */
const TOP = 0;
const ELEMENT = 1;
const MEMBER = 2;
const TEXT = 3;
const END = 4;

/**
 * The first version's text, without recursion: slower than the engine's, and it takes anything. The first version
 * was `[${elements.map(f).join(",")}]` and `{${keys.sort().filter(defined).map((k) => `${JSON.stringify(k)}:${f(v)}`)
 * .join(",")}}` around `JSON.stringify(v ?? null)`; so a hole in an array is written as nothing, and a value JSON
 * cannot hold (a function) as nothing in an array, as `undefined` in an object and not at all on its own. A cyclic
 * value throws a TypeError, as JSON.stringify does.
 */
function firstVersionJson(root: unknown): string {
  const parts: string[] = [];
  // The work still to do, last first: a value and its place, a piece of text, or the end of a container.
  const values: unknown[] = [root];
  const places: number[] = [TOP];
  const open = new Set<object>();
  while (values.length > 0) {
    const v = values.pop();
    const place = places.pop()!;
    if (place === TEXT) {
      parts.push(v as string);
      continue;
    }
    if (place === END) {
      open.delete(v as object);
      parts.push(Array.isArray(v) ? "]" : "}");
      continue;
    }
    if (typeof v === "object" && v !== null) {
      if (open.has(v)) throw new TypeError("canonicalJson: the value is cyclic");
      open.add(v);
      values.push(v);
      places.push(END);
      if (Array.isArray(v)) {
        parts.push("[");
        for (let i = v.length - 1; i >= 0; i--) {
          if (i in v) {
            values.push(v[i]);
            places.push(ELEMENT);
          }
          if (i > 0) {
            values.push(",");
            places.push(TEXT);
          }
        }
        continue;
      }
      parts.push("{");
      const o = v as Record<string, unknown>;
      const keys = Object.keys(o).sort().filter((k) => o[k] !== undefined);
      for (let i = keys.length - 1; i >= 0; i--) {
        values.push(o[keys[i]]);
        places.push(MEMBER);
        values.push(`${i > 0 ? "," : ""}${JSON.stringify(keys[i])}:`);
        places.push(TEXT);
      }
      continue;
    }
    const text: string | undefined = JSON.stringify(v ?? null);
    if (place === TOP) return text as string; // a scalar on its own: undefined for a function, as the first version
    parts.push(place === ELEMENT ? text ?? "" : `${text}`);
  }
  return parts.join("");
}

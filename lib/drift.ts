/**
 * Decides whether an object in a namespace still is what its SyncConfig wants, without asking the API server.
 *
 * Comparing the desired object with the observed one field by field fails in both directions: the server adds
 * defaults (a Service gets a clusterIP, a container a terminationMessagePath) and normalizes values ("1000m"
 * becomes "1"), so a plain comparison would write forever; and a subset comparison cannot see a key someone added.
 * So the decision rests on two records the server keeps for us:
 *
 * 1. The `sync.appuio.ch/desired-hash` annotation we write with every object: when it equals the hash of what we
 *    want now, our last write was exactly this desired state.
 * 2. `metadata.managedFields`: the server records which manager set which field. Defaults are owned by nobody and
 *    our own writes are owned by us, so any field owned by another manager is a change made after (or before) us.
 *    Such a field is fine only if we set it too, to the same value (a previous owner, e.g. whoever created the
 *    object before we adopted it, keeps ownership of fields our update left unchanged).
 *
 * Additionally every field we set must still be present: a manager that deletes a field owns nothing afterwards.
 */
import { deepEqual, type FieldsV1, isObject, type KubeObject, type ManagedFieldsEntry } from "./objects.ts";

export const FIELD_MANAGER = "espejo";
export const HASH_ANNOTATION = "sync.appuio.ch/desired-hash";

/** The managed-fields trees of every manager but us (status and other subresources excluded). */
export function foreignFields(entries: ManagedFieldsEntry[] | undefined): FieldsV1[] {
  return (entries ?? [])
    .filter((e) => e.manager !== FIELD_MANAGER && !e.subresource && e.fieldsV1)
    .map((e) => e.fieldsV1!);
}

/** What the drift decision needs of an observed object; the cache keeps exactly this. */
export interface ObservedState {
  object: KubeObject;
  /** From {@link foreignFields}, computed before managedFields is stripped from the cached copy. */
  foreign: FieldsV1[];
}

/**
 * Why `observed` differs from `desired` (a short description for debug logs), or undefined when it does not.
 * `desiredHash` is the hash stored in {@link HASH_ANNOTATION} of `desired`.
 */
export function driftOf(desired: KubeObject, desiredHash: string, observed: ObservedState): string | undefined {
  if (observed.object.metadata?.annotations?.[HASH_ANNOTATION] !== desiredHash) return "desired state changed";
  // apiVersion and kind are absent from the items of a list (the cache starts from one); the resource path already
  // fixes them.
  const { apiVersion: _a, kind: _k, ...content } = desired;
  const missing = firstMissingPath(content, observed.object, "");
  if (missing !== undefined) return `${missing} was removed`;
  for (const fields of observed.foreign) {
    const foreign = firstForeignDifference(fields, desired, observed.object, "");
    if (foreign !== undefined) return `${foreign} was changed by another manager`;
  }
  return undefined;
}

/** Go's `omitempty` drops zero values from replies, so a missing field "has" them. */
function isZeroValue(v: unknown): boolean {
  if (v === null || v === undefined || v === "" || v === 0 || v === false) return true;
  if (Array.isArray(v)) return v.length === 0;
  return isObject(v) && Object.values(v).every(isZeroValue);
}

function firstMissingPath(desired: unknown, observed: unknown, path: string): string | undefined {
  if (isZeroValue(desired)) return undefined;
  if (isObject(desired)) {
    if (!isObject(observed)) return path || ".";
    for (const [k, v] of Object.entries(desired)) {
      if (isZeroValue(v)) continue;
      if (!(k in observed)) return `${path}.${k}`;
      const deeper = firstMissingPath(v, observed[k], `${path}.${k}`);
      if (deeper !== undefined) return deeper;
    }
    return undefined;
  }
  if (Array.isArray(desired)) {
    if (!Array.isArray(observed) || observed.length < desired.length) return path;
    for (let i = 0; i < desired.length; i++) {
      const deeper = firstMissingPath(desired[i], observed[i], `${path}[${i}]`);
      if (deeper !== undefined) return deeper;
    }
  }
  return undefined;
}

/**
 * Walks a foreign manager's field set; returns the first owned path that we do not set, or set to another value.
 */
function firstForeignDifference(
  fields: FieldsV1,
  desired: unknown,
  observed: unknown,
  path: string,
): string | undefined {
  for (const [key, sub] of Object.entries(fields)) {
    if (key === ".") {
      if (desired === undefined) return path || ".";
      continue;
    }
    const prefix = key.slice(0, 2);
    const rest = key.slice(2);
    let d: unknown;
    let o: unknown;
    let here: string;
    if (prefix === "f:") {
      d = isObject(desired) ? desired[rest] : undefined;
      o = isObject(observed) ? observed[rest] : undefined;
      here = `${path}.${rest}`;
    } else if (prefix === "k:") {
      const want = JSON.parse(rest) as Record<string, unknown>;
      const matches = (el: unknown) => isObject(el) && Object.entries(want).every(([wk, wv]) => deepEqual(el[wk], wv));
      d = Array.isArray(desired) ? desired.find(matches) : undefined;
      o = Array.isArray(observed) ? observed.find(matches) : undefined;
      here = `${path}[${rest}]`;
    } else if (prefix === "v:") {
      const want = JSON.parse(rest);
      d = Array.isArray(desired) ? desired.find((el) => deepEqual(el, want)) : undefined;
      o = want;
      here = `${path}[${rest}]`;
    } else if (prefix === "i:") {
      const i = Number(rest);
      d = Array.isArray(desired) ? desired[i] : undefined;
      o = Array.isArray(observed) ? observed[i] : undefined;
      here = `${path}[${i}]`;
    } else {
      continue; // unknown encoding: ignore rather than write forever
    }
    if (d === undefined) return here;
    if (Object.keys(sub).length === 0) {
      if (!deepEqual(d, o)) return here;
    } else {
      const deeper = firstForeignDifference(sub, d, o, here);
      if (deeper !== undefined) return deeper;
    }
  }
  return undefined;
}

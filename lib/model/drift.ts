/**
 * Decides whether an object in a namespace still is what its SyncConfig wants, by value, without asking the API
 * server and without trusting anything a tenant can write.
 *
 * Everything on a synced object can be written by whoever may edit it: its data, its labels and annotations (our
 * desired-hash and owner markers among them) and `metadata.managedFields` (any client can claim to be field manager
 * "espejo", or strip the record). So none of that may decide that an object is in sync. What can:
 *
 * 1. Our own write's reply. It is what the server made of the desired object (defaults added, quantities
 *    normalized, mutating webhooks applied): in sync by definition. Its content, less what a write of ours does not
 *    control ({@link serverOwned}), is kept as a SHA-256 {@link contentHash}, the baseline of that object. A later
 *    version (someone else's change) is in sync only if it hashes the same.
 * 2. Without a baseline (after a restart, or an object created by someone else): a comparison by value. Every
 *    value the desired object sets must be there, lists compared element by element and of the same length. A
 *    field the desired object does not set may be a server default or someone's addition (`managedFields` cannot
 *    tell: the server records defaults as owned by whoever wrote the object). Only the server can tell: the fields
 *    it added to our last write of the same item elsewhere ({@link extrasOf}) are its defaults; any other addition
 *    gets one write (a no-op on the server if it was a default), whose reply is then the baseline. So after a
 *    restart an item that the server extends costs one such write, not one per namespace; objects the server does
 *    not extend (ConfigMaps, Secrets with a type, RBAC objects) cost none. What such a comparison proved becomes the
 *    baseline, without a hash of the content (lib/sync/verdict.ts).
 *
 * A verdict stands for one resourceVersion: an unchanged version has unchanged content.
 */
import { createHash } from "node:crypto";
import { canonicalJson } from "../kube/canonical_json.ts";
import { deepEqual, isObject, type KubeObject, SERVER_OWNED_METADATA, withoutAnnotation } from "../kube/objects.ts";
import { CREATED_ANNOTATION } from "./markers.ts";

/**
 * `object` without what {@link SERVER_OWNED_METADATA} names, `apiVersion`/`kind` (absent in lists), `status` and
 * the {@link CREATED_ANNOTATION}.
 */
export function serverOwned(object: KubeObject): KubeObject {
  const { apiVersion: _a, kind: _k, status: _s, metadata, ...rest } = object;
  const meta: Record<string, unknown> = { ...withoutAnnotation(metadata, CREATED_ANNOTATION) };
  for (const k of SERVER_OWNED_METADATA) delete meta[k];
  return { ...rest, metadata: meta };
}

/** SHA-256 of the canonical JSON of what a write controls (see {@link serverOwned}); a tenant cannot forge it. */
export function contentHash(object: KubeObject): string {
  return digest128(canonicalJson(serverOwned(object)));
}

/**
 * 128 of SHA-256's 256 bits, as 22 characters: still no forging a second object with the same hash, at half the
 * memory per cached object. Encoded from the truncated bytes, not cut from the full text: a cut string would keep
 * all 44 characters alive (V8 slices strings), about 60 bytes per cached object more.
 */
function digest128(text: string): string {
  return createHash("sha256").update(text).digest().subarray(0, 16).toString("base64url");
}

/** The result of comparing a desired object with an observed one by value. */
export type Comparison =
  | { kind: "equal" }
  /** A value the desired object sets is missing or different at `path`. */
  | { kind: "differs"; path: string }
  /**
   * Every value the desired object sets is there, but the observed object has more, or lacks a zero value the desired
   * object sets (first at `path`): what the server's defaults and omissions may explain.
   */
  | { kind: "extra"; path: string };

/** Compares by value (see the file comment); both objects are reduced with {@link serverOwned} first. */
export function compareByValue(desired: KubeObject, observed: KubeObject): Comparison {
  // The keys and indexes down to where the walk is; a path is written only when one is reported (every arriving
  // object of a restart is compared, and nearly all are equal).
  const at: (string | number)[] = [];
  const here = (key?: string) => {
    let path = "";
    for (const step of at) path += typeof step === "number" ? `[${step}]` : `.${step}`;
    return key === undefined ? path : `${path}.${key}`;
  };
  let extra: string | undefined;
  // Go's omitempty drops zero values from replies, but a tenant can drop them too (`automountServiceAccountToken:
  // false` removed means true): a missing zero value is a difference only the server's own reply can explain.
  const omitted = (key?: string) => {
    extra ??= `${here(key) || "."} (omitted)`;
    return undefined;
  };
  const walk = (d: unknown, o: unknown): string | undefined => {
    if (isObject(d)) {
      if (!isObject(o)) return o === undefined && isZeroValue(d) ? omitted() : here() || ".";
      for (const k of Object.keys(d)) {
        if (!Object.hasOwn(o, k)) {
          if (isZeroValue(d[k])) omitted(k);
          else return here(k);
          continue;
        }
        at.push(k);
        const deeper = walk(d[k], o[k]);
        at.pop();
        if (deeper !== undefined) return deeper;
      }
      if (extra === undefined) {
        const added = Object.keys(o).find((k) => !Object.hasOwn(d, k));
        if (added !== undefined) extra = here(added);
      }
      return undefined;
    }
    if (Array.isArray(d)) {
      if (o === undefined && d.length === 0) return omitted();
      if (!Array.isArray(o) || o.length !== d.length) return here();
      for (let i = 0; i < d.length; i++) {
        at.push(i);
        const deeper = walk(d[i], o[i]);
        at.pop();
        if (deeper !== undefined) return deeper;
      }
      return undefined;
    }
    return deepEqual(d, o) ? undefined : here();
  };
  const differs = walk(serverOwned(desired), serverOwned(observed));
  if (differs !== undefined) return { kind: "differs", path: boundedPath(differs) };
  return extra === undefined ? { kind: "equal" } : { kind: "extra", path: boundedPath(extra) };
}

/** The longest path a comparison reports; the reason of an out-of-sync record keeps it. */
export const MAX_PATH = 256;

/**
 * A tenant chooses the keys it adds, of any length: a path is cut to {@link MAX_PATH} characters and copied, since a
 * slice would keep the whole key alive.
 */
function boundedPath(path: string): string {
  return path.length <= MAX_PATH ? path : `${Array.from(path.slice(0, MAX_PATH)).join("")}...`;
}

/**
 * Every field of `observed` that `desired` does not set, with its value, and every field `desired` sets that
 * `observed` lacks, as canonical JSON: the server's additions and omissions for one item are the same in every
 * namespace (defaults, omitempty), so those found in the reply to one write of an item tell which differences in
 * another namespace's copy are the server's, with no request (see Executor).
 */
export function extrasOf(desired: KubeObject, observed: KubeObject): string {
  const found: [string, string[], unknown][] = [];
  // The keys down to where the walk is, copied only into what is found (nearly every key of an object is in both).
  const at: string[] = [];
  const walk = (d: unknown, o: unknown) => {
    if (isObject(d) && isObject(o)) {
      for (const k of Object.keys(o)) {
        if (!Object.hasOwn(d, k)) {
          found.push(["+", [...at, k], o[k]]);
          continue;
        }
        at.push(k);
        walk(d[k], o[k]);
        at.pop();
      }
      for (const k of Object.keys(d)) if (!Object.hasOwn(o, k)) found.push(["-", [...at, k], null]);
    } else if (Array.isArray(d) && Array.isArray(o)) {
      for (let i = 0; i < Math.min(d.length, o.length); i++) {
        at.push(String(i));
        walk(d[i], o[i]);
        at.pop();
      }
    }
  };
  walk(serverOwned(desired), serverOwned(observed));
  return canonicalJson(found);
}

/**
 * The last short {@link extrasOf} text hashed, and its hash: the server adds the same to an item in every namespace,
 * and a restart judges each of its objects (a tenant's longer additions are hashed each time, never kept).
 */
let lastExtras: { text: string; hash: string } | undefined;
const MAX_REMEMBERED_EXTRAS = 1024;

/** A hash of {@link extrasOf}: what is kept of it per item and per object judged out of sync. */
export function extrasHash(desired: KubeObject, observed: KubeObject): string {
  const text = extrasOf(desired, observed);
  if (lastExtras?.text === text) return lastExtras.hash;
  const hash = digest128(text);
  if (text.length <= MAX_REMEMBERED_EXTRAS) lastExtras = { text, hash };
  return hash;
}

/** Go's `omitempty` drops zero values from replies, so a missing field "has" them. */
export function isZeroValue(v: unknown): boolean {
  if (v === null || v === undefined || v === "" || v === 0 || v === false) return true;
  if (Array.isArray(v)) return v.length === 0;
  return isObject(v) && Object.values(v).every(isZeroValue);
}

/** The decision for one item: nothing to do, or a write with a reason for the log. */
export type Verdict =
  | { inSync: true }
  | {
    inSync: false;
    reason: string;
    /**
     * The object had been in sync with this same desired state (espejo wrote or verified it) and someone changed
     * it since: writing restores it. Repeated restores of one object are a fight and back off.
     */
    restore: boolean;
    /** Only fields the item does not set differ, and the server's additions to this item are not known yet. */
    unexplained?: true;
  };

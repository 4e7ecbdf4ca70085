/** Plain helpers for unstructured Kubernetes objects (JSON values). */
import { createHash } from "node:crypto";
import { canonicalJson } from "./canonical_json.ts";

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type JsonObject = { [k: string]: Json };

export interface ObjectMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  deletionTimestamp?: string;
  finalizers?: string[];
  managedFields?: ManagedFieldsEntry[];
  [k: string]: unknown;
}

export interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  subresource?: string;
  fieldsType?: string;
  fieldsV1?: FieldsV1;
  time?: string;
}

/** The server's record of which fields a manager owns: nested `f:<name>`, `k:<json>`, `v:<json>`, `i:<n>`, `.`. */
export type FieldsV1 = { [k: string]: FieldsV1 };

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  [k: string]: unknown;
}

/**
 * Metadata a write of an item does not control: set by the server, or (ownerReferences) the live object's, which a
 * replace keeps (as the Go espejo does). Never copied from an item, and left out of every comparison: copying it
 * would make writes fail or comparisons differ, and a wrong ownerReference (an owner that does not exist in the
 * target namespace) would let the garbage collector delete the object, which the next sync recreates, in a loop.
 */
export const SERVER_OWNED_METADATA: readonly string[] = [
  "uid",
  "resourceVersion",
  "generation",
  "creationTimestamp",
  "deletionTimestamp",
  "deletionGracePeriodSeconds",
  "managedFields",
  "selfLink",
  "ownerReferences",
];

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Structural equality of JSON values (key order does not matter). */
/** A JSON object whose metadata, if any, is an object: the least any reply of the API server is. */
export function asKubeObject(v: unknown): KubeObject | undefined {
  if (!isObject(v) || (v.metadata !== undefined && !isObject(v.metadata))) return undefined;
  return v as KubeObject; // the checks above are what KubeObject promises
}

/** `metadata` without annotation `key` (and without `annotations` when none is left); the same object if absent. */
export function withoutAnnotation<M extends ObjectMeta | undefined>(metadata: M, key: string): M {
  const annotations = metadata?.annotations;
  if (!annotations || !(key in annotations)) return metadata;
  const { [key]: _, ...others } = annotations;
  const { annotations: _all, ...rest } = metadata!;
  return (Object.keys(others).length ? { ...rest, annotations: others } : rest) as M;
}

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((v, i) => deepEqual(v, b[i]));
  }
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a);
    if (ka.length !== Object.keys(b).length) return false;
    return ka.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]));
  }
  return false;
}

/** Short SHA-256 of the canonical JSON of `v`. */
export function hashOf(v: unknown): Promise<string> {
  return Promise.resolve(hashOfNow(v));
}

/** {@link hashOf}, computed synchronously (for code that must not wait, such as a cache's decoder). */
export function hashOfNow(v: unknown): string {
  return hashOfCanonical(canonicalJson(v));
}

/**
 * {@link hashOfNow} of the value whose canonical JSON is `text`: the first 24 hex digits of its SHA-256. Cut from the
 * digest's text in two pieces of 12, each copied (V8 copies a slice under 13 characters), so that no hash kept
 * holds the 64-digit text alive; half the CPU of reading the digest's bytes through a Buffer, and a restart hashes
 * each item's desired object twice in every namespace (as it arrives, and in its unit).
 */
export function hashOfCanonical(text: string): string {
  const hex = createHash("sha256").update(text).digest("hex");
  return hex.slice(0, 12) + hex.slice(12, 24);
}

/** `group/version` split; the core group is "". */
export function splitApiVersion(apiVersion: string): { group: string; version: string } {
  const slash = apiVersion.indexOf("/");
  return slash < 0
    ? { group: "", version: apiVersion }
    : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

/** Base64 of the UTF-8 bytes of `text` (btoa alone accepts only Latin-1). */
export function encodeBase64(text: string): string {
  let binary = "";
  for (const b of new TextEncoder().encode(text)) binary += String.fromCharCode(b);
  return btoa(binary);
}

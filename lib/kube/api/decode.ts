/**
 * Decoders at the edge: what the API server sends is checked once, where it arrives, so that the code behind reads
 * typed fields without casts. A field of the wrong type makes the object undecodable (undefined, which a reflector
 * skips); the API server never sends one, but a proxy or a version skew might, and a wrong type must not travel.
 */
import { isObject, type ObjectMeta } from "../objects.ts";
import type { Namespace } from "./core_v1.ts";
import type { Lease, LeaseSpec } from "./coordination_v1.ts";

const STRING_FIELDS = ["name", "namespace", "uid", "resourceVersion", "deletionTimestamp", "creationTimestamp"];

function isStringMap(v: unknown): v is Record<string, string> {
  return isObject(v) && Object.values(v).every((x) => typeof x === "string");
}

function isStringList(v: unknown): v is string[] {
  return Array.isArray(v) && v.every((x) => typeof x === "string");
}

/**
 * The metadata of an object, its known fields checked, without managedFields (the controller never reads them
 * from a watched object; the caches of synced objects keep their own digest of them). Undefined when a field has
 * the wrong type.
 */
export function decodeObjectMeta(raw: unknown): ObjectMeta | undefined {
  if (raw === undefined) return {};
  if (!isObject(raw)) return undefined;
  for (const f of STRING_FIELDS) if (raw[f] !== undefined && typeof raw[f] !== "string") return undefined;
  if (raw.generation !== undefined && !Number.isSafeInteger(raw.generation)) return undefined;
  if (raw.labels !== undefined && !isStringMap(raw.labels)) return undefined;
  if (raw.annotations !== undefined && !isStringMap(raw.annotations)) return undefined;
  if (raw.finalizers !== undefined && !isStringList(raw.finalizers)) return undefined;
  const { managedFields: _, ...meta } = raw;
  return meta as ObjectMeta; // checked above, field by field
}

/** A Namespace with what the controller reads of it always present: name, labels and phase. */
export interface DecodedNamespace extends Omit<Namespace, "metadata" | "status"> {
  metadata: ObjectMeta & { name: string; labels: Record<string, string> };
  /** A phase newer than this client's schema is kept as it is. */
  status: Omit<NonNullable<Namespace["status"]>, "phase"> & { phase: string };
}

export function decodeNamespace(raw: unknown): DecodedNamespace | undefined {
  if (!isObject(raw)) return undefined;
  const metadata = decodeObjectMeta(raw.metadata);
  if (!metadata?.name) return undefined;
  const status = raw.status === undefined ? {} : raw.status;
  if (!isObject(status) || (status.phase !== undefined && typeof status.phase !== "string")) return undefined;
  return {
    ...raw,
    metadata: { ...metadata, name: metadata.name, labels: metadata.labels ?? {} },
    // A namespace without a phase is new: the API server sets Active at creation.
    status: { ...status, phase: typeof status.phase === "string" ? status.phase : "Active" },
  };
}

/** A Lease with metadata and spec present and their fields checked. */
export interface DecodedLease extends Omit<Lease, "metadata" | "spec"> {
  metadata: ObjectMeta;
  spec: LeaseSpec;
}

const LEASE_STRINGS = ["holderIdentity", "acquireTime", "renewTime"] as const;
const LEASE_NUMBERS = ["leaseDurationSeconds", "leaseTransitions"] as const;

export function decodeLease(raw: unknown): DecodedLease | undefined {
  if (!isObject(raw)) return undefined;
  const metadata = decodeObjectMeta(raw.metadata);
  const spec = raw.spec === undefined ? {} : raw.spec;
  if (!metadata || !isObject(spec)) return undefined;
  for (const f of LEASE_STRINGS) if (spec[f] !== undefined && typeof spec[f] !== "string") return undefined;
  for (const f of LEASE_NUMBERS) if (spec[f] !== undefined && !Number.isSafeInteger(spec[f])) return undefined;
  return { ...raw, metadata, spec: spec as LeaseSpec }; // its fields the controller reads are checked above
}

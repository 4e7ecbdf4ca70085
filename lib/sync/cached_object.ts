/**
 * What espejo keeps of an object carrying its label (see {@link CachedObject}; its markers: lib/model/markers.ts). Every
 * value here comes from the object, which a tenant may write: markers are hints, strings are bounded, and objects
 * no item names keep their identity only.
 */
import { jsonText } from "../kube/canonical_json.ts";
import type { KubeObject } from "../kube/objects.ts";
import { CREATED_ANNOTATION, FIELD_MANAGER, HASH_ANNOTATION, OWNER_ANNOTATION } from "../model/markers.ts";
import { InternTable } from "./intern_table.ts";

/**
 * What the cache keeps of one object carrying our label; 20,000 of them must fit in the memory limit with room to
 * spare, and a tenant's junk objects must cost next to nothing. Every string here comes from the object, which a
 * tenant may write: each is bounded in length.
 *
 * The content is needed only until it has been compared once: a verdict stands for one resourceVersion (see
 * lib/model/drift.ts). Until then it is kept as JSON text, which costs a fraction of a parsed object; objects no item
 * names never keep it.
 */
export interface CachedObject {
  resourceVersion: string;
  uid: string;
  /** {@link HASH_ANNOTATION}: the hash of what we last wrote (a hint: tenants can write it). */
  desiredHash?: string;
  /** {@link OWNER_ANNOTATION} (a hint: only a SyncConfig that has an item for this object can hold it). */
  owner?: string;
  /** {@link CREATED_ANNOTATION}: the SyncConfig that created the object (a hint: pruning also checks the owner). */
  createdBy?: string;
  /** The field manager of the newest managedFields entry, for logs about fights (a hint too). */
  manager?: string;
  /**
   * The live ownerReferences as JSON text, which our writes keep (as the Go espejo does); absent when there are none
   * or when they are longer than {@link MAX_KEPT_REFERENCES} ({@link referencesUnkept}).
   */
  ownerReferences?: string;
  /**
   * Set when the object has more ownerReferences than are kept: a tenant may add thousands (about 1 MiB), so they are
   * read again (one GET, when it is written) rather than kept, on every path an object arrives by.
   */
  referencesUnkept?: true;
  /** The object as JSON; undefined once judged, and never kept for an object no item names. */
  json?: string;
  /**
   * Set when the content was not kept, because no item named the object or because it is {@link large}: it must be
   * read before it is judged.
   */
  contentless?: true;
  /** Set when the content was not kept for its size ({@link MAX_KEPT_CONTENT}) although an item names the object. */
  large?: true;
  /** Set when this resourceVersion is in sync with the desired object of {@link baseline}. */
  inSync?: true;
  /**
   * The verdict on this resourceVersion when it was out of sync: the content is dropped once judged either way, so
   * that an object whose write keeps failing costs no more than one in sync. `extras` ({@link extrasHash}) decides
   * it later against the server's additions learnt meanwhile; the desired object with those becomes the baseline then.
   */
  outOfSync?: { desiredHash: string; reason: string; restore: boolean; extras?: string };
  /**
   * What this object was when it was last in sync (the {@link contentHash} of our write's reply, or what a comparison
   * by value proved: lib/sync/verdict.ts), and the desired hash it was in sync with: carried over to later versions
   * of the same object (same uid).
   */
  baseline?: { desiredHash: string; content: string };
}

/** What a deleteItems candidates cache keeps of an object: its identity (carried by the entry itself, no wrapper). */
export interface ExistingObject {
  uid: string;
  resourceVersion?: string;
}

/**
 * The largest object (JSON without managedFields, in characters) whose content a list or watch event leaves in the
 * cache until it is judged. A larger one that is not judged as it arrives (a watch event, an object no single item
 * names) is kept without content and read (one GET) when it is judged, once per resourceVersion: 400 objects of 1 MiB
 * cost 400 GETs, not 400 MiB. Typical synced objects (policies, bindings, quotas) are 1-5 KiB; a CA bundle synced
 * everywhere is the common large one.
 */
export const MAX_KEPT_CONTENT = 64 * 1024;

/**
 * The largest ownerReferences (as JSON) an entry keeps, whether it came from a list, a watch, a write's reply or a
 * GET: an object with more keeps none ({@link CachedObject.referencesUnkept}) and its update reads them again. One
 * reference is about 200 characters; objects owned by a controller have one or two.
 */
export const MAX_KEPT_REFERENCES = 1024;

/** Longest marker values kept; anything longer cannot be ours (hashes are 24 characters, keys 317 at most). */
const MAX_HASH = 64;
const MAX_OWNER = 63 + 1 + 253;
const MAX_MANAGER = 128;
const bounded = (v: unknown, max: number): string | undefined =>
  typeof v !== "string" ? undefined : v.length <= max ? v : `${v.slice(0, max)}...`;

/**
 * espejo's own markers repeat across thousands of objects (one key per SyncConfig, its field manager): one copy
 * each, and a number for each, which a packed entry (packed_object.ts) writes instead of the string. Only those are
 * kept ({@link keepMarker}): anyone can write markers, and another value is its own (bounded) copy, written into the
 * packed entry as it is.
 */
export const markers = new InternTable(10_000);
markers.add(FIELD_MANAGER);
const intern = (v: string | undefined) => (v === undefined ? undefined : markers.intern(v));

/** `cfgKey` is a SyncConfig espejo knows: objects name it by number. */
export const keepMarker = (cfgKey: string): void => markers.add(cfgKey);

/**
 * Keeps what drift detection needs: the markers (bounded), the live ownerReferences and, for an object an item
 * names (`wanted`), its content until it is judged — unless it came from a cache's list or watch (`streamed`, where
 * thousands may wait to be judged) and is larger than {@link MAX_KEPT_CONTENT}. The baseline of `previous` carries over to a later
 * version of the same object.
 */
export function decodeManaged(
  raw: KubeObject,
  previous: CachedObject | undefined,
  wanted = true,
  streamed = false,
  /**
   * Judges the object from its parsed content before any of it is kept, and says whether it decided (the entry
   * then keeps its verdict, not its content): a restart's 100,000 objects are then neither written out as JSON nor
   * parsed back.
   */
  judge?: (entry: CachedObject, content: KubeObject) => boolean,
): CachedObject {
  const { managedFields, ...metadata } = raw.metadata ?? {};
  const uid = metadata.uid ?? "";
  const entry: CachedObject = {
    resourceVersion: metadata.resourceVersion ?? "",
    uid,
    desiredHash: bounded(metadata.annotations?.[HASH_ANNOTATION], MAX_HASH),
    owner: intern(bounded(metadata.annotations?.[OWNER_ANNOTATION], MAX_OWNER)),
    createdBy: intern(bounded(metadata.annotations?.[CREATED_ANNOTATION], MAX_OWNER)),
    manager: intern(bounded(newestManager(managedFields), MAX_MANAGER)),
  };
  if (previous?.baseline && previous.uid === uid) entry.baseline = previous.baseline;
  if (!wanted) {
    entry.contentless = true;
    return entry;
  }
  // The ownerReferences outlive the verdict (espejo's writes keep them), and a tenant can add any number: kept apart
  // from the content, which no comparison reads them from (SERVER_OWNED_METADATA), and only up to a bound.
  const { ownerReferences: refs, ...rest } = metadata;
  const content = { ...raw, metadata: rest };
  const references = Array.isArray(refs) && refs.length > 0 ? JSON.stringify(refs) : undefined;
  if (judge?.(entry, content)) return withReferences(entry, references);
  // A tenant may nest it 10,000 levels deep, past what JSON.stringify takes (lib/kube/json_depth.ts).
  const json = jsonText(content);
  if (streamed && json.length > MAX_KEPT_CONTENT) return unread(withReferences(entry, references));
  entry.json = json;
  return withReferences(entry, references);
}

/** `entry` with the object's ownerReferences (JSON), or marked as having more than are kept. */
function withReferences(entry: CachedObject, references: string | undefined): CachedObject {
  if (references === undefined) return entry;
  if (references.length <= MAX_KEPT_REFERENCES) entry.ownerReferences = references;
  else entry.referencesUnkept = true;
  return entry;
}

/** An entry kept without content for its size: read (one GET) when it is judged. */
function unread(entry: CachedObject): CachedObject {
  entry.contentless = true;
  entry.large = true;
  return entry;
}

function newestManager(entries: unknown): string | undefined {
  if (!Array.isArray(entries)) return undefined;
  let newest: { manager?: unknown; time?: unknown } | undefined;
  for (const e of entries) {
    if (!e || typeof e !== "object" || (e as { subresource?: unknown }).subresource) continue;
    if (!newest || String((e as { time?: unknown }).time ?? "") >= String(newest.time ?? "")) newest = e;
  }
  return typeof newest?.manager === "string" ? newest.manager : undefined;
}

/**
 * Caches of the objects the controller writes or deletes, one per resource, started on first use (a sync that
 * needs one waits for its first list, which is therefore not reported as changes) and stopped when no item names
 * that resource any more:
 * - managed objects: those carrying our label, in the compact form of {@link CachedObject}. Anyone can put the
 *   label on their own objects, so only objects an item names keep content; the others keep their identity;
 * - deletion candidates: metadata only (name, namespace, uid) of every object of a kind named in `deleteItems`,
 *   so that a deleteItem that is already absent costs no request.
 */
import type { KubeClient } from "./kube/client.ts";
import { collectionPath, type ResourceInfo } from "./kube/discovery.ts";
import { Reflector } from "./kube/reflector.ts";
import { compareByValue, contentHash, extrasHash, HASH_ANNOTATION, type Verdict } from "./drift.ts";
import type { KubeObject } from "./objects.ts";

export const MANAGED_LABEL = "sync.appuio.ch/managed-by";
export const MANAGED_LABEL_VALUE = "espejo";
/** The SyncConfig (`namespace/name`) that wrote an object; another SyncConfig must not take it over. */
export const OWNER_ANNOTATION = "sync.appuio.ch/owner";

/**
 * What the cache keeps of one object carrying our label; 20,000 of them must fit in the memory limit with room to
 * spare, and a tenant's junk objects must cost next to nothing. Every string here comes from the object, which a
 * tenant may write: each is bounded in length.
 *
 * The content is needed only until it has been compared once: a verdict stands for one resourceVersion (see
 * lib/drift.ts). Until then it is kept as JSON text, which costs a fraction of a parsed object; objects no item
 * names never keep it.
 */
export interface CachedObject {
  resourceVersion: string;
  uid: string;
  /** {@link HASH_ANNOTATION}: the hash of what we last wrote (a hint: tenants can write it). */
  desiredHash?: string;
  /** {@link OWNER_ANNOTATION} (a hint: only a SyncConfig that has an item for this object can hold it). */
  owner?: string;
  /** The field manager of the newest managedFields entry, for logs about fights (a hint too). */
  manager?: string;
  /** The live ownerReferences, which our writes keep (as the Go espejo does); absent when there are none. */
  ownerReferences?: unknown[];
  /** The object as JSON; undefined once judged, and never kept for an object no item names. */
  json?: string;
  /** Set when the content was not kept because no item named the object: it must be read before it is judged. */
  contentless?: true;
  /** Set when this resourceVersion is in sync with the desired object of {@link baseline}. */
  inSync?: true;
  /**
   * The verdict on this resourceVersion when it was out of sync: the content is dropped once judged either way, so
   * that an object whose write keeps failing costs no more than one in sync. `extras` ({@link extrasHash}) decides
   * it later against the server's additions learnt meanwhile; `content` becomes the baseline then.
   */
  outOfSync?: { desiredHash: string; reason: string; restore: boolean; content: string; extras?: string };
  /**
   * The {@link contentHash} of this object when it was last in sync, and the desired hash it was in sync with:
   * carried over to later versions of the same object (same uid).
   */
  baseline?: { desiredHash: string; content: string };
}

export interface ExistingObject {
  uid: string;
}

export interface CacheEvents {
  /** A managed object changed (someone else may have edited it): its namespace should be checked. */
  onManagedChange?: (namespace: string) => void;
  /** An object of a kind named in deleteItems appeared, changed or went. */
  onCandidateChange?: (namespace: string, name: string) => void;
  onWatchRestart?: (resource: string, reason: string) => void;
  onError?: (resource: string, error: unknown, retryInMs: number) => void;
  /** Whether a syncItem of a SyncConfig selecting `namespace` names this object (default: yes). */
  wants?: (resource: ResourceInfo, namespace: string, name: string) => boolean;
}

const resourceKey = (r: ResourceInfo) => `${r.group}/${r.version}/${r.resource}`;
const namespaceOf = (objectKey: string) => objectKey.slice(0, Math.max(0, objectKey.indexOf("/")));
const nameOf = (objectKey: string) => objectKey.slice(objectKey.indexOf("/") + 1);

interface Running<T> {
  resource: ResourceInfo;
  reflector: Reflector<T>;
  stop: AbortController;
}

export class ResourceCaches {
  readonly #managed = new Map<string, Running<CachedObject>>();
  readonly #existing = new Map<string, Running<ExistingObject>>();
  /** Objects our own write is under way for: the versions that write produced, and the last version seen. */
  readonly #writing = new Map<string, { ours: Set<string>; seen?: string }>();
  /** Objects an item names that someone else deleted or took our label off, until espejo writes them again. */
  readonly #removed = new Set<string>();

  constructor(
    private readonly client: KubeClient,
    private readonly signal: AbortSignal,
    private readonly events: CacheEvents = {},
  ) {}

  /** The cache of our objects of resource `r`, started if needed. Await `.synced` before trusting it. */
  managed(r: ResourceInfo): Reflector<CachedObject> {
    return this.#start(this.#managed, r, (stop) => {
      // The first list is not a change: every sync that needs this cache waits for it (see the class comment).
      const cache: Reflector<CachedObject> = new Reflector<CachedObject>(this.client, {
        path: collectionPath(r),
        labelSelector: `${MANAGED_LABEL}=${MANAGED_LABEL_VALUE}`,
        decode: (raw, previous) => {
          const meta = raw.metadata;
          const wanted = this.events.wants?.(r, meta?.namespace ?? "", meta?.name ?? "") ?? true;
          return decodeManaged(raw, previous, wanted);
        },
        onChange: (type, obj, _old, key) => {
          if (!cache.hasSynced) return;
          const writing = this.#writing.get(`${resourceKey(r)}|${key}`);
          if (writing) writing.seen = obj.resourceVersion;
          // Objects no item names (anyone can label theirs) cause no work, whatever happens to them.
          else if (obj.contentless) return;
          else {
            // Deleted or unlabelled by someone else (our own deletes forget the object first): writing it again is a
            // restore, which backs off in a fight like any other.
            if (type === "deleted") this.#noteRemoved(`${resourceKey(r)}|${key}`);
            this.events.onManagedChange?.(namespaceOf(key));
          }
        },
        onWatchRestart: (reason) => this.events.onWatchRestart?.(r.resource, reason),
        onError: (e, ms) => this.events.onError?.(r.resource, e, ms),
      });
      cache.run(stop);
      return cache;
    });
  }

  /**
   * Our own write of `objectKey` (namespace/name) begins. Its watch echo must not cause another sync of the
   * namespace (a unit that finds nothing to do, and would reset the count of what the last one deleted); a change
   * by someone else meanwhile still must. {@link endWrite} tells them apart by version.
   */
  beginWrite(r: ResourceInfo, objectKey: string): void {
    this.#writing.set(`${resourceKey(r)}|${objectKey}`, { ours: new Set() });
  }

  /** Our write produced this version of the object. */
  ownVersion(r: ResourceInfo, objectKey: string, resourceVersion: string): void {
    this.#writing.get(`${resourceKey(r)}|${objectKey}`)?.ours.add(resourceVersion);
  }

  /** Our write ended: a version seen meanwhile that it did not produce is reported as a change. */
  endWrite(r: ResourceInfo, objectKey: string): void {
    const key = `${resourceKey(r)}|${objectKey}`;
    const writing = this.#writing.get(key);
    this.#writing.delete(key);
    if (writing?.seen !== undefined && !writing.ours.has(writing.seen)) {
      this.events.onManagedChange?.(namespaceOf(objectKey));
    }
  }

  /** Whether someone else deleted `objectKey` (namespace/name) or took our label off since espejo last wrote it. */
  removedByOther(r: ResourceInfo, objectKey: string): boolean {
    return this.#removed.has(`${resourceKey(r)}|${objectKey}`);
  }

  /** espejo wrote `objectKey` again. */
  rewritten(r: ResourceInfo, objectKey: string): void {
    this.#removed.delete(`${resourceKey(r)}|${objectKey}`);
  }

  #noteRemoved(key: string): void {
    this.#removed.delete(key); // re-inserted last: the oldest goes first when full (a namespace of 10,000 went)
    if (this.#removed.size >= MAX_REMOVED) this.#removed.delete(this.#removed.values().next().value!);
    this.#removed.add(key);
  }

  /** The metadata cache of every object of resource `r`, started if needed. */
  existing(r: ResourceInfo): Reflector<ExistingObject> {
    return this.#start(this.#existing, r, (stop) => {
      const cache: Reflector<ExistingObject> = new Reflector<ExistingObject>(this.client, {
        path: collectionPath(r),
        metadataOnly: true,
        decode: (raw) => ({ uid: raw.metadata?.uid ?? "" }),
        onChange: (_t, _obj, _old, key) =>
          cache.hasSynced && this.events.onCandidateChange?.(namespaceOf(key), nameOf(key)),
        onWatchRestart: (reason) => this.events.onWatchRestart?.(r.resource, reason),
        onError: (e, ms) => this.events.onError?.(r.resource, e, ms),
      });
      cache.run(stop);
      return cache;
    });
  }

  #start<T>(caches: Map<string, Running<T>>, r: ResourceInfo, make: (stop: AbortSignal) => Reflector<T>): Reflector<T> {
    const key = resourceKey(r);
    let running = caches.get(key);
    if (!running) {
      const stop = new AbortController();
      running = { resource: r, reflector: make(AbortSignal.any([this.signal, stop.signal])), stop };
      caches.set(key, running);
    }
    return running.reflector;
  }

  /**
   * Stops the caches of resources that no item names any more (a kind removed from every SyncConfig, or one that
   * was never allowed: its list would otherwise be retried forever). A later use starts a fresh cache.
   */
  retain(managed: (r: ResourceInfo) => boolean, existing: (r: ResourceInfo) => boolean): void {
    const prune = <T>(caches: Map<string, Running<T>>, keep: (r: ResourceInfo) => boolean) => {
      for (const [key, running] of caches) {
        if (keep(running.resource)) continue;
        running.stop.abort();
        caches.delete(key);
      }
    };
    prune(this.#managed, managed);
    prune(this.#existing, existing);
  }

  /** Bytes of object content (JSON text) the managed-object caches hold, for tests and the bench. */
  retainedContentBytes(): number {
    let bytes = 0;
    for (const { reflector } of this.#managed.values()) {
      for (const o of reflector.values()) bytes += o.json?.length ?? 0;
    }
    return bytes;
  }

  /** Object counts per cache, for metrics. */
  sizes(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [k, r] of this.#managed) out[`managed:${k}`] = r.reflector.size;
    for (const [k, r] of this.#existing) out[`existing:${k}`] = r.reflector.size;
    return out;
  }
}

/** Removals remembered; a namespace deleted with more objects than this forgets its oldest (no restore follows). */
const MAX_REMOVED = 10_000;

/** Longest marker values kept; anything longer cannot be ours (hashes are 24 characters, keys 317 at most). */
const MAX_HASH = 64;
const MAX_OWNER = 63 + 1 + 253;
const MAX_MANAGER = 128;
const bounded = (v: unknown, max: number): string | undefined =>
  typeof v !== "string" ? undefined : v.length <= max ? v : `${v.slice(0, max)}...`;

/** Owners and managers repeat (one per SyncConfig, a few managers) across thousands of objects: one copy each. */
const owners = new Map<string, string>();
const intern = (owner: string | undefined) => {
  if (owner === undefined) return undefined;
  const known = owners.get(owner);
  if (known !== undefined) return known;
  if (owners.size < 10_000) owners.set(owner, owner);
  return owner;
};

/**
 * Keeps what drift detection needs: the markers (bounded), the live ownerReferences and, for an object an item
 * names (`wanted`), its content until it is judged. The baseline of `previous` carries over to a later version of
 * the same object.
 */
export function decodeManaged(raw: KubeObject, previous: CachedObject | undefined, wanted = true): CachedObject {
  const { managedFields, ...metadata } = raw.metadata ?? {};
  const uid = metadata.uid ?? "";
  const entry: CachedObject = {
    resourceVersion: metadata.resourceVersion ?? "",
    uid,
    desiredHash: bounded(metadata.annotations?.[HASH_ANNOTATION], MAX_HASH),
    owner: intern(bounded(metadata.annotations?.[OWNER_ANNOTATION], MAX_OWNER)),
    manager: intern(bounded(newestManager(managedFields), MAX_MANAGER)),
  };
  if (previous?.baseline && previous.uid === uid) entry.baseline = previous.baseline;
  if (!wanted) {
    entry.contentless = true;
    return entry;
  }
  if (Array.isArray(metadata.ownerReferences) && metadata.ownerReferences.length) {
    entry.ownerReferences = metadata.ownerReferences;
  }
  entry.json = JSON.stringify({ ...raw, metadata });
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

/**
 * Judges a cached object against the desired object of hash `desiredHash` (see lib/drift.ts). The content is
 * parsed only when this version was not judged before; once judged, the verdict replaces it (the baseline when in
 * sync, {@link CachedObject.outOfSync} when not). A contentless entry must be read first (the caller's job): judged
 * as is, it is out of sync.
 */
export function judge(
  desired: KubeObject,
  desiredHash: string,
  cached: CachedObject,
  /** {@link extrasHash} of the reply to our last write of the same item in another namespace, if any. */
  serverAdds?: string,
): Verdict {
  const known = cached.baseline?.desiredHash === desiredHash;
  if (cached.contentless) return { inSync: false, reason: "its content was not read yet", restore: false };
  if (cached.desiredHash !== desiredHash) {
    // A marker mismatch is enough to write; a match proves nothing (anyone can copy the annotation).
    cached.json = undefined;
    return known
      ? { inSync: false, reason: `its ${HASH_ANNOTATION} annotation was changed`, restore: true }
      : { inSync: false, reason: "the SyncConfig's item changed", restore: false };
  }
  if (cached.inSync && known) return { inSync: true };
  const judged = cached.outOfSync;
  if (judged?.desiredHash === desiredHash) return rejudge(cached, judged, serverAdds);
  if (cached.json === undefined) return { inSync: false, reason: "it was not judged yet", restore: false };
  const observed = JSON.parse(cached.json) as KubeObject;
  cached.json = undefined;
  const content = contentHash(observed);
  if (known && content === cached.baseline!.content) return markInSync(cached, cached.baseline!);
  const comparison = compareByValue(desired, observed);
  const restore = known;
  const outOfSync = (reason: string, extras?: string) => {
    cached.outOfSync = { desiredHash, reason, restore, content, extras };
    return rejudge(cached, cached.outOfSync, serverAdds);
  };
  switch (comparison.kind) {
    case "differs":
      return outOfSync(`${comparison.path} differs from the SyncConfig's item`);
    case "extra":
      if (known) return outOfSync(`${comparison.path} was added`);
      return outOfSync(
        `${comparison.path} is not set by the item (a server default or someone's addition: a write settles it)`,
        extrasHash(desired, observed),
      );
    case "equal":
      if (known) return outOfSync("a field the item does not set was changed");
      return markInSync(cached, { desiredHash, content });
  }
}

/**
 * The verdict on a version judged out of sync before. Only fields the item does not set differed (`extras`): in sync
 * once they are exactly what the server added to this item elsewhere; unexplained while that is not known yet.
 */
function rejudge(cached: CachedObject, judged: NonNullable<CachedObject["outOfSync"]>, serverAdds?: string): Verdict {
  if (judged.extras !== undefined && judged.extras === serverAdds) {
    return markInSync(cached, { desiredHash: judged.desiredHash, content: judged.content });
  }
  return {
    inSync: false,
    reason: judged.reason,
    restore: judged.restore,
    ...(judged.extras !== undefined && serverAdds === undefined ? { unexplained: true as const } : {}),
  };
}

/** Records that `written` (the reply of our own write for `desiredHash`) is in sync and becomes the baseline. */
export function acceptWritten(cached: CachedObject, written: KubeObject, desiredHash: string): void {
  markInSync(cached, { desiredHash, content: contentHash(written) });
}

function markInSync(cached: CachedObject, baseline: { desiredHash: string; content: string }): Verdict {
  cached.inSync = true;
  // The entry's own copy of an equal hash string, so that 20,000 objects do not keep two of each.
  if (cached.desiredHash === baseline.desiredHash) baseline.desiredHash = cached.desiredHash;
  cached.baseline = baseline;
  cached.json = undefined;
  cached.outOfSync = undefined;
  return { inSync: true };
}

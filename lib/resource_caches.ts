/**
 * Caches of the objects the controller writes or deletes, one per resource, started on first use (a sync that
 * needs one waits for its first list, which is therefore not reported as changes):
 * - managed objects: only those carrying our label, in the compact form of {@link CachedObject};
 * - deletion candidates: metadata only (name, namespace, uid) of every object of a kind named in `deleteItems`,
 *   so that a deleteItem that is already absent costs no request.
 */
import type { KubeClient } from "./kube/client.ts";
import { collectionPath, type ResourceInfo } from "./kube/discovery.ts";
import { Reflector } from "./kube/reflector.ts";
import { driftOf, foreignFields, HASH_ANNOTATION } from "./drift.ts";
import type { FieldsV1, KubeObject } from "./objects.ts";

export const MANAGED_LABEL = "sync.appuio.ch/managed-by";
export const MANAGED_LABEL_VALUE = "espejo";
/** The SyncConfig (`namespace/name`) that wrote an object; another SyncConfig must not take it over. */
export const OWNER_ANNOTATION = "sync.appuio.ch/owner";

/**
 * What the cache keeps of one of our objects; 20,000 of them must fit in the memory limit with room to spare.
 *
 * The content is needed only until it has been compared once. {@link driftOf} is a pure function of the desired
 * object, which the desired hash identifies, and of the observed object, which its resourceVersion identifies. So
 * once a comparison found no drift, the content is dropped and the verdict kept; a new resourceVersion (any change)
 * comes with new content. Until then the content is kept as JSON text, which costs a fraction of a parsed object.
 */
export interface CachedObject {
  resourceVersion: string;
  /** {@link HASH_ANNOTATION}: the hash of what we last wrote. */
  desiredHash?: string;
  /** {@link OWNER_ANNOTATION} */
  owner?: string;
  /** The object without `managedFields`, as JSON; undefined once {@link inSync} is known. */
  json?: string;
  /** The field sets of other managers (usually none), from `managedFields`. */
  foreign: FieldsV1[];
  /** Set when this resourceVersion was compared with the desired object of `desiredHash` and found equal. */
  inSync?: true;
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
}

const resourceKey = (r: ResourceInfo) => `${r.group}/${r.version}/${r.resource}`;
const namespaceOf = (objectKey: string) => objectKey.slice(0, Math.max(0, objectKey.indexOf("/")));

export class ResourceCaches {
  readonly #managed = new Map<string, Reflector<CachedObject>>();
  readonly #existing = new Map<string, Reflector<ExistingObject>>();

  constructor(
    private readonly client: KubeClient,
    private readonly signal: AbortSignal,
    private readonly events: CacheEvents = {},
  ) {}

  /** The cache of our objects of resource `r`, started if needed. Await `.synced` before trusting it. */
  managed(r: ResourceInfo): Reflector<CachedObject> {
    const key = resourceKey(r);
    let refl = this.#managed.get(key);
    if (!refl) {
      // The first list is not a change: every sync that needs this cache waits for it (see the class comment).
      const cache: Reflector<CachedObject> = new Reflector<CachedObject>(this.client, {
        path: collectionPath(r),
        labelSelector: `${MANAGED_LABEL}=${MANAGED_LABEL_VALUE}`,
        decode: decodeManaged,
        onChange: (_t, _obj, _old, key) => cache.hasSynced && this.events.onManagedChange?.(namespaceOf(key)),
        onWatchRestart: (reason) => this.events.onWatchRestart?.(r.resource, reason),
        onError: (e, ms) => this.events.onError?.(r.resource, e, ms),
      });
      refl = cache;
      this.#managed.set(key, refl);
      refl.run(this.signal);
    }
    return refl;
  }

  /** The metadata cache of every object of resource `r`, started if needed. */
  existing(r: ResourceInfo): Reflector<ExistingObject> {
    const key = resourceKey(r);
    let refl = this.#existing.get(key);
    if (!refl) {
      const cache: Reflector<ExistingObject> = new Reflector<ExistingObject>(this.client, {
        path: collectionPath(r),
        metadataOnly: true,
        decode: (raw) => ({ uid: raw.metadata?.uid ?? "" }),
        onChange: (_t, _obj, _old, key) =>
          cache.hasSynced && this.events.onCandidateChange?.(namespaceOf(key), key.slice(key.indexOf("/") + 1)),
        onWatchRestart: (reason) => this.events.onWatchRestart?.(r.resource, reason),
        onError: (e, ms) => this.events.onError?.(r.resource, e, ms),
      });
      refl = cache;
      this.#existing.set(key, refl);
      refl.run(this.signal);
    }
    return refl;
  }

  /** Object counts per cache, for metrics. */
  sizes(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [k, r] of this.#managed) out[`managed:${k}`] = r.size;
    for (const [k, r] of this.#existing) out[`existing:${k}`] = r.size;
    return out;
  }
}

const NO_FOREIGN: FieldsV1[] = [];
/** Owners repeat (one per SyncConfig) across thousands of objects: keep one copy of each. */
const owners = new Map<string, string>();
const intern = (owner: string | undefined) => {
  if (owner === undefined) return undefined;
  const known = owners.get(owner);
  if (known !== undefined) return known;
  if (owners.size < 10_000) owners.set(owner, owner);
  return owner;
};

/** Keeps what drift detection needs; managedFields is reduced to the foreign managers' field sets. */
export function decodeManaged(raw: KubeObject): CachedObject {
  const foreign = foreignFields(raw.metadata?.managedFields);
  const { managedFields: _, ...metadata } = raw.metadata ?? {};
  return {
    resourceVersion: metadata.resourceVersion ?? "",
    desiredHash: metadata.annotations?.[HASH_ANNOTATION],
    owner: intern(metadata.annotations?.[OWNER_ANNOTATION]),
    json: JSON.stringify({ ...raw, metadata }),
    foreign: foreign.length ? foreign : NO_FOREIGN,
  };
}

/**
 * {@link driftOf} for a cached object. The content is parsed only when the desired hash matches and this version
 * was not compared before; when it is in sync, the verdict replaces the content (see {@link CachedObject}).
 */
export function driftOfCached(desired: KubeObject, desiredHash: string, cached: CachedObject): string | undefined {
  if (cached.desiredHash !== desiredHash) return "desired state changed";
  if (cached.inSync) return undefined;
  const drift = driftOf(desired, desiredHash, { object: JSON.parse(cached.json!), foreign: cached.foreign });
  if (drift === undefined) {
    cached.inSync = true;
    cached.json = undefined;
  }
  return drift;
}

/**
 * Caches of the objects the controller writes or deletes, one per resource, started on first use or ahead of it (a
 * replica that stands by fills them before it leads; a sync that needs one waits for its first list, which is
 * therefore not reported as changes) and stopped when no item names that resource any more:
 * - managed objects: those carrying our label, in the compact form of {@link CachedObject}. Anyone can put the
 *   label on their own objects, so only objects an item names keep content; the others keep their identity;
 * - deletion candidates: metadata only (name, namespace, uid) of every object of a kind named in `deleteItems`,
 *   so that a deleteItem that is already absent costs no request.
 */
import type { KubeClient } from "../kube/client.ts";
import type { KubeObject } from "../kube/objects.ts";
import { collectionPath, type ResourceInfo, resourceKey } from "../kube/discovery.ts";
import { Reflector } from "../kube/reflector.ts";
import { CreatedIndex } from "./created_index.ts";
import { OwnWrites } from "./own_writes.ts";
import { judgedOnArrival } from "./judged_on_arrival.ts";
import { packedObjects } from "./packed_object.ts";
import type { PruneCandidate } from "./prune_decisions.ts";
export { cacheProblem, ready } from "./cache_ready.ts";
import { type CachedObject, decodeManaged, type ExistingObject } from "./cached_object.ts";
import { MANAGED_LABEL, MANAGED_LABEL_VALUE } from "../model/markers.ts";

export interface CacheEvents {
  /** A managed object changed (someone else may have edited it): its namespace should be checked. */
  onManagedChange?: (namespace: string) => void;
  /** An object of a kind named in deleteItems appeared, changed or went. */
  onCandidateChange?: (namespace: string, name: string) => void;
  onWatchRestart?: (resource: string, reason: string) => void;
  onError?: (resource: string, error: unknown, retryInMs: number) => void;
  /** Whether a syncItem of a SyncConfig selecting `namespace` names this object (default: yes). */
  wants?: (resource: ResourceInfo, namespace: string, name: string) => boolean;
  /** Whether SyncConfig `cfgKey` prunes: only then are the objects it created indexed (default: yes). */
  prunes?: (cfgKey: string) => boolean;
  /**
   * Judges an object read from a list or watch at once from its parsed `content` (its verdict recorded in `entry`),
   * so that its content is not kept until a unit gets to it; says whether it did. One it does not judge keeps its
   * content.
   */
  judge?: (
    resource: ResourceInfo,
    entry: CachedObject,
    namespace: string,
    name: string,
    content: KubeObject,
  ) => boolean;
  /**
   * Whether watch events are judged as they arrive too, not only an initial state (judged_on_arrival.ts): true on a
   * replica that does not lead, where no unit comes to merge a burst of changes into one judgement, and content kept
   * until it leads would grow with every change.
   */
  judgeEvents?: () => boolean;
}

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
  /** espejo's own writes under way, and what someone else removed (see own_writes.ts). */
  readonly #own = new OwnWrites();
  /** Objects that claim to be created by a SyncConfig: the candidates of pruning, checked when used. */
  readonly #created = new CreatedIndex();

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
        packing: packedObjects,
        decode: (raw, previous, reply, initial) => {
          const meta = raw.metadata;
          const namespace = meta?.namespace ?? "", name = meta?.name ?? "";
          const wanted = this.events.wants?.(r, namespace, name) ?? true;
          const writing = this.#own.writing(`${resourceKey(r)}|${meta?.namespace}/${meta?.name}`);
          const judge = this.events.judge;
          // A reply (espejo's write, or its read of a large object) is judged at once: its content is kept.
          const entry = decodeManaged(
            raw,
            previous,
            wanted,
            reply !== true,
            judge && (judgedOnArrival(initial === true, writing) || (!writing && this.events.judgeEvents?.() === true))
              ? (entry, content) => judge(r, entry, namespace, name, content)
              : undefined,
          );
          if (entry.createdBy && entry.createdBy === entry.owner && (this.events.prunes?.(entry.createdBy) ?? true)) {
            this.#created.add(meta?.namespace ?? "", entry.createdBy, resourceKey(r), meta?.name ?? "");
          }
          return entry;
        },
        onChange: (type, obj, _old, key) => {
          if (!cache.hasSynced) return;
          if (this.#own.arrived(`${resourceKey(r)}|${key}`, obj.resourceVersion)) return; // told apart at its end
          // Objects no item names (anyone can label theirs) cause no work, whatever happens to them.
          if (obj.contentless && !obj.large) return;
          // Deleted or unlabelled by someone else (our own deletes are under way or forgotten already).
          if (type === "deleted") this.#own.removed(`${resourceKey(r)}|${key}`);
          this.events.onManagedChange?.(namespaceOf(key));
        },
        onWatchRestart: (reason) => this.events.onWatchRestart?.(r.resource, reason),
        onError: (e, ms) => this.events.onError?.(r.resource, e, ms),
      });
      cache.run(stop);
      return cache;
    });
  }

  /** Our own write or delete of `objectKey` (namespace/name) begins (see own_writes.ts). */
  beginWrite(r: ResourceInfo, objectKey: string): void {
    this.#own.begin(`${resourceKey(r)}|${objectKey}`);
  }

  /** Our write produced this version of the object. */
  ownVersion(r: ResourceInfo, objectKey: string, resourceVersion: string): void {
    this.#own.produced(`${resourceKey(r)}|${objectKey}`, resourceVersion);
  }

  /** Our write ended: a version seen meanwhile that it did not produce is reported as a change. */
  endWrite(r: ResourceInfo, objectKey: string): void {
    if (this.#own.end(`${resourceKey(r)}|${objectKey}`)) this.events.onManagedChange?.(namespaceOf(objectKey));
  }

  /** Whether someone else deleted `objectKey` (namespace/name) or took our label off since espejo last wrote it. */
  removedByOther(r: ResourceInfo, objectKey: string): boolean {
    return this.#own.removedByOther(`${resourceKey(r)}|${objectKey}`);
  }

  /** espejo wrote `objectKey` again. */
  rewritten(r: ResourceInfo, objectKey: string): void {
    this.#own.rewritten(`${resourceKey(r)}|${objectKey}`);
  }

  /**
   * What each SyncConfig created in `namespace` (both markers naming it), checked against the caches now. A
   * SyncConfig with an entry in a cache that has not finished its first list is left out (nothing of it may be
   * pruned before), and `listing` says so; an entry whose cache went is dropped.
   */
  createdIn(namespace: string): { created: Map<string, PruneCandidate[]>; listing: boolean } {
    const created = new Map<string, PruneCandidate[]>();
    const waiting = new Set<string>();
    for (const entry of [...this.#created.in(namespace)]) {
      const { cfgKey, name } = entry;
      const running = this.#managed.get(entry.resourceKey);
      if (running && !running.reflector.hasSynced) {
        waiting.add(cfgKey);
        continue;
      }
      const o = running?.reflector.get(`${namespace}/${name}`);
      if (!running || !o || o.createdBy !== cfgKey || o.owner !== cfgKey) {
        this.#created.drop(namespace, entry);
        continue;
      }
      const candidates = created.get(cfgKey) ?? [];
      candidates.push({ resource: running.resource, namespace, name, uid: o.uid });
      created.set(cfgKey, candidates);
    }
    for (const cfgKey of waiting) created.delete(cfgKey);
    return { created, listing: waiting.size > 0 };
  }

  /**
   * Our delete (begun with {@link beginWrite}) ended. `deleted`: the object is gone or going (a finalizer may hold
   * it), and forgotten until the watch brings it again; its removal is no one else's. Else like {@link endWrite}.
   */
  endDelete(r: ResourceInfo, objectKey: string, deleted: boolean): void {
    const changedByOther = this.#own.endDelete(`${resourceKey(r)}|${objectKey}`, deleted);
    if (changedByOther) this.events.onManagedChange?.(namespaceOf(objectKey));
    if (!deleted) return;
    this.#managed.get(resourceKey(r))?.reflector.forget(objectKey); // a stopped cache stays so
  }

  /**
   * Pruning was turned on for `cfgKey`: the objects it created, already in the caches, are indexed now (from then on
   * as they come). One walk over the cached objects, once per switch.
   */
  indexCreatedBy(cfgKey: string): void {
    for (const [rk, { reflector }] of this.#managed) {
      for (const [objectKey, o] of reflector.entries()) {
        if (o.createdBy === cfgKey && o.owner === cfgKey) {
          this.#created.add(namespaceOf(objectKey), cfgKey, rk, nameOf(objectKey));
        }
      }
    }
  }

  /** The SyncConfigs that may have created objects in `namespace` (unchecked: see {@link createdIn}). */
  creatorsIn(namespace: string): string[] {
    return this.#created.creatorsIn(namespace);
  }

  /** The namespaces where `cfgKey` may have created objects (unchecked: see {@link createdIn}). */
  namespacesCreatedBy(cfgKey: string): string[] {
    return this.#created.namespacesOf(cfgKey);
  }

  /** Whether an object of `r` may have been created by a SyncConfig for which `counts` holds. */
  hasCreated(r: ResourceInfo, counts: (cfgKey: string) => boolean): boolean {
    return this.#created.hasResource(resourceKey(r), counts);
  }

  forgetNamespace(namespace: string): void {
    this.#created.forgetNamespace(namespace);
  }

  /** SyncConfig `cfgKey` went, or no longer prunes: what it created is not indexed any more. */
  forgetConfig(cfgKey: string): void {
    this.#created.forgetConfig(cfgKey);
  }

  /** The metadata cache of every object of resource `r`, started if needed. */
  existing(r: ResourceInfo): Reflector<ExistingObject> {
    return this.#start(this.#existing, r, (stop) => {
      const cache: Reflector<ExistingObject> = new Reflector<ExistingObject>(this.client, {
        path: collectionPath(r),
        metadataOnly: true,
        // Nothing but the identity, which the store keeps anyway: packed at once, as the version and uid alone.
        packing: { pack: () => "", unpack: (_, resourceVersion, uid) => ({ uid, resourceVersion }) },
        decode: (raw) => ({ uid: raw.metadata?.uid ?? "", resourceVersion: raw.metadata?.resourceVersion ?? "" }),
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

/**
 * Performs the items of one SyncConfig in one namespace: reads observed state from the caches, decides with
 * {@link driftOf}, and writes only what differs. Each item succeeds or fails on its own; a failure carries a
 * message naming the SyncConfig, the item, the namespace and the API server's reason.
 */
import type { KubeClient } from "./kube/client.ts";
import type { Reflector } from "./kube/reflector.ts";
import { Discovery, objectPath, type ResourceInfo, UnknownKindError } from "./kube/discovery.ts";
import { ApiError, isAlreadyExists, isConflict, isInvalid, isNotFound } from "./kube/errors.ts";
import { FIELD_MANAGER, HASH_ANNOTATION } from "./drift.ts";
import { encodeBase64, hashOf, type KubeObject } from "./objects.ts";
import {
  type CachedObject,
  driftOfCached,
  MANAGED_LABEL,
  MANAGED_LABEL_VALUE,
  OWNER_ANNOTATION,
  type ResourceCaches,
} from "./resource_caches.ts";
import type { CompiledSyncConfig, DeleteItemSpec, SyncItemSpec } from "./syncconfig.ts";
import { renderTemplate } from "./template.ts";

export { OWNER_ANNOTATION };

export type ItemAction = "create" | "update" | "recreate" | "delete" | "none";

export type ItemResult =
  | { state: "synced"; action: ItemAction; reason?: string }
  | { state: "deleted" }
  | { state: "absent" }
  | { state: "failed"; message: string };

export interface ItemRef {
  cfg: CompiledSyncConfig;
  namespace: string;
}

/** How long a sync waits for a new cache to fill before it reports the item as failed (and retries later). */
const CACHE_WAIT_MS = 30_000;
const MAX_BACKOFF_ENTRIES = 100_000;

function backoffDelayMs(attempts: number): number {
  return Math.min(300_000, 1000 * 2 ** Math.max(0, attempts - 1));
}

export class Executor {
  constructor(
    private readonly client: KubeClient,
    private readonly discovery: Discovery,
    private readonly caches: ResourceCaches,
    private readonly onWrite: (action: ItemAction) => void = () => {},
    /** Whether a SyncConfig exists (undefined: cannot tell, e.g. outside WATCH_NAMESPACE). */
    private readonly ownerExists: (key: string) => boolean | undefined = () => undefined,
  ) {}

  /**
   * Writes that failed, by SyncConfig, item and namespace: the same write (same desired hash) is not sent again
   * before its backoff (1 s, doubling, at most 5 min) has passed, so a rejected item costs one request per backoff
   * step instead of one per pass.
   */
  readonly #backoff = new Map<string, { hash: string; attempts: number; until: number; result: ItemResult }>();

  #backedOff(key: string, hash: string): ItemResult | undefined {
    const b = this.#backoff.get(key);
    return b && b.hash === hash && Date.now() < b.until ? b.result : undefined;
  }

  #remember(key: string, hash: string, result: ItemResult): ItemResult {
    if (result.state !== "failed") {
      this.#backoff.delete(key);
      return result;
    }
    const attempts = (this.#backoff.get(key)?.hash === hash ? this.#backoff.get(key)!.attempts : 0) + 1;
    if (this.#backoff.size >= MAX_BACKOFF_ENTRIES) this.#backoff.delete(this.#backoff.keys().next().value!);
    this.#backoff.set(key, { hash, attempts, until: Date.now() + backoffDelayMs(attempts), result });
    return result;
  }

  /** Builds the object `item` asks for in `namespace`, with our marker label and annotations. */
  static async desired(
    cfg: CompiledSyncConfig,
    item: SyncItemSpec,
    namespace: string,
  ): Promise<{ object: KubeObject; hash: string }> {
    const object = renderTemplate(item.template, namespace);
    const metadata = object.metadata ?? {};
    metadata.namespace = namespace;
    metadata.labels = { ...(metadata.labels ?? {}), [MANAGED_LABEL]: MANAGED_LABEL_VALUE };
    metadata.annotations = { ...(metadata.annotations ?? {}), [OWNER_ANNOTATION]: cfg.key };
    object.metadata = metadata;
    normalizeWriteOnlyFields(object);
    const hash = await hashOf(object);
    metadata.annotations[HASH_ANNOTATION] = hash;
    return { object, hash };
  }

  async syncItem(ref: ItemRef, item: SyncItemSpec): Promise<ItemResult> {
    const what = `.spec.syncItems[${item.index}]` +
      (item.kind && item.name ? ` (${item.kind} ${renderTemplate(item.name, ref.namespace)})` : "");
    const fail = (reason: string): ItemResult => ({
      state: "failed",
      message: `SyncConfig ${ref.cfg.key}: ${what} in namespace ${ref.namespace}: ${reason}`,
    });
    if (item.problem) {
      return { state: "failed", message: `SyncConfig ${ref.cfg.key}: ${item.problem}` };
    }
    let resource: ResourceInfo;
    try {
      resource = await this.#resolve(item.apiVersion, item.kind);
    } catch (e) {
      return fail(reasonOf(e));
    }
    const { object: desired, hash } = await Executor.desired(ref.cfg, item, ref.namespace);
    const name = desired.metadata!.name!;
    const cache = this.caches.managed(resource);
    if (!(await ready(cache))) {
      return fail(cacheProblem(resource, cache.lastError));
    }
    const observed = cache.get(`${ref.namespace}/${name}`);
    if (observed && this.#ownedByOther(observed.owner, ref)) {
      return fail(
        `the object is already managed by SyncConfig ${observed.owner}; two SyncConfigs cannot write the same object`,
      );
    }
    const backoffKey = `${ref.cfg.key}|s${item.index}|${ref.namespace}`;
    const drift = observed && driftOfCached(desired, hash, observed);
    if (observed && !drift) {
      this.#backoff.delete(backoffKey);
      return { state: "synced", action: "none" };
    }
    // A new generation (e.g. forceRecreate switched on) may succeed where the old one failed: no waiting then.
    const attempt = `${ref.cfg.generation}:${hash}`;
    const waiting = this.#backedOff(backoffKey, attempt);
    if (waiting) return waiting;
    return this.#remember(backoffKey, attempt, await this.#writeItem(ref, resource, desired, observed, drift, fail));
  }

  #ownedByOther(owner: string | undefined, ref: ItemRef): boolean {
    // An owner that is known to be gone (deleted SyncConfig) no longer holds the object: it can be adopted.
    return !!owner && owner !== ref.cfg.key && this.ownerExists(owner) !== false;
  }

  async #writeItem(
    ref: ItemRef,
    resource: ResourceInfo,
    desired: KubeObject,
    observed: CachedObject | undefined,
    drift: string | undefined,
    fail: (reason: string) => ItemResult,
  ): Promise<ItemResult> {
    const name = desired.metadata!.name!;
    const cache = this.caches.managed(resource);
    const path = objectPath(resource, ref.namespace, name);
    try {
      if (!observed) {
        try {
          const created = await this.#write(
            "POST",
            objectPath(resource, ref.namespace, "").replace(/\/$/, ""),
            desired,
          );
          storeWritten(cache, created, desired);
          this.onWrite("create");
          return { state: "synced", action: "create" };
        } catch (e) {
          if (!isAlreadyExists(e)) throw e;
          // Exists without our label (created by hand or by the Go espejo): adopt it with an update.
        }
        const current = await this.client.request<KubeObject>({ method: "GET", path });
        const currentOwner = current.metadata?.annotations?.[OWNER_ANNOTATION];
        if (this.#ownedByOther(currentOwner, ref)) {
          return fail(
            `the object is already managed by SyncConfig ${currentOwner}; two SyncConfigs cannot write the same object`,
          );
        }
        return await this.#update(path, desired, current.metadata?.resourceVersion, ref, cache);
      }
      return await this.#update(path, desired, observed.resourceVersion, ref, cache, drift);
    } catch (e) {
      return fail(reasonOf(e));
    }
  }

  async #update(
    path: string,
    desired: KubeObject,
    resourceVersion: string | undefined,
    ref: ItemRef,
    cache: ReturnType<ResourceCaches["managed"]>,
    reason?: string,
  ): Promise<ItemResult> {
    const body = { ...desired, metadata: { ...desired.metadata, resourceVersion } };
    try {
      const updated = await this.#write("PUT", path, body);
      storeWritten(cache, updated, desired);
      this.onWrite("update");
      return { state: "synced", action: "update", reason };
    } catch (e) {
      if (isConflict(e)) {
        // Our cached copy was stale: read the current version once and try again.
        const current = await this.client.request<KubeObject>({ method: "GET", path });
        const updated = await this.#write("PUT", path, {
          ...desired,
          metadata: { ...desired.metadata, resourceVersion: current.metadata?.resourceVersion },
        });
        storeWritten(cache, updated, desired);
        this.onWrite("update");
        return { state: "synced", action: "update", reason };
      }
      if (isInvalid(e) && ref.cfg.forceRecreate) {
        await this.client.request({
          method: "DELETE",
          path,
          body: { apiVersion: "v1", kind: "DeleteOptions", propagationPolicy: "Background" },
        }).catch((err) => {
          if (!isNotFound(err)) throw err;
        });
        cache.forget(`${ref.namespace}/${desired.metadata!.name}`);
        const created = await this.#createWhenGone(path.slice(0, path.lastIndexOf("/")), desired);
        storeWritten(cache, created, desired);
        this.onWrite("recreate");
        return {
          state: "synced",
          action: "recreate",
          reason: `update rejected (${e instanceof Error ? e.message : e})`,
        };
      }
      throw e;
    }
  }

  /** Creates after a delete; while the old object is still being finalized the create says AlreadyExists. */
  async #createWhenGone(collection: string, desired: KubeObject): Promise<KubeObject> {
    const deadline = Date.now() + 10_000;
    for (let wait = 50;; wait = Math.min(wait * 2, 1000)) {
      try {
        return await this.#write("POST", collection, desired);
      } catch (e) {
        if (!isAlreadyExists(e) || Date.now() > deadline) throw e;
        await new Promise((r) => setTimeout(r, wait));
      }
    }
  }

  async deleteItem(ref: ItemRef, item: DeleteItemSpec): Promise<ItemResult> {
    const name = renderTemplate(item.name, ref.namespace);
    const fail = (reason: string): ItemResult => ({
      state: "failed",
      message:
        `SyncConfig ${ref.cfg.key}: .spec.deleteItems[${item.index}] (${item.kind} ${name}) in namespace ${ref.namespace}: ${reason}`,
    });
    if (item.problem) {
      return { state: "failed", message: `SyncConfig ${ref.cfg.key}: ${item.problem}` };
    }
    let resource: ResourceInfo;
    try {
      resource = await this.#resolve(item.apiVersion, item.kind);
    } catch (e) {
      return fail(reasonOf(e));
    }
    const cache = this.caches.existing(resource);
    if (!(await ready(cache))) {
      return fail(cacheProblem(resource, cache.lastError));
    }
    const key = `${ref.namespace}/${name}`;
    const existing = cache.get(key);
    if (!existing) return { state: "absent" };
    const backoffKey = `${ref.cfg.key}|d${item.index}|${ref.namespace}`;
    const attempt = `${ref.cfg.generation}:${existing.uid}`;
    const waiting = this.#backedOff(backoffKey, attempt);
    if (waiting) return waiting;
    return this.#remember(backoffKey, attempt, await this.#delete(resource, ref, name, existing.uid, fail));
  }

  async #delete(
    resource: ResourceInfo,
    ref: ItemRef,
    name: string,
    uid: string,
    fail: (reason: string) => ItemResult,
  ): Promise<ItemResult> {
    const key = `${ref.namespace}/${name}`;
    const cache = this.caches.existing(resource);
    try {
      await this.client.request({
        method: "DELETE",
        path: objectPath(resource, ref.namespace, name),
        body: {
          apiVersion: "v1",
          kind: "DeleteOptions",
          propagationPolicy: "Background",
          preconditions: { uid },
        },
      });
      cache.forget(key);
      this.onWrite("delete");
      return { state: "deleted" };
    } catch (e) {
      if (isNotFound(e)) {
        cache.forget(key);
        return { state: "absent" };
      }
      if (isConflict(e)) return { state: "absent" }; // uid precondition: a different object now has that name
      return fail(reasonOf(e));
    }
  }

  async #resolve(apiVersion: string, kind: string): Promise<ResourceInfo> {
    const r = await this.discovery.resolve(apiVersion, kind);
    if (!r.namespaced) {
      throw new UnknownKindError(`${kind} (${apiVersion}) is cluster-scoped; only namespaced objects are synced`);
    }
    return r;
  }

  #write(method: "POST" | "PUT", path: string, body: KubeObject): Promise<KubeObject> {
    return this.client.request<KubeObject>({ method, path, body, query: { fieldManager: FIELD_MANAGER } });
  }
}

/**
 * Puts the reply of our write into the cache and compares it with what was written at once: the watch event of our
 * own write carries the same version and is not reported again, so without this the reply's content would stay in
 * memory until the next full comparison (see CachedObject).
 */
function storeWritten(cache: Reflector<CachedObject>, written: KubeObject, desired: KubeObject): void {
  cache.upsert(written);
  const hash = desired.metadata?.annotations?.[HASH_ANNOTATION];
  const stored = cache.get(`${written.metadata?.namespace}/${written.metadata?.name}`);
  if (hash && stored) driftOfCached(desired, hash, stored);
}

function reasonOf(e: unknown): string {
  if (e instanceof ApiError) {
    const reason = e.reason !== "Unknown" ? `${e.reason}: ` : "";
    return `the API server refused it (${e.code} ${reason}${e.message})`;
  }
  return e instanceof Error ? e.message : String(e);
}

function cacheProblem(resource: ResourceInfo, e: unknown): string {
  return e
    ? `cannot list and watch ${resource.resource}: ${reasonOf(e)}`
    : `the cache of ${resource.resource} is not filled yet`;
}

/** Waits for a cache's first list; gives up early once listing has failed (e.g. 403), to report it at once. */
async function ready(cache: { hasSynced: boolean; lastError: unknown; synced: Promise<void> }): Promise<boolean> {
  const deadline = Date.now() + CACHE_WAIT_MS;
  while (!cache.hasSynced) {
    if (cache.lastError || Date.now() > deadline) return false;
    await Promise.race([cache.synced, new Promise((r) => setTimeout(r, 50))]);
  }
  return true;
}

/**
 * The API server turns a Secret's write-only `stringData` into base64 `data` and never returns it; doing the same
 * here keeps the desired object comparable with what is stored (otherwise every sync would see drift).
 */
export function normalizeWriteOnlyFields(object: KubeObject): void {
  if (object.apiVersion !== "v1" || object.kind !== "Secret" || !object.stringData) return;
  const data = { ...(object.data as Record<string, string> | undefined) };
  for (const [k, v] of Object.entries(object.stringData as Record<string, unknown>)) {
    data[k] = encodeBase64(String(v));
  }
  object.data = data;
  delete object.stringData;
}

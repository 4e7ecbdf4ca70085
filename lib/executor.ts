/**
 * Performs the items of one SyncConfig in one namespace: reads observed state from the caches, judges it by value
 * (lib/drift.ts, {@link judge}), and writes only what differs. Each item succeeds or fails on its own; a failure
 * carries a message naming the SyncConfig, the item, the namespace and the API server's reason (with the values
 * it quotes redacted: status and Events are readable by anyone who can read SyncConfigs; the log has them whole).
 */
import { getLogger } from "@logtape/logtape";
import type { KubeClient } from "./kube/client.ts";
import type { Reflector } from "./kube/reflector.ts";
import { Discovery, objectPath, type ResourceInfo, UnknownKindError } from "./kube/discovery.ts";
import { ApiError, isAlreadyExists, isConflict, isInvalid, isNotFound } from "./kube/errors.ts";
import { extrasHash, FIELD_MANAGER, HASH_ANNOTATION, type Verdict } from "./drift.ts";
import { FightBook } from "./fights.ts";
import { encodeBase64, hashOf, type KubeObject } from "./objects.ts";
import { redactValues } from "./redact.ts";
import {
  acceptWritten,
  type CachedObject,
  judge,
  MANAGED_LABEL,
  MANAGED_LABEL_VALUE,
  OWNER_ANNOTATION,
  type ResourceCaches,
} from "./resource_caches.ts";
import type { CompiledSyncConfig, DeleteItemSpec, SyncItemSpec } from "./syncconfig.ts";
import { renderTemplate } from "./template.ts";

export { OWNER_ANNOTATION };

const log = getLogger(["espejo", "executor"]);

export type ItemAction = "create" | "update" | "recreate" | "delete" | "none";

export type ItemResult =
  /** `retryInMs`: a restore held back because of a fight; the namespace must be synced again after it. */
  | { state: "synced"; action: ItemAction; reason?: string; retryInMs?: number }
  | { state: "deleted" }
  | { state: "absent" }
  /** `message` goes into status and Events (values redacted), `detail` into the log. */
  | { state: "failed"; message: string; detail?: string };

export interface ItemRef {
  cfg: CompiledSyncConfig;
  namespace: string;
}

export interface ExecutorHooks {
  onWrite?: (action: ItemAction) => void;
  /**
   * Whether SyncConfig `owner` (the owner annotation of an object, which anyone can write) has an item for this
   * object in this namespace and so holds it. Default: no SyncConfig but the writer's own does.
   */
  claims?: (owner: string, resource: ResourceInfo, namespace: string, name: string) => boolean;
  /** A restore of an object that was restored shortly before (a fight) was written. */
  onFight?: (cfgKey: string) => void;
  /** The longest wait between two restores of one object in a fight; the reconcile interval. Default 10 min. */
  maxFightDelayMs?: number;
}

/** How long a sync waits for a new cache to fill before it reports the item as failed (and retries later). */
const CACHE_WAIT_MS = 30_000;
const MAX_BACKOFF_ENTRIES = 100_000;

function backoffDelayMs(attempts: number): number {
  return Math.min(300_000, 1000 * 2 ** Math.max(0, attempts - 1));
}

type Fail = (e: unknown) => ItemResult;

/** An item being written: `itemKey` names the SyncConfig generation and item, across namespaces. */
type WriteRef = ItemRef & { itemKey: string; resource: ResourceInfo };

export class Executor {
  readonly #fights: FightBook;
  /** By item (SyncConfig, generation, index): what the server added to our last write of it (lib/drift.ts). */
  readonly #serverAdds = new Map<string, string>();
  /** Items whose first unexplained object is being written (see syncItem). */
  readonly #learning = new Map<string, Promise<void>>();

  constructor(
    private readonly client: KubeClient,
    private readonly discovery: Discovery,
    private readonly caches: ResourceCaches,
    private readonly hooks: ExecutorHooks = {},
  ) {
    this.#fights = new FightBook(hooks.maxFightDelayMs ?? 600_000);
  }

  /**
   * Writes that failed, by SyncConfig, item and namespace: the same write (same desired hash) is not sent again
   * before its backoff (1 s, doubling, at most 5 min) has passed, so a rejected item costs one request per backoff
   * step instead of one per pass.
   */
  readonly #backoff = new Map<string, { hash: string; attempts: number; until: number; result: ItemResult }>();

  #backedOff(key: string, hash: string): ItemResult | undefined {
    const b = this.#backoff.get(key);
    return b && b.hash === hash && performance.now() < b.until ? b.result : undefined;
  }

  #remember(key: string, hash: string, result: ItemResult): ItemResult {
    if (result.state !== "failed") {
      this.#backoff.delete(key);
      return result;
    }
    const attempts = (this.#backoff.get(key)?.hash === hash ? this.#backoff.get(key)!.attempts : 0) + 1;
    if (this.#backoff.size >= MAX_BACKOFF_ENTRIES) this.#backoff.delete(this.#backoff.keys().next().value!);
    this.#backoff.set(key, { hash, attempts, until: performance.now() + backoffDelayMs(attempts), result });
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
    // Never the item's: the live object's are kept (a wrong one would let the garbage collector delete it).
    delete metadata.ownerReferences;
    object.metadata = metadata;
    normalizeWriteOnlyFields(object);
    const hash = await hashOf(object);
    metadata.annotations[HASH_ANNOTATION] = hash;
    return { object, hash };
  }

  async syncItem(ref: ItemRef, item: SyncItemSpec): Promise<ItemResult> {
    const what = `.spec.syncItems[${item.index}]` +
      (item.kind && item.name ? ` (${item.kind} ${renderTemplate(item.name, ref.namespace)})` : "");
    const fail = failure(`SyncConfig ${ref.cfg.key}: ${what} in namespace ${ref.namespace}`);
    if (item.problem) {
      return { state: "failed", message: `SyncConfig ${ref.cfg.key}: ${item.problem}` };
    }
    let resource: ResourceInfo;
    try {
      resource = await this.#resolve(item.apiVersion, item.kind);
    } catch (e) {
      return fail(e);
    }
    const { object: desired, hash } = await Executor.desired(ref.cfg, item, ref.namespace);
    const name = desired.metadata!.name!;
    const cache = this.caches.managed(resource);
    if (!(await ready(cache))) {
      return fail(cacheProblem(resource, cache.lastError));
    }
    let observed = cache.get(`${ref.namespace}/${name}`);
    try {
      // Kept without content while no item named it (anyone can label their objects): read it once now.
      if (observed?.contentless) observed = await this.#read(cache, objectPath(resource, ref.namespace, name));
    } catch (e) {
      return fail(e);
    }
    if (observed && this.#ownedByOther(observed.owner, ref, resource, name)) {
      return fail(alreadyManaged(observed.owner!));
    }
    const itemKey = `${ref.cfg.key}|${item.index}|${ref.cfg.generation}`;
    let verdict: Verdict | undefined = observed && judge(desired, hash, observed, this.#serverAdds.get(itemKey));
    // The first unexplained object of an item is written to learn what the server adds; the others wait for that
    // (after a restart: one write per item that the server extends, not one per namespace).
    const learning = this.#learning.get(itemKey);
    if (observed && verdict && !verdict.inSync && verdict.unexplained && learning) {
      await learning;
      verdict = judge(desired, hash, observed, this.#serverAdds.get(itemKey));
    }
    const backoffKey = `${ref.cfg.key}|s${item.index}|${ref.namespace}`;
    if (verdict?.inSync) {
      this.#backoff.delete(backoffKey);
      return { state: "synced", action: "none" };
    }
    const fightKey = `${resource.group}/${resource.resource}|${ref.namespace}/${name}`;
    const objectKey = `${ref.namespace}/${name}`;
    // Deleted, or our label taken off, by someone else: writing it again is a restore too.
    const restore = verdict?.restore === true || (!observed && this.caches.removedByOther(resource, objectKey));
    if (restore) {
      const wait = this.#fights.waitMs(fightKey);
      if (wait > 0) return { state: "synced", action: "none", retryInMs: wait };
    }
    // A new generation (e.g. forceRecreate switched on) may succeed where the old one failed: no waiting then.
    const attempt = `${ref.cfg.generation}:${hash}`;
    const waiting = this.#backedOff(backoffKey, attempt);
    if (waiting) return waiting;
    const reason = verdict && !verdict.inSync ? verdict.reason : undefined;
    this.caches.beginWrite(resource, objectKey);
    const writing = this.#writeItem({ ...ref, itemKey, resource }, resource, desired, observed, reason, fail)
      .finally(() => this.caches.endWrite(resource, objectKey));
    if (verdict && !verdict.inSync && verdict.unexplained && !this.#learning.has(itemKey)) {
      const learnt = writing.then(() => {}, () => {}).finally(() => this.#learning.delete(itemKey));
      this.#learning.set(itemKey, learnt);
    }
    const result = await writing;
    if (result.state === "synced") this.caches.rewritten(resource, objectKey);
    if (restore && result.state === "synced" && result.action !== "none") this.#countRestore(fightKey, ref, observed);
    return this.#remember(backoffKey, attempt, result);
  }

  #countRestore(fightKey: string, ref: ItemRef, observed: CachedObject | undefined): void {
    const restores = this.#fights.restored(fightKey);
    if (restores < 2) return;
    this.hooks.onFight?.(ref.cfg.key);
    if (restores === 2) {
      log.warn(
        "Fight over {object} in namespace {namespace}: changed again by field manager {manager} after espejo " +
          "restored it for SyncConfig {syncConfig}; restores now back off up to {maxDelayMs} ms",
        {
          object: fightKey,
          namespace: ref.namespace,
          manager: observed ? observed.manager ?? "(unknown)" : "(it was deleted or unlabelled)",
          syncConfig: ref.cfg.key,
          maxDelayMs: this.hooks.maxFightDelayMs ?? 600_000,
        },
      );
    }
  }

  /** Reads one object into its cache with its content; undefined when it is gone. */
  async #read(cache: Reflector<CachedObject>, path: string): Promise<CachedObject | undefined> {
    try {
      const raw = await this.client.request<KubeObject>({ method: "GET", path });
      cache.upsert(raw);
      return cache.get(`${raw.metadata?.namespace}/${raw.metadata?.name}`);
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  }

  /**
   * Whether the owner annotation `owner` holds the object against this SyncConfig: only when it names another
   * SyncConfig that has an item for the object here. Any other value (a deleted SyncConfig, one espejo cannot see,
   * a tenant's invention) is overwritten.
   */
  #ownedByOther(owner: string | undefined, ref: ItemRef, resource: ResourceInfo, name: string): boolean {
    if (!owner || owner === ref.cfg.key) return false;
    return this.hooks.claims?.(owner, resource, ref.namespace, name) ?? false;
  }

  async #writeItem(
    ref: WriteRef,
    resource: ResourceInfo,
    desired: KubeObject,
    observed: CachedObject | undefined,
    reason: string | undefined,
    fail: Fail,
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
          this.#stored(cache, created, desired, ref);
          this.hooks.onWrite?.("create");
          return { state: "synced", action: "create" };
        } catch (e) {
          if (!isAlreadyExists(e)) throw e;
          // Exists without our label (created by hand or by the Go espejo): adopt it with an update.
        }
        const current = await this.client.request<KubeObject>({ method: "GET", path });
        const currentOwner = current.metadata?.annotations?.[OWNER_ANNOTATION];
        if (this.#ownedByOther(currentOwner, ref, resource, name)) return fail(alreadyManaged(currentOwner!));
        this.#logTakeOver(currentOwner, ref, resource, name);
        return await this.#update(path, desired, current, ref, cache, "it existed without espejo's label");
      }
      this.#logTakeOver(observed.owner, ref, resource, name);
      return await this.#update(path, desired, observed, ref, cache, reason);
    } catch (e) {
      return fail(e);
    }
  }

  #logTakeOver(owner: string | undefined, ref: ItemRef, resource: ResourceInfo, name: string): void {
    if (!owner || owner === ref.cfg.key) return;
    log.warn(
      "Overwriting owner annotation {owner} of {kind} {namespace}/{name} with SyncConfig {syncConfig}: no " +
        "SyncConfig that espejo can see has an item for that object",
      { owner, kind: resource.kind, namespace: ref.namespace, name, syncConfig: ref.cfg.key },
    );
  }

  /**
   * Replaces the object with `desired`, keeping the live ownerReferences. A reply at the version we sent means the
   * server found nothing to change (extra fields were its own defaults): no write happened.
   */
  async #update(
    path: string,
    desired: KubeObject,
    live: CachedObject | KubeObject,
    ref: WriteRef,
    cache: ReturnType<ResourceCaches["managed"]>,
    reason?: string,
  ): Promise<ItemResult> {
    const base = liveParts(live);
    const body = (at: { resourceVersion?: string; ownerReferences?: unknown[] }) => ({
      ...desired,
      metadata: { ...desired.metadata, resourceVersion: at.resourceVersion, ownerReferences: at.ownerReferences },
    });
    try {
      const updated = await this.#write("PUT", path, body(base));
      this.#stored(cache, updated, desired, ref);
      if (updated.metadata?.resourceVersion === base.resourceVersion) return { state: "synced", action: "none" };
      this.hooks.onWrite?.("update");
      return { state: "synced", action: "update", reason };
    } catch (e) {
      if (isConflict(e)) {
        // Our cached copy was stale: read the current version once and try again, unless another SyncConfig with
        // an item for the object has taken it meanwhile.
        const current = await this.client.request<KubeObject>({ method: "GET", path });
        const owner = current.metadata?.annotations?.[OWNER_ANNOTATION];
        if (this.#ownedByOther(owner, ref, ref.resource, desired.metadata!.name!)) {
          throw new Error(alreadyManaged(owner!)); // the caller names the item and namespace
        }
        const updated = await this.#write("PUT", path, body(liveParts(current)));
        this.#stored(cache, updated, desired, ref);
        this.hooks.onWrite?.("update");
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
        this.#stored(cache, created, desired, ref);
        this.hooks.onWrite?.("recreate");
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
    const fail = failure(
      `SyncConfig ${ref.cfg.key}: .spec.deleteItems[${item.index}] (${item.kind} ${name}) in namespace ${ref.namespace}`,
    );
    if (item.problem) {
      return { state: "failed", message: `SyncConfig ${ref.cfg.key}: ${item.problem}` };
    }
    let resource: ResourceInfo;
    try {
      resource = await this.#resolve(item.apiVersion, item.kind);
    } catch (e) {
      return fail(e);
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
    fail: Fail,
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
      this.hooks.onWrite?.("delete");
      return { state: "deleted" };
    } catch (e) {
      if (isNotFound(e)) {
        cache.forget(key);
        return { state: "absent" };
      }
      if (isConflict(e)) return { state: "absent" }; // uid precondition: a different object now has that name
      return fail(e);
    }
  }

  async #resolve(apiVersion: string, kind: string): Promise<ResourceInfo> {
    const r = await this.discovery.resolve(apiVersion, kind);
    if (!r.namespaced) {
      throw new UnknownKindError(`${kind} (${apiVersion}) is cluster-scoped; only namespaced objects are synced`);
    }
    return r;
  }

  /**
   * Puts the reply of our write into the cache as in sync, and makes it the object's baseline: it is what the
   * server made of the desired object (see lib/drift.ts). The watch event of our own write carries the same version
   * and is not reported again. What the server added to it is remembered for the item (see {@link extrasHash}).
   */
  #stored(cache: Reflector<CachedObject>, written: KubeObject, desired: KubeObject, ref: WriteRef): void {
    const itemKey = ref.itemKey;
    this.caches.ownVersion(
      ref.resource,
      `${ref.namespace}/${written.metadata?.name}`,
      written.metadata?.resourceVersion ?? "",
    );
    cache.upsert(written);
    const hash = desired.metadata?.annotations?.[HASH_ANNOTATION];
    const stored = cache.get(`${written.metadata?.namespace}/${written.metadata?.name}`);
    if (hash && stored && stored.resourceVersion === written.metadata?.resourceVersion) {
      acceptWritten(stored, written, hash);
    }
    if (!this.#serverAdds.has(itemKey)) {
      if (this.#serverAdds.size >= MAX_BACKOFF_ENTRIES) this.#serverAdds.delete(this.#serverAdds.keys().next().value!);
      this.#serverAdds.set(itemKey, extrasHash(desired, written));
    }
  }

  #write(method: "POST" | "PUT", path: string, body: KubeObject): Promise<KubeObject> {
    return this.client.request<KubeObject>({ method, path, body, query: { fieldManager: FIELD_MANAGER } });
  }
}

/** The parts of the live object that a replace keeps: its version (optimistic locking) and ownerReferences. */
function liveParts(live: CachedObject | KubeObject): { resourceVersion?: string; ownerReferences?: unknown[] } {
  if ("metadata" in live) {
    const meta = live.metadata;
    const refs = meta?.ownerReferences;
    return { resourceVersion: meta?.resourceVersion, ownerReferences: Array.isArray(refs) ? refs : undefined };
  }
  const cached = live as CachedObject;
  return { resourceVersion: cached.resourceVersion, ownerReferences: cached.ownerReferences };
}

/** A failure of one item: `prefix` names the SyncConfig, the item and the namespace. */
function failure(prefix: string): Fail {
  return (e) => {
    const reason = reasonOf(e);
    return { state: "failed", message: `${prefix}: ${redactValues(reason)}`, detail: `${prefix}: ${reason}` };
  };
}

const alreadyManaged = (owner: string) =>
  `the object is already managed by SyncConfig ${owner}; two SyncConfigs cannot write the same object`;

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

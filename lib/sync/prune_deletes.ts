/**
 * Performs prune plans (lib/sync/prune_decisions.ts) with the applier's delete, which is conditional on the uid the cache
 * saw (an object created again meanwhile under the same name is not touched), and gathers what pruning needs: the
 * created objects of a namespace from the caches, and the caches of every kind a SyncConfig's items name (a
 * SyncConfig deleted while espejo was stopped: nothing is known about it until those caches have listed).
 */
import type { KubeClient } from "../kube/client.ts";
import type { WriteIdentity } from "../model/identity.ts";
import { type Discovery, UnknownKindError } from "../kube/discovery.ts";
import type { CompiledSyncConfig } from "../model/syncconfig.ts";
import { Applier } from "./applier.ts";
import { missingRightHint } from "./missing_right.ts";
import { errorFields, type FailureFields, type ItemAction, reasonOf } from "./failures.ts";
import type { PruneCandidate, PrunePlan } from "./prune_decisions.ts";
import { cacheProblem, ready, type ResourceCaches } from "./resource_caches.ts";

export type PruneResult =
  | { state: "deleted" | "absent" }
  | { state: "failed"; message: string; fields: FailureFields };

export class Pruner {
  readonly #applier: Applier;

  constructor(
    client: KubeClient,
    private readonly discovery: Discovery,
    private readonly caches: ResourceCaches,
    onWrite: (action: ItemAction) => void = () => {},
  ) {
    // A prune deletes by uid and adopts nothing: no owner check is involved.
    this.#applier = new Applier(client, () => false, onWrite);
  }

  /** What each SyncConfig created in `namespace` (see ResourceCaches.createdIn). */
  createdIn(namespace: string): { created: Map<string, PruneCandidate[]>; listing: boolean } {
    return this.caches.createdIn(namespace);
  }

  /** Pruning was turned on for `cfgKey`: index what it created that the caches hold already. */
  indexCreatedBy(cfgKey: string): void {
    this.caches.indexCreatedBy(cfgKey);
  }

  /**
   * SyncConfig `cfgKey` no longer prunes: what it created stays in place and is no candidate any more, so its index
   * entries go (see ResourceCaches.forgetConfig; one that went is forgotten through the books of per-key state).
   */
  unindexCreatedBy(cfgKey: string): void {
    this.caches.forgetConfig(cfgKey);
  }

  /** The SyncConfigs that may have created objects in `namespace` (unchecked). */
  creatorsIn(namespace: string): string[] {
    return this.caches.creatorsIn(namespace);
  }

  /** The namespaces where `cfgKey` may have created objects (unchecked). */
  namespacesCreatedBy(cfgKey: string): string[] {
    return this.caches.namespacesCreatedBy(cfgKey);
  }

  /**
   * Deletes the candidate by uid, as `writeAs` (the ServiceAccount of the SyncConfig that created it) when given.
   * Never waits for it to go: a finalizer may hold it, and the unit goes on.
   */
  async prune(p: PrunePlan, writeAs?: WriteIdentity): Promise<PruneResult> {
    const { resource, namespace, name, uid } = p.candidate;
    const objectKey = `${namespace}/${name}`;
    // Our own delete: its watch event is not someone else's removal (which a sync would restore, as a fight).
    this.caches.beginWrite(resource, objectKey);
    let deleted = false;
    try {
      // "absent" may be a new object under the name (the uid precondition failed): that one stays in the cache.
      const done = await this.#applier.delete(resource, namespace, name, uid, writeAs?.as);
      deleted = done === "deleted";
      return { state: done };
    } catch (e) {
      const serviceAccount = writeAs?.serviceAccount;
      const why = reasonOf(e);
      const reason = why + missingRightHint(why, serviceAccount, namespace);
      const fields = { kind: resource.kind, name, ...(serviceAccount ? { serviceAccount } : {}), ...errorFields(e) };
      fields.error = reason;
      return { state: "failed", message: `${p.message}: could not delete it: ${reason}`, fields };
    } finally {
      this.caches.endDelete(resource, objectKey, deleted);
    }
  }

  /**
   * Starts the caches of every kind `cfg`'s items name and waits for their first lists. Undefined when all are
   * filled, else why not (a kind not allowed, or unknown): then nothing may be concluded about what `cfg` created.
   * With `unknownIsEmpty` (a deleted SyncConfig) a kind the API server does not know is skipped instead: no object
   * of it exists (its CRD went, and its objects with it).
   */
  async watchItemKinds(cfg: CompiledSyncConfig, unknownIsEmpty = false): Promise<string | undefined> {
    for (const item of cfg.syncItems) {
      if (item.problem) return item.problem;
      try {
        const resource = await this.discovery.resolve(item.apiVersion, item.kind);
        const cache = this.caches.managed(resource);
        if (!(await ready(cache))) return cacheProblem(resource, cache.lastError);
      } catch (e) {
        if (unknownIsEmpty && e instanceof UnknownKindError) continue;
        return reasonOf(e);
      }
    }
    return undefined;
  }
}

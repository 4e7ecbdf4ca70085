/**
 * Pruning in the controller: where each SyncConfig stands (lib/sync/prune.ts has the rules), the prune step of a
 * namespace unit, and the finalizer that holds a deleted SyncConfig until what it created is gone.
 *
 * The finalizer is on a SyncConfig exactly while pruning is on for it; it is metadata, not spec. A SyncConfig
 * being deleted selects nothing: its objects are pruned namespace by namespace, then the finalizer is removed. A
 * deletion while espejo was stopped is found at start: the SyncConfig is still there, with its items and the
 * finalizer, and the caches of its kinds are listed before anything is concluded.
 */
import { getLogger } from "@logtape/logtape";
import type { KubeClient } from "../kube/client.ts";
import { isConflict, isNotFound } from "../kube/errors.ts";
import type { Reflector } from "../kube/reflector.ts";
import type { Metrics } from "../metrics/metrics.ts";
import { type CompileResult, compileSyncConfig, type SyncConfig } from "../model/syncconfig.ts";
import type { ItemAction } from "../sync/failures.ts";
import { deepEqual } from "../kube/objects.ts";
import { planPrunes, PRUNE_ANNOTATION, PRUNE_FINALIZER, pruneEnabled, type PruneScope } from "../sync/prune.ts";
import type { Pruner } from "../sync/pruner.ts";
import type { Registry } from "./registry.ts";
import { patchSyncConfig } from "./syncconfig_client.ts";
import type { NamespaceInfo, NamespaceLookup } from "./watches.ts";
import type { Trigger, WorkItem } from "./work_items.ts";

const log = getLogger(["espejo", "prune"]);

export interface PruningDeps {
  client: KubeClient;
  syncConfigs: Reflector<SyncConfig>;
  namespaces: NamespaceLookup;
  registry: Registry<NamespaceInfo>;
  metrics: Metrics;
  pruneDefault: boolean;
  enqueue: (item: WorkItem, trigger: Trigger, afterMs?: number) => void;
  recordChange: (cfgKey: string, action: ItemAction, namespace: string) => void;
  pruner: () => Pruner | undefined;
}

export interface NamespacePruned {
  wrote: boolean;
  retry: boolean;
  retryInMs?: number;
}

const OFF: PruneScope = { kind: "off" };

export class Pruning {
  /** SyncConfigs being deleted (deletionTimestamp set), compiled once: what they created is pruned. */
  readonly #deleting = new Map<string, CompileResult>();

  constructor(private readonly d: PruningDeps) {}

  /** Whether pruning is on for the SyncConfig under `key` now (its annotation, read from the cache). */
  enabled(key: string): boolean {
    const sc = this.d.syncConfigs.get(key);
    return !!sc && pruneEnabled(sc.metadata, this.d.pruneDefault);
  }

  /** The SyncConfig under `key` is being deleted (or is gone: `sc` undefined). */
  deleting(key: string, sc: SyncConfig | undefined): void {
    if (!sc) this.#deleting.delete(key);
    else if (!this.#deleting.has(key)) this.#deleting.set(key, compileSyncConfig(sc));
  }

  scope(key: string, ns: NamespaceInfo | undefined): PruneScope {
    if (!this.enabled(key)) return OFF;
    const deleting = this.#deleting.get(key);
    const result = deleting ?? this.d.registry.get(key)?.result;
    // Invalid, or an item it cannot read: a typo must not delete objects.
    if (!result?.ok || result.config.syncItems.some((i) => i.problem)) return OFF;
    if (deleting) return { kind: "deleting" };
    const selects = !!ns && ns.phase === "Active" && this.d.registry.selecting(ns).includes(key);
    return { kind: "active", selects };
  }

  /** Whether a unit of `namespace` may have something to prune (a SyncConfig with pruning on created objects there). */
  mayPrune(namespace: string): boolean {
    return this.d.pruner()?.creatorsIn(namespace).some((k) => this.enabled(k)) ?? false;
  }

  /** The prune step of a namespace unit: every SyncConfig that created objects there, by its scope. */
  async pruneNamespace(namespace: string): Promise<NamespacePruned> {
    const out: NamespacePruned = { wrote: false, retry: false };
    const pruner = this.d.pruner();
    const ns = this.d.namespaces.get(namespace);
    if (!pruner || !ns || ns.phase !== "Active") return out;
    const created = pruner.createdIn(namespace);
    if (!created) return { ...out, retryInMs: 1_000 }; // a cache is still listing: nothing is concluded yet
    for (const [cfgKey, candidates] of created) {
      const scope = this.scope(cfgKey, ns);
      const plans = planPrunes(cfgKey, scope, candidates, (c) => this.d.registry.itemOwners(c.resource, ns, c.name));
      let left = candidates.length;
      for (const p of plans) {
        const r = await pruner.prune(p);
        if (r.state === "failed") {
          log.warn("{message}", { syncConfig: cfgKey, namespace, message: `SyncConfig ${cfgKey}: ${r.message}` });
          out.retry = true;
          continue;
        }
        left--;
        if (r.state === "absent") continue;
        out.wrote = true;
        this.d.metrics.prunes.inc({ syncconfig: cfgKey, reason: p.reason });
        this.d.recordChange(cfgKey, "prune", namespace);
        log.info("Pruned {message}", { syncConfig: cfgKey, namespace, reason: p.reason, message: p.message });
      }
      // The last namespace of a deleted SyncConfig: its finalizer can go.
      if (scope.kind === "deleting" && left === 0) this.d.enqueue({ kind: "syncConfig", key: cfgKey }, "syncconfig");
    }
    return out;
  }

  /**
   * After a change of the SyncConfig under `key`: the finalizer follows pruning, the namespaces where it created
   * objects are queued (those it selects are queued anyway), and a deleted one is released once nothing is left.
   */
  async settle(key: string): Promise<void> {
    const sc = this.d.syncConfigs.get(key);
    const pruner = this.d.pruner();
    if (!sc || !pruner) return;
    const enabled = this.enabled(key);
    const holds = sc.metadata?.finalizers?.includes(PRUNE_FINALIZER) === true;
    const deleting = this.#deleting.get(key);
    if (!deleting) {
      if (enabled !== holds) await this.#setFinalizer(key, sc, enabled);
      if (enabled) {
        for (const namespace of pruner.namespacesCreatedBy(key)) {
          this.d.enqueue({ kind: "namespace", name: namespace }, "syncconfig");
        }
      }
      return;
    }
    if (!holds) return;
    if (this.scope(key, undefined).kind !== "deleting") {
      log.info("SyncConfig {syncConfig} deleted without pruning; objects it created are left in place", {
        syncConfig: key,
      });
      await this.#setFinalizer(key, sc, false);
      return;
    }
    const problem = await pruner.watchItemKinds((deleting as CompileResult & { ok: true }).config);
    if (problem) {
      log.warn("SyncConfig {syncConfig} is being deleted but cannot be pruned yet, retrying: {problem}", {
        syncConfig: key,
        problem,
      });
      this.d.enqueue({ kind: "syncConfig", key }, "retry", 30_000);
      return;
    }
    const left = pruner.namespacesCreatedBy(key).filter((ns) => {
      const created = pruner.createdIn(ns); // checks the entries (and drops the stale ones)
      return !created || created.has(key);
    });
    if (!left.length) await this.#setFinalizer(key, sc, false);
    for (const namespace of left) this.d.enqueue({ kind: "namespace", name: namespace }, "syncconfig");
  }

  /** Adds or removes the finalizer, at the version seen (a conflict: the watch brings the new one, retried then). */
  async #setFinalizer(key: string, sc: SyncConfig, present: boolean): Promise<void> {
    const others = (sc.metadata?.finalizers ?? []).filter((f) => f !== PRUNE_FINALIZER);
    const finalizers = present ? [...others, PRUNE_FINALIZER] : others;
    const [namespace, name] = key.split("/");
    try {
      const body = { metadata: { finalizers, resourceVersion: sc.metadata?.resourceVersion } };
      const reply = await patchSyncConfig(this.d.client, { namespace, name }, body, {
        urgent: true,
        contentType: "application/merge-patch+json",
      });
      this.d.syncConfigs.upsert(reply);
      log.info(`${present ? "Added" : "Removed"} finalizer {finalizer} of SyncConfig {syncConfig}`, {
        finalizer: PRUNE_FINALIZER,
        syncConfig: key,
      });
    } catch (e) {
      if (isNotFound(e)) return;
      if (!isConflict(e)) {
        log.warn("Could not update the finalizers of SyncConfig {syncConfig}: {error}", {
          syncConfig: key,
          error: String(e),
        });
      }
      this.d.enqueue({ kind: "syncConfig", key }, "retry", isConflict(e) ? 1_000 : 10_000);
    }
  }
}

/**
 * Whether nothing that decides what a SyncConfig syncs or prunes changed: its generation, its deletion, its prune
 * annotation and its finalizers. Status writes (espejo's own, every few seconds in a burst) change none of them.
 */
export function sameSpecAndPruning(sc: SyncConfig, old: SyncConfig | undefined): boolean {
  const a = sc.metadata;
  const b = old?.metadata;
  return a?.generation === b?.generation && a?.deletionTimestamp === b?.deletionTimestamp &&
    a?.annotations?.[PRUNE_ANNOTATION] === b?.annotations?.[PRUNE_ANNOTATION] &&
    deepEqual(a?.finalizers ?? [], b?.finalizers ?? []);
}

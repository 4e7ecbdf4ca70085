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
import type { ResourceInfo } from "../kube/discovery.ts";
import type { Reflector } from "../kube/reflector.ts";
import type { Metrics } from "../metrics/metrics.ts";
import { type CompileResult, compileSyncConfig, type SyncConfig } from "../model/syncconfig.ts";
import type { ItemAction } from "../sync/failures.ts";
import { deepEqual } from "../kube/objects.ts";
import { mapBounded } from "../sync/bounded.ts";
import {
  confirmedPrunes,
  planPrunes,
  PRUNE_ANNOTATION,
  PRUNE_FINALIZER,
  pruneEnabled,
  type PrunePlan,
  type PruneScope,
  settlingMs,
} from "../sync/prune.ts";
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

/** What the prune step of a unit would delete in a namespace, decided from the caches at one moment. */
export interface PruneDecision {
  plans: { cfgKey: string; plan: PrunePlan }[];
  /** A cache is still listing: its SyncConfigs are left out. */
  listing: boolean;
  /** SyncConfigs being deleted that created objects here. */
  deleting: string[];
}

const NOTHING: PruneDecision = { plans: [], listing: false, deleting: [] };
/**
 * Deletes of one unit in flight at once. They overlap (a delete held 3 s by a slow admission webhook costs the unit
 * 3 s, not 3 s per object), and stay few enough not to take every connection of the client.
 */
const MAX_CONCURRENT_PRUNES = 16;

const OFF: PruneScope = { kind: "off" };
/** Between two looks at a deleted SyncConfig whose objects are not all gone yet (doubling, at most 5 minutes). */
const RELOOK_MS = 5_000;
const MAX_RELOOK_MS = 300_000;

export class Pruning {
  /** SyncConfigs being deleted (deletionTimestamp set), by key, with their uid, compiled once. */
  readonly #deleting = new Map<string, { uid: string; result: CompileResult }>();
  /** Settles that failed or must look again, by key: how many in a row (for the backoff). */
  readonly #attempts = new Map<string, number>();

  constructor(private readonly d: PruningDeps) {}

  /** Whether pruning is on for the SyncConfig under `key` now (its annotation, read from the cache). */
  enabled(key: string): boolean {
    const sc = this.d.syncConfigs.get(key);
    return !!sc && pruneEnabled(sc.metadata, this.d.pruneDefault);
  }

  /** The SyncConfig under `key` as the cache has it now (undefined: gone), after a change of it. */
  observe(key: string, sc: SyncConfig | undefined): void {
    const uid = sc?.metadata?.uid ?? "";
    if (!sc?.metadata?.deletionTimestamp) this.#deleting.delete(key); // gone, or created again under the same key
    else if (this.#deleting.get(key)?.uid !== uid) this.#deleting.set(key, { uid, result: compileSyncConfig(sc) });
  }

  /** Where SyncConfig `key` stands for pruning; `selects`: whether the unit's selection includes it. */
  scope(key: string, selects: boolean): PruneScope {
    const sc = this.d.syncConfigs.get(key);
    if (!sc || !this.enabled(key)) return OFF;
    const deleting = this.#deleting.get(key);
    // Being deleted but not seen so yet (or a new one under the key): nothing until the change is processed.
    if (!!sc.metadata?.deletionTimestamp !== !!deleting || (deleting && deleting.uid !== sc.metadata?.uid)) return OFF;
    const result = deleting?.result ?? this.d.registry.get(key)?.result;
    // Invalid, or an item it cannot read: a typo must not delete objects.
    if (!result?.ok || result.config.syncItems.some((i) => i.problem)) return OFF;
    if (deleting) return { kind: "deleting" };
    return { kind: "active", selects };
  }

  /** Whether a unit of `namespace` may have something to prune (a SyncConfig with pruning on created objects there). */
  mayPrune(namespace: string): boolean {
    return this.d.pruner()?.creatorsIn(namespace).some((k) => this.enabled(k)) ?? false;
  }

  /**
   * What the prune step of a unit would delete in namespace `ns` now: every SyncConfig that created objects there,
   * by its scope. `selecting` is the unit's one selection (the SyncConfigs that select `ns` as the unit saw it at
   * its start): the labels may have changed since, and syncing and pruning must not decide on different ones.
   */
  async decide(ns: NamespaceInfo, selecting: ReadonlySet<string>): Promise<PruneDecision> {
    const pruner = this.d.pruner();
    if (!pruner || ns.phase !== "Active" || !this.mayPrune(ns.name)) return NOTHING;
    const { created, listing } = pruner.createdIn(ns.name);
    const out: PruneDecision = { plans: [], listing, deleting: [] };
    for (const [cfgKey, candidates] of created) {
      const scope = this.scope(cfgKey, selecting.has(cfgKey));
      if (scope.kind === "off") continue;
      // Every kind the items name must be known: an item whose kind is mistyped names nothing, and its objects
      // must not look unnamed. (A deleted SyncConfig's unknown kinds have no objects left to prune.)
      const config = this.#config(cfgKey);
      const problem = config && await pruner.watchItemKinds(config, scope.kind === "deleting");
      if (!config || problem) continue;
      if (scope.kind === "deleting") out.deleting.push(cfgKey);
      const owners = (c: { resource: ResourceInfo; name: string }) =>
        this.d.registry.itemOwners(c.resource, ns, c.name);
      for (const plan of planPrunes(cfgKey, scope, candidates, owners)) out.plans.push({ cfgKey, plan });
    }
    return out;
  }

  /**
   * The prune step of a namespace unit, after its writes: what it decided at its start (`atStart`) and still
   * decides now. The caller has brought the compiled SyncConfigs up to date with the cache (every claim of another
   * SyncConfig is known). The deletes run concurrently; none waits for its object to go (a finalizer holds it).
   */
  async pruneNamespace(
    ns: NamespaceInfo,
    selecting: ReadonlySet<string>,
    atStart: PruneDecision,
  ): Promise<NamespacePruned> {
    const namespace = ns.name;
    const out: NamespacePruned = { wrote: false, retry: false };
    const pruner = this.d.pruner();
    if (!pruner) return out;
    const now = atStart.plans.length || atStart.deleting.length || atStart.listing
      ? await this.decide(ns, selecting)
      : NOTHING;
    if (atStart.listing || now.listing) out.retryInMs = 5_000; // a cache is still listing: its SyncConfigs wait
    const confirmed = new Set(confirmedPrunes(atStart.plans.map((p) => p.plan), now.plans.map((p) => p.plan)));
    const settleMs = settlingMs(ns.relabelledAt, Date.now());
    if (settleMs > 0 && now.plans.some((p) => p.plan.reason === "namespace not selected")) {
      out.retryInMs = Math.min(out.retryInMs ?? settleMs, settleMs); // labels still moving: the unit comes back
    }
    const plans = now.plans.filter((p) =>
      confirmed.has(p.plan) && !(settleMs > 0 && p.plan.reason === "namespace not selected")
    );
    const results = await mapBounded(plans, MAX_CONCURRENT_PRUNES, ({ plan }) => pruner.prune(plan));
    plans.forEach(({ cfgKey, plan: p }, i) => {
      const r = results[i];
      if (r.state === "failed") {
        log.error("{message}", {
          syncConfig: cfgKey,
          namespace,
          ...r.fields,
          message: `SyncConfig ${cfgKey}: ${r.message}`,
        });
        out.retry = true;
        return;
      }
      if (r.state === "absent") return;
      out.wrote = true;
      this.d.metrics.prunes.inc({ syncconfig: cfgKey, reason: p.reason });
      this.d.recordChange(cfgKey, "prune", namespace);
      log.info("Pruned {message}", { syncConfig: cfgKey, namespace, reason: p.reason, message: p.message });
    });
    // A deleted SyncConfig is released once nothing of it is left anywhere: look again now.
    for (const cfgKey of now.deleting) this.d.enqueue({ kind: "pruning", key: cfgKey }, "syncconfig");
    return out;
  }

  #config(key: string) {
    const result = this.#deleting.get(key)?.result ?? this.d.registry.get(key)?.result;
    return result?.ok ? result.config : undefined;
  }

  /**
   * After a change of the SyncConfig under `key`, and when a look is due: the finalizer follows pruning, the
   * namespaces where it created objects are queued (those it selects are queued anyway), and a deleted one is
   * released once nothing it created is left (looked at again, backing off, until then).
   */
  async settle(key: string): Promise<void> {
    const sc = this.d.syncConfigs.get(key);
    const pruner = this.d.pruner();
    if (!sc) pruner?.forgetConfig(key); // gone, and pruned first if it pruned (the finalizer held it)
    if (!sc || !pruner) return this.#settled(key);
    const enabled = this.enabled(key);
    const holds = sc.metadata?.finalizers?.includes(PRUNE_FINALIZER) === true;
    if (!this.#deleting.has(key)) {
      if (enabled !== holds && !(await this.#setFinalizer(key, sc, enabled))) return;
      if (enabled) {
        pruner.indexCreatedBy(key); // objects cached while it did not prune were not indexed
        for (const namespace of pruner.namespacesCreatedBy(key)) {
          this.d.enqueue({ kind: "namespace", name: namespace }, "syncconfig");
        }
      } else pruner.forgetConfig(key); // what it created stays in place, and is no candidate any more
      return this.#settled(key);
    }
    if (!holds) return this.#settled(key);
    if (this.scope(key, false).kind !== "deleting") {
      log.info("SyncConfig {syncConfig} deleted without pruning; objects it created are left in place", {
        syncConfig: key,
      });
      pruner.forgetConfig(key);
      if (await this.#setFinalizer(key, sc, false)) this.#settled(key);
      return;
    }
    const problem = await pruner.watchItemKinds(this.#config(key)!, true);
    const left = problem ? [] : pruner.namespacesCreatedBy(key).filter((ns) => {
      const { created, listing } = pruner.createdIn(ns); // checks the entries (and drops the stale ones)
      return listing || created.has(key);
    });
    if (problem) {
      log.warn("SyncConfig {syncConfig} is being deleted but cannot be pruned yet: {problem}", {
        syncConfig: key,
        problem,
      });
    } else if (!left.length) {
      pruner.forgetConfig(key);
      if (await this.#setFinalizer(key, sc, false)) this.#settled(key);
      return;
    }
    for (const namespace of left) this.d.enqueue({ kind: "namespace", name: namespace }, "syncconfig");
    this.#again(key, RELOOK_MS); // objects that go by themselves (a namespace deleted, a tenant) leave no trace
  }

  #settled(key: string): void {
    this.#attempts.delete(key);
  }

  /** Settles `key` again after `baseMs`, doubling with every attempt in a row, at most 5 minutes. */
  #again(key: string, baseMs: number): void {
    const n = this.#attempts.get(key) ?? 0;
    this.#attempts.set(key, n + 1);
    this.d.enqueue({ kind: "pruning", key }, "retry", Math.min(baseMs * 2 ** n, MAX_RELOOK_MS));
  }

  /** Adds or removes the finalizer, at the version seen; false when that failed (tried again later). */
  async #setFinalizer(key: string, sc: SyncConfig, present: boolean): Promise<boolean> {
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
      return true;
    } catch (e) {
      if (isNotFound(e)) return true;
      // A conflict is mostly espejo's own status write in between: try again soon. Anything else backs off.
      if (!isConflict(e)) {
        log.warn("Could not update the finalizers of SyncConfig {syncConfig}: {error}", {
          syncConfig: key,
          error: String(e),
        });
      }
      this.#again(key, isConflict(e) ? 1_000 : 10_000);
      return false;
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

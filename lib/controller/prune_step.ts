/**
 * The prune step of a namespace unit, and where each SyncConfig stands for pruning (lib/sync/prune_decisions.ts has
 * the rules, lib/sync/prune_deletes.ts makes the deletes). After the unit's writes, every SyncConfig with pruning on
 * that created objects in the namespace loses what it no longer wants there, if the unit decided so at its start and
 * still does. A SyncConfig being deleted selects nothing: its objects are pruned namespace by namespace, and
 * lib/controller/prune_finalizer.ts then releases it.
 */
import { getLogger } from "@logtape/logtape";
import type { WriteIdentity } from "../model/identity.ts";
import type { ResourceInfo } from "../kube/discovery.ts";
import type { Reflector } from "../kube/reflector.ts";
import type { Metrics } from "../metrics/metrics.ts";
import { type CompileResult, compileSyncConfig, type SyncConfig } from "../model/syncconfig.ts";
import type { ItemAction } from "../sync/failures.ts";
import { mapBounded } from "../sync/bounded.ts";
import {
  confirmedPrunes,
  planPrunes,
  pruneEnabled,
  type PrunePlan,
  type PruneScope,
  pruneScope,
  settlingMs,
} from "../sync/prune_decisions.ts";
import type { Pruner } from "../sync/prune_deletes.ts";
import { LISTING_RECHECK_MS } from "../sync/retry_policy.ts";
import type { Step } from "../sync/step.ts";
import type { Registry } from "../model/registry.ts";
import type { NamespaceInfo } from "../model/namespace_info.ts";
import type { NamespaceLookup } from "./watches.ts";
import type { Trigger, WorkItem } from "./work_items.ts";

const log = getLogger(["espejo", "prune"]);

export interface PruneStepDeps {
  syncConfigs: Pick<Reflector<SyncConfig>, "get">;
  namespaces: NamespaceLookup;
  registry: Registry<NamespaceInfo>;
  metrics: Pick<Metrics, "prunes">;
  pruneDefault: boolean;
  enqueue: (item: WorkItem, trigger: Trigger, afterMs?: number) => void;
  recordChange: (cfgKey: string, action: ItemAction, namespace: string) => void;
  pruner: PrunerParts;
}

/** What pruning asks of the pruner (lib/sync/prune_deletes.ts). */
export type PrunerParts = Pick<
  Pruner,
  | "createdIn"
  | "indexCreatedBy"
  | "creatorsIn"
  | "namespacesCreatedBy"
  | "prune"
  | "watchItemKinds"
  | "unindexCreatedBy"
>;

/** What the prune step of a unit would delete in a namespace, decided from the caches at one moment. */
export interface PruneDecision {
  /** `writeAs`: the ServiceAccount of the SyncConfig that created the object, which deletes it. */
  plans: { cfgKey: string; plan: PrunePlan; writeAs?: WriteIdentity }[];
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

/** Whether pruning is on for SyncConfig `sc` as cached now (undefined: gone): its annotation, else the default. */
export function pruningOn(sc: SyncConfig | undefined, pruneDefault: boolean): boolean {
  return !!sc && pruneEnabled(sc.metadata, pruneDefault);
}

export class PruneStep {
  /** SyncConfigs being deleted (deletionTimestamp set), by key, with their uid, compiled once. */
  readonly #deleting = new Map<string, { uid: string; result: CompileResult }>();

  constructor(private readonly d: PruneStepDeps) {}

  /** Whether pruning is on for the SyncConfig under `key` now (its annotation, read from the cache). */
  enabled(key: string): boolean {
    return pruningOn(this.d.syncConfigs.get(key), this.d.pruneDefault);
  }

  /** The SyncConfig under `key` as the cache has it now (undefined: gone), after a change of it. */
  observe(key: string, sc: SyncConfig | undefined): void {
    const uid = sc?.metadata?.uid ?? "";
    if (!sc?.metadata?.deletionTimestamp) this.#deleting.delete(key); // gone, or created again under the same key
    else if (this.#deleting.get(key)?.uid !== uid) {
      this.#deleting.set(key, { uid, result: compileSyncConfig(sc, this.d.registry.options) });
    }
  }

  /** Where SyncConfig `key` stands for pruning; `selects`: whether the unit's selection includes it. */
  scope(key: string, selects: boolean): PruneScope {
    const sc = this.d.syncConfigs.get(key);
    if (!sc) return OFF;
    const deleting = this.#deleting.get(key);
    // Being deleted but not seen so yet (or a new one under the key): nothing until the change is processed.
    if (!!sc.metadata?.deletionTimestamp !== !!deleting || (deleting && deleting.uid !== sc.metadata?.uid)) return OFF;
    const result = deleting?.result ?? this.d.registry.get(key)?.result;
    return pruneScope({ enabled: this.enabled(key), deleting: !!deleting, result, selects });
  }

  /** Whether a unit of `namespace` may have something to prune (a SyncConfig with pruning on created objects there). */
  mayPrune(namespace: string): boolean {
    return this.d.pruner.creatorsIn(namespace).some((k) => this.enabled(k));
  }

  /**
   * What the prune step of a unit would delete in namespace `ns` now: every SyncConfig that created objects there,
   * by its scope. `selecting` is the unit's one selection (the SyncConfigs that select `ns` as the unit saw it at
   * its start): the labels may have changed since, and syncing and pruning must not decide on different ones.
   */
  async decide(ns: NamespaceInfo, selecting: ReadonlySet<string>): Promise<PruneDecision> {
    const { pruner } = this.d;
    if (ns.phase !== "Active" || !this.mayPrune(ns.name)) return NOTHING;
    const { created, listing } = pruner.createdIn(ns.name);
    const out: PruneDecision = { plans: [], listing, deleting: [] };
    for (const [cfgKey, candidates] of created) {
      const scope = this.scope(cfgKey, selecting.has(cfgKey));
      if (scope.kind === "off") continue;
      // Every kind the items name must be known: an item whose kind is mistyped names nothing, and its objects
      // must not look unnamed. (A deleted SyncConfig's unknown kinds have no objects left to prune.)
      const config = this.configOf(cfgKey);
      const problem = config && await pruner.watchItemKinds(config, scope.kind === "deleting");
      if (!config || problem) continue;
      if (scope.kind === "deleting") out.deleting.push(cfgKey);
      const owners = (c: { resource: ResourceInfo; name: string }) =>
        this.d.registry.itemOwners(c.resource, ns, c.name);
      const { writeAs } = config;
      for (const plan of planPrunes(cfgKey, scope, candidates, owners)) out.plans.push({ cfgKey, plan, writeAs });
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
  ): Promise<Step> {
    const namespace = ns.name;
    const out: Step = { wrote: false, retry: false };
    const { pruner } = this.d;
    const now = atStart.plans.length || atStart.deleting.length || atStart.listing
      ? await this.decide(ns, selecting)
      : NOTHING;
    if (atStart.listing || now.listing) out.retryInMs = LISTING_RECHECK_MS; // a cache is still listing: its SyncConfigs wait
    const confirmed = new Set(confirmedPrunes(atStart.plans.map((p) => p.plan), now.plans.map((p) => p.plan)));
    const settleMs = settlingMs(ns.relabelledAt, Date.now());
    if (settleMs > 0 && now.plans.some((p) => p.plan.reason === "namespace not selected")) {
      out.retryInMs = Math.min(out.retryInMs ?? settleMs, settleMs); // labels still moving: the unit comes back
    }
    const plans = now.plans.filter((p) =>
      confirmed.has(p.plan) && !(settleMs > 0 && p.plan.reason === "namespace not selected")
    );
    const results = await mapBounded(plans, MAX_CONCURRENT_PRUNES, ({ plan, writeAs }) => pruner.prune(plan, writeAs));
    plans.forEach(({ cfgKey, plan: p }, i) => {
      const r = results[i];
      if (r.state === "failed") {
        const message = `SyncConfig ${cfgKey}: ${r.message}`;
        log.error("{message}", { syncConfig: cfgKey, namespace, ...r.fields, message });
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

  /** The compiled config of SyncConfig `key`: as it was when its deletion was seen, else as registered now. */
  configOf(key: string) {
    const result = this.#deleting.get(key)?.result ?? this.d.registry.get(key)?.result;
    return result?.ok ? result.config : undefined;
  }

  /** Whether SyncConfig `key` is being deleted, as the last change of it that was processed said. */
  isDeleting(key: string): boolean {
    return this.#deleting.has(key);
  }
}

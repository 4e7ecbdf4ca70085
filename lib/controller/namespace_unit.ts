/**
 * The unit of work: one namespace synced against every valid SyncConfig that selects it, then its prune step.
 * Returns what it came to ({@link UnitResult}: each SyncConfig's counts, what it wrote, whether and when to come
 * back). It keeps no books itself: the worker (worker.ts) keeps those of a finished unit in one place; only the
 * changes of its items are handed, as they are written, to the Events of the next status flush (sync_events.ts
 * `recordChange`), since an Event names the object and what was done to it, which the counts do not keep.
 */
import type { ItemCounts } from "../model/status.ts";
import type { CompiledSyncConfig, CompileResult } from "../model/syncconfig.ts";
import { conflictsIn, type Contradictions, contradictions } from "../model/contradictions.ts";
import type { Executor } from "../sync/executor.ts";
import type { LargeGate } from "../sync/large_gate.ts";
import type { ItemAction, ItemResult } from "../sync/failures.ts";
import { type LoggedFailure, syncConfigInNamespace } from "../sync/namespace_sync.ts";
import { foldSteps, NO_STEP, type Step } from "../sync/step.ts";
import type { DelegatedView, NamespaceView } from "../sync/delegated_view.ts";
import type { ConfigChanges } from "./config_changes.ts";
import type { PruneStep } from "./prune_step.ts";
import type { SyncEvents } from "./sync_events.ts";
import type { NamespaceLookup } from "./watches.ts";
import type { TrimmedLabels } from "./trimmed_labels.ts";

export interface NamespaceUnitDeps {
  namespaces: NamespaceLookup;
  configs: Pick<ConfigChanges, "catchUp">;
  syncEvents: Pick<SyncEvents, "recordChange">;
  executor: Pick<Executor, "syncItem" | "deleteItem">;
  pruning: Pick<PruneStep, "decide" | "pruneNamespace">;
  trimmedLabels: Pick<TrimmedLabels, "readSoon">;
  /** What SyncConfigs of untrusted namespaces may see here, and the contests between items. */
  view: Pick<DelegatedView, "of" | "contests">;
  /** The turns at large objects: a turn kept for the namespace is its unit's, taken or given up when it ends. */
  large: Pick<LargeGate, "began" | "ended">;
}

/** One SyncConfig's counts in the namespace, and its failures for the log. */
export interface ConfigCounts {
  cfgKey: string;
  outcome: ItemCounts;
  details: LoggedFailure[];
}

export interface UnitResult extends Step {
  /**
   * The SyncConfigs that selected the namespace, with their counts there. One deleted, made invalid or changed
   * while the unit ran is left out: its counts are gone, or belong to the new generation, whose own unit is queued.
   */
  configs: ConfigCounts[];
  /** Valid SyncConfigs that do not select the namespace: whatever they counted there goes. */
  unselected: string[];
  /** SyncConfigs left out of `configs` because they changed while the unit ran (their status waits for the next). */
  stale?: string[];
  /** An item failed. */
  failed: boolean;
}

const NO_VIEW: NamespaceView = { visible: [], hidden: [], deferred: [], refused: new Map(), retry: false };
const NO_CONTESTS: Contradictions = new Map();

/** The compiled SyncConfig of `result` if it is valid and trusted. */
const trustedConfig = (result: CompileResult | undefined): CompiledSyncConfig[] =>
  result?.ok && result.config.trusted ? [result.config] : [];

export class NamespaceUnit {
  constructor(private readonly d: NamespaceUnitDeps) {}

  /** Syncs namespace `name` against every valid SyncConfig that selects it, then prunes there. */
  async run(name: string): Promise<UnitResult> {
    this.d.large.began(name);
    try {
      return await this.#run(name);
    } finally {
      this.d.large.ended(name);
    }
  }

  async #run(name: string): Promise<UnitResult> {
    // One selection per unit: which SyncConfigs select the namespace is decided once, from its labels as cached
    // now, for the writes and for the prunes. Labels that change meanwhile queue the namespace again (its watch).
    const ns = this.d.namespaces.get(name);
    const registry = this.d.configs.catchUp();
    // Labels trimmed before a SyncConfig that reads another key came: whether that one selects the namespace is not
    // known until it is read again (trimmed_labels.ts), which queues it. Nothing is written, pruned or uncounted here
    // for it; the SyncConfigs whose keys the namespace kept go on (a team's fresh keys do not hold the platform off).
    const unknown = ns ? registry.unknownFor(ns) : [];
    if (unknown.length) void this.d.trimmedLabels.readSoon(name); // queues the namespace again once read
    const selecting: ReadonlySet<string> = new Set(ns ? registry.selecting(ns) : []);
    // What to prune is decided now too (and confirmed after the writes): an object this unit writes is never one
    // it prunes. A SyncConfig whose selection is unknown prunes as one that selects: only what its items left.
    const pruneSelecting: ReadonlySet<string> = unknown.length ? new Set([...selecting, ...unknown]) : selecting;
    const prunes = ns ? await this.d.pruning.decide(ns, pruneSelecting) : undefined;
    // Configs that select the namespace are synced concurrently (distinct objects; the API server serializes
    // writes per object), which keeps the latency of a new namespace near one round trip instead of M*K.
    const targeted: CompiledSyncConfig[] = [];
    const unselected: string[] = [];
    for (const [cfgKey, { result }] of registry.entries()) {
      if (!result.ok) continue;
      if (selecting.has(cfgKey)) targeted.push(result.config);
      else if (!unknown.includes(cfgKey)) unselected.push(cfgKey);
    }
    // Items that contradict each other (one deletes what another syncs) are decided here, once, by precedence
    // (lib/model/contradictions.ts), rather than raced against each other on every sync. A trusted SyncConfig's items
    // depend on trusted ones only (those whose selection is unknown here included: they may select it), so they are
    // decided and synced at once, without waiting for what the untrusted ones may see.
    const trusted = targeted.filter((c) => c.trusted);
    const untrusted = targeted.filter((c) => !c.trusted);
    const contenders = [...trusted, ...unknown.flatMap((k) => trustedConfig(registry.get(k)?.result))];
    const trustedContests = contradictions(conflictsIn(contenders, name));
    const { executor } = this.d;
    const recordChange = (k: string, a: ItemAction, ns: string) => this.d.syncEvents.recordChange(k, a, ns);
    const sync = (cfg: CompiledSyncConfig, contested: Contradictions, refused?: ReadonlyMap<string, ItemResult>) =>
      syncConfigInNamespace(executor, cfg, name, recordChange, contested.get(cfg.key), refused);
    const trustedRuns = trusted.map((cfg) => sync(cfg, trustedContests));
    // A SyncConfig of an untrusted namespace sees only what its ServiceAccount may read (delegated_view.ts): out of its
    // view it is neither synced nor counted here; deferred (its reviews wait), neither synced nor uncounted. What it
    // created here is not pruned for either: `selecting` keeps it.
    const view = untrusted.length ? await this.d.view.of(untrusted, name) : NO_VIEW;
    unselected.push(...view.hidden);
    const contested = view.visible.length ? await this.d.view.contests(view, name, contenders) : NO_CONTESTS;
    const synced = [...trusted, ...view.visible];
    const results = await Promise.all([
      ...trustedRuns,
      ...view.visible.map((cfg) => sync(cfg, contested, view.refused.get(cfg.key))),
    ]);
    // What SyncConfigs with pruning on created here and no longer want (after the writes: an item renamed in the
    // same generation is created under its new name first).
    this.d.configs.catchUp(); // an edit that came in during the writes (a revert, another SyncConfig's claim) counts
    const pruned = ns && prunes ? await this.d.pruning.pruneNamespace(ns, pruneSelecting, prunes) : NO_STEP;
    const configs: ConfigCounts[] = [];
    const stale: string[] = [];
    synced.forEach((cfg, i) => {
      const current = registry.get(cfg.key)?.result;
      if (current?.ok && current.config === cfg) configs.push({ cfgKey: cfg.key, ...results[i] });
      else stale.push(cfg.key);
    });
    return {
      ...foldSteps([...results, pruned, { wrote: false, retry: view.retry, retryInMs: view.retryInMs }]),
      configs,
      unselected,
      stale,
      failed: results.some((r) => r.outcome.failed > 0),
    };
  }
}

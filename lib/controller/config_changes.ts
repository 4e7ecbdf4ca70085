/**
 * What follows when a SyncConfig is created, changed or deleted: it is recompiled once per generation, a deleted
 * one is forgotten by every book that keeps state per SyncConfig in one call (key_books.ts), the caches follow the
 * kinds its items name, and the namespaces it selects are queued. One being deleted counts as deleted here; when it
 * prunes, the units' prune step (prune_step.ts) deletes what it created and prune_finalizer.ts then releases it.
 */
import { getLogger } from "@logtape/logtape";
import { setImmediate } from "node:timers";
import type { EventRecorder } from "../kube/events.ts";
import type { Reflector } from "../kube/reflector.ts";
import { type CompiledSyncConfig, keyOf, refOf, type SyncConfig } from "../model/syncconfig.ts";
import { PROJECT_NAME_PLACEHOLDER } from "../model/template.ts";
import { keepMarker } from "../sync/cached_object.ts";
import type { Executor } from "../sync/executor.ts";
import type { ResourceCaches } from "../sync/resource_caches.ts";
import type { WorkFacts } from "../sync/retry_policy.ts";
import type { Freshness } from "./freshness.ts";
import type { KeyBooks } from "./key_books.ts";
import type { DelegatedView } from "../sync/delegated_view.ts";
import type { Registry } from "../model/registry.ts";
import type { StatusLedger } from "./status_ledger.ts";
import type { StatusWriter } from "./status_writer.ts";
import type { NamespaceInfo } from "../model/namespace_info.ts";
import type { PruneStep } from "./prune_step.ts";
import type { PruneFinalizer } from "./prune_finalizer.ts";
import type { Trigger, WorkItem } from "./work_items.ts";
import type { TrimmedLabels } from "./trimmed_labels.ts";

const log = getLogger(["espejo", "controller"]);

export interface ConfigChangesDeps {
  syncConfigs: Pick<Reflector<SyncConfig>, "get" | "values">;
  namespaces: Pick<Reflector<NamespaceInfo>, "values">;
  registry: Registry<NamespaceInfo>;
  ledger: StatusLedger;
  statusWriter: Pick<StatusWriter, "heard">;
  events: Pick<EventRecorder, "emit">;
  freshness: Pick<Freshness, "changedEverywhere">;
  enqueue: (item: WorkItem, trigger: Trigger) => void;
  pruning: Pick<PruneStep, "observe" | "enabled">;
  finalizer: Pick<PruneFinalizer, "settle">;
  /** Every book of per-SyncConfig state: a deleted SyncConfig is forgotten in one call. */
  books: Pick<KeyBooks, "configGone">;
  executor: Pick<Executor, "forgetConfig">;
  /** The rights asked for SyncConfigs of untrusted namespaces: asked again for a new generation. */
  view: Pick<DelegatedView, "forgetConfig">;
  caches: Pick<ResourceCaches, "retain" | "hasCreated">;
  trimmedLabels: Pick<TrimmedLabels, "refresh">;
}

export class ConfigChanges {
  /** By SyncConfig key: the uid of it that was warned about templated deleteItems (once per uid and process). */
  readonly #warnedTemplates = new Map<string, string>();

  constructor(private readonly d: ConfigChangesDeps) {}

  /** The work item of a SyncConfig: recompiled, what it selects queued, its pruning settled (and when to again). */
  async process(key: string): Promise<WorkFacts> {
    this.changed(key);
    // A label key this SyncConfig reads may be missing from namespaces with huge labels: read those again first,
    // once for the keys of every SyncConfig there is (after a restart each would bring its own round); within a
    // sweep's gap they are read at its end and queued then (trimmed_labels.ts).
    this.catchUp();
    await this.d.trimmedLabels.refresh();
    await this.enqueueSelected(key);
    return await this.d.finalizer.settle(key);
  }

  /**
   * A SyncConfig's watch event, handled at once rather than when a worker is free: its compile result (an Invalid
   * condition, a new generation) reaches the status writer even while every worker is busy with another SyncConfig's
   * burst. Its status then waits until the work item has queued the namespaces it selects, so that a count of 0 is
   * never written in between. It runs in a watch callback: a failure is logged, not thrown (the work item queued
   * beside it compiles the SyncConfig again).
   */
  noticed(key: string): void {
    try {
      this.changed(key);
      if (this.d.registry.get(key)?.result.ok) this.d.statusWriter.heard({ kind: "queueing", cfgKey: key });
    } catch (e) {
      log.error("Unexpected error while compiling {key}: {error}", { key, error: String(e) });
    }
  }

  /** Recompiles the SyncConfig under `key` from the cache, or forgets it if it is gone. */
  changed(key: string): void {
    const { registry, ledger, statusWriter } = this.d;
    const sc = this.d.syncConfigs.get(key);
    // One being deleted (held by the prune finalizer) syncs nothing any more; pruning cleans up after it.
    const deleting = sc?.metadata?.deletionTimestamp !== undefined;
    this.d.pruning.observe(key, sc);
    if (!sc || deleting) {
      if (!registry.delete(key)) return;
      this.#specChanged();
      this.d.books.configGone(key);
      const pruning = this.d.pruning.enabled(key);
      if (!sc) log.info("SyncConfig {syncConfig} deleted", { syncConfig: key });
      else log.info("SyncConfig {syncConfig} is being deleted", { syncConfig: key, pruning });
      return;
    }
    keepMarker(key); // the objects it writes name it: by number in the caches
    const { entry, changed } = registry.compile(key, sc);
    if (changed) {
      this.d.executor.forgetConfig(key); // a new generation is tried at once, in every namespace
      this.d.view.forgetConfig(key); // and its ServiceAccount's rights asked again (how a team has a grant seen)
      this.#specChanged();
      const result = entry.result;
      if (!result.ok) log.error("{message}", { syncConfig: key, error: result.message, message: result.message });
      else {
        for (const p of result.config.syncItems.filter((i) => i.problem)) {
          const item = `.spec.syncItems[${p.index}]`;
          log.error("{message}", {
            syncConfig: key,
            item,
            error: p.problem,
            message: `SyncConfig ${key}: ${p.problem}`,
          });
        }
        this.#warnTemplatedDeletes(sc, result.config);
      }
    }
    statusWriter.heard({ kind: "compiled", cfgKey: key, valid: entry.result.ok });
    if (entry.result.ok) ledger.track(key);
    else ledger.drop(key);
  }

  /**
   * Recompiles (and queues the work item of) every SyncConfig whose change in the cache is not processed yet, then
   * returns the compiled SyncConfigs: a namespace event (priority 0) can run before the pending recompile of a
   * SyncConfig that was just changed or deleted, and must not act on the old spec.
   */
  catchUp(): Registry<NamespaceInfo> {
    const { registry } = this.d;
    // Also the SyncConfigs not compiled yet (a namespace event right after the start): pruning must know every
    // SyncConfig's items before it concludes that none names an object.
    const keys = new Set([...registry.keys(), ...[...this.d.syncConfigs.values()].map(keyOf)]);
    for (const key of keys) {
      const sc = this.d.syncConfigs.get(key);
      if (sc?.metadata?.deletionTimestamp && !registry.get(key)) continue; // being deleted: syncs nothing
      if (!registry.isCurrent(key, sc)) {
        this.changed(key);
        if (sc) this.d.enqueue({ kind: "syncConfig", key }, "syncconfig");
      }
    }
    return registry;
  }

  /**
   * Enqueues every namespace a valid SyncConfig selects and forgets its counts elsewhere. Yields to the event loop
   * every few hundred namespaces: selection over thousands of them must not hold up watches and other units.
   */
  async enqueueSelected(key: string): Promise<void> {
    const { registry, ledger, statusWriter: status } = this.d;
    const entry = registry.get(key);
    if (!entry?.result.ok) {
      status.heard({ kind: "queuedAll", cfgKey: key }); // nothing to queue (see noticed)
      return;
    }
    const { config } = entry.result;
    let n = 0;
    status.heard({ kind: "queueing", cfgKey: key });
    try {
      for (const ns of [...this.d.namespaces.values()]) {
        if (++n % 256 === 0) await new Promise((resolve) => setImmediate(resolve));
        if (registry.get(key) !== entry) return; // recompiled meanwhile: that run enqueues
        if (!registry.labelsKnownFor(ns, key)) continue; // its selection is not known: queued once read again
        if (ns.phase === "Active" && config.selector.selects(ns)) {
          status.heard({ kind: "queued", cfgKeys: [key], namespace: ns.name });
          this.d.enqueue({ kind: "namespace", name: ns.name }, "syncconfig");
        } else if (ledger.remove(key, ns.name)) status.heard({ kind: "changed", cfgKey: key });
      }
    } finally {
      // A newer generation compiled meanwhile is marked by its own watch callback and cleared by its own run.
      if (registry.get(key) === entry) status.heard({ kind: "queuedAll", cfgKey: key });
    }
  }

  /** The SyncConfig went: a new one under its key is warned again (see {@link #warnTemplatedDeletes}). */
  forgetConfig(cfgKey: string): void {
    this.#warnedTemplates.delete(cfgKey);
  }

  /**
   * A compiled SyncConfig came, changed or went: selection, the item index and the caches follow. A kind no item
   * names any more keeps its cache while a SyncConfig with pruning on created objects of it (they are pruned).
   */
  #specChanged(): void {
    this.d.freshness.changedEverywhere();
    const items = this.d.registry.items();
    const { caches } = this.d;
    caches.retain(
      (r) => items.hasSyncKind(r.group, r.kind) || caches.hasCreated(r, (k) => this.d.pruning.enabled(k)),
      (r) => items.hasDeleteKind(r.group, r.kind),
    );
  }

  /**
   * The Go espejo deletes a deleteItem's name as written; espejo replaces `${PROJECT_NAME}` in it, as in the other
   * items. A deleteItem that was a dormant no-op there deletes objects here: said once per SyncConfig and process,
   * in the log and as an Event on the SyncConfig.
   */
  #warnTemplatedDeletes(sc: SyncConfig, config: CompiledSyncConfig): void {
    if (this.#warnedTemplates.get(config.key) === config.uid) return;
    const templated = config.deleteItems.filter((d) => !d.problem && d.name.includes(PROJECT_NAME_PLACEHOLDER));
    if (!templated.length) return;
    this.#warnedTemplates.set(config.key, config.uid);
    const fields = templated.map((d) => `.spec.deleteItems[${d.index}] (${d.kind} ${d.name})`).join(", ");
    const message = `SyncConfig ${config.key}: ${fields}: \${PROJECT_NAME} is replaced by each namespace's name, so ` +
      "these objects are deleted in every selected namespace; the Go espejo deleted the name as written (a no-op)";
    log.warn("{message}", { syncConfig: config.key, message });
    this.d.events.emit(refOf(sc), "Warning", "TemplatedDeleteItems", message);
  }
}

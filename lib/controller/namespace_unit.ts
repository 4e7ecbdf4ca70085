/**
 * The unit of work: one namespace synced against every valid SyncConfig that selects it. Folds the results into the
 * status ledger (logging a failure when it first appears), schedules the unit's retry, tells the freshness book
 * whether a pass may skip the namespace next time, and counts the unit in the metrics.
 */
import { getLogger } from "@logtape/logtape";
import type { Metrics } from "../metrics/metrics.ts";
import { contradictions } from "../model/contradictions.ts";
import type { CompiledSyncConfig } from "../model/syncconfig.ts";
import type { Executor } from "../sync/executor.ts";
import { syncConfigInNamespace } from "../sync/namespace_sync.ts";
import { RetryBook } from "../sync/retry_book.ts";
import type { ConfigChanges } from "./config_changes.ts";
import type { Freshness } from "./freshness.ts";
import type { PassTracker } from "./pass.ts";
import type { Pruning } from "./pruning.ts";
import type { WorkQueue } from "./queue.ts";
import type { StatusLedger } from "./status_ledger.ts";
import type { StatusWriter } from "./status_writer.ts";
import type { SyncEvents } from "./sync_events.ts";
import type { NamespaceLookup } from "./watches.ts";
import { PRIORITY, type Trigger, workKey } from "./work_items.ts";

const log = getLogger(["espejo", "controller"]);

export interface NamespaceUnitDeps {
  namespaces: NamespaceLookup;
  configs: ConfigChanges;
  ledger: StatusLedger;
  statusWriter: StatusWriter;
  syncEvents: SyncEvents;
  freshness: Freshness;
  queue: WorkQueue<string, Trigger>;
  pass: PassTracker;
  metrics: Metrics;
  executor: () => Executor;
  pruning: Pruning;
}

export class NamespaceUnit {
  /** Namespace units to retry after a transient failure (see lib/sync/retry_book.ts). */
  readonly #retries = new RetryBook<undefined>();

  constructor(private readonly d: NamespaceUnitDeps) {}

  /** Syncs namespace `name` against every valid SyncConfig that selects it. */
  async run(name: string, trigger: Trigger): Promise<void> {
    const { ledger, freshness } = this.d;
    const status = this.d.statusWriter.schedule;
    const started = performance.now();
    const inputsAt = freshness.begin();
    let retry = false;
    let failed = true;
    let wrote = false;
    let retryInMs: number | undefined;
    try {
      // One selection per unit: which SyncConfigs select the namespace is decided once, from its labels as cached
      // now, for the writes and for the prunes. Labels that change meanwhile queue the namespace again (its watch).
      const ns = this.d.namespaces.get(name);
      const registry = this.d.configs.fresh();
      const selecting: ReadonlySet<string> = new Set(ns ? registry.selecting(ns) : []);
      // What to prune is decided now too (and confirmed after the writes): an object this unit writes is never one
      // it prunes.
      const prunes = ns ? await this.d.pruning.decide(ns, selecting) : undefined;
      // Configs that select the namespace are synced concurrently (distinct objects; the API server serializes
      // writes per object), which keeps the latency of a new namespace near one round trip instead of M*K.
      const targeted: CompiledSyncConfig[] = [];
      for (const [cfgKey, { result }] of registry.entries()) {
        if (!result.ok) continue;
        if (selecting.has(cfgKey)) targeted.push(result.config);
        else if (ledger.remove(cfgKey, name)) status.markDirty(cfgKey);
      }
      // Items of these SyncConfigs that contradict each other (one deletes what another syncs) are decided here,
      // once, for all of them: neither is performed, rather than raced against each other on every sync.
      const contested = contradictions(targeted, name);
      const executor = this.d.executor();
      const recordChange = this.d.syncEvents.recordChange.bind(this.d.syncEvents);
      const results = await Promise.all(
        targeted.map((cfg) => syncConfigInNamespace(executor, cfg, name, recordChange, contested.get(cfg.key))),
      );
      // What SyncConfigs with pruning on created here and no longer want (after the writes: an item renamed in the
      // same generation is created under its new name first).
      this.d.configs.fresh(); // an edit that came in during the writes (a revert, another SyncConfig's claim) counts
      if (ns && prunes) {
        const pruned = await this.d.pruning.pruneNamespace(ns, selecting, prunes);
        retry ||= pruned.retry;
        wrote ||= pruned.wrote;
        if (pruned.retryInMs !== undefined) retryInMs = pruned.retryInMs;
      }
      failed = false;
      targeted.forEach((cfg, i) => {
        const { outcome, details } = results[i];
        retry ||= results[i].retry;
        failed ||= outcome.failed > 0;
        wrote ||= results[i].wrote;
        const wait = results[i].retryInMs;
        if (wait !== undefined) retryInMs = Math.min(retryInMs ?? wait, wait);
        // Another worker may have seen the SyncConfig deleted, made invalid or changed meanwhile: its counts are gone,
        // or belong to the new generation, whose own unit of this namespace is queued.
        const current = registry.get(cfg.key)?.result;
        if (!current?.ok || current.config !== cfg) return;
        const { changed, before } = ledger.record(cfg.key, name, outcome);
        if (!changed) return;
        // A failure is logged when it first appears, not on every pass that repeats it.
        outcome.errors.forEach((e, j) => {
          if (before?.errors.includes(e)) return;
          const { message, fields } = details[j];
          log.error("{message}", { syncConfig: cfg.key, namespace: name, ...fields, message });
        });
        status.markDirty(cfg.key);
      });
    } finally {
      // Whatever happened above, the unit ends: retries scheduled, metrics counted, the pass told.
      status.finished(name);
      this.d.statusWriter.kick();
      freshness.synced(name, inputsAt, !wrote && !failed && !retry && retryInMs === undefined, Date.now());
      this.#scheduleRetry(name, retry, retryInMs);
      const seconds = (performance.now() - started) / 1000;
      const m = this.d.metrics;
      m.syncs.inc({ trigger, result: failed ? "failed" : "success" });
      m.syncDuration.observe({ trigger }, seconds);
      m.compat.reconciled(trigger, failed, seconds);
      // Whatever the trigger: a namespace event may have taken the pass's unit over.
      this.d.pass.finished(name);
    }
  }

  /** A transient failure backs the namespace off; an item waiting for its own retry brings the unit back then. */
  #scheduleRetry(name: string, retry: boolean, retryInMs: number | undefined): void {
    const key = workKey({ kind: "namespace", name });
    if (retry) {
      const backoff = this.#retries.failed(key, "", undefined, false, { namespace: name });
      this.d.queue.addAfter(key, PRIORITY.retry, Math.min(backoff, retryInMs ?? Infinity), "retry");
    } else {
      this.#retries.succeeded(key);
      if (retryInMs !== undefined) this.d.queue.addAfter(key, PRIORITY.retry, retryInMs, "retry");
    }
  }

  forgetNamespace(name: string): void {
    this.#retries.forgetNamespace(name);
  }
}

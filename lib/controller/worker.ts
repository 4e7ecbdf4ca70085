/**
 * The workers: each takes the most urgent key from the queue, runs its work (a namespace unit, a SyncConfig change,
 * a SyncConfig's pruning bookkeeping, a status write due again), and then, in one place, keeps the books of what it
 * came to: the status ledger (a failure logged when it first appears), the status writer, freshness, the metrics and
 * the pass; and asks the retry policy (lib/sync/retry_policy.ts, `afterWork`) whether and when the key comes back,
 * which the queue performs (its back-off, its timers). An exception is a transient failure like any other.
 */
import { getLogger } from "@logtape/logtape";
import { setImmediate } from "node:timers";
import type { Metrics } from "../metrics/metrics.ts";
import { afterWork, type WorkFacts } from "../sync/retry_policy.ts";
import type { ConfigChanges } from "./config_changes.ts";
import type { Freshness } from "./freshness.ts";
import type { NamespaceUnit, UnitResult } from "./namespace_unit.ts";
import type { PassTracker } from "./pass.ts";
import type { PruneFinalizer } from "./prune_finalizer.ts";
import type { WorkQueue } from "./queue.ts";
import type { StatusLedger } from "./status_ledger.ts";
import type { StatusWriter } from "./status_writer.ts";
import { PRIORITY, type Trigger, type WorkItem, workItemOf, workKey } from "./work_items.ts";

const log = getLogger(["espejo", "controller"]);

export interface WorkerDeps {
  queue: Pick<WorkQueue<string, Trigger>, "get" | "done" | "addAfter" | "addRateLimited" | "forget" | "idle">;
  units: Pick<NamespaceUnit, "run">;
  configs: Pick<ConfigChanges, "process">;
  finalizer: Pick<PruneFinalizer, "settle">;
  ledger: StatusLedger;
  statusWriter: Pick<StatusWriter, "heard">;
  freshness: Freshness;
  pass: PassTracker;
  metrics: Metrics;
  /** Before each key is taken (the gauges of queue and caches). */
  beforeTake?: () => void;
  /** When a key is taken, and after each key is done; `idle`: nothing else is queued or running (memory_return.ts). */
  taken?: () => void;
  afterWork?: (idle: boolean) => void;
}

const FAILED: WorkFacts = { retry: true };

export class Workers {
  /** Start times of the work in progress, for liveness. */
  readonly #inFlight = new Set<{ since: number }>();
  #started = false;

  constructor(private readonly d: WorkerDeps) {}

  /** Runs `count` workers until the queue shuts down; each finishes the work in progress before it returns. */
  async run(count: number): Promise<void> {
    this.#started = true;
    await Promise.all(Array.from({ length: count }, () => this.#worker()));
  }

  /** How long the oldest work in progress has been running, 0 when none is (for liveness). */
  get idleForMs(): number {
    // A standby (no leadership yet) has queued work but no worker: that is waiting, not wedged.
    if (!this.#started) return 0;
    let oldest = 0;
    for (const unit of this.#inFlight) oldest = Math.max(oldest, Date.now() - unit.since);
    return oldest;
  }

  async #worker(): Promise<void> {
    const { queue, metrics } = this.d;
    for (;;) {
      this.d.beforeTake?.();
      const next = await queue.get();
      if (!next) return;
      this.d.taken?.();
      const { key } = next;
      const trigger = next.tag ?? "interval";
      metrics.queueWait.observe({ trigger }, next.waitedMs / 1000);
      metrics.compat.taken(key, trigger, next.waitedMs / 1000);
      const unit = { since: Date.now() };
      this.#inFlight.add(unit);
      try {
        const item = workItemOf(key);
        // A status write keeps its own count of failures (the writer forgets it once a write went through).
        if (item.kind === "status") this.d.statusWriter.heard({ kind: "retryDue", cfgKey: item.key });
        else this.#requeue(item, await this.#process(item, trigger));
      } finally {
        queue.done(key);
        metrics.compat.finished(key);
        this.#inFlight.delete(unit);
        this.d.afterWork?.(queue.idle);
      }
      // A unit whose awaits all resolve at once (nothing to write) never lets the event loop read sockets; without
      // this, a watch event for a new namespace would wait for the whole pass instead of one unit.
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  /** Runs one work item; what it came to for the queue. A bug or an unexpected reply must not stop the worker. */
  async #process(item: Exclude<WorkItem, { kind: "status" }>, trigger: Trigger): Promise<WorkFacts> {
    if (item.kind === "namespace") return await this.#unit(item.name, trigger);
    try {
      if (item.kind === "pruning") return await this.d.finalizer.settle(item.key);
      const settled = await this.d.configs.process(item.key);
      // What a SyncConfig's item leaves to try again is its pruning's settle (a finalizer patch): pruning's own item
      // retries it, where retrying this one would queue every namespace the SyncConfig selects again.
      this.#requeue({ kind: "pruning", key: item.key }, settled);
      return { retry: false };
    } catch (e) {
      log.error("Unexpected error while processing {key}: {error}", { key: workKey(item), error: String(e) });
      return FAILED;
    }
  }

  /** A namespace unit, and the books of what it came to (also when it threw). */
  async #unit(name: string, trigger: Trigger): Promise<WorkFacts> {
    const started = performance.now();
    const inputsAt = this.d.freshness.begin();
    let result: UnitResult | undefined;
    try {
      result = await this.d.units.run(name);
    } catch (e) {
      log.error("Unexpected error while processing {key}: {error}", { key: `ns/${name}`, error: String(e) });
    }
    const { ledger, statusWriter, metrics } = this.d;
    for (const cfgKey of result?.unselected ?? []) {
      if (ledger.remove(cfgKey, name)) statusWriter.heard({ kind: "changed", cfgKey });
    }
    for (const { cfgKey, outcome, details } of result?.configs ?? []) {
      const { changed, before } = ledger.record(cfgKey, name, outcome);
      if (!changed) continue;
      // A failure is logged when it first appears, not on every pass that repeats it.
      outcome.errors.forEach((e, j) => {
        if (before?.errors.includes(e)) return;
        const { message, fields } = details[j];
        log.error("{message}", { syncConfig: cfgKey, namespace: name, ...fields, message });
      });
      statusWriter.heard({ kind: "changed", cfgKey });
    }
    statusWriter.heard({ kind: "finished", namespace: name, stale: result?.stale });
    const failed = !result || result.failed;
    const facts = result ?? FAILED;
    const noop = !failed && !facts.retry && facts.retryInMs === undefined && !result?.wrote && !result?.waiting;
    this.d.freshness.synced(name, inputsAt, noop, Date.now());
    const seconds = (performance.now() - started) / 1000;
    metrics.syncs.inc({ trigger, result: failed ? "failed" : "success" });
    metrics.syncDuration.observe({ trigger }, seconds);
    metrics.compat.reconciled(trigger, failed, seconds);
    // Whatever the trigger: a namespace event may have taken the pass's unit over.
    this.d.pass.finished(name);
    return facts;
  }

  /** Has the queue perform the retry policy's decision for `item`: forget it, bring it back, or back it off. */
  #requeue(item: WorkItem, facts: WorkFacts): void {
    const key = workKey(item);
    const decision = afterWork(facts);
    if (decision.kind === "backoff") {
      this.d.queue.addRateLimited(key, PRIORITY.retry, decision, "retry");
      return;
    }
    this.d.queue.forget(key);
    if (decision.kind === "after") this.d.queue.addAfter(key, PRIORITY.retry, decision.ms, "retry");
  }
}

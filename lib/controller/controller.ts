/**
 * The controller: caches fed by watches, a prioritized queue of keys, and `--concurrent-syncs` workers that each
 * sync one namespace (or one SyncConfig's bookkeeping) at a time.
 *
 * Two loops feed the queue. Watch events enqueue the namespace that changed (priority 0) or the SyncConfig that
 * changed (priority 1, which then enqueues every namespace it selects at priority 1). The timer loop enqueues every
 * targeted namespace at priority 2 every `--reconcile-interval`. The queue never hands out a key twice at once, so
 * the "sync mutex" is held per namespace: two syncs never write the same namespace at the same time, and a new
 * namespace waits for at most one unit of a full pass (the next free worker takes the most urgent key). Statuses are
 * written beside the workers, each as soon as its SyncConfig's own work is done (see StatusSchedule), and ahead of
 * other requests at the rate limiter.
 */
import { getLogger } from "@logtape/logtape";
import { setImmediate } from "node:timers";
import type { KubeClient } from "../kube/client.ts";
import { Discovery, type ResourceInfo } from "../kube/discovery.ts";
import { Reflector } from "../kube/reflector.ts";
import { sleep } from "../kube/backoff.ts";
import { EventRecorder } from "../kube/events.ts";
import { Freshness } from "./freshness.ts";
import { Executor } from "../sync/executor.ts";
import type { Metrics } from "../metrics/metrics.ts";
import { deepEqual } from "../kube/objects.ts";
import { WorkQueue } from "./queue.ts";
import { PRIORITIES, PRIORITY, type Trigger, type WorkItem, workItemOf, workKey } from "./work_items.ts";
import { PassTracker } from "./pass.ts";
import { Registry } from "./registry.ts";
import { StatusLedger } from "./status_ledger.ts";
import { RetryBook } from "../sync/retry_book.ts";
import { syncConfigInNamespace } from "../sync/namespace_sync.ts";
import { SyncEvents } from "./sync_events.ts";
import { ResourceCaches } from "../sync/resource_caches.ts";
import type { StatusSchedule } from "./status_schedule.ts";
import { StatusWriter, SYNCCONFIG_API } from "./status_writer.ts";
import type { NamespaceFacts } from "../model/selector.ts";
import { type CompiledSyncConfig, keyOf, type SyncConfig } from "../model/syncconfig.ts";
import { PROJECT_NAME_PLACEHOLDER } from "../model/template.ts";

const log = getLogger(["espejo", "controller"]);

/** How long the status writer waits after a kick, to write once for units that end together. */

export interface NamespaceInfo extends NamespaceFacts {
  phase: string;
}

export interface ControllerOptions {
  client: KubeClient;
  /** Only SyncConfigs in this namespace are read; empty means all namespaces (WATCH_NAMESPACE). */
  watchNamespace: string;
  reconcileIntervalMs: number;
  /** Namespaces synced at the same time (`--concurrent-syncs`); default 1. */
  concurrentSyncs?: number;
  /** `--full-compare-interval`: see {@link Freshness}; 0 compares every namespace in every pass. */
  fullCompareIntervalMs?: number;
  metrics: Metrics;
  /** Resolves once this process may write (leader election); default: at once. */
  leadership?: (signal: AbortSignal) => Promise<void>;
  now?: () => Date;
}

export class Controller {
  readonly namespaces: Reflector<NamespaceInfo>;
  readonly syncConfigs: Reflector<SyncConfig>;
  readonly queue = new WorkQueue<string, Trigger>(PRIORITIES);
  /** By key; a SyncConfig deleted and created again under the same key has a new uid and starts at generation 1. */
  readonly #compiled = new Registry<NamespaceInfo>();
  readonly #ledger = new StatusLedger();
  /** Which statuses to write, once their SyncConfig's own work is done (see StatusSchedule). */
  readonly #statusWriter: StatusWriter;
  /** When each SyncConfig's status may be written (its own work done). */
  readonly #status: StatusSchedule;
  /** Namespace units to retry after a transient failure (see lib/sync/retry_book.ts). */
  readonly #retries = new RetryBook<undefined>();
  /** Objects written per SyncConfig since its status was last flushed, for the summary event. */
  readonly #events: EventRecorder;
  readonly #syncEvents: SyncEvents;
  readonly #freshness: Freshness;
  /** SyncConfigs (by uid) already warned about templated deleteItems. */
  readonly #warnedTemplates = new Set<string>();
  /** The interval pass in progress: namespaces still to sync, and when it started (for its metrics). */
  readonly #pass = new PassTracker((wall, cpu) => {
    this.opts.metrics.passDuration.observe(wall);
    this.opts.metrics.passCpu.observe(cpu);
  });
  #caches?: ResourceCaches;
  #executor?: Executor;
  #workerStarted = false;
  /** Start times of the units being processed, for liveness. */
  readonly #inFlight = new Set<{ since: number }>();

  constructor(private readonly opts: ControllerOptions) {
    this.#events = new EventRecorder(opts.client);
    this.#syncEvents = new SyncEvents(this.#events);
    this.#freshness = new Freshness(opts.fullCompareIntervalMs ?? 600_000);
    this.namespaces = new Reflector<NamespaceInfo>(opts.client, {
      path: "/api/v1/namespaces",
      decode: (raw) => ({
        name: raw.metadata?.name ?? "",
        labels: raw.metadata?.labels ?? {},
        phase: (raw.status as { phase?: string } | undefined)?.phase ?? "Active",
      }),
      onChange: (type, ns, old) => this.#onNamespace(type, ns, old),
      onWatchRestart: (reason) => this.#watchRestart("namespaces", reason),
      onError: (e, ms) => this.#watchError("namespaces", e, ms),
    });
    const scPath = opts.watchNamespace
      ? `${SYNCCONFIG_API}/namespaces/${opts.watchNamespace}/syncconfigs`
      : `${SYNCCONFIG_API}/syncconfigs`;
    this.syncConfigs = new Reflector<SyncConfig>(opts.client, {
      path: scPath,
      decode: (raw) => {
        const metadata = { ...raw.metadata };
        delete metadata.managedFields;
        return { ...raw, metadata } as SyncConfig;
      },
      onChange: (type, sc, old) => {
        if (type === "deleted" || sc.metadata?.generation !== old?.metadata?.generation) {
          // Also when one appears or goes: whether an object's owner exists decides whether it may be adopted.
          this.#freshness.changedEverywhere();
          this.#enqueue({ kind: "syncConfig", key: keyOf(sc) }, "syncconfig");
        }
      },
      onWatchRestart: (reason) => this.#watchRestart("syncconfigs", reason),
      onError: (e, ms) => this.#watchError("syncconfigs", e, ms),
    });
    this.#statusWriter = new StatusWriter({
      client: opts.client,
      syncConfigs: this.syncConfigs,
      compiled: (key) => this.#compiled.get(key),
      outcomes: (key) => this.#ledger.outcomes(key),
      events: this.#syncEvents,
      metrics: opts.metrics,
      now: opts.now,
    });
    this.#status = this.#statusWriter.schedule;
  }

  /** True once the namespace and SyncConfig caches hold their first list. */
  get ready(): boolean {
    return this.namespaces.hasSynced && this.syncConfigs.hasSynced;
  }

  /** How long the oldest unit in progress has been running, 0 when none is (for liveness). */
  get idleForMs(): number {
    // A standby (no leadership yet) has queued work but no worker: that is waiting, not wedged.
    if (!this.#workerStarted) return 0;
    let oldest = 0;
    for (const unit of this.#inFlight) oldest = Math.max(oldest, Date.now() - unit.since);
    return oldest;
  }

  /** Runs until `signal` aborts; finishes the unit in progress before returning. */
  async run(signal: AbortSignal): Promise<void> {
    const client = this.opts.client;
    this.#caches = new ResourceCaches(client, signal, {
      onManagedChange: (ns) => ns && this.#namespaceChanged(ns),
      // Anyone can label their objects: only those an item names may cost more than their identity.
      wants: (r, ns, name) => this.#itemOwners(r, ns, name).length > 0,
      // A deleteItems candidate appeared or went: only the next pass needs to look (no sync per foreign object),
      // and only if a deleteItem names it (busy ConfigMaps elsewhere in the namespace do not count).
      onCandidateChange: (ns, name) => this.#compiled.namedByDeleteItem(ns, name) && this.#freshness.changedIn(ns),
      onWatchRestart: (r, reason) => this.#watchRestart(r, reason),
      onError: (r, e, ms) => this.#watchError(r, e, ms),
    });
    this.#executor = new Executor(client, new Discovery(client), this.#caches, {
      onWrite: (action) => this.opts.metrics.writes.inc({ action }),
      // The owner annotation holds an object only for a SyncConfig that has an item for it (see ItemIndex).
      claims: (owner, r, ns, name) => this.#itemOwners(r, ns, name).includes(owner),
      onFight: (syncconfig) => this.opts.metrics.fightRestores.inc({ syncconfig }),
      maxFightDelayMs: this.opts.reconcileIntervalMs || 600_000,
    });
    signal.addEventListener("abort", () => this.queue.shutdown(), { once: true });
    this.namespaces.run(signal);
    this.syncConfigs.run(signal);
    await Promise.race([Promise.all([this.namespaces.synced, this.syncConfigs.synced]), aborted(signal)]);
    if (signal.aborted) return;
    log.info("Caches synced: {namespaces} namespaces, {syncConfigs} SyncConfigs", {
      namespaces: this.namespaces.size,
      syncConfigs: this.syncConfigs.size,
    });
    await (this.opts.leadership?.(signal) ?? Promise.resolve());
    if (signal.aborted) return;
    for (const sc of this.syncConfigs.values()) this.#enqueue({ kind: "syncConfig", key: keyOf(sc) }, "syncconfig");
    const timer = this.#intervalLoop(signal);
    const statusWriter = this.#statusWriter.run(signal);
    const workers = Math.max(1, this.opts.concurrentSyncs ?? 1);
    await Promise.all(Array.from({ length: workers }, () => this.#worker()));
    await timer;
    this.#statusWriter.kick(); // the last statuses of the drained units
    await statusWriter;
  }

  async #worker(): Promise<void> {
    this.#workerStarted = true;
    for (;;) {
      this.#updateGauges();
      const next = await this.queue.get();
      if (!next) return;
      const { key, priority } = next;
      const trigger = next.tag ?? "interval";
      const item = workItemOf(key);
      this.opts.metrics.queueWait.observe({ trigger }, next.waitedMs / 1000);
      this.opts.metrics.compat.taken(next.waitedMs / 1000);
      const unit = { since: Date.now() };
      this.#inFlight.add(unit);
      try {
        if (item.kind === "syncConfig") {
          this.#syncConfigChanged(item.key);
          await this.#enqueueSelected(item.key);
        } else await this.#syncNamespace(item.name, trigger);
      } catch (e) {
        // A bug or an unexpected reply must not stop the worker: log it and retry the key later.
        log.error("Unexpected error while processing {key}: {error}", { key, error: String(e) });
        this.queue.addAfter(key, priority, 5_000, "retry");
      } finally {
        this.queue.done(key);
        this.#inFlight.delete(unit);
      }
      // A unit whose awaits all resolve at once (nothing to write) never lets the event loop read sockets; without
      // this, a watch event for a new namespace would wait for the whole pass instead of one unit.
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  async #intervalLoop(signal: AbortSignal): Promise<void> {
    if (this.opts.reconcileIntervalMs <= 0) return; // passes turned off
    while (!signal.aborted) {
      await sleep(this.opts.reconcileIntervalMs, signal);
      if (signal.aborted) return;
      // The previous pass is still running (queued or in progress).
      if (this.#pass.running) continue;
      // A SyncConfig change whose watch event was overtaken by our own status write's reply is caught here.
      this.#freshCompiled();
      const now = Date.now();
      let unchanged = 0;
      this.#pass.start(function* (this: Controller) {
        for (const ns of this.namespaces.values()) {
          if (!this.#targetedByAny(ns)) continue;
          if (this.#freshness.isFresh(ns.name, now)) unchanged++;
          else {
            this.#status.queued(this.#selectingConfigs(ns), ns.name);
            this.#enqueue({ kind: "namespace", name: ns.name }, "interval");
            yield ns.name;
          }
        }
      }.bind(this));
      if (unchanged) this.opts.metrics.syncs.inc({ trigger: "interval", result: "unchanged" }, unchanged);
      // Caches pick up what watches missed, but a status must be refreshed after a pass too.
      for (const key of this.#compiled.keys()) this.#status.markDirty(key);
      this.#statusWriter.kick();
    }
  }

  #onNamespace(type: string, ns: NamespaceInfo, old: NamespaceInfo | undefined): void {
    if (type === "deleted") {
      this.#freshness.forget(ns.name);
      this.#compiled.forgetNamespace(ns.name);
      for (const cfgKey of this.#ledger.forgetNamespace(ns.name)) this.#status.markDirty(cfgKey);
      this.#retries.forgetNamespace(ns.name);
      this.#executor?.forgetNamespace(ns.name);
      this.#status.finished(ns.name);
      this.#statusWriter.kick();
      return;
    }
    // Only what selection depends on matters; an annotation change costs nothing.
    if (old && old.phase === ns.phase && deepEqual(old.labels, ns.labels)) return;
    this.#namespaceChanged(ns.name);
  }

  #namespaceChanged(name: string): void {
    this.#freshness.changedIn(name);
    if (this.#compiled.size === 0) return;
    const ns = this.namespaces.get(name);
    // A namespace no SyncConfig selects or counted before has nothing to sync (a SyncConfig that changes queues
    // what it selects itself).
    if (ns && !this.#targetedByAny(ns)) return;
    if (ns) this.#status.queued(this.#selectingConfigs(ns), name);
    this.#enqueue({ kind: "namespace", name }, "namespace");
  }

  #targetedByAny(ns: NamespaceInfo): boolean {
    if (this.#selectingConfigs(ns).length) return true;
    return this.#ledger.counts(ns.name);
  }

  /** Keys of the valid SyncConfigs that select `ns` (from the index). */
  #selectingConfigs(ns: NamespaceInfo): string[] {
    return this.#compiled.selecting(ns);
  }

  /** A SyncConfig was created, changed or deleted: recompile it (see {@link Controller.#enqueueSelected}). */
  #syncConfigChanged(key: string): void {
    const sc = this.syncConfigs.get(key);
    if (!sc) {
      if (!this.#compiled.delete(key)) return;
      this.#specChanged();
      this.#ledger.drop(key);
      this.#syncEvents.forget(key);
      this.#status.forget(key);
      this.#executor?.forgetConfig(key);
      for (const state of ["synchronized", "deleted", "failed"]) {
        this.opts.metrics.items.remove({ syncconfig: key, state });
      }
      log.info("SyncConfig {syncConfig} deleted; objects it created are left in place", { syncConfig: key });
      return;
    }
    const { entry, changed } = this.#compiled.compile(key, sc);
    if (changed) {
      this.#executor?.forgetConfig(key); // a new generation is tried at once, in every namespace
      this.#specChanged();
      const result = entry.result;
      if (!result.ok) log.warn("{message}", { syncConfig: key, message: result.message });
      else {
        for (const p of result.config.syncItems.concat().filter((i) => i.problem)) {
          log.warn("{message}", { syncConfig: key, message: `SyncConfig ${key}: ${p.problem}` });
        }
        this.#warnTemplatedDeletes(sc, result.config);
      }
    }
    this.#status.markDirty(key);
    this.#statusWriter.kick();
    if (!entry.result.ok) this.#ledger.drop(key);
    else this.#ledger.track(key);
  }

  /**
   * The Go espejo deletes a deleteItem's name as written; espejo replaces `${PROJECT_NAME}` in it, as in the other
   * items. A deleteItem that was a dormant no-op there deletes objects here: said once per SyncConfig and process,
   * in the log and as an Event on the SyncConfig.
   */
  #warnTemplatedDeletes(sc: SyncConfig, config: CompiledSyncConfig): void {
    if (this.#warnedTemplates.has(config.uid)) return;
    const templated = config.deleteItems.filter((d) => !d.problem && d.name.includes(PROJECT_NAME_PLACEHOLDER));
    if (!templated.length) return;
    this.#warnedTemplates.add(config.uid);
    const fields = templated.map((d) => `.spec.deleteItems[${d.index}] (${d.kind} ${d.name})`).join(", ");
    const message = `SyncConfig ${config.key}: ${fields}: \${PROJECT_NAME} is replaced by each namespace's name, so ` +
      "these objects are deleted in every selected namespace; the Go espejo deleted the name as written (a no-op)";
    log.warn("{message}", { syncConfig: config.key, message });
    this.#events.emit(
      {
        namespace: config.namespace,
        name: config.name,
        uid: typeof sc.metadata?.uid === "string" ? sc.metadata.uid : "",
      },
      "Warning",
      "TemplatedDeleteItems",
      message,
    );
  }

  /**
   * Enqueues every namespace a valid SyncConfig selects and forgets its counts elsewhere. Yields to the event loop
   * every few hundred namespaces: selection over thousands of them must not hold up watches and other units.
   */
  async #enqueueSelected(key: string): Promise<void> {
    const entry = this.#compiled.get(key);
    if (!entry?.result.ok) return;
    const { config } = entry.result;
    let n = 0;
    this.#status.queueing(key, true);
    try {
      for (const ns of [...this.namespaces.values()]) {
        if (++n % 256 === 0) await new Promise((resolve) => setImmediate(resolve));
        if (this.#compiled.get(key) !== entry) return; // recompiled meanwhile: that run enqueues
        if (ns.phase === "Active" && config.selector.selects(ns)) {
          this.#status.queued([key], ns.name);
          this.#enqueue({ kind: "namespace", name: ns.name }, "syncconfig");
        } else if (this.#ledger.remove(key, ns.name)) this.#status.markDirty(key);
      }
    } finally {
      this.#status.queueing(key, false);
      this.#statusWriter.kick();
    }
  }

  /** A compiled SyncConfig came, changed or went: selection, the item index and the caches follow. */
  #specChanged(): void {
    this.#freshness.changedEverywhere();
    const items = this.#compiled.items();
    this.#caches?.retain(
      (r) => items.hasSyncKind(r.group, r.kind),
      (r) => items.hasDeleteKind(r.group, r.kind),
    );
  }

  /** Keys of the valid SyncConfigs that select `namespace` and have a syncItem naming this object. */
  #itemOwners(r: ResourceInfo, namespace: string, name: string): string[] {
    return this.#compiled.itemOwners(r, this.namespaces.get(namespace), name);
  }

  /** Bytes of object content (JSON text) held by the managed-object caches, for tests and the bench. */
  retainedContentBytes(): number {
    return this.#caches?.retainedContentBytes() ?? 0;
  }

  #enqueue(item: WorkItem, trigger: Trigger): void {
    this.queue.add(workKey(item), PRIORITY[trigger], trigger);
  }

  /** Syncs one namespace against every valid SyncConfig: the unit of work. */
  async #syncNamespace(name: string, trigger: Trigger): Promise<void> {
    const started = performance.now();
    const inputsAt = this.#freshness.begin();
    let retry = false;
    let failed = true;
    let wrote = false;
    let retryInMs: number | undefined;
    try {
      const ns = this.namespaces.get(name);
      // Configs that select the namespace are synced concurrently (distinct objects; the API server serializes
      // writes per object), which keeps the latency of a new namespace near one round trip instead of M*K.
      const targeted: CompiledSyncConfig[] = [];
      const compiled = this.#freshCompiled();
      const selecting = new Set(ns ? this.#selectingConfigs(ns) : []);
      for (const [cfgKey, { result }] of compiled.entries()) {
        if (!result.ok) continue;
        if (selecting.has(cfgKey)) targeted.push(result.config);
        else if (this.#ledger.remove(cfgKey, name)) this.#status.markDirty(cfgKey);
      }
      const results = await Promise.all(
        targeted.map((cfg) =>
          syncConfigInNamespace(this.#executor!, cfg, name, (k, a, ns) => this.#syncEvents.recordChange(k, a, ns))
        ),
      );
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
        const current = this.#compiled.get(cfg.key)?.result;
        if (!current?.ok || current.config !== cfg) return;
        const { changed, before } = this.#ledger.record(cfg.key, name, outcome);
        if (!changed) return;
        // A failure is logged when it first appears, not on every pass that repeats it.
        outcome.errors.forEach((e, j) => {
          if (!before?.errors.includes(e)) {
            log.warn("{message}", { syncConfig: cfg.key, namespace: name, message: details[j] });
          }
        });
        this.#status.markDirty(cfg.key);
      });
    } finally {
      // Whatever happened above, the unit ends: retries scheduled, metrics counted, the pass told.
      this.#status.finished(name);
      this.#statusWriter.kick();
      this.#freshness.synced(name, inputsAt, !wrote && !failed && !retry && retryInMs === undefined, Date.now());
      const key = `ns/${name}`;
      if (retry) {
        const backoff = this.#retries.failed(key, "", undefined, false, { namespace: name });
        this.queue.addAfter(key, PRIORITY.retry, Math.min(backoff, retryInMs ?? Infinity), "retry");
      } else {
        this.#retries.succeeded(key);
        if (retryInMs !== undefined) this.queue.addAfter(key, PRIORITY.retry, retryInMs, "retry");
      }
      const seconds = (performance.now() - started) / 1000;
      this.opts.metrics.syncs.inc({ trigger, result: failed ? "failed" : "success" });
      this.opts.metrics.syncDuration.observe({ trigger }, seconds);
      this.opts.metrics.compat.reconciled(trigger, failed, seconds);
      // Whatever the trigger: a namespace event may have taken the pass's unit over.
      this.#pass.finished(name);
    }
  }

  /**
   * The compiled SyncConfigs, brought up to date with the cache first: a namespace event (priority 0) can run
   * before the pending recompile of a SyncConfig that was just changed or deleted, and must not act on the old spec.
   */
  #freshCompiled(): Registry<NamespaceInfo> {
    for (const key of this.#compiled.keys()) {
      const sc = this.syncConfigs.get(key);
      if (!this.#compiled.isCurrent(key, sc)) {
        this.#syncConfigChanged(key);
        if (sc) this.#enqueue({ kind: "syncConfig", key }, "syncconfig");
      }
    }
    return this.#compiled;
  }

  #updateGauges(): void {
    const m = this.opts.metrics;
    m.queueDepth.set(this.queue.length());
    m.compat.queueDepth(this.queue.length());
    m.cacheObjects.set({ cache: "namespaces" }, this.namespaces.size);
    m.cacheObjects.set({ cache: "syncconfigs" }, this.syncConfigs.size);
    for (const [cache, size] of Object.entries(this.#caches?.sizes() ?? {})) m.cacheObjects.set({ cache }, size);
  }

  #watchRestart(resource: string, reason: string): void {
    this.opts.metrics.watchRestarts.inc({ resource });
    log.info("Watch of {resource} restarted: {reason}", { resource, reason });
  }

  #watchError(resource: string, error: unknown, retryInMs: number): void {
    this.opts.metrics.watchRestarts.inc({ resource });
    log.warn("Watch of {resource} failed, retrying in {retryInMs} ms: {error}", {
      resource,
      retryInMs,
      error: error instanceof Error ? error.message : String(error),
    });
  }
}

/** Compiles a SyncConfig; an unexpected exception (a bug, an input nobody foresaw) makes it Invalid, never stuck. */
function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((r) => signal.addEventListener("abort", () => r(), { once: true }));
}

/**
 * The controller's wiring and scheduling: watches feed a prioritized queue of work items (lib/controller/
 * work_items.ts) and `--concurrent-syncs` workers take them one at a time. A namespace event queues that namespace
 * (priority 0), a SyncConfig change queues what it selects (1), the timer queues every targeted namespace (2) every
 * `--reconcile-interval`. The queue never hands out a key twice at once, so two syncs never write one namespace at
 * the same time, and a new namespace waits for at most one unit of a full pass. The unit of work is
 * namespace_unit.ts, a SyncConfig change config_changes.ts; statuses are written beside the workers (status_writer.ts).
 */
import { getLogger } from "@logtape/logtape";
import { setImmediate } from "node:timers";
import { Discovery, type ResourceInfo } from "../kube/discovery.ts";
import type { Reflector } from "../kube/reflector.ts";
import { EventRecorder } from "../kube/events.ts";
import { aborted } from "../kube/backoff.ts";
import { deepEqual } from "../kube/objects.ts";
import { keyOf, refOf, type SyncConfig } from "../model/syncconfig.ts";
import { Executor } from "../sync/executor.ts";
import { ResourceCaches } from "../sync/resource_caches.ts";
import { Pruner } from "../sync/pruner.ts";
import { arrivalJudge } from "./arrival_judge.ts";
import { ConfigChanges } from "./config_changes.ts";
import { Freshness } from "./freshness.ts";
import { NamespaceUnit } from "./namespace_unit.ts";
import type { ControllerOptions } from "./options.ts";
import { PassTracker, runIntervalPasses } from "./pass.ts";
import { Pruning, sameSpecAndPruning } from "./pruning.ts";
import { WorkQueue } from "./queue.ts";
import { Registry } from "./registry.ts";
import { StatusLedger } from "./status_ledger.ts";
import { StatusWriter } from "./status_writer.ts";
import { SyncEvents } from "./sync_events.ts";
import { type NamespaceInfo, notSyncedReason, watchNamespaces, watchSyncConfigs, WatchTrouble } from "./watches.ts";
import { PRIORITIES, PRIORITY, type Trigger, type WorkItem, workItemOf, workKey } from "./work_items.ts";

export type { ControllerOptions, NamespaceInfo };

const log = getLogger(["espejo", "controller"]);

export class Controller {
  readonly namespaces: Reflector<NamespaceInfo>;
  readonly syncConfigs: Reflector<SyncConfig>;
  readonly queue = new WorkQueue<string, Trigger>(PRIORITIES);
  /** By key; a SyncConfig deleted and created again under the same key has a new uid and starts at generation 1. */
  readonly #compiled = new Registry<NamespaceInfo>();
  readonly #ledger = new StatusLedger();
  /** Writes statuses (and their Events) once their SyncConfig's own work is done (see StatusSchedule). */
  readonly #statusWriter: StatusWriter;
  readonly #events: EventRecorder;
  readonly #freshness: Freshness;
  readonly #configs: ConfigChanges;
  readonly #units: NamespaceUnit;
  readonly #pruning: Pruning;
  readonly #trouble: WatchTrouble;
  /** The interval pass in progress: namespaces still to sync, and when it started (for its metrics). */
  readonly #pass = new PassTracker((wall, cpu) => {
    this.opts.metrics.passDuration.observe(wall);
    this.opts.metrics.passCpu.observe(cpu);
    // A pass over caches whose watches fail decides on stale state: it does not count as done (the stall alert).
    if (this.namespaces.lastError === undefined && this.syncConfigs.lastError === undefined) {
      this.opts.metrics.lastFullPass.set(Date.now() / 1000);
    }
  });
  /** Made when the controller runs (they start watches). */
  #caches?: ResourceCaches;
  #executor?: Executor;
  #pruner?: Pruner;
  #workerStarted = false;
  /** Set once this process leads (or runs without leader election) and its workers start. */
  #leading = false;
  /** Start times of the units being processed, for liveness. */
  readonly #inFlight = new Set<{ since: number }>();

  constructor(private readonly opts: ControllerOptions) {
    const { client, metrics } = opts;
    this.#events = new EventRecorder(client, { apiVersion: "sync.appuio.ch/v1alpha1", kind: "SyncConfig" });
    const syncEvents = new SyncEvents(this.#events);
    this.#freshness = new Freshness(opts.fullCompareIntervalMs ?? 600_000);
    const trouble = this.#trouble = new WatchTrouble(metrics);
    this.queue.onAdd = (key, tag) => metrics.compat.added(key, tag);
    this.namespaces = watchNamespaces(client, trouble, (type, ns, old) => this.#onNamespace(type, ns, old));
    this.syncConfigs = watchSyncConfigs(client, opts.watchNamespace, trouble, (type, sc, old) => {
      if (type === "deleted" || !sameSpecAndPruning(sc, old)) {
        // Also when one appears or goes: whether an object's owner exists decides whether it may be adopted.
        this.#freshness.changedEverywhere();
        this.#enqueue({ kind: "syncConfig", key: keyOf(sc) }, "syncconfig");
        // Compiled now (a leader only: it may write Events): its status must not wait for a free worker.
        if (this.#leading) this.#configs.noticed(keyOf(sc));
      }
    });
    this.#statusWriter = new StatusWriter({
      client,
      syncConfigs: this.syncConfigs,
      compiled: (key) => this.#compiled.get(key),
      outcomes: (key) => this.#ledger.outcomes(key),
      events: syncEvents,
      metrics,
      now: opts.now,
    });
    const shared = {
      namespaces: this.namespaces,
      syncConfigs: this.syncConfigs,
      registry: this.#compiled,
      ledger: this.#ledger,
      statusWriter: this.#statusWriter,
      syncEvents,
      freshness: this.#freshness,
      metrics,
      enqueue: (item: WorkItem, trigger: Trigger, afterMs?: number) => this.#enqueue(item, trigger, afterMs),
    };
    this.#pruning = new Pruning({
      ...shared,
      client,
      pruneDefault: opts.pruneDefault ?? false,
      recordChange: (k, a, ns) => syncEvents.recordChange(k, a, ns),
      pruner: () => this.#pruner,
    });
    this.#configs = new ConfigChanges({
      ...shared,
      pruning: this.#pruning,
      events: this.#events,
      running: () => ({ executor: this.#executor, caches: this.#caches }),
    });
    this.#units = new NamespaceUnit({
      ...shared,
      configs: this.#configs,
      queue: this.queue,
      pass: this.#pass,
      executor: () => this.#executor!,
      pruning: this.#pruning,
    });
  }

  /** True once the namespace and SyncConfig caches hold their first list. */
  get ready(): boolean {
    return this.notReady === undefined;
  }

  /** Why the controller is not ready (for `/readyz`): the caches still filling, each with its last error. */
  get notReady(): string | undefined {
    return notSyncedReason({ namespaces: this.namespaces, syncconfigs: this.syncConfigs });
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
    this.opts.metrics.reconcileInterval.set(this.opts.reconcileIntervalMs / 1000);
    this.#caches = new ResourceCaches(client, signal, {
      onManagedChange: (ns) => ns && this.#namespaceChanged(ns),
      // Anyone can label their objects: only those an item names may cost more than their identity.
      wants: (r, ns, name) => this.#itemOwners(r, ns, name).length > 0,
      // What a SyncConfig created costs an index entry only while it prunes (turning it on indexes what is there).
      prunes: (cfgKey) => this.#pruning.enabled(cfgKey),
      // After a restart every object arrives at once: judged as it comes, its content is not kept (see arrival_judge).
      judge: arrivalJudge(this.#compiled, this.namespaces),
      // A deleteItems candidate appeared or went: only the next pass needs to look (no sync per foreign object),
      // and only if a deleteItem names it (busy ConfigMaps elsewhere in the namespace do not count).
      onCandidateChange: (ns, name) => this.#compiled.namedByDeleteItem(ns, name) && this.#freshness.changedIn(ns),
      onWatchRestart: (r, reason) => this.#trouble.restarted(r, reason),
      onError: (r, e, ms) => this.#trouble.failed(r, e, ms),
    });
    const discovery = new Discovery(client);
    this.#executor = new Executor(client, discovery, this.#caches, {
      onWrite: (action) => this.opts.metrics.writes.inc({ action }),
      // The owner annotation holds an object only for a SyncConfig that has an item for it (see ItemIndex).
      claims: (owner, r, ns, name) => this.#itemOwners(r, ns, name).includes(owner),
      onFight: (syncconfig) => this.opts.metrics.fightRestores.inc({ syncconfig }),
      onReplace: (syncconfig, reason) => this.opts.metrics.replaces.inc({ syncconfig, reason }),
      onFinalizersRemoved: (syncconfig, message) => {
        this.opts.metrics.finalizersRemoved.inc({ syncconfig });
        const sc = this.syncConfigs.get(syncconfig);
        if (sc) void this.#events.emit(refOf(sc), "Warning", "FinalizersRemoved", message);
      },
      maxFightDelayMs: this.opts.reconcileIntervalMs || 600_000,
    });
    this.#pruner = new Pruner(client, discovery, this.#caches, () => this.opts.metrics.writes.inc({ action: "prune" }));
    signal.addEventListener("abort", () => this.queue.shutdown(), { once: true });
    this.namespaces.run(signal);
    this.syncConfigs.run(signal);
    await Promise.race([Promise.all([this.namespaces.synced, this.syncConfigs.synced]), aborted(signal)]);
    if (signal.aborted) return;
    const sizes = { namespaces: this.namespaces.size, syncConfigs: this.syncConfigs.size };
    log.info("Caches synced: {namespaces} namespaces, {syncConfigs} SyncConfigs", sizes);
    await (this.opts.leadership?.(signal) ?? Promise.resolve());
    // Passes start now: the stall alert counts from here (a standby that just took over is not stalled).
    this.opts.metrics.lastFullPass.set(Date.now() / 1000);
    if (signal.aborted) return;
    this.#leading = true;
    this.opts.metrics.compat.started(this.opts.reconcileIntervalMs > 0, Math.max(1, this.opts.concurrentSyncs ?? 1));
    for (const sc of this.syncConfigs.values()) this.#enqueue({ kind: "syncConfig", key: keyOf(sc) }, "syncconfig");
    const timer = runIntervalPasses(signal, this.opts.reconcileIntervalMs, () => this.#startPass());
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
      this.opts.metrics.compat.taken(key, trigger, next.waitedMs / 1000);
      const unit = { since: Date.now() };
      this.#inFlight.add(unit);
      try {
        if (item.kind === "syncConfig") await this.#configs.process(item.key);
        else if (item.kind === "pruning") await this.#pruning.settle(item.key);
        else await this.#units.run(item.name, trigger);
      } catch (e) {
        // A bug or an unexpected reply must not stop the worker: log it and retry the key later.
        log.error("Unexpected error while processing {key}: {error}", { key, error: String(e) });
        this.queue.addAfter(key, priority, 5_000, "retry");
      } finally {
        this.queue.done(key);
        this.opts.metrics.compat.finished(key);
        this.#inFlight.delete(unit);
      }
      // A unit whose awaits all resolve at once (nothing to write) never lets the event loop read sockets; without
      // this, a watch event for a new namespace would wait for the whole pass instead of one unit.
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  /** One interval pass: every targeted namespace that is not fresh, unless the previous pass is still running. */
  #startPass(): void {
    if (this.#pass.running) return;
    // A SyncConfig change whose watch event was overtaken by our own status write's reply is caught here.
    this.#configs.fresh();
    const now = Date.now();
    let unchanged = 0;
    this.#pass.start(function* (this: Controller) {
      for (const ns of this.namespaces.values()) {
        if (!this.#targetedByAny(ns)) continue;
        if (this.#freshness.isFresh(ns.name, now)) unchanged++;
        else {
          this.#statusWriter.schedule.queued(this.#compiled.selecting(ns), ns.name);
          this.#enqueue({ kind: "namespace", name: ns.name }, "interval");
          yield ns.name;
        }
      }
    }.bind(this));
    if (unchanged) this.opts.metrics.syncs.inc({ trigger: "interval", result: "unchanged" }, unchanged);
    // Caches pick up what watches missed, but a status must be refreshed after a pass too.
    for (const key of this.#compiled.keys()) this.#statusWriter.schedule.markDirty(key);
    this.#statusWriter.kick();
  }

  #onNamespace(type: string, ns: NamespaceInfo, old: NamespaceInfo | undefined): void {
    if (type === "deleted") {
      this.#freshness.forget(ns.name);
      this.#compiled.forgetNamespace(ns.name);
      for (const cfgKey of this.#ledger.forgetNamespace(ns.name)) this.#statusWriter.schedule.markDirty(cfgKey);
      this.#units.forgetNamespace(ns.name);
      this.#executor?.forgetNamespace(ns.name);
      this.#caches?.forgetNamespace(ns.name);
      this.#statusWriter.schedule.finished(ns.name);
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
    if (ns) this.#statusWriter.schedule.queued(this.#compiled.selecting(ns), name);
    this.#enqueue({ kind: "namespace", name }, "namespace");
  }

  /** Whether a unit of `ns` has anything to do: a SyncConfig selects it, counted it before, or may prune there. */
  #targetedByAny(ns: NamespaceInfo): boolean {
    if (this.#compiled.selecting(ns).length) return true;
    return this.#ledger.counts(ns.name) || this.#pruning.mayPrune(ns.name);
  }

  /** Keys of the valid SyncConfigs that select `namespace` and have a syncItem naming this object. */
  #itemOwners(r: ResourceInfo, namespace: string, name: string): string[] {
    return this.#compiled.itemOwners(r, this.namespaces.get(namespace), name);
  }

  /** Bytes of object content (JSON text) held by the managed-object caches, for tests and the bench. */
  retainedContentBytes(): number {
    return this.#caches?.retainedContentBytes() ?? 0;
  }

  #enqueue(item: WorkItem, trigger: Trigger, afterMs?: number): void {
    if (afterMs) this.queue.addAfter(workKey(item), PRIORITY[trigger], afterMs, trigger);
    else this.queue.add(workKey(item), PRIORITY[trigger], trigger);
  }

  #updateGauges(): void {
    const sizes = { namespaces: this.namespaces.size, syncconfigs: this.syncConfigs.size, ...this.#caches?.sizes() };
    this.opts.metrics.observeQueueAndCaches(this.queue.length(), sizes);
  }
}

/**
 * The controller's scheduling; its parts are built once, at its start (parts.ts). Watches feed a prioritized queue
 * of work items (work_items.ts) and `--concurrent-syncs` workers (worker.ts) take them one at a time. A namespace
 * event queues that namespace (priority 0), a SyncConfig change queues what it selects (1), the timer queues every
 * targeted namespace (2) every `--reconcile-interval`. The queue never hands out a key twice at once, so two syncs
 * never write one namespace at the same time, and a new namespace waits for at most one unit of a full pass. The
 * unit of work is namespace_unit.ts, a SyncConfig change config_changes.ts; statuses are written beside the workers
 * (status_writer.ts). With leader election, a replica that does not hold the Lease stands by (standby.ts): it fills
 * its caches as a leader's (warm_caches.ts) and writes nothing (standby_client.ts) until it takes the Lease.
 */
import { getLogger } from "@logtape/logtape";
import type { Reflector } from "../kube/reflector.ts";
import { aborted } from "../kube/backoff.ts";
import { deepEqual } from "../kube/objects.ts";
import { keyOf, type SyncConfig } from "../model/syncconfig.ts";
import type { ControllerOptions } from "./options.ts";
import { buildParts, type ControllerParts } from "./parts.ts";
import { PassTracker, runIntervalPasses } from "./pass.ts";
import { sameSpecAndPruning } from "../sync/prune_decisions.ts";
import { WorkQueue } from "./queue.ts";
import type { NamespaceInfo } from "../model/namespace_info.ts";
import { LabelKeys } from "../model/label_keys.ts";
import { notSyncedReason, watchNamespaces, watchSyncConfigs, WatchTrouble } from "./watches.ts";
import { writesWhenLeading } from "./standby_client.ts";
import { PRIORITIES, PRIORITY, type Trigger, type WorkItem, workKey } from "./work_items.ts";

export type { ControllerOptions, NamespaceInfo };

const log = getLogger(["espejo", "controller"]);

export class Controller {
  readonly namespaces: Reflector<NamespaceInfo>;
  readonly syncConfigs: Reflector<SyncConfig>;
  readonly queue = new WorkQueue<string, Trigger>(PRIORITIES);
  /** The interval pass in progress: namespaces still to sync, and when it started (for its metrics). */
  readonly #pass = new PassTracker((wall, cpu) => {
    this.opts.metrics.passDuration.observe(wall);
    this.opts.metrics.passCpu.observe(cpu);
    // A pass over caches whose watches fail decides on stale state: it does not count as done (the stall alert).
    if (this.namespaces.lastError === undefined && this.syncConfigs.lastError === undefined) {
      this.opts.metrics.lastFullPass.set(Date.now() / 1000);
    }
  });
  /** Stops the caches of the kinds items name when the run's signal aborts (they start on first use). */
  readonly #stop = new AbortController();
  /** Every other part, built once here (parts.ts); the watches' handlers and the timer use them. */
  readonly #parts: ControllerParts;

  constructor(private readonly opts: ControllerOptions) {
    const { metrics } = opts;
    // Every part writes through this client: nothing is written before this replica leads.
    const client = writesWhenLeading(opts.client, () => this.#parts.standby.leading);
    const trouble = new WatchTrouble(metrics);
    this.queue.onAdd = (key, tag) => metrics.compat.added(key, tag);
    const labelKeys = new LabelKeys();
    this.namespaces = watchNamespaces(
      client,
      trouble,
      (type, ns, old) => this.#onNamespace(type, ns, old),
      labelKeys,
    );
    this.syncConfigs = watchSyncConfigs(client, opts.watchNamespace, trouble, (type, sc, old) => {
      if (type === "deleted" || !sameSpecAndPruning(sc, old)) this.#syncConfigChanged(keyOf(sc));
    });
    this.#parts = buildParts({
      opts: { ...opts, client },
      signal: this.#stop.signal,
      namespaces: this.namespaces,
      syncConfigs: this.syncConfigs,
      queue: this.queue,
      pass: this.#pass,
      trouble,
      enqueue: (item, trigger, afterMs) => this.#enqueue(item, trigger, afterMs),
      namespaceChanged: (name) => this.#namespaceChanged(name),
      labelKeys,
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
    return this.#parts.workers.idleForMs;
  }

  /** Runs until `signal` aborts; finishes the unit in progress before returning. */
  async run(signal: AbortSignal): Promise<void> {
    const { metrics } = this.opts;
    const { standby, statusWriter, warm, workers, heapBudget } = this.#parts;
    metrics.reconcileInterval.set(this.opts.reconcileIntervalMs / 1000);
    const stop = () => {
      this.#stop.abort();
      this.queue.shutdown();
    };
    if (signal.aborted) stop();
    else signal.addEventListener("abort", stop, { once: true });
    heapBudget.start(this.#stop.signal);
    this.namespaces.run(signal);
    this.syncConfigs.run(signal);
    await Promise.race([Promise.all([this.namespaces.synced, this.syncConfigs.synced]), aborted(signal)]);
    if (signal.aborted) return;
    const sizes = { namespaces: this.namespaces.size, syncConfigs: this.syncConfigs.size };
    log.info("Caches synced: {namespaces} namespaces, {syncConfigs} SyncConfigs", sizes);
    // Before the Lease: a standby compiles, fills and judges as a leader does, so that it acts at once when it leads.
    standby.watch();
    warm.start();
    await (this.opts.leadership?.(signal) ?? Promise.resolve());
    // Passes start now: the stall alert counts from here (a standby that just took over is not stalled).
    metrics.lastFullPass.set(Date.now() / 1000);
    if (signal.aborted) return;
    // What changed while standing by goes first (a namespace event's priority), the latest change first.
    const changed = standby.lead();
    if (changed.length) {
      log.info("Leading: {count} namespaces that changed while standing by go first", { count: changed.length });
    }
    for (const name of changed) this.#namespaceChanged(name);
    metrics.compat.started(this.opts.reconcileIntervalMs > 0, Math.max(1, this.opts.concurrentSyncs ?? 1));
    for (const sc of this.syncConfigs.values()) this.#enqueue({ kind: "syncConfig", key: keyOf(sc) }, "syncconfig");
    const timer = runIntervalPasses(signal, this.opts.reconcileIntervalMs, () => this.#startPass());
    const writing = statusWriter.run(signal);
    await workers.run(Math.max(1, this.opts.concurrentSyncs ?? 1));
    await timer;
    statusWriter.heard({ kind: "stopping" }); // the last statuses of the drained units
    await writing;
  }

  /** A SyncConfig's spec or pruning changed, or it came or went. */
  #syncConfigChanged(key: string): void {
    // Also when one appears or goes: whether an object's owner exists decides whether it may be adopted.
    this.#parts.freshness.changedEverywhere();
    this.#enqueue({ kind: "syncConfig", key }, "syncconfig");
    // Compiled now: its status must not wait for a free worker; a standby's caches judge by it.
    if (this.#parts.standby.leading) this.#parts.configs.noticed(key);
    else this.#parts.warm.syncConfigChanged(key);
  }

  /** One interval pass: every targeted namespace that is not fresh, unless the previous pass is still running. */
  #startPass(): void {
    if (this.#pass.running) return;
    // A SyncConfig change whose watch event was overtaken by our own status write's reply is caught here.
    const { configs, freshness, registry, statusWriter } = this.#parts;
    configs.catchUp();
    const now = Date.now();
    let unchanged = 0;
    this.#pass.start(function* (this: Controller) {
      for (const ns of this.namespaces.values()) {
        if (!this.#targetedByAny(ns)) continue;
        if (freshness.isFresh(ns.name, now)) unchanged++;
        else {
          statusWriter.heard({ kind: "queued", cfgKeys: registry.selecting(ns), namespace: ns.name });
          this.#enqueue({ kind: "namespace", name: ns.name }, "interval");
          yield ns.name;
        }
      }
    }.bind(this));
    if (unchanged) this.opts.metrics.syncs.inc({ trigger: "interval", result: "unchanged" }, unchanged);
    // Caches pick up what watches missed, but a status must be refreshed after a pass too.
    for (const cfgKey of registry.keys()) statusWriter.heard({ kind: "changed", cfgKey });
  }

  #onNamespace(type: string, ns: NamespaceInfo, old: NamespaceInfo | undefined): void {
    if (type === "deleted") {
      this.#parts.books.namespaceGone(ns.name); // the status writer's book writes what that changed
      return;
    }
    // Only what selection depends on matters; an annotation change costs nothing. A namespace whose labels become
    // known again (read with the keys of now) is a change: its units held off while they were not.
    const { registry } = this.#parts;
    const known = (n: NamespaceInfo) => registry.labelsKnown(n);
    if (old && old.phase === ns.phase && deepEqual(old.labels, ns.labels) && known(old) === known(ns)) return;
    this.#namespaceChanged(ns.name);
  }

  #namespaceChanged(name: string): void {
    const { freshness, registry, standby, statusWriter } = this.#parts;
    freshness.changedIn(name);
    if (standby.held(name)) return; // queued when this replica leads
    if (registry.size === 0) return;
    const ns = this.namespaces.get(name);
    // A namespace no SyncConfig selects or counted before has nothing to sync (a SyncConfig that changes queues
    // what it selects itself).
    if (ns && !this.#targetedByAny(ns)) return;
    if (ns) statusWriter.heard({ kind: "queued", cfgKeys: registry.selecting(ns), namespace: name });
    this.#enqueue({ kind: "namespace", name }, "namespace");
  }

  /** Whether a unit of `ns` has anything to do: a SyncConfig selects it, counted it before, or may prune there. */
  #targetedByAny(ns: NamespaceInfo): boolean {
    const { registry, ledger, pruning } = this.#parts;
    return registry.selecting(ns).length > 0 || ledger.counts(ns.name) || pruning.mayPrune(ns.name);
  }

  /** Bytes of object content (JSON text) held by the managed-object caches, for tests and the bench. */
  retainedContentBytes(): number {
    return this.#parts.caches.retainedContentBytes();
  }

  #enqueue(item: WorkItem, trigger: Trigger, afterMs?: number): void {
    if (afterMs) this.queue.addAfter(workKey(item), PRIORITY[trigger], afterMs, trigger);
    else this.queue.add(workKey(item), PRIORITY[trigger], trigger);
  }
}

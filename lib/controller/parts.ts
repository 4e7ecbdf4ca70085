/**
 * The controller's parts, built once at its start, in the order they depend on each other: the books that need
 * nothing (and the standby's state, standby.ts), the status writer, the caches of the kinds items name, then what
 * uses the caches (executor, pruner, pruning), what a SyncConfig change and a namespace unit set off, the caches'
 * warm-up (warm_caches.ts), and the workers; last, every book of per-key state is registered (key_books.ts). Each
 * part is handed the parts it uses, never a getter for one made later.
 *
 * What the controller itself keeps (the two watches, the queue, the interval pass) comes in as {@link PartsBase}:
 * their handlers are the controller's scheduling, which uses these parts.
 */
import type { LabelKeys } from "../model/label_keys.ts";
import { TrimmedLabels } from "./trimmed_labels.ts";
import { Discovery, namespacedOnly, type ResourceInfo } from "../kube/discovery.ts";
import { EventRecorder } from "../kube/events.ts";
import type { Reflector } from "../kube/reflector.ts";
import type { NamespaceInfo } from "../model/namespace_info.ts";
import { Registry } from "../model/registry.ts";
import { refOf, type SyncConfig } from "../model/syncconfig.ts";
import { Executor } from "../sync/executor.ts";
import { DelegatedView } from "../sync/delegated_view.ts";
import { Rights } from "../sync/rights.ts";
import { LargeGate } from "../sync/large_gate.ts";
import { Pruner } from "../sync/prune_deletes.ts";
import { MAX_FIGHT_DELAY_MS } from "../sync/retry_policy.ts";
import { ResourceCaches } from "../sync/resource_caches.ts";
import { arrivalJudge } from "./arrival_judge.ts";
import { ConfigChanges } from "./config_changes.ts";
import { Freshness } from "./freshness.ts";
import { KeyBooks, registerBooks } from "./key_books.ts";
import { NamespaceUnit } from "./namespace_unit.ts";
import type { ControllerOptions } from "./options.ts";
import type { PassTracker } from "./pass.ts";
import { PruneStep, pruningOn } from "./prune_step.ts";
import { PruneFinalizer } from "./prune_finalizer.ts";
import type { WorkQueue } from "./queue.ts";
import { StatusLedger } from "./status_ledger.ts";
import { StatusWriter } from "./status_writer.ts";
import { SyncEvents } from "./sync_events.ts";
import type { WatchTrouble } from "./watches.ts";
import { MemoryReturn } from "./memory_return.ts";
import { HeapBudget } from "./heap_budget.ts";
import { Standby } from "./standby.ts";
import { WarmCaches } from "./warm_caches.ts";
import { Workers } from "./worker.ts";
import type { Trigger, WorkItem } from "./work_items.ts";

/** What the controller keeps itself and its parts use. */
export interface PartsBase {
  opts: ControllerOptions;
  /** Stops the caches of the kinds items name: aborted when the controller's run is. */
  signal: AbortSignal;
  namespaces: Reflector<NamespaceInfo>;
  syncConfigs: Reflector<SyncConfig>;
  queue: WorkQueue<string, Trigger>;
  pass: PassTracker;
  trouble: WatchTrouble;
  /** Queues a work item (after `afterMs`, if given) with the priority of its trigger. */
  enqueue: (item: WorkItem, trigger: Trigger, afterMs?: number) => void;
  /** A managed object changed (someone else may have edited it): its namespace is checked. */
  namespaceChanged: (namespace: string) => void;
  /** The label keys SyncConfigs read, shared with the namespace cache's decoder. */
  labelKeys: LabelKeys;
}

export interface ControllerParts {
  /** The compiled SyncConfigs by key, with their selection and item indexes. */
  registry: Registry<NamespaceInfo>;
  ledger: StatusLedger;
  freshness: Freshness;
  events: EventRecorder;
  syncEvents: SyncEvents;
  /** Writes statuses (and their Events) once their SyncConfig's own work is done. */
  statusWriter: StatusWriter;
  caches: ResourceCaches;
  executor: Executor;
  /** The prune step of a unit, and where each SyncConfig stands for pruning. */
  pruning: PruneStep;
  /** A SyncConfig's prune finalizer, settled after each change of it. */
  finalizer: PruneFinalizer;
  configs: ConfigChanges;
  workers: Workers;
  /** Every book of per-namespace and per-SyncConfig state, so that a deletion is one call. */
  books: KeyBooks;
  /** Whether this replica leads, and what it holds back until it does. */
  standby: Standby;
  /** Fills the caches of the kinds items name before units need them (a standby's before it leads). */
  warm: WarmCaches;
  /** The heap's soft limit, started by the run. */
  heapBudget: HeapBudget;
}

/** Builds and wires every part of the controller (see the module comment for the order). */
export function buildParts(base: PartsBase): ControllerParts {
  const { opts, namespaces, syncConfigs, queue, trouble, enqueue } = base;
  const { client, metrics } = opts;
  const registry = new Registry<NamespaceInfo>(base.labelKeys, { trustedNamespaces: opts.trustedNamespaces });
  const ledger = new StatusLedger();
  const freshness = new Freshness(opts.fullCompareIntervalMs ?? 600_000);
  const events = new EventRecorder(client, { apiVersion: "sync.appuio.ch/v1alpha1", kind: "SyncConfig" });
  const syncEvents = new SyncEvents(events);
  // Until this replica leads, a compile's Events wait and the caches judge every arrival (standby.ts).
  const standby = new Standby(events);
  const books = new KeyBooks();
  const statusWriter = new StatusWriter({
    client,
    syncConfigs,
    compiled: (key) => registry.get(key),
    total: (key) => ledger.total(key),
    events: syncEvents,
    metrics,
    retries: queue,
    now: opts.now,
  });
  const pruneDefault = opts.pruneDefault ?? false;
  /** Keys of the valid SyncConfigs that select `namespace` and have a syncItem naming this object. */
  const itemOwners = (r: ResourceInfo, namespace: string, name: string) =>
    registry.itemOwners(r, namespaces.get(namespace), name);
  const caches = new ResourceCaches(client, base.signal, {
    onManagedChange: (ns) => ns && base.namespaceChanged(ns),
    // Anyone can label their objects: only those an item names may cost more than their identity.
    wants: (r, ns, name) => itemOwners(r, ns, name).length > 0,
    // What a SyncConfig created costs an index entry only while it prunes (turning it on indexes what is there).
    prunes: (cfgKey) => pruningOn(syncConfigs.get(cfgKey), pruneDefault),
    // After a restart every object arrives at once: judged as it comes, its content is not kept (see arrival_judge).
    judge: arrivalJudge(registry, namespaces),
    judgeEvents: () => !standby.leading,
    // A deleteItems candidate appeared or went: only the next pass needs to look (no sync per foreign object),
    // and only if a deleteItem names it (busy ConfigMaps elsewhere in the namespace do not count).
    onCandidateChange: (ns, name) => registry.namedByDeleteItem(ns, name) && freshness.changedIn(ns),
    onWatchRestart: (r, reason) => trouble.restarted(r, reason),
    onError: (r, e, ms) => trouble.failed(r, e, ms),
  });
  const discovery = new Discovery(client);
  // Reads and writes of large objects, one at a time; a namespace whose turn comes is queued (no unit waits for it).
  const large = new LargeGate((name) => enqueue({ kind: "namespace", name }, "retry"));
  const executor = new Executor(client, discovery, caches, {
    onWrite: (action) => metrics.writes.inc({ action }),
    // The owner annotation holds an object only for a SyncConfig that has an item for it (see ItemIndex), and not
    // against one of a trusted namespace when it is of an untrusted one.
    claims: (owner, claimant, r, ns, name) => registry.holds(owner, claimant, itemOwners(r, ns, name)),
    onFight: (syncconfig) => metrics.fightRestores.inc({ syncconfig }),
    onReplace: (syncconfig, reason) => metrics.replaces.inc({ syncconfig, reason }),
    onFinalizersRemoved: (syncconfig, message) => {
      metrics.finalizersRemoved.inc({ syncconfig });
      const sc = syncConfigs.get(syncconfig);
      if (sc) void events.emit(refOf(sc), "Warning", "FinalizersRemoved", message);
    },
    maxFightDelayMs: opts.reconcileIntervalMs || MAX_FIGHT_DELAY_MS,
    large,
  });
  // What SyncConfigs of untrusted namespaces may see and contest, asked as their ServiceAccounts (delegated_view.ts).
  const view = new DelegatedView({
    rights: new Rights(client),
    resolve: async (apiVersion, kind) => namespacedOnly(await discovery.resolve(apiVersion, kind), apiVersion),
    onReviewFailed: (cfgKey, message) => {
      const sc = syncConfigs.get(cfgKey);
      if (sc) void events.emit(refOf(sc), "Warning", "SyncFailed", message);
    },
  });
  const pruner = new Pruner(client, discovery, caches, () => metrics.writes.inc({ action: "prune" }));
  const shared = { namespaces, syncConfigs, registry, ledger, statusWriter, freshness, metrics, enqueue };
  const pruning = new PruneStep({
    ...shared,
    pruneDefault,
    recordChange: (k, a, ns) => syncEvents.recordChange(k, a, ns),
    pruner,
  });
  const finalizer = new PruneFinalizer({ client, syncConfigs, step: pruning, pruner, enqueue });
  const trimmedLabels = new TrimmedLabels(client, namespaces, registry, base.namespaceChanged, { signal: base.signal });
  const configs = new ConfigChanges({
    ...shared,
    books,
    pruning,
    finalizer,
    events: standby.events,
    executor,
    view,
    caches,
    trimmedLabels,
  });
  const warm = new WarmCaches({
    valid: () => registry.valid(),
    configs,
    discovery,
    caches,
    metrics,
    standby,
    signal: base.signal,
  });
  const units = new NamespaceUnit({ namespaces, configs, syncEvents, executor, pruning, trimmedLabels, view, large });
  // After a burst, the heap's free pages go back to the system (a restart's relist leaves about 8 MiB of them).
  const memory = new MemoryReturn();
  // During one, the heap is collected sooner once it is large (a restart at 200,000 objects): a soft limit.
  const heapBudget = new HeapBudget();
  const workers = new Workers({
    ...shared,
    queue,
    units,
    configs,
    finalizer,
    pass: base.pass,
    beforeTake: () => {
      const sizes = { namespaces: namespaces.size, syncconfigs: syncConfigs.size, ...caches.sizes() };
      metrics.observeQueueAndCaches(queue.length(), sizes);
    },
    taken: () => memory.taken(),
    afterWork: (idle) => memory.worked(idle),
  });
  registerBooks(books, {
    freshness,
    selection: registry,
    ledger,
    statusWriter,
    syncEvents,
    events,
    configs,
    queue,
    executor,
    view,
    large,
    caches,
    metrics,
  });
  return {
    registry,
    ledger,
    freshness,
    events,
    syncEvents,
    statusWriter,
    caches,
    executor,
    pruning,
    finalizer,
    configs,
    workers,
    books,
    standby,
    warm,
    heapBudget,
  };
}

/**
 * Prometheus metrics. One {@link Metrics} per process (tests create their own registry), served on
 * `--metrics-addr` at `/metrics`.
 */
import * as client from "./prometheus.ts";
import type { ResponseObserver } from "../kube/client.ts";
import { cgroupMemoryLimit } from "./cgroup.ts";
import { ControllerRuntimeMetrics } from "./compat.ts";

export class Metrics {
  readonly registry = new client.Registry();
  readonly apiRequests = new client.Counter({
    name: "espejo_api_requests_total",
    help: "Requests sent to the Kubernetes API server, by verb, resource and HTTP code (0 = network error)",
    labelNames: ["verb", "resource", "code"] as const,
    registers: [this.registry],
  });
  readonly delegatedRequests = new client.Counter({
    name: "espejo_delegated_requests_total",
    help: "Requests sent as a SyncConfig's ServiceAccount (sync.appuio.ch/service-account), by SyncConfig, " +
      "ServiceAccount, verb, resource and HTTP code: code 403 is a right the ServiceAccount lacks",
    labelNames: ["syncconfig", "service_account", "verb", "resource", "code"] as const,
    registers: [this.registry],
  });
  readonly syncs = new client.Counter({
    name: "espejo_syncs_total",
    help: "Units of work (one namespace) synced, by trigger (namespace, syncconfig, interval, retry) and result",
    labelNames: ["trigger", "result"] as const,
    registers: [this.registry],
  });
  readonly syncDuration = new client.Histogram({
    name: "espejo_sync_duration_seconds",
    help: "Time to sync one namespace against every SyncConfig that selects it, by trigger",
    labelNames: ["trigger"] as const,
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  readonly passDuration = new client.Histogram({
    name: "espejo_full_pass_duration_seconds",
    help: "Time from the start of an interval pass until its last namespace was synced",
    buckets: [0.001, 0.01, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [this.registry],
  });
  readonly passCpu = new client.Histogram({
    name: "espejo_full_pass_cpu_seconds",
    help: "CPU time the process used during an interval pass",
    buckets: [0.001, 0.01, 0.05, 0.1, 0.2, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  readonly items = new client.Gauge({
    name: "espejo_items",
    help: "Items of each SyncConfig in its last sync, by state (synchronized, deleted, failed)",
    labelNames: ["syncconfig", "state"] as const,
    registers: [this.registry],
  });
  readonly writes = new client.Counter({
    name: "espejo_object_writes_total",
    help: "Objects written in target namespaces, by action (create, update, recreate, delete, prune)",
    labelNames: ["action"] as const,
    registers: [this.registry],
  });
  readonly prunes = new client.Counter({
    name: "espejo_prunes_total",
    help: "Objects espejo created and deleted again because their SyncConfig prunes, by reason (item removed, " +
      "namespace not selected, SyncConfig deleted)",
    labelNames: ["syncconfig", "reason"] as const,
    registers: [this.registry],
  });
  readonly fightRestores = new client.Counter({
    name: "espejo_fight_restores_total",
    help: "Restores of an object that espejo had restored shortly before: another writer fights the SyncConfig " +
      "(each restore of a fight waits longer, up to the reconcile interval)",
    labelNames: ["syncconfig"] as const,
    registers: [this.registry],
  });
  readonly replaces = new client.Counter({
    name: "espejo_replaces_total",
    help: "Objects deleted and created again because no update could restore them, by reason (immutable: someone " +
      "else changed a field that cannot change; forceRecreate: the SyncConfig's forceRecreate after a refused update)",
    labelNames: ["syncconfig", "reason"] as const,
    registers: [this.registry],
  });
  readonly finalizersRemoved = new client.Counter({
    name: "espejo_finalizers_removed_total",
    help: "Objects from which espejo removed finalizers their item does not set, so that a replace could finish",
    labelNames: ["syncconfig"] as const,
    registers: [this.registry],
  });
  readonly queueDepth = new client.Gauge({
    name: "espejo_queue_depth",
    help: "Keys waiting in the work queue",
    registers: [this.registry],
  });
  readonly queueWait = new client.Histogram({
    name: "espejo_queue_wait_seconds",
    help: "Time a key waited in the work queue before a worker took it, by trigger",
    labelNames: ["trigger"] as const,
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 5, 30],
    registers: [this.registry],
  });
  readonly watchRestarts = new client.Counter({
    name: "espejo_watch_restarts_total",
    help: "Watches restarted after an error or an expired resourceVersion, by resource",
    labelNames: ["resource"] as const,
    registers: [this.registry],
  });
  readonly cacheObjects = new client.Gauge({
    name: "espejo_cache_objects",
    help: "Objects held in the controller's caches, by cache",
    labelNames: ["cache"] as const,
    registers: [this.registry],
  });

  /** The gauges a worker refreshes before it takes the next unit. */
  /** The item gauges and the Invalid gauge of SyncConfig `syncconfig`, as its status counts them. */
  observeStatus(
    syncconfig: string,
    counts: { synchronizedItemCount?: number; deletedItemCount?: number; failedItemCount?: number },
    valid: boolean,
  ): void {
    this.items.set({ syncconfig, state: "synchronized" }, counts.synchronizedItemCount ?? 0);
    this.items.set({ syncconfig, state: "deleted" }, counts.deletedItemCount ?? 0);
    this.items.set({ syncconfig, state: "failed" }, counts.failedItemCount ?? 0);
    this.invalid.set({ syncconfig }, valid ? 0 : 1);
  }

  observeQueueAndCaches(queueLength: number, cacheSizes: Record<string, number>): void {
    this.queueDepth.set(queueLength);
    for (const [cache, size] of Object.entries(cacheSizes)) this.cacheObjects.set({ cache }, size);
  }
  readonly isLeader = new client.Gauge({
    name: "espejo_leader",
    help: "1 while this process is the leader (or leader election is off), 0 otherwise",
    registers: [this.registry],
  });

  readonly lastFullPass = new client.Gauge({
    name: "espejo_last_full_pass_timestamp_seconds",
    help: "When the last interval pass ended while the namespace and SyncConfig watches were healthy (Unix time; the " +
      "moment this process became leader before the first): a stall shows as this falling behind by a few intervals",
    registers: [this.registry],
  });
  readonly reconcileInterval = new client.Gauge({
    name: "espejo_reconcile_interval_seconds",
    help: "--reconcile-interval (0: no interval passes)",
    registers: [this.registry],
  });
  readonly invalid = new client.Gauge({
    name: "espejo_syncconfig_invalid",
    help: "1 while a SyncConfig is Invalid (its Invalid condition is True), 0 otherwise",
    labelNames: ["syncconfig"] as const,
    registers: [this.registry],
  });
  readonly memoryLimit = new client.Gauge({
    name: "espejo_memory_limit_bytes",
    help: "The memory limit of the process's cgroup (the container's limit); absent when there is none",
    registers: [this.registry],
  });

  /** The controller-runtime names of some of these, for the Go espejo's dashboards. */
  readonly compat = new ControllerRuntimeMetrics(this.registry);

  constructor(defaultMetrics = false) {
    if (!defaultMetrics) return;
    client.collectDefaultMetrics(this.registry);
    // Read at each scrape: a limit can be resized in place.
    this.registry.onCollect(() => {
      const limit = cgroupMemoryLimit();
      if (limit !== undefined) this.memoryLimit.set(limit);
    });
  }

  /** A {@link ResponseObserver} that counts API requests by verb, resource and code. */
  readonly observeResponse: ResponseObserver = ({ method, path, watch, code, as }) => {
    const { resource, named } = resourceOfPath(path);
    const verb = watch ? "WATCH" : method === "GET" && !named ? "LIST" : method;
    this.apiRequests.inc({ verb, resource, code: String(code) });
    this.compat.response(method, code);
    if (as) {
      // The one extra espejo sends is the SyncConfig's key (lib/model/identity.ts).
      const syncconfig = Object.values(as.extra)[0] ?? "";
      const service_account = as.user.replace(/^system:serviceaccount:/, "").replace(":", "/");
      this.delegatedRequests.inc({ syncconfig, service_account, verb, resource, code: String(code) });
    }
  };

  /** This process may write (or may not), in both the espejo and the controller-runtime gauge. */
  setLeader(isLeader: boolean): void {
    this.isLeader.set(isLeader ? 1 : 0);
    this.compat.leader(isLeader);
  }
}

/** `configmaps` and whether a name follows, from `/api/v1/namespaces/x/configmaps/y`. */
export function resourceOfPath(path: string): { resource: string; named: boolean } {
  const parts = path.split("?")[0].split("/").filter(Boolean);
  // Skip /api/<v> or /apis/<g>/<v>
  let i = parts[0] === "api" ? 2 : parts[0] === "apis" ? 3 : parts.length;
  if (i >= parts.length) return { resource: parts.length <= 3 ? "discovery" : parts.join("/"), named: false };
  const namespaceSubresource = parts[i] === "namespaces" && parts.length === i + 3 &&
    ["status", "finalize"].includes(parts[i + 2]);
  if (namespaceSubresource) return { resource: `namespaces/${parts[i + 2]}`, named: true };
  if (parts[i] === "namespaces" && parts.length > i + 2) i += 2;
  const resource = parts[i];
  const rest = parts.slice(i + 1);
  return { resource: rest.length >= 2 ? `${resource}/${rest[1]}` : resource, named: rest.length >= 1 };
}

/**
 * The controller-runtime (v0.18) and client-go metrics that dashboards and alerts built for the Go espejo v0.5.0 use,
 * served beside `espejo_*` under the same names, label names and label values where the meaning matches, so they do
 * not go blank after the switch (docs/reference.md, "Metrics").
 *
 * The mapping: the Go espejo has two controllers, `syncconfig` (a SyncConfig changed, or its RequeueAfter of one
 * reconcile interval came round) and `namespace` (a namespace changed), each with a work queue of the same name.
 * espejo's unit is one namespace and it has one queue; a unit, and a key in the queue, is counted under the
 * controller of what caused it: a SyncConfig change or an interval pass under `syncconfig`, a namespace event or a
 * retry under `namespace`.
 *
 * The Go `syncconfig` Reconcile always returns `RequeueAfter: --reconcile-interval`, so controller-runtime counts
 * its runs that did not fail as `result="requeue_after"` (as `success` only with an interval of 0); espejo does the
 * same for its `syncconfig` units, whose namespaces the next interval pass visits again. The Go `namespace`
 * Reconcile returns an empty result: `success`. `requeue` is never counted, by either.
 */
import * as client from "./prometheus.ts";

export const LEASE_NAME = "bd39f6a0.appuio.ch";

/** The Go espejo's controllers (controller-runtime names them after the lowercased Kind they are `For`). */
export const CONTROLLERS = ["syncconfig", "namespace"] as const;
export type CompatController = typeof CONTROLLERS[number];

/** controller-runtime's values of `controller_runtime_reconcile_total{result}`. */
export const RESULTS = ["success", "error", "requeue", "requeue_after"] as const;

/** The controller of a unit or queue key by espejo's trigger (namespace, retry, syncconfig, interval). */
export function controllerOf(trigger: string | undefined): CompatController {
  return trigger === "syncconfig" || trigger === "interval" ? "syncconfig" : "namespace";
}

/** controller-runtime v0.18's buckets of controller_runtime_reconcile_time_seconds. */
const RECONCILE_BUCKETS = [
  ...[0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0],
  ...[1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60],
];

/**
 * client-go's buckets of workqueue_queue_duration_seconds: ExponentialBuckets(10e-9, 10, 12), 1e-8 s to 1000 s,
 * multiplied out as client_golang does, so that the bounds are the same doubles (the fourth is
 * 9.999999999999999e-06, not 1e-05) and their `le` labels the same series as the Go espejo's.
 */
const QUEUE_BUCKETS = exponentialBuckets(10e-9, 10, 12);

function exponentialBuckets(start: number, factor: number, count: number): number[] {
  const buckets: number[] = [];
  for (let bound = start; buckets.length < count; bound *= factor) buckets.push(bound);
  return buckets;
}

export class ControllerRuntimeMetrics {
  /** `host` label of rest_client_requests_total: the API server's host:port (set once the server is known). */
  host = "";

  readonly #reconciles: client.Counter<"controller" | "result">;
  readonly #reconcileErrors: client.Counter<"controller">;
  readonly #reconcileTime: client.Histogram<"controller">;
  readonly #queueDepth: client.Gauge<"name">;
  readonly #queueAdds: client.Counter<"name">;
  readonly #queueDuration: client.Histogram<"name">;
  readonly #workDuration: client.Histogram<"name">;
  readonly #retries: client.Counter<"name">;
  readonly #unfinished: client.Gauge<"name">;
  readonly #longestRunning: client.Gauge<"name">;
  readonly #activeWorkers: client.Gauge<"controller">;
  readonly #maxConcurrent: client.Gauge<"controller">;
  /** Keys being processed: the controller they were taken under and when (performance.now()), for work time. */
  readonly #processing = new Map<string, { name: CompatController; since: number }>();
  readonly #restRequests: client.Counter<"code" | "method" | "host">;
  readonly #leader: client.Gauge<"name">;
  /** Whether interval passes run: the Go `syncconfig` Reconcile then returned RequeueAfter (see the file comment). */
  #requeueAfter = true;
  /** The controller each waiting queue key was counted under when it started waiting, for depth and wait time. */
  readonly #waiting = new Map<string, CompatController>();
  readonly #depth: Record<CompatController, number> = { syncconfig: 0, namespace: 0 };
  /** Set by {@link started}: a standby has no controllers yet, so it serves no queue series (as controller-runtime). */
  #started = false;

  constructor(registry: client.Registry) {
    const registers = [registry];
    this.#reconciles = new client.Counter({
      name: "controller_runtime_reconcile_total",
      help: "Total number of reconciliations per controller",
      labelNames: ["controller", "result"],
      registers,
    });
    this.#reconcileErrors = new client.Counter({
      name: "controller_runtime_reconcile_errors_total",
      help: "Total number of reconciliation errors per controller",
      labelNames: ["controller"],
      registers,
    });
    this.#reconcileTime = new client.Histogram({
      name: "controller_runtime_reconcile_time_seconds",
      help: "Length of time per reconciliation per controller",
      labelNames: ["controller"],
      buckets: RECONCILE_BUCKETS,
      registers,
    });
    this.#queueDepth = new client.Gauge({
      name: "workqueue_depth",
      help: "Current depth of workqueue",
      labelNames: ["name"],
      registers,
    });
    this.#queueAdds = new client.Counter({
      name: "workqueue_adds_total",
      help: "Total number of adds handled by workqueue",
      labelNames: ["name"],
      registers,
    });
    this.#queueDuration = new client.Histogram({
      name: "workqueue_queue_duration_seconds",
      help: "How long in seconds an item stays in workqueue before being requested",
      labelNames: ["name"],
      buckets: QUEUE_BUCKETS,
      registers,
    });
    this.#workDuration = new client.Histogram({
      name: "workqueue_work_duration_seconds",
      help: "How long in seconds processing an item from workqueue takes.",
      labelNames: ["name"],
      buckets: QUEUE_BUCKETS,
      registers,
    });
    this.#retries = new client.Counter({
      name: "workqueue_retries_total",
      help: "Total number of retries handled by workqueue",
      labelNames: ["name"],
      registers,
    });
    this.#unfinished = new client.Gauge({
      name: "workqueue_unfinished_work_seconds",
      help: "How many seconds of work has been done that is in progress and hasn't been observed by " +
        "work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by " +
        "observing the rate at which this increases.",
      labelNames: ["name"],
      registers,
    });
    this.#longestRunning = new client.Gauge({
      name: "workqueue_longest_running_processor_seconds",
      help: "How many seconds has the longest running processor for workqueue been running.",
      labelNames: ["name"],
      registers,
    });
    this.#activeWorkers = new client.Gauge({
      name: "controller_runtime_active_workers",
      help: "Number of currently used workers per controller",
      labelNames: ["controller"],
      registers,
    });
    this.#maxConcurrent = new client.Gauge({
      name: "controller_runtime_max_concurrent_reconciles",
      help: "Maximum number of concurrent reconciles per controller",
      labelNames: ["controller"],
      registers,
    });
    // Work in progress is measured when scraped, as client-go's updateUnfinishedWork does every 500 ms.
    registry.onCollect(() => this.#collectUnfinished());
    this.#restRequests = new client.Counter({
      name: "rest_client_requests_total",
      help: "Number of HTTP requests, partitioned by status code, method, and host.",
      labelNames: ["code", "method", "host"],
      registers,
    });
    this.#leader = new client.Gauge({
      name: "leader_election_master_status",
      help: "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates " +
        "master. 'name' is the string used to identify the lease. Please make sure to group by name.",
      labelNames: ["name"],
      registers,
    });
  }

  /**
   * The controllers start (after leader election, as controller-runtime starts them): every result of each is
   * served at 0 from now on, as controller-runtime's initMetrics does, and its queue's depth and adds (client-go
   * creates those with the queue). `intervalPasses`: --reconcile-interval is not 0 (see the file comment).
   */
  started(intervalPasses: boolean, workers = 1): void {
    this.#requeueAfter = intervalPasses;
    this.#started = true;
    for (const controller of CONTROLLERS) {
      for (const result of RESULTS) this.#reconciles.inc({ controller, result }, 0);
      this.#reconcileErrors.inc({ controller }, 0);
      // Keys that started waiting before the controllers started are adds too: each is taken, and observed, once.
      this.#queueAdds.inc({ name: controller }, this.#depth[controller]);
      this.#queueDepth.set({ name: controller }, this.#depth[controller]);
      this.#retries.inc({ name: controller }, 0);
      // espejo's workers serve both queues: each controller may use all of them, as its MaxConcurrentReconciles.
      this.#maxConcurrent.set({ controller }, workers);
      this.#activeWorkers.set({ controller }, 0);
    }
    this.#collectUnfinished();
  }

  /** One unit of work ended; `trigger` is espejo's (namespace, retry, syncconfig, interval). */
  reconciled(trigger: string, failed: boolean, seconds: number): void {
    const controller = controllerOf(trigger);
    const result = failed ? "error" : controller === "syncconfig" && this.#requeueAfter ? "requeue_after" : "success";
    this.#reconciles.inc({ controller, result });
    if (failed) this.#reconcileErrors.inc({ controller });
    this.#reconcileTime.observe({ controller }, seconds);
  }

  /** `key` started waiting in the queue (see WorkQueue.onAdd): one add, under the controller of `trigger`. */
  added(key: string, trigger: string | undefined): void {
    if (this.#waiting.has(key)) return;
    const name = controllerOf(trigger);
    this.#waiting.set(key, name);
    ++this.#depth[name];
    if (!this.#started) return; // counted in the depth and adds that started() publishes
    this.#queueAdds.inc({ name });
    // A retry is client-go's AddRateLimited: counted as a retry besides the add.
    if (trigger === "retry") this.#retries.inc({ name });
    this.#queueDepth.set({ name }, this.#depth[name]);
  }

  /**
   * A worker took `key` after it waited `seconds`; counted under the controller it was added under, also when a
   * more urgent add of another controller promoted it meanwhile.
   */
  taken(key: string, trigger: string | undefined, seconds: number): void {
    const name = this.#waiting.get(key) ?? controllerOf(trigger);
    // Only a key counted as an add is observed, so that observations and adds agree, as in client-go.
    if (this.#waiting.delete(key)) {
      this.#queueDepth.set({ name }, --this.#depth[name]);
      this.#queueDuration.observe({ name }, seconds);
    }
    this.#processing.set(key, { name, since: performance.now() });
    this.#activeWorkers.set({ controller: name }, this.#active(name));
  }

  /** A worker finished `key` (client-go's Done): its work time is observed. */
  finished(key: string): void {
    const p = this.#processing.get(key);
    if (!p) return;
    this.#processing.delete(key);
    this.#workDuration.observe({ name: p.name }, (performance.now() - p.since) / 1000);
    this.#activeWorkers.set({ controller: p.name }, this.#active(p.name));
  }

  #active(name: CompatController): number {
    let n = 0;
    for (const p of this.#processing.values()) if (p.name === name) n++;
    return n;
  }

  #collectUnfinished(): void {
    if (!this.#started) return;
    const now = performance.now();
    for (const name of CONTROLLERS) {
      let total = 0;
      let longest = 0;
      for (const p of this.#processing.values()) {
        if (p.name !== name) continue;
        total += (now - p.since) / 1000;
        longest = Math.max(longest, (now - p.since) / 1000);
      }
      this.#unfinished.set({ name }, total);
      this.#longestRunning.set({ name }, longest);
    }
  }

  /** A reply (`code` 0: no reply) to a request; watches are GETs, as in client-go. */
  response(method: string, code: number): void {
    this.#restRequests.inc({ code: code === 0 ? "<error>" : String(code), method, host: this.host });
  }

  leader(isLeader: boolean): void {
    this.#leader.set({ name: LEASE_NAME }, isLeader ? 1 : 0);
  }
}

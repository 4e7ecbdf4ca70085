/**
 * The controller-runtime and client-go metrics that dashboards and alerts built for the Go espejo use, served beside
 * `espejo_*` where the meaning matches, so they do not go blank after the switch (README "Metrics").
 *
 * The mapping: the Go espejo has two controllers, `syncconfig` (a SyncConfig changed, or its interval came round)
 * and `namespace` (a namespace changed). espejo's unit is one namespace; a unit is counted under the controller of
 * what caused it (a SyncConfig change or a pass: `syncconfig`; a namespace event or a retry: `namespace`). There is
 * one work queue, named `espejo`.
 */
import * as client from "./prometheus.ts";

export const LEASE_NAME = "bd39f6a0.appuio.ch";
const QUEUE = "espejo";

export class ControllerRuntimeMetrics {
  /** `host` label of rest_client_requests_total: the API server's host:port (set once the server is known). */
  host = "";

  readonly #reconciles: client.Counter<"controller" | "result">;
  readonly #reconcileErrors: client.Counter<"controller">;
  readonly #reconcileTime: client.Histogram<"controller">;
  readonly #queueDepth: client.Gauge<"name" | "controller">;
  readonly #queueAdds: client.Counter<"name" | "controller">;
  readonly #queueDuration: client.Histogram<"name" | "controller">;
  readonly #restRequests: client.Counter<"code" | "host" | "method">;
  readonly #leader: client.Gauge<"name">;

  constructor(registry: client.Registry) {
    const registers = [registry];
    this.#reconciles = new client.Counter({
      name: "controller_runtime_reconcile_total",
      help: "Total number of reconciliations per controller (controller-runtime compatible)",
      labelNames: ["controller", "result"],
      registers,
    });
    this.#reconcileErrors = new client.Counter({
      name: "controller_runtime_reconcile_errors_total",
      help: "Total number of reconciliation errors per controller (controller-runtime compatible)",
      labelNames: ["controller"],
      registers,
    });
    this.#reconcileTime = new client.Histogram({
      name: "controller_runtime_reconcile_time_seconds",
      help: "Length of time per reconciliation per controller (controller-runtime compatible)",
      labelNames: ["controller"],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30, 60],
      registers,
    });
    this.#queueDepth = new client.Gauge({
      name: "workqueue_depth",
      help: "Current depth of workqueue (client-go compatible)",
      labelNames: ["name", "controller"],
      registers,
    });
    this.#queueAdds = new client.Counter({
      name: "workqueue_adds_total",
      help: "Total number of items taken from the workqueue (client-go compatible)",
      labelNames: ["name", "controller"],
      registers,
    });
    this.#queueDuration = new client.Histogram({
      name: "workqueue_queue_duration_seconds",
      help: "How long in seconds an item stays in workqueue before being requested (client-go compatible)",
      labelNames: ["name", "controller"],
      buckets: [1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.1, 1, 10],
      registers,
    });
    this.#restRequests = new client.Counter({
      name: "rest_client_requests_total",
      help: "Number of HTTP requests, partitioned by status code, method, and host (client-go compatible)",
      labelNames: ["code", "host", "method"],
      registers,
    });
    this.#leader = new client.Gauge({
      name: "leader_election_master_status",
      help: "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master",
      labelNames: ["name"],
      registers,
    });
  }

  /** One unit of work ended; `trigger` is espejo's (namespace, retry, syncconfig, interval). */
  reconciled(trigger: string, failed: boolean, seconds: number): void {
    const controller = trigger === "syncconfig" || trigger === "interval" ? "syncconfig" : "namespace";
    this.#reconciles.inc({ controller, result: failed ? "error" : "success" });
    if (failed) this.#reconcileErrors.inc({ controller });
    this.#reconcileTime.observe({ controller }, seconds);
  }

  /** A worker took a key that waited `seconds`. */
  taken(seconds: number): void {
    this.#queueAdds.inc({ name: QUEUE, controller: QUEUE });
    this.#queueDuration.observe({ name: QUEUE, controller: QUEUE }, seconds);
  }

  queueDepth(depth: number): void {
    this.#queueDepth.set({ name: QUEUE, controller: QUEUE }, depth);
  }

  /** A reply (`code` 0: no reply) to a request; watches are GETs, as in client-go. */
  response(method: string, code: number): void {
    this.#restRequests.inc({ code: code === 0 ? "<error>" : String(code), host: this.host, method });
  }

  leader(isLeader: boolean): void {
    this.#leader.set({ name: LEASE_NAME }, isLeader ? 1 : 0);
  }
}

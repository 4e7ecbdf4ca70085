/**
 * The API server goes away for 20 s: the controller keeps running, its watches back off exponentially instead of
 * hammering the address, each resumes at its next retry once the server is back, and it syncs what happened.
 */
import assert from "node:assert/strict";
import { ControlPlane } from "../../testenv/controlplane.ts";
import { installBase, type TestCluster } from "../../testenv/shared.ts";
import { clientFor, eventually } from "../../testenv/shared.ts";
import type { Metrics } from "../../lib/metrics/metrics.ts";
import { counterValue, createNamespace, createSyncConfig, getObject, startController } from "../../testenv/harness.ts";
import { withLogRecords } from "./log_records.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

/** The caches of this test's controller: namespaces, SyncConfigs, and the ConfigMaps its item writes. */
const RESOURCES = ["namespaces", "syncconfigs", "configmaps"];
/** The reflector's backoff (lib/kube/backoff.ts): 0.8 s after the first failure, doubling, +-20 %. */
const FIRST_MS = 800;
const JITTER = 0.2;

/**
 * When the series of a counter went up, by one label, from samples every 10 ms: one time per increment. The
 * controller runs in this process, so a sample sees a failure within a few milliseconds of the reflector's onError.
 */
class Increments {
  readonly times = new Map<string, number[]>();
  readonly #last: Map<string, number>;

  constructor(private readonly read: () => Map<string, number>) {
    this.#last = read();
  }

  sample(): void {
    const now = performance.now();
    for (const [key, value] of this.read()) {
      const times = this.times.get(key) ?? [];
      for (let i = this.#last.get(key) ?? 0; i < value; i++) times.push(now);
      this.times.set(key, times);
      this.#last.set(key, value);
    }
  }

  of(key: string): number[] {
    return this.times.get(key) ?? [];
  }

  /** Samples until `done` holds or `deadline` (performance.now()) passes. */
  async sampleUntil(deadline: number, done: () => boolean = () => false): Promise<void> {
    while (performance.now() < deadline && !done()) {
      this.sample();
      await new Promise((r) => setTimeout(r, 10));
    }
    this.sample();
  }
}

/** A counter's values summed by one label, over the series whose other labels match `where`. */
function byLabel(metrics: Metrics, name: string, label: string, where: Record<string, string> = {}) {
  return () => {
    const sums = new Map<string, number>();
    for (const v of metrics.registry.values(name)) {
      if (!Object.entries(where).every(([k, want]) => v.labels[k] === want)) continue;
      sums.set(v.labels[label], (sums.get(v.labels[label]) ?? 0) + v.value);
    }
    return sums;
  };
}

Deno.test(
  "After a 20 s API server outage every new namespace is synced without a restart; watches back off exponentially",
  opts,
  () =>
    withLogRecords(async (records) => {
      // The reflectors' failures as they logged them, with the delay each chose before its retry.
      const failuresOf = (resource: string) =>
        records.filter((r) => r.properties.resource === resource && r.properties.retryInMs !== undefined);
      // A control plane of its own: stopping the shared one would break the tests running beside this one.
      const cp = await ControlPlane.start({ audit: true, log: () => {} });
      const c: TestCluster = { server: cp.server, caPem: cp.caPem, admin: cp.admin, auditLogPath: cp.auditLogPath };
      await installBase(cp.client());
      const admin = clientFor(c);
      const ctl = await startController(c, { watchNamespace: "outage-cfg", reconcileIntervalMs: 1_000 });
      try {
        await createNamespace(admin, "before");
        await createSyncConfig(admin, "outage-cfg", "survive", {
          namespaceSelector: { matchNames: ["before", "after-.*"] },
          syncItems: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "kept" }, data: { a: "1" } }],
        });
        await eventually(() => getObject(admin, "/api/v1/namespaces/before/configmaps/kept"), 20_000, "first sync");

        const failedRequests = async () =>
          (await counterValue(ctl.metrics, "espejo_api_requests_total", { verb: "WATCH", code: "0" })) +
          (await counterValue(ctl.metrics, "espejo_api_requests_total", { verb: "LIST", code: "0" }));
        const failedBefore = await failedRequests();
        // Every failed list-and-watch round of a reflector (its onError) counts one restart of its resource.
        const failures = new Increments(byLabel(ctl.metrics, "espejo_watch_restarts_total", "resource"));
        const watchesOpened = new Increments(
          byLabel(ctl.metrics, "espejo_api_requests_total", "resource", { verb: "WATCH", code: "200" }),
        );
        const stopAt = performance.now();
        const stopWall = Date.now();
        await cp.stopApiServer();
        // The outage itself is the scenario: twenty seconds without an API server (watches fail, passes cannot write).
        await failures.sampleUntil(stopAt + 20_000);
        assert.ok(ctl.controller.ready, "the caches stay usable while the API server is away");
        // Without backoff it was about forty failed requests per cache in 20 s.
        const attempts = (await failedRequests()) - failedBefore;
        assert.ok(attempts <= 3 * 7, `${attempts} failed list/watch requests in 20 s`);
        watchesOpened.sample(); // none while the server was away

        // Failures go on while the server starts (a retry can come before it is ready): sampled until it is.
        let up = false;
        const starting = failures.sampleUntil(Infinity, () => up);
        await cp.startApiServer();
        const upAt = performance.now();
        const upWall = Date.now();
        up = true;
        await starting;

        // Each cache's failures are retried after 0.8 s, 1.6 s, 3.2 s, 6.4 s, ... (+-20 % each): the delays the
        // reflector chose double, and no retry came before its delay was over. The times are the log records' own,
        // taken as each failure happened; how much later a busy machine runs a timer is not what this tests. (The cap of
        // 30 s is reached only after about a minute; tests/unit/backoff_test.ts covers it.)
        for (const resource of RESOURCES) {
          const failed = failuresOf(resource).filter((r) => r.timestamp < upWall);
          const times = failed.map((r) => r.timestamp);
          const delays = failed.map((r) => Number(r.properties.retryInMs));
          const gaps = times.slice(1).map((t, i) => t - times[i]);
          const what = `failures of the ${resource} watch at ${times.map((t) => t - stopWall)} ms after the stop ` +
            `(the server was back at ${upWall - stopWall} ms), retries due after ${delays} ms, gaps ${gaps} ms`;
          assert.ok(times.length >= 3 && times.length <= 7, `3 to 7 ${what}`);
          delays.slice(0, -1).forEach((delay, i) => {
            const base = Math.min(30_000, FIRST_MS * 2 ** i);
            assert.ok(
              delay >= base * (1 - JITTER) && delay <= base * (1 + JITTER),
              `delay ${i + 1} ~ ${base} ms: ${what}`,
            );
            assert.ok(gaps[i] >= delay - 5, `retry ${i + 1} waited its delay: ${what}`);
          });
        }
        // Each watch resumes at its next retry (the backoff still running): none waits for a 30 s cap or a restart.
        const opened = (r: string) => watchesOpened.of(r).some((t) => t >= upAt);
        await watchesOpened.sampleUntil(upAt + 45_000, () => RESOURCES.every(opened));
        for (const resource of RESOURCES) {
          const resumedAt = watchesOpened.of(resource).find((t) => t >= upAt);
          // The retry that resumed it was due after the last failure before it (a retry while the server was still
          // starting may have failed once more).
          const resumedWall = upWall + ((resumedAt ?? Infinity) - upAt);
          const last = failuresOf(resource).filter((r) => r.timestamp < resumedWall).at(-1)!;
          const nextRetry = upAt + (last.timestamp + Number(last.properties.retryInMs) - upWall);
          assert.ok(resumedAt !== undefined, `the ${resource} watch resumed`);
          assert.ok(
            resumedAt <= Math.max(upAt, nextRetry) + 5_000,
            `the ${resource} watch resumed ${Math.round(resumedAt - upAt)} ms after the server came back, its retry ` +
              `was due ${Math.round(nextRetry - upAt)} ms after`,
          );
        }

        for (const s of ["a", "b", "c"]) await createNamespace(admin, `after-${s}`);
        await admin.request({ method: "DELETE", path: "/api/v1/namespaces/before/configmaps/kept" });
        for (const ns of ["after-a", "after-b", "after-c", "before"]) {
          await eventually(() => getObject(admin, `/api/v1/namespaces/${ns}/configmaps/kept`), 60_000, `sync of ${ns}`);
        }
      } finally {
        await ctl.stop();
        admin.close();
        await cp.stop();
      }
    }),
);

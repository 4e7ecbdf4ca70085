/**
 * `deno task bench [--sizes 100,300,1000] [--samples 100] [--limits] [--name latest]`: measures the API load and
 * latency of espejo on a real control plane, counting requests in the API server's audit log. Writes
 * bench/results/<name>.{json,md,svg} (default name `latest`) and prints the table. Reports figures; never fails on
 * them.
 *
 * Per size N: N namespaces, M=5 SyncConfigs of K=4 items and 2 deleteItems each. The controller runs as a
 * process (main.ts) under the ServiceAccount and RBAC of deploy/.
 *  Phase 1 (--reconcile-interval=1h, so nothing but events causes work): converge; (a) one new namespace;
 *  (c) latency of new namespaces while idle; (d) a new SyncConfig over all namespaces; (e) one edited item;
 *  (f) resident memory.
 *  Phase 2 (restart with a short interval): (g) requests of a restart; (b) one steady full pass and its CPU time;
 *  (c) latency of namespaces created while a full pass runs.
 * `--cold-start [--restarts 3] [--profile] [--try-v8-flags="--a;--b"]` runs only restarts of a converged workload instead (bench/cold_start.ts),
 * `--failover [--go-espejo PATH]` only a failover between two replicas (bench/failover.ts).
 */
import { join } from "node:path";
import { parseArgs } from "node:util";
import { repoRoot } from "../testenv/build.ts";
import { ControlPlane, freePorts, kubeconfigYaml } from "../testenv/controlplane.ts";
import type { AuditEvent, Identity } from "../testenv/controlplane.ts";
import { installBase } from "../testenv/shared.ts";
import type { HttpKubeClient } from "../lib/kube/client.ts";
import { Reflector } from "../lib/kube/reflector.ts";
import { AuditTail, countBy, percentile } from "./kit/audit.ts";
import { aboutSyncConfig, createNamespace as createNamespaceWith } from "../testenv/harness.ts";
import { createNamespaces } from "./kit/namespaces.ts";
import { type Samples, sumOf } from "./prometheus_text.ts";
import { BENCH_LABEL, benchSyncConfig, ITEM_COLLECTIONS, ITEMS_PER_CONFIG } from "./workload.ts";
import { cpuTicksOf, statusKiB } from "./kit/process.ts";
import { Cgroup } from "../testenv/cgroup.ts";
import { type PassFigures, renderMarkdown, renderSvg, type SizeResult } from "./report.ts";
import { type FailedSize, memoryByNChart, renderMemoryByN } from "./memory_by_n.ts";
import { colorOf, lineChart } from "./charts.ts";
import { timelineOf } from "./timeline.ts";
import { ControllerDied, ControllerProcess, sleep, until } from "./kit/controller.ts";
import { coldStart, coldStartMarkdown } from "./cold_start.ts";
import { failover, failoverMarkdown } from "./failover.ts";
import { espejoIdentity, optIn } from "../testenv/espejo_rbac.ts";
import { QUIET_MS } from "../lib/controller/memory_return.ts";

const M = 5;
const K = ITEMS_PER_CONFIG;
const CONFIG_NS = "bench-config";
const SC_API = `/apis/sync.appuio.ch/v1alpha1/namespaces/${CONFIG_NS}/syncconfigs`;

const { values } = parseArgs({
  args: Deno.args,
  options: {
    sizes: { type: "string", default: "100,300,1000" },
    samples: { type: "string", default: "100" },
    // Run the controller inside the Go espejo's container limits (cgroup v1: memory 100Mi, CPU 300m; needs root).
    limits: { type: "boolean", default: false },
    // The results' file names: bench/results/<name>.{json,md,svg} and <name>-{requests,memory}.svg.
    name: { type: "string", default: "latest" },
    // Only what the goal at scale needs (memory, a new namespace, a burst, restarts, a steady and a full-compare pass):
    // leaves out the edited item, pruning, and the latencies during a pass and as a cluster admin.
    scale: { type: "boolean", default: false },
    // Only restarts of a converged workload, timed until synced, the fill's CPU per object (bench/cold_start.ts).
    "cold-start": { type: "boolean", default: false },
    restarts: { type: "string", default: "3" },
    // With --cold-start: one more restart under the inspector's sampling profiler, and where its CPU went.
    profile: { type: "boolean", default: false },
    // With --cold-start: one more restart per set of V8 flags (separated by ";"), each added to the shipped flags;
    // written with "=" (`--try-v8-flags=--a;--b`), as its value starts with a dash.
    "try-v8-flags": { type: "string" },
    // Only a failover: two replicas, the leader SIGKILLed (bench/failover.ts); --go-espejo runs the Go espejo's too.
    failover: { type: "boolean", default: false },
    "go-espejo": { type: "string" },
  },
});
const LIMIT_MEMORY = 100 * 2 ** 20;
const LIMIT_CPU = 0.3;
/** How much longer waits for the controller may take: a CPU quota of 30 % makes a pass take about three times as long. */
const slowdown = values.limits ? 1 / LIMIT_CPU : 1;
const sizes = values.sizes!.split(",").map(Number);
const samples = Number(values.samples);
const scale = values.scale!;

/** How long a burst over N namespaces may take: 600 s, or about 0.3 s per namespace inside the limits' CPU. */
const convergenceTimeoutMs = (n: number) => Math.max(600_000, n * 100 * slowdown);

const log = (s: string) => console.error(`bench: ${s}`);

/** Watches the objects espejo writes, to time when a namespace has all its items. */
class Arrivals {
  readonly counts = new Map<string, number>();
  readonly completedAt = new Map<string, number>();
  readonly #stop = new AbortController();

  constructor(client: HttpKubeClient, readonly perNamespace: () => number) {
    for (const path of ITEM_COLLECTIONS) {
      const r = new Reflector(client, {
        path,
        labelSelector: "sync.appuio.ch/managed-by=espejo",
        decode: (raw) => raw.metadata?.namespace ?? "",
        onChange: (type, ns) => {
          if (type !== "added") return;
          const n = (this.counts.get(ns) ?? 0) + 1;
          this.counts.set(ns, n);
          if (n >= this.perNamespace() && !this.completedAt.has(ns)) this.completedAt.set(ns, performance.now());
        },
      });
      r.run(this.#stop.signal);
    }
  }

  stop() {
    this.#stop.abort();
  }
}

const createNamespace = (admin: HttpKubeClient, name: string) =>
  createNamespaceWith(admin, name, { [BENCH_LABEL]: "yes" });

const byIdentity = (events: AuditEvent[], id: Identity) =>
  events.filter((e) => e.user.username === id.username && e.verb !== "watch");
const verbs = (events: AuditEvent[]) => countBy(events, (e) => e.verb);

async function quiet(ctl: ControllerProcess, ms = 500): Promise<void> {
  // Quiet = the writes and syncs counters did not move for `ms`.
  let last = "";
  let since = Date.now();
  await until("controller to be quiet", async () => {
    const m = await ctl.metrics();
    const now = [
      sumOf(m, "espejo_object_writes_total"),
      sumOf(m, "espejo_syncs_total"),
      sumOf(m, "espejo_queue_depth"),
    ].join("/");
    if (now !== last) {
      last = now;
      since = Date.now();
    }
    return Date.now() - since >= ms;
  });
}

/** Turns pruning on for a SyncConfig and waits for its prune finalizer, the controller's one write for it. */
async function turnPruningOn(admin: HttpKubeClient, path: string): Promise<void> {
  await admin.request({
    method: "PATCH",
    path,
    contentType: "application/merge-patch+json",
    body: { metadata: { annotations: { "sync.appuio.ch/prune": "true" } } },
  });
  await until("prune finalizer added", async () => {
    const sc = await admin.request<{ metadata?: { finalizers?: string[] } }>({ method: "GET", path });
    return sc.metadata?.finalizers?.includes("sync.appuio.ch/prune") === true;
  });
}

/**
 * New namespaces one at a time, each as soon as the previous one has all its items: their latencies, how much of it
 * the controller's queue wait and unit took (the unit includes its writes), and what splits the unit: the
 * controller's CPU time per namespace (/proc) and the API server's time per write (the audit log's timestamps). A
 * latency that grows with N while both stay flat is neither espejo's work nor its writes' cost alone.
 */
async function measureIdle(
  ctl: ControllerProcess,
  admin: HttpKubeClient,
  arrivals: Arrivals,
  prefix: string,
  audit: AuditTail,
  identity: Identity,
): Promise<{ latencies: number[]; inController: SizeResult["c"]["idleInController"] }> {
  const latencies: number[] = [];
  const m0 = await ctl.metrics();
  await audit.skip();
  const cpu0 = await cpuTicksOf(ctl.child.pid);
  for (let i = 0; i < samples; i++) {
    const name = `${prefix}-${i}`;
    const start = performance.now();
    await createNamespace(admin, name);
    await until("idle namespace synced", () => arrivals.completedAt.has(name), 60_000 * slowdown);
    latencies.push(arrivals.completedAt.get(name)! - start);
  }
  const cpuMsPerNamespace = ((await cpuTicksOf(ctl.child.pid)) - cpu0) * 10 / samples;
  await quiet(ctl);
  const m1 = await ctl.metrics();
  const meanMs = (name: string) => {
    const labels = { trigger: "namespace" };
    const count = sumOf(m1, `${name}_count`, labels) - sumOf(m0, `${name}_count`, labels);
    return (1000 * (sumOf(m1, `${name}_sum`, labels) - sumOf(m0, `${name}_sum`, labels))) / count;
  };
  const creates = byIdentity(await audit.read(), identity).filter((e) =>
    e.verb === "create" && e.objectRef?.namespace?.startsWith(`${prefix}-`) && e.stageTimestamp
  );
  const serverMs = creates.map((e) => Date.parse(e.stageTimestamp!) - Date.parse(e.requestReceivedTimestamp));
  return {
    latencies,
    inController: {
      queueMs: meanMs("espejo_queue_wait_seconds"),
      unitMs: meanMs("espejo_sync_duration_seconds"),
      cpuMsPerNamespace,
      serverMsPerWrite: serverMs.length ? serverMs.reduce((a, b) => a + b, 0) / serverMs.length : undefined,
    },
  };
}

/**
 * Requests and figures of the next complete interval pass. The pass metrics are histograms the controller
 * observes at the end of each pass, so sums and counts between two scrapes give exact per-pass figures. Scrapes are
 * 250 ms apart: serving /metrics costs the controller CPU, which would otherwise count toward the pass.
 */
async function measurePass(
  ctl: ControllerProcess,
  audit: AuditTail,
  identity: Identity,
  intervalSeconds: number,
): Promise<PassFigures> {
  const count = (m: Samples) => sumOf(m, "espejo_full_pass_duration_seconds_count");
  const synced = (m: Samples) =>
    sumOf(m, "espejo_syncs_total", { trigger: "interval", result: "success" }) +
    sumOf(m, "espejo_syncs_total", { trigger: "interval", result: "failed" });
  // Start right after a pass ended, so the window holds exactly one pass.
  const start = count(await ctl.metrics());
  const m0 = await until("a pass to end", async () => {
    await sleep(250);
    const m = await ctl.metrics();
    return count(m) > start ? m : undefined;
  }, intervalSeconds * 3000 * slowdown);
  await audit.skip();
  const m1 = await until("the next pass to end", async () => {
    await sleep(250);
    const m = await ctl.metrics();
    return count(m) > count(m0) ? m : undefined;
  }, intervalSeconds * 3000 * slowdown);
  const events = byIdentity(await audit.read(), identity);
  const passes = count(m1) - count(m0);
  const per = (name: string) => (sumOf(m1, name) - sumOf(m0, name)) / passes;
  return {
    requests: events.filter((ev) => ev.objectRef?.subresource !== "status").length,
    statusWrites: events.filter((ev) => ev.objectRef?.subresource === "status").length,
    byVerb: verbs(events),
    passSeconds: per("espejo_full_pass_duration_seconds_sum"),
    cpuSeconds: per("espejo_full_pass_cpu_seconds_sum"),
    synced: (synced(m1) - synced(m0)) / passes,
  };
}

/**
 * Resident memory split into the executable's code (file-backed: shared and reclaimable, it does not grow) and
 * anonymous memory (heap and allocator: what grows with the data). Linux only; zeros elsewhere.
 */
async function residentParts(pid: number): Promise<{ anonMiB: number; fileMiB: number }> {
  const kib = await statusKiB(pid);
  return { anonMiB: kib("RssAnon") / 1024, fileMiB: kib("RssFile") / 1024 };
}

/** Objects in the caches of managed kinds (not namespaces, SyncConfigs or deleteItems candidates). */
const managedObjects = (m: Samples) => sumOf(m, "espejo_cache_objects", { cache: "managed:" }, true);

async function statusSynced(admin: HttpKubeClient, name: string): Promise<number> {
  const sc = await admin.request<{ status?: { synchronizedItemCount?: number } }>({
    method: "GET",
    path: `${SC_API}/${name}`,
  });
  return sc.status?.synchronizedItemCount ?? 0;
}

async function runSize(N: number): Promise<SizeResult | FailedSize> {
  let cgroup: Cgroup | undefined;
  let running: ControllerProcess | undefined;
  log(`N=${N}: starting a control plane`);
  const cp = await ControlPlane.start({ audit: true, log: () => {} });
  const startedMs = Date.now();
  const dir = await Deno.makeTempDir({ prefix: "espejo-bench-" });
  const admin = cp.client();
  try {
    await installBase(cp.client());
    await optIn(admin, "secrets"); // the workload's deleteItems name Secrets
    const identity = await espejoIdentity(admin, CONFIG_NS);
    const kubeconfig = join(dir, "kubeconfig");
    await Deno.writeTextFile(kubeconfig, kubeconfigYaml(cp.server, cp.caPem, identity));
    const [metricsPort, healthPort] = await freePorts(2);
    cgroup = values.limits ? await Cgroup.create("espejo-bench", LIMIT_MEMORY, LIMIT_CPU) : undefined;
    const ctl = running = new ControllerProcess({
      kubeconfig,
      metricsPort,
      healthPort,
      logFile: join(dir, "controller.log"),
      configNamespace: CONFIG_NS,
      cgroup,
      readyTimeoutMs: 60_000 * slowdown,
    });
    const audit = new AuditTail(cp.auditLogPath);

    log(`N=${N}: creating ${N} namespaces and ${M} SyncConfigs`);
    const names = Array.from({ length: N }, (_, i) => `bench-${String(i).padStart(5, "0")}`);
    // In parallel: the API server takes dozens at once, and 5000 one after the other take minutes.
    await createNamespaces(admin, names, { [BENCH_LABEL]: "yes" }, 64);
    for (let i = 0; i < M; i++) {
      await admin.request({ method: "POST", path: SC_API, body: benchSyncConfig(i) });
    }
    let configs = M;
    const arrivals = new Arrivals(cp.client(), () => configs * K);
    let total = N; // namespaces that are targeted

    // Phase 1: interval of an hour, so only events cause work.
    await audit.skip();
    const t0 = performance.now();
    await ctl.start(3600);
    // Polled once a second: the API server and the audit log are shared with the controller being measured.
    await until(
      "initial convergence",
      async () => {
        ctl.alive();
        for (let i = 0; i < M; i++) if ((await statusSynced(admin, `bench-c${i}`)) !== total * K) return false;
        return true;
      },
      convergenceTimeoutMs(N),
      1000,
    );
    await quiet(ctl);
    const convergence = {
      seconds: (performance.now() - t0) / 1000,
      byVerb: verbs(byIdentity(await audit.read(), identity)),
    };
    log(`N=${N}: converged in ${convergence.seconds.toFixed(1)} s`);

    log(`N=${N}: (a) one new namespace`);
    // (a) one new namespace
    await audit.skip();
    const fresh = "bench-new-a";
    await createNamespace(admin, fresh);
    total++;
    await until("new namespace synced", () => arrivals.completedAt.has(fresh));
    await quiet(ctl);
    const aEvents = byIdentity(await audit.read(), identity);
    const a = {
      byVerb: verbs(aEvents.filter((e) => !aboutSyncConfig(e))),
      otherNamespaces: aEvents.filter((e) =>
        e.objectRef?.namespace && e.objectRef.namespace !== fresh &&
        !aboutSyncConfig(e)
      ).length,
      statusWrites: aEvents.filter((e) => e.objectRef?.subresource === "status").length,
      events: aEvents.filter((e) => e.objectRef?.resource === "events").length,
    };

    log(`N=${N}: (c) idle latency`);
    // (c) latency while idle: one namespace at a time, once the controller has been idle long enough to give back the
    // memory of the burst before (memory_return.ts). Without the wait, the first samples would pay for collecting the
    // garbage of a convergence that took minutes, which a namespace created on a settled cluster does not.
    await quiet(ctl, QUIET_MS + 1_000);
    const idleRun = await measureIdle(ctl, admin, arrivals, "bench-idle", audit, identity);
    total += idleRun.latencies.length;
    const idleLatencies = idleRun.latencies;

    log(`N=${N}: (d) new SyncConfig`);
    // (d) a new SyncConfig over every namespace
    await audit.skip();
    const unitsBefore = sumOf(await ctl.metrics(), "espejo_syncs_total") -
      sumOf(await ctl.metrics(), "espejo_syncs_total", { result: "unchanged" });
    const dStart = performance.now();
    configs++;
    await admin.request({ method: "POST", path: SC_API, body: benchSyncConfig(M) });
    await until(
      "new SyncConfig converged",
      async () => {
        ctl.alive();
        return (await statusSynced(admin, `bench-c${M}`)) === total * K;
      },
      convergenceTimeoutMs(N),
      1000,
    );
    const dSeconds = (performance.now() - dStart) / 1000;
    await quiet(ctl);
    const dEvents = byIdentity(await audit.read(), identity);
    const dMetrics = await ctl.metrics();
    const d = {
      seconds: dSeconds,
      // Units of work it cost: one per namespace is the least (none caused by the echo of espejo's own writes).
      units: sumOf(dMetrics, "espejo_syncs_total") - sumOf(dMetrics, "espejo_syncs_total", { result: "unchanged" }) -
        unitsBefore,
      writes: dEvents.filter((e) => ["create", "update", "delete"].includes(e.verb) && !aboutSyncConfig(e)).length,
      byVerb: verbs(dEvents),
      statusWrites: dEvents.filter((e) => e.objectRef?.subresource === "status").length,
      namespaces: total,
    };

    let e: SizeResult["e"];
    let p: SizeResult["p"];
    if (!scale) {
      log(`N=${N}: (e) edit one item`);
      // (e) edit one item of one SyncConfig
      await audit.skip();
      const before = sumOf(await ctl.metrics(), "espejo_object_writes_total", { action: "update" });
      await admin.request({
        method: "PATCH",
        path: `${SC_API}/bench-c0`,
        contentType: "application/merge-patch+json",
        body: { spec: (benchSyncConfig(0, "2") as { spec: unknown }).spec },
      });
      await until(
        "edit applied",
        async () => sumOf(await ctl.metrics(), "espejo_object_writes_total", { action: "update" }) >= before + total,
      );
      await quiet(ctl);
      const eEvents = byIdentity(await audit.read(), identity);
      e = {
        writes: eEvents.filter((ev) => ["create", "update", "delete"].includes(ev.verb) && !aboutSyncConfig(ev)).length,
        byVerb: verbs(eEvents),
        namespaces: total,
      };

      log(`N=${N}: (p) prune: one item removed from a SyncConfig with pruning on`);
      // (p) pruning turned on for the SyncConfig of (d) (its one write: the finalizer), then one item removed: the
      // objects espejo created for it go, one delete per namespace, and nothing else is written.
      await audit.skip();
      const pruned = async () => sumOf(await ctl.metrics(), "espejo_prunes_total");
      const prunedBefore = await pruned();
      const pruneSc = `${SC_API}/bench-c${M}`;
      await turnPruningOn(admin, pruneSc);
      const fullSpec = benchSyncConfig(M) as { spec: { syncItems: unknown[] } };
      await admin.request({
        method: "PATCH",
        path: pruneSc,
        contentType: "application/merge-patch+json",
        body: { spec: { ...fullSpec.spec, syncItems: fullSpec.spec.syncItems.slice(1) } },
      });
      await until("item pruned everywhere", async () => (await pruned()) >= prunedBefore + total);
      await quiet(ctl);
      const pEvents = byIdentity(await audit.read(), identity).filter((ev) => ev.verb !== "get" && ev.verb !== "list");
      p = {
        deletes: pEvents.filter((ev) => ev.verb === "delete" && !aboutSyncConfig(ev)).length,
        otherObjectWrites: pEvents.filter((ev) => ev.verb !== "delete" && !aboutSyncConfig(ev)).length,
        finalizerWrites: pEvents.filter((ev) => ev.objectRef?.resource === "syncconfigs" && !ev.objectRef.subresource)
          .length,
        namespaces: total,
      };
      // The item back, so that the later phases measure the same workload as before (pruning stays on: the steady
      // passes of phase 2 measure it).
      await admin.request({
        method: "PATCH",
        path: pruneSc,
        contentType: "application/merge-patch+json",
        body: { spec: fullSpec.spec },
      });
      await until("removed item restored", async () => (await statusSynced(admin, `bench-c${M}`)) === total * K);
      await quiet(ctl);
    }

    // Peak memory of phase 1: the initial convergence and the new SyncConfig's burst.
    const convergencePeak = { anonMiB: ctl.memory.peakAnonKiB / 1024, rssMiB: ctl.memory.peakRssKiB / 1024 };
    if (scale) {
      // The scale goals are stated for N×M×K objects: (d)'s SyncConfig goes again, its objects pruned by the
      // controller, so that the restarts and passes of phase 2 read and compare that workload and no more.
      log(`N=${N}: (d) undone: its SyncConfig deleted with pruning on`);
      const dSc = `${SC_API}/bench-c${M}`;
      await turnPruningOn(admin, dSc);
      await admin.request({ method: "DELETE", path: dSc });
      await until(
        "its objects pruned and the SyncConfig gone",
        async () => {
          ctl.alive();
          const left = await admin.request<{ items?: unknown[] }>({
            method: "GET",
            path: SC_API,
            query: { fieldSelector: `metadata.name=bench-c${M}` },
          });
          return (left.items ?? []).length === 0;
        },
        convergenceTimeoutMs(N),
        1000,
      );
      configs--;
      await quiet(ctl);
    }
    // (f) memory once converged, after 30 s at rest: V8 gives memory back to the system only when idle for a while.
    await sleep(30_000);
    const fMetrics = await ctl.metrics();
    const f = {
      rssMiB: sumOf(fMetrics, "process_resident_memory_bytes") / 2 ** 20,
      ...(await residentParts(ctl.child.pid)),
      managedObjects: managedObjects(fMetrics),
      heapUsedMiB: sumOf(fMetrics, "nodejs_heap_size_used_bytes") / 2 ** 20,
    };
    await ctl.stop();

    // Phase 2: restarts with a short interval. The restart's peak is its own, not phase 1's.
    const interval = Math.max(3, Math.ceil(N / 250));
    ctl.memory.resetPeaks();
    const restart = async (extraArgs: string[]) => {
      await audit.skip();
      await ctl.start(interval, extraArgs);
      await until(
        "restart syncs done",
        async () => {
          ctl.alive();
          return sumOf(await ctl.metrics(), "espejo_syncs_total") >= total;
        },
        convergenceTimeoutMs(N),
        250,
      );
      await quiet(ctl, 300);
      const gEvents = byIdentity(await audit.read(), identity);
      return {
        byVerb: verbs(gEvents),
        // Writes to target objects (not the Events about SyncConfigs), by verb and resource.
        objectWrites: countBy(
          gEvents.filter((ev) => ["create", "update", "patch", "delete"].includes(ev.verb) && !aboutSyncConfig(ev)),
          (ev) => `${ev.verb} ${ev.objectRef?.resource}`,
        ),
      };
    };
    const passLatencies: number[] = [];
    log(`N=${N}: phase 2: restart, comparing every namespace in every pass`);
    const g = await restart(["--full-compare-interval=0"]);
    // Peaks of their own: a restart until its objects are read and its namespaces synced, then a full-compare pass.
    let restartPeakAnonMiB = ctl.memory.peakAnonKiB / 1024;
    ctl.memory.resetPeaks();
    log(`N=${N}: (b) one full-compare pass`);
    const full = await measurePass(ctl, audit, identity, interval);
    const fullPassPeakAnonMiB = ctl.memory.peakAnonKiB / 1024;
    if (!scale) {
      const intervalCount = async () => sumOf(await ctl.metrics(), "espejo_syncs_total", { trigger: "interval" });

      log(`N=${N}: (c) latency during passes`);
      // (c) latency of namespaces created while a full pass is running
      let created = 0;
      const deadline = Date.now() + 600_000;
      while (passLatencies.length < samples && Date.now() < deadline) {
        // A pass is running when the interval counter moved since the last look. Looks are 50 ms apart: serving
        // /metrics costs the controller 5-25 ms of its one thread, and polling harder would slow the pass it measures.
        const before = await intervalCount();
        await sleep(50);
        if ((await intervalCount()) === before) continue;
        // One at a time: a batch would measure new namespaces queueing behind each other, not behind the pass.
        const batch = [`bench-busy-${created++}`];
        const starts = await Promise.all(batch.map(async (name) => {
          const start = performance.now();
          await createNamespace(admin, name);
          return start;
        }));
        total += batch.length;
        await until(
          "busy namespaces synced",
          () => batch.every((n) => arrivals.completedAt.has(n)),
          60_000 * slowdown,
        );
        batch.forEach((n, i) => passLatencies.push(arrivals.completedAt.get(n)! - starts[i]));
      }
    }
    await ctl.stop();

    log(`N=${N}: (b) restart as deployed: passes skip namespaces found in sync`);
    ctl.memory.resetPeaks();
    await restart([]);
    restartPeakAnonMiB = Math.max(restartPeakAnonMiB, ctl.memory.peakAnonKiB / 1024);
    // The first pass after a start compares everything; the ones after it are what a steady cluster sees.
    const passes = async () => sumOf(await ctl.metrics(), "espejo_full_pass_duration_seconds_count");
    await until("a first pass", async () => (await passes()) >= 1 || undefined, convergenceTimeoutMs(N), 250);
    await quiet(ctl, 300);
    const skip = await measurePass(ctl, audit, identity, interval);
    await ctl.stop();

    let idleAsAdmin: SizeResult["c"]["idleAsAdmin"];
    if (!scale) {
      log(`N=${N}: (c) idle latency once more, as a cluster admin (no RBAC escalation checks)`);
      const adminKubeconfig = join(dir, "admin-kubeconfig");
      await Deno.writeTextFile(adminKubeconfig, kubeconfigYaml(cp.server, cp.caPem, cp.admin));
      const asAdmin = new ControllerProcess({
        kubeconfig: adminKubeconfig,
        metricsPort,
        healthPort,
        logFile: join(dir, "controller.log"),
        configNamespace: CONFIG_NS,
        cgroup,
        readyTimeoutMs: 60_000 * slowdown,
      });
      await asAdmin.start(3600);
      await until(
        "restart syncs done",
        async () => sumOf(await asAdmin.metrics(), "espejo_syncs_total") >= total,
        convergenceTimeoutMs(N),
        250,
      );
      await quiet(asAdmin, 300);
      const adminRun = await measureIdle(asAdmin, admin, arrivals, "bench-idle-admin", audit, cp.admin);
      idleAsAdmin = {
        n: adminRun.latencies.length,
        p50: percentile(adminRun.latencies, 50),
        p99: percentile(adminRun.latencies, 99),
      };
      await asAdmin.stop();
    }
    arrivals.stop();
    const timeline = await timelineOf(cp.auditLogPath, identity.username, ctl.memory.timeline, startedMs);

    return {
      n: N,
      m: M,
      k: K,
      convergence,
      a,
      b: { skip, full },
      c: {
        idle: { n: idleLatencies.length, p50: percentile(idleLatencies, 50), p99: percentile(idleLatencies, 99) },
        idleInController: idleRun.inController,
        idleAsAdmin,
        duringPass: scale
          ? undefined
          : { n: passLatencies.length, p50: percentile(passLatencies, 50), p99: percentile(passLatencies, 99) },
      },
      d,
      e,
      p,
      timeline,
      f,
      g: g!,
      h: cgroup
        ? {
          memoryLimitMiB: LIMIT_MEMORY / 2 ** 20,
          cpuQuota: LIMIT_CPU,
          peakAnonMiB: convergencePeak.anonMiB,
          peakRssMiB: convergencePeak.rssMiB,
          restartPeakAnonMiB,
          fullPassPeakAnonMiB,
          cgroupPeakMiB: (await cgroup.peakBytes()) / 2 ** 20,
          oomKills: await cgroup.oomKills(),
        }
        : undefined,
    };
  } catch (e) {
    const tail = await Deno.readTextFile(join(dir, "controller.log")).catch(() => "");
    console.error(`bench: failed at N=${N}; last controller log lines:\n${tail.split("\n").slice(-15).join("\n")}`);
    const oomKills = cgroup ? await cgroup.oomKills() : 0;
    if (cgroup) console.error(`bench: OOM kills in the cgroup: ${oomKills}`);
    // A controller that died (the memory limit's kill) is a result to report, and so is a size the bench could not
    // finish: the other sizes still run.
    if (!(e instanceof ControllerDied)) console.error(e);
    await running?.stop().catch(() => {});
    const objects = await managedObjectCount(admin).catch(() => undefined);
    return {
      n: N,
      failure: `${e instanceof Error ? e.message : e}${objects === undefined ? "" : ` after ${objects} objects`}`,
      oomKills,
      peakAnonMiB: (running?.memory.peakAnonKiB ?? 0) / 1024,
    };
  } finally {
    admin.close();
    await cp.stop();
    await cgroup?.remove();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/** Objects carrying espejo's label, counted by the bench's admin (a failed run's progress). */
async function managedObjectCount(admin: HttpKubeClient): Promise<number> {
  let count = 0;
  for (const path of ITEM_COLLECTIONS) {
    const list = await admin.request<{ metadata?: { remainingItemCount?: number }; items: unknown[] }>({
      method: "GET",
      path,
      query: { labelSelector: "sync.appuio.ch/managed-by=espejo", limit: 1 },
    });
    count += list.items.length + (list.metadata?.remainingItemCount ?? 0);
  }
  return count;
}

const all: (SizeResult | FailedSize)[] = [];
const meta = {
  ...await stageMeta(),
  command: `deno task bench --sizes ${sizes.join(",")} --samples ${samples}${values.limits ? " --limits" : ""}${
    scale ? " --scale" : ""
  }${values.name === "latest" ? "" : ` --name ${values.name}`}`,
};
const outDir = join(repoRoot, "bench", "results");
if (values.failover) {
  const name = values.name === "latest" ? "failover" : values.name!;
  const results = await failover({
    sizes,
    limits: values.limits ? { memoryBytes: LIMIT_MEMORY, cpuQuota: LIMIT_CPU } : undefined,
    goEspejo: values["go-espejo"],
  });
  const failoverMeta = {
    ...await stageMeta(),
    command: `deno task bench --failover --sizes ${sizes.join(",")}${values.limits ? " --limits" : ""}${
      values["go-espejo"] ? " --go-espejo <path>" : ""
    }${name === "failover" ? "" : ` --name ${name}`}`,
  };
  await writeStage(name, { ...failoverMeta, results }, failoverMarkdown(results, failoverMeta));
}
if (values["cold-start"]) {
  const name = values.name === "latest" ? "cold-start" : values.name!;
  const results = await coldStart({
    sizes,
    restarts: Number(values.restarts),
    profile: values.profile!,
    tryV8Flags: values["try-v8-flags"]?.split(";").filter((f) => f !== ""),
    limits: values.limits ? { memoryBytes: LIMIT_MEMORY, cpuQuota: LIMIT_CPU } : undefined,
  });
  const coldMeta = {
    ...await stageMeta(),
    command: `deno task bench --cold-start --sizes ${sizes.join(",")} --restarts ${values.restarts}${
      values.profile ? " --profile" : ""
    }${values["try-v8-flags"] ? ` '--try-v8-flags=${values["try-v8-flags"]}'` : ""}${values.limits ? " --limits" : ""}${
      name === "cold-start" ? "" : ` --name ${name}`
    }`,
  };
  await writeStage(name, { ...coldMeta, results }, coldStartMarkdown(results, coldMeta));
}

/** Date, machine and commit of a stage's results. */
async function stageMeta() {
  const git = await new Deno.Command("git", { args: ["rev-parse", "--short", "HEAD"], cwd: repoRoot }).output();
  return {
    date: new Date().toISOString(),
    cpus: navigator.hardwareConcurrency,
    commit: new TextDecoder().decode(git.stdout).trim(),
    limits: values.limits!,
  };
}

/** A stage's results as bench/results/<name>.{json,md}; the page printed; the bench ends. */
async function writeStage(name: string, json: unknown, page: string): Promise<never> {
  await Deno.mkdir(outDir, { recursive: true });
  await Deno.writeTextFile(join(outDir, `${name}.json`), JSON.stringify(json, null, 2) + "\n");
  await Deno.writeTextFile(join(outDir, `${name}.md`), page);
  console.log(page);
  Deno.exit(0);
}
let md = "";
// Written after each size: a run of many minutes that fails at its largest size keeps the others.
for (const n of sizes) {
  all.push(await runSize(n));
  md = await writeResults(all);
}
console.log(md);
Deno.exit(0);

async function writeResults(all: (SizeResult | FailedSize)[]): Promise<string> {
  const results = all.filter((r): r is SizeResult => !("failure" in r)).sort((a, b) => a.n - b.n);
  await Deno.mkdir(outDir, { recursive: true });
  await Deno.writeTextFile(
    join(outDir, `${values.name}.json`),
    JSON.stringify({ ...meta, results, failed: all.filter((r) => "failure" in r) }, null, 2) + "\n",
  );
  if (values.limits) await Deno.writeTextFile(join(outDir, `${values.name}-memory-by-n.svg`), memoryByNChart(all));
  const md = renderMarkdown(results, meta) + (values.limits ? `\n${renderMemoryByN(all)}` : "");
  await Deno.writeTextFile(join(outDir, `${values.name}.md`), md);
  await Deno.writeTextFile(join(outDir, `${values.name}.svg`), renderSvg(results));
  const timelines = results.filter((r) => r.timeline);
  await Deno.writeTextFile(
    join(outDir, `${values.name}-requests.svg`),
    lineChart(
      "espejo's API requests per second over a bench run (watches excluded)",
      "seconds since the run started",
      "requests / s",
      timelines.map((r, i) => ({ label: `N=${r.n}`, color: colorOf(i), points: r.timeline!.requests })),
    ),
  );
  await Deno.writeTextFile(
    join(outDir, `${values.name}-memory.svg`),
    lineChart(
      "espejo's resident memory over a bench run",
      "seconds since the run started",
      "MiB",
      timelines.map((r, i) => ({ label: `N=${r.n}`, color: colorOf(i), points: r.timeline!.memoryMiB })),
    ),
  );
  return md;
}

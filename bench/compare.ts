/**
 * `deno task compare --go-espejo /path/to/espejo-go [flags]`: a black-box comparison of espejo (Deno) with the Go
 * espejo it replaces, on one throwaway control plane (tests/testenv), the same scenario for both.
 *
 * Semantic phase, for each controller in turn (the Go binary, then `deno run ... main.ts`): fresh namespaces whose
 * names differ only by a run prefix, pre-existing objects, SyncConfigs covering the documented semantics; the controller
 * runs with WATCH_NAMESPACE=<prefix>-cfg and a kubeconfig of a ServiceAccount bound to cluster-admin (the same for
 * both: the Go espejo ships no RBAC for synced kinds). Once converged (statuses present, objects and statuses
 * unchanged for 3 reconcile intervals) everything is snapshotted (checkpoint 1); then namespaces are relabelled,
 * objects edited by hand and SyncConfigs edited, and after convergence a second snapshot is taken (checkpoint 2).
 * The snapshots of both controllers are normalised and diffed, and each difference is labelled with the bullet of
 * docs/migration.md's "Different, on purpose" list it belongs to, or NOT LISTED. espejo (Deno) runs with the shipped
 * permission set (deno.permissions), as its image does.
 *
 * Scale phase (--namespaces N --items K, 0 namespaces skips it): N namespaces and K items, the controller under the
 * Go espejo Deployment's limits (memory 100Mi, cpu 300m, as cgroup v1 memory and cpu controllers; needs root), timed
 * to convergence (all N*K objects exist and every status counts them), with peak memory and OOM kills.
 *
 * Requests are counted in the API server's audit log by the controller's identity. Prints a Markdown report, also
 * written with snapshots and controller logs to --out (default: a new temporary directory).
 *
 * Nothing of the Go espejo is part of this repository: pass a binary built elsewhere.
 */
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { repoRoot } from "../testenv/build.ts";
import {
  type AuditEvent,
  ControlPlane,
  createServiceAccount,
  delay,
  freePorts,
  kubeconfigYaml,
} from "../testenv/controlplane.ts";
import { installBase } from "../testenv/shared.ts";
import { Cgroup, type CgroupStats } from "../testenv/cgroup.ts";
import { type MemorySamples, Proc } from "./kit/process.ts";
import { espejoPermissions, shippedFlags } from "../testenv/permissions.ts";
import type { HttpKubeClient } from "../lib/kube/client.ts";
import { isNotFound } from "../lib/kube/errors.ts";
import { parseGoDuration } from "../lib/app/duration.ts";
import { AuditTail, countBy } from "./kit/audit.ts";
import { pool } from "./kit/pool.ts";
import { createNamespaces } from "./kit/namespaces.ts";
import { colorOf, lineChart } from "./charts.ts";
import { memoryMiB, requestsPerSecond, type Timeline } from "./timeline.ts";
import {
  type DiffRow,
  diffSnapshots,
  emptyTally,
  flatten,
  formatCounts,
  isListed,
  ITEMS_PER_SCALE_CONFIG,
  listedHint,
  mapPrefix,
  type MarkerTally,
  mdTable,
  mib,
  normalizeObject,
  type Obj,
  onPurposeBullets,
  preexistingObjects,
  PREFIX_TOKEN,
  requestsOf,
  resourceOf,
  RUN_LABEL,
  SCALE_LABEL,
  SCALE_RESOURCES,
  scaleSyncConfigs,
  SCENARIO_RESOURCES,
  scenarioMutations,
  scenarioNamespaces,
  scenarioSyncConfigs,
} from "./compare_lib.ts";

const USAGE = `usage: deno task compare --go-espejo PATH [--interval 2s] [--namespaces 300] [--items 12]
  [--memory-limit 100M] [--cpu-quota-us 30000] [--cpu-period-us 100000] [--no-limits]
  [--converge-timeout 240] [--scale-timeout 1800] [--steady 10] [--out DIR] [--deno-main PATH]
--deno-main runs another checkout's main.ts as espejo (Deno) (default: this repository's).`;

const { values } = parseArgs({
  args: Deno.args,
  options: {
    "go-espejo": { type: "string" },
    interval: { type: "string", default: "2s" },
    namespaces: { type: "string", default: "300" },
    items: { type: "string", default: "12" },
    "memory-limit": { type: "string", default: "100M" },
    "cpu-quota-us": { type: "string", default: "30000" },
    "cpu-period-us": { type: "string", default: "100000" },
    "no-limits": { type: "boolean", default: false },
    "converge-timeout": { type: "string", default: "240" },
    "scale-timeout": { type: "string", default: "1800" },
    steady: { type: "string", default: "10" },
    out: { type: "string" },
    "deno-main": { type: "string" },
    help: { type: "boolean", short: "h", default: false },
  },
});
if (values.help || !values["go-espejo"]) {
  console.error(USAGE);
  Deno.exit(values.help ? 0 : 2);
}
const goBinary = values["go-espejo"]!;
const interval = values.interval!;
const intervalMs = parseGoDuration(interval);
const scaleN = Number(values.namespaces);
const scaleK = Number(values.items);
const memoryLimit = values["memory-limit"]!;
const cpuQuota = Number(values["cpu-quota-us"]);
const cpuPeriod = Number(values["cpu-period-us"]);
const limits = !values["no-limits"];
const convergeTimeoutMs = Number(values["converge-timeout"]) * 1000;
const scaleTimeoutMs = Number(values["scale-timeout"]) * 1000;
const steadyMs = Number(values.steady) * 1000;
const denoMain = values["deno-main"] ?? join(repoRoot, "main.ts");
/**
 * The shipped runtime flags (permissions, V8 flags); another checkout's main.ts (--deno-main) runs with its own
 * deno.permissions and deno.v8-flags where it has them (older checkouts compiled with --optimize-for-size).
 */
function readShippedFlags(): string[] {
  if (!values["deno-main"]) return shippedFlags();
  const lines = (file: string) => {
    const path = join(dirname(denoMain), file);
    return existsSync(path) ? Deno.readTextFileSync(path).split("\n").map((l) => l.trim()).filter(Boolean) : undefined;
  };
  return [
    ...(lines("deno.permissions") ?? espejoPermissions()),
    ...(lines("deno.v8-flags") ?? ["--v8-flags=--optimize-for-size"]),
  ];
}
const denoFlags = readShippedFlags();
/** docs/migration.md's "Different, on purpose" list, which the report's labels are checked against (--deno-main's). */
const migrationPath = values["deno-main"] && existsSync(join(dirname(denoMain), "docs", "migration.md"))
  ? join(dirname(denoMain), "docs", "migration.md")
  : join(repoRoot, "docs", "migration.md");
const onPurpose = onPurposeBullets(await Deno.readTextFile(migrationPath));
for (const [name, v] of Object.entries({ scaleN, scaleK, cpuQuota, cpuPeriod, convergeTimeoutMs, steadyMs })) {
  if (!Number.isFinite(v) || v < 0) {
    console.error(`compare: bad value for ${name}\n${USAGE}`);
    Deno.exit(2);
  }
}
await Deno.stat(goBinary).catch(() => {
  console.error(`compare: ${goBinary} does not exist`);
  Deno.exit(2);
});

const log = (s: string) => console.error(`compare: ${s}`);
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

type Id = "go" | "deno";
interface Contender {
  id: Id;
  title: string;
  semanticPrefix: string;
  scalePrefix: string;
  /** argv without the executable; `exe` is prepended (a private copy under limits, see `privateCopy`). */
  args: (ports: { metrics: number; health: number }) => string[];
  exe: string;
  /** Working directory: Deno finds deno.json (imports) from there. */
  cwd?: string;
}
const contenders: Contender[] = [
  {
    id: "go",
    title: "Go espejo",
    semanticPrefix: "cmpgo",
    scalePrefix: "sclgo",
    exe: goBinary,
    args: (p) => [`--reconcile-interval=${interval}`, `--metrics-addr=127.0.0.1:${p.metrics}`],
  },
  {
    id: "deno",
    title: "espejo (Deno)",
    semanticPrefix: "cmpdeno",
    scalePrefix: "scldeno",
    exe: Deno.execPath(),
    cwd: dirname(denoMain),
    args: (p) => [
      "run",
      // The shipped flags (deno.permissions and deno.v8-flags, as the Dockerfile compiles it), nothing more: both
      // controllers only need to reach the API server and serve metrics; a permission main.ts lacks in the image fails
      // here too.
      ...denoFlags,
      denoMain,
      `--reconcile-interval=${interval}`,
      `--metrics-addr=127.0.0.1:${p.metrics}`,
      `--health-addr=127.0.0.1:${p.health}`,
    ],
  },
];

// ---------------------------------------------------------------------------------------------------------------
// Processes and cgroups

/**
 * A private copy of an executable, its page cache dropped: under a memory cgroup, a page is charged to the group
 * that first faults it in, so code pages already cached by other processes (this script runs on the same `deno`)
 * would not count. With a fresh copy, both controllers pay for their code as in a container.
 */
async function privateCopy(exe: string, dir: string, name: string): Promise<string> {
  const path = join(dir, name);
  await Deno.copyFile(exe, path);
  await Deno.chmod(path, 0o755);
  const f = await Deno.open(path, { read: true, write: true });
  await f.sync();
  f.close();
  await new Deno.Command("dd", { args: [`if=${path}`, "iflag=nocache", "count=0", "status=none"] }).output();
  return path;
}

// ---------------------------------------------------------------------------------------------------------------
// Cluster helpers

interface Resource {
  path: string;
  apiVersion: string;
  group: string;
  kind: string;
  resource: string;
  namespaced: boolean;
}

/** Every listable resource of the preferred version of each group. */
async function discover(admin: HttpKubeClient): Promise<Resource[]> {
  type ApiResources = { resources: { name: string; kind: string; namespaced: boolean; verbs: string[] }[] };
  const out: Resource[] = [];
  const add = (group: string, version: string, list: ApiResources) => {
    const apiVersion = group ? `${group}/${version}` : version;
    const base = group ? `/apis/${apiVersion}` : `/api/${version}`;
    for (const r of list.resources) {
      if (r.name.includes("/") || !r.verbs.includes("list")) continue;
      out.push({
        path: `${base}/${r.name}`,
        apiVersion,
        group,
        kind: r.kind,
        resource: r.name,
        namespaced: r.namespaced,
      });
    }
  };
  add("", "v1", await admin.request<ApiResources>({ method: "GET", path: "/api/v1" }));
  const groups = await admin.request<{ groups: { name: string; preferredVersion: { version: string } }[] }>({
    method: "GET",
    path: "/apis",
  });
  for (const g of groups.groups) {
    if (g.name === "events.k8s.io") continue; // the same Events as core v1
    const v = g.preferredVersion.version;
    add(g.name, v, await admin.request<ApiResources>({ method: "GET", path: `/apis/${g.name}/${v}` }));
  }
  return out;
}

async function list(admin: HttpKubeClient, path: string, query?: Record<string, string>): Promise<Obj[]> {
  const res = await admin.request<{ items?: Obj[] }>({ method: "GET", path, query });
  return res.items ?? [];
}

const md = (o: Obj) => (o.metadata ?? {}) as { name: string; namespace?: string; resourceVersion?: string };

async function createObject(admin: HttpKubeClient, path: string, body: Obj): Promise<void> {
  await admin.request({ method: "POST", path, body });
}

function collectionFor(obj: Obj): string {
  const ns = md(obj).namespace!;
  const kinds: Record<string, string> = {
    ConfigMap: `/api/v1/namespaces/${ns}/configmaps`,
    Secret: `/api/v1/namespaces/${ns}/secrets`,
    SyncConfig: `/apis/sync.appuio.ch/v1alpha1/namespaces/${ns}/syncconfigs`,
  };
  return kinds[obj.kind as string];
}

/** Deletes the run's namespaces (and the cluster-scoped objects named after them) and waits until they are gone. */
async function deleteRun(admin: HttpKubeClient, prefix: string): Promise<void> {
  const mine = (o: Obj) => md(o).name.startsWith(`${prefix}-`);
  const namespaces = (await list(admin, "/api/v1/namespaces")).filter(mine);
  await pool(
    namespaces,
    8,
    (n) =>
      admin.request({ method: "DELETE", path: `/api/v1/namespaces/${md(n).name}` }).catch((e) => {
        if (!isNotFound(e)) throw e;
      }),
  );
  for (const cr of (await list(admin, "/apis/rbac.authorization.k8s.io/v1/clusterroles")).filter(mine)) {
    await admin.request({ method: "DELETE", path: `/apis/rbac.authorization.k8s.io/v1/clusterroles/${md(cr).name}` })
      .catch(() => {});
  }
  const deadline = Date.now() + 600_000;
  while (Date.now() < deadline) {
    const left = (await list(admin, "/api/v1/namespaces")).filter(mine).length;
    if (left === 0) return;
    await delay(1000);
  }
  log(`namespaces of ${prefix} still terminating after 10 min; going on`);
}

/** Requests of the window since the last read, of one identity. */
async function windowRequests(audit: AuditTail, username: string): Promise<AuditEvent[]> {
  return requestsOf(await audit.read(), username);
}

// ---------------------------------------------------------------------------------------------------------------
// Convergence and snapshots

interface Convergence {
  stable: boolean;
  /** From the controller's start (or the mutations) until the last change seen. */
  settledMs: number;
  waitedMs: number;
  /** Objects or statuses that kept changing, when not stable. */
  changing: string[];
  exited?: string;
}

/**
 * Each SyncConfig's counts (synchronized/deleted/failed) as they changed over a run, by name: what the checkpoints'
 * diff cannot show (a count that is set and falls back between two checkpoints).
 */
type CountHistory = Map<string, { atMs: number; counts: string }[]>;

const COUNT_POLL_MS = 250;

/** Lists the run's SyncConfigs every {@link COUNT_POLL_MS} until `stop` aborts, noting each change of their counts. */
async function pollCounts(admin: HttpKubeClient, p: string, proc: Proc, history: CountHistory, stop: AbortSignal) {
  while (!stop.aborted) {
    const configs = await list(admin, `/apis/sync.appuio.ch/v1alpha1/namespaces/${p}-cfg/syncconfigs`).catch(() => []);
    const atMs = performance.now() - proc.startedAt;
    for (const sc of configs) {
      const s = (sc.status ?? {}) as {
        synchronizedItemCount?: number;
        deletedItemCount?: number;
        failedItemCount?: number;
      };
      const counts = sc.status
        ? `${s.synchronizedItemCount ?? "-"}/${s.deletedItemCount ?? "-"}/${s.failedItemCount ?? "-"}`
        : "(no status)";
      const seen = history.get(md(sc).name) ?? [];
      if (seen.at(-1)?.counts !== counts) seen.push({ atMs, counts });
      history.set(md(sc).name, seen);
    }
    await delay(COUNT_POLL_MS);
  }
}

async function fingerprint(admin: HttpKubeClient, p: string): Promise<Map<string, string> | undefined> {
  const out = new Map<string, string>();
  try {
    for (const path of SCENARIO_RESOURCES) {
      for (const o of await list(admin, path)) {
        const m = md(o);
        if (m.namespace ? !m.namespace.startsWith(`${p}-`) : !m.name.includes(p)) continue;
        out.set(`${path.split("/").pop()} ${m.namespace ?? ""}/${m.name}`, m.resourceVersion ?? "");
      }
    }
    for (const sc of await list(admin, `/apis/sync.appuio.ch/v1alpha1/namespaces/${p}-cfg/syncconfigs`)) {
      const status = sc.status as Obj | undefined;
      const norm = status?.conditions ? JSON.stringify(normalizeObject({ status }, p, undefined)) : "";
      out.set(`status ${md(sc).name}`, norm);
    }
  } catch (e) {
    log(`fingerprint failed (${(e as Error).message}); retrying`);
    return undefined;
  }
  return out;
}

/** Waits until every SyncConfig has a status and nothing changed for 3 reconcile intervals (at least 6 s). */
async function waitStable(admin: HttpKubeClient, p: string, proc: Proc, timeoutMs: number): Promise<Convergence> {
  const stableMs = Math.max(3 * intervalMs, 6000);
  const start = performance.now();
  let last: Map<string, string> | undefined;
  let lastChange = start;
  const changes = new Map<string, number>();
  for (;;) {
    await delay(1000);
    const now = performance.now();
    if (proc.exited) {
      return {
        stable: false,
        settledMs: lastChange - start,
        waitedMs: now - start,
        changing: [],
        exited: `exited with code ${proc.exited.code}${proc.exited.signal ? `, signal ${proc.exited.signal}` : ""}`,
      };
    }
    const fp = await fingerprint(admin, p);
    if (!fp) continue;
    if (!last || fp.size !== last.size || [...fp].some(([k, v]) => last!.get(k) !== v)) {
      if (last) {
        for (const k of new Set([...fp.keys(), ...last.keys()])) {
          if (fp.get(k) !== last.get(k)) changes.set(k, (changes.get(k) ?? 0) + 1);
        }
      }
      last = fp;
      lastChange = now;
    }
    const statuses = [...fp].filter(([k]) => k.startsWith("status "));
    const settled = statuses.length > 0 && statuses.every(([, v]) => v !== "");
    if (settled && now - lastChange >= stableMs) {
      return { stable: true, settledMs: lastChange - start, waitedMs: now - start, changing: [] };
    }
    if (now - start > timeoutMs) {
      const changing = [...changes].sort((a, b) => b[1] - a[1]).slice(0, 10).map(([k, n]) => `${k} (${n}×)`);
      return { stable: false, settledMs: lastChange - start, waitedMs: now - start, changing };
    }
  }
}

interface EventSummary {
  object: string;
  type: string;
  reason: string;
  count: number;
  message: string;
}

interface Snapshot {
  objects: Map<string, Obj>;
  markers: MarkerTally;
  events: EventSummary[];
}

/** Every object of the run (namespaced: in its namespaces; cluster-scoped: named after it), normalised. */
async function snapshot(admin: HttpKubeClient, p: string, resources: Resource[]): Promise<Snapshot> {
  const objects = new Map<string, Obj>();
  const markers = emptyTally();
  const events = new Map<string, EventSummary>();
  for (const r of resources) {
    let items: Obj[];
    try {
      items = await list(admin, r.path);
    } catch {
      continue; // e.g. an aggregated API that is not available
    }
    for (const item of items) {
      const m = md(item);
      if (r.namespaced ? !m.namespace?.startsWith(`${p}-`) : !m.name.includes(p)) continue;
      if (r.kind === "Event") {
        const involved = (item.involvedObject ?? {}) as { kind?: string; name?: string };
        const key = `${m.namespace}/${involved.kind}/${involved.name} ${item.type} ${item.reason}`;
        const e = events.get(key) ?? {
          object: mapPrefix(`${m.namespace}/${involved.kind}/${involved.name}`, p),
          type: String(item.type),
          reason: String(item.reason),
          count: 0,
          message: mapPrefix(String(item.message ?? ""), p),
        };
        e.count += Number(item.count ?? 1);
        events.set(key, e);
        continue;
      }
      const full = { apiVersion: r.apiVersion, kind: r.kind, ...item };
      const key = mapPrefix(`${m.namespace ?? "(cluster)"}/${r.kind}${r.group ? `.${r.group}` : ""}/${m.name}`, p);
      const target = r.namespaced && m.namespace !== `${p}-cfg`;
      objects.set(key, normalizeObject(full, p, target ? markers : undefined));
    }
  }
  return { objects, markers, events: [...events.values()].sort((a, b) => a.object.localeCompare(b.object)) };
}

// ---------------------------------------------------------------------------------------------------------------
// The runs

interface SemanticRun {
  contender: Contender;
  username: string;
  checkpoints: { name: string; convergence: Convergence; snapshot: Snapshot; requests: AuditEvent[] }[];
  steadyRequests: AuditEvent[];
  counts: CountHistory;
  /** When the mutations of checkpoint 2 began, from the controller's start. */
  mutatedAtMs: number;
  mem: MemorySamples;
  cpuSeconds: number;
  exit: string;
}

async function runSemantic(
  c: Contender,
  cp: ControlPlane,
  admin: HttpKubeClient,
  audit: AuditTail,
  resources: Resource[],
  work: string,
  out: string,
): Promise<SemanticRun> {
  const p = c.semanticPrefix;
  const cfg = `${p}-cfg`;
  log(`${c.title}: semantic scenario in ${p}-*`);
  const identity = await createServiceAccount(admin, cfg, "espejo", "cluster-admin");
  const kubeconfig = join(work, `${p}.kubeconfig`);
  await Deno.writeTextFile(kubeconfig, kubeconfigYaml(cp.server, cp.caPem, identity));
  for (const ns of scenarioNamespaces(p)) await createNamespaces(admin, [ns.name], ns.labels);
  for (const o of preexistingObjects(p)) await createObject(admin, collectionFor(o), o);
  for (const sc of scenarioSyncConfigs(p, 1)) await createObject(admin, collectionFor(sc), sc);

  await audit.skip();
  const [metrics, health] = await freePorts(2);
  const proc = Proc.spawn(
    [c.exe, ...c.args({ metrics, health })],
    { KUBECONFIG: kubeconfig, WATCH_NAMESPACE: cfg },
    join(out, `${c.id}-semantic.log`),
    undefined,
    c.cwd,
  );
  const checkpoints: SemanticRun["checkpoints"] = [];
  const counts: CountHistory = new Map();
  const stopPolling = new AbortController();
  const polling = pollCounts(admin, p, proc, counts, stopPolling.signal);
  try {
    const conv1 = await waitStable(admin, p, proc, convergeTimeoutMs);
    log(
      `${c.title}: checkpoint 1 ${conv1.stable ? "stable" : "NOT stable"}, settled after ${seconds(conv1.settledMs)}`,
    );
    const req1 = await windowRequests(audit, identity.username);
    checkpoints.push({
      name: "1: converged",
      convergence: conv1,
      snapshot: await snapshot(admin, p, resources),
      requests: req1,
    });

    const mutatedAtMs = performance.now() - proc.startedAt;
    for (const m of scenarioMutations(p)) {
      await admin.request({ method: "PATCH", path: m.path, contentType: "application/merge-patch+json", body: m.body })
        .catch((e) => log(`${c.title}: mutation "${m.what}" failed: ${(e as Error).message}`));
    }
    const before = new Map(scenarioSyncConfigs(p, 1).map((s) => [md(s).name, JSON.stringify(s.spec)]));
    for (const sc of scenarioSyncConfigs(p, 2)) {
      if (before.get(md(sc).name) === JSON.stringify(sc.spec)) continue;
      await admin.request({
        method: "PATCH",
        path: `${collectionFor(sc)}/${md(sc).name}`,
        contentType: "application/merge-patch+json",
        body: { spec: sc.spec },
      });
    }
    const conv2 = await waitStable(admin, p, proc, convergeTimeoutMs);
    log(
      `${c.title}: checkpoint 2 ${conv2.stable ? "stable" : "NOT stable"}, settled after ${seconds(conv2.settledMs)}`,
    );
    const req2 = await windowRequests(audit, identity.username);
    checkpoints.push({
      name: "2: after relabels, hand edits, SyncConfig edits",
      convergence: conv2,
      snapshot: await snapshot(admin, p, resources),
      requests: req2,
    });
    await delay(steadyMs);
    const steadyRequests = await windowRequests(audit, identity.username);
    stopPolling.abort();
    await polling;
    const status = await proc.stop();
    return {
      contender: c,
      username: identity.username,
      checkpoints,
      steadyRequests,
      counts,
      mutatedAtMs,
      mem: proc.mem,
      cpuSeconds: proc.cpuSeconds,
      exit: `code ${status.code}${status.signal ? ` (${status.signal})` : ""}`,
    };
  } finally {
    stopPolling.abort();
    await polling;
    if (!proc.exited) await proc.stop();
  }
}

interface ScaleRun {
  contender: Contender;
  converged: boolean;
  convergedMs: number;
  progress: string;
  exits: string[];
  cgroup?: CgroupStats & { peakRssBytes: number };
  mem: MemorySamples;
  cpuSeconds: number;
  requests: AuditEvent[];
  steadyRequests: AuditEvent[];
  /** Requests per second and memory from the controller's start (for the charts). */
  timeline: Timeline;
}

/** Requests of `events` per second, and memory samples, from `startedMs` on. */
function scaleTimeline(events: AuditEvent[], memory: [number, number][], startedMs: number): Timeline {
  const endS = Math.max(0, ...memory.map(([t]) => (t - startedMs) / 1000));
  const timestamps = events.map((e) => Date.parse(e.requestReceivedTimestamp));
  return { requests: requestsPerSecond(timestamps, startedMs, endS), memoryMiB: memoryMiB(memory, startedMs) };
}

async function scaleProgress(admin: HttpKubeClient, p: string): Promise<{ objects: number; statusOk: boolean }> {
  let objects = 0;
  for (const path of SCALE_RESOURCES) {
    const res = await admin.request<{ items?: unknown[] }>({
      method: "GET",
      path,
      query: { labelSelector: `${SCALE_LABEL}=${p}` },
      accept: "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json",
    });
    objects += res.items?.length ?? 0;
  }
  const configs = await list(admin, `/apis/sync.appuio.ch/v1alpha1/namespaces/${p}-cfg/syncconfigs`);
  const statusOk = configs.length > 0 && configs.every((sc) => {
    const s = (sc.status ?? {}) as { synchronizedItemCount?: number; failedItemCount?: number };
    const items = ((sc.spec as Obj).syncItems as unknown[]).length;
    return s.synchronizedItemCount === scaleN * items && (s.failedItemCount ?? 0) === 0;
  });
  return { objects, statusOk };
}

async function runScale(
  c: Contender,
  cp: ControlPlane,
  admin: HttpKubeClient,
  audit: AuditTail,
  work: string,
  out: string,
): Promise<ScaleRun> {
  const p = c.scalePrefix;
  const cfg = `${p}-cfg`;
  log(`${c.title}: scale scenario, ${scaleN} namespaces x ${scaleK} items${limits ? " under limits" : ""}`);
  const identity = await createServiceAccount(admin, cfg, "espejo", "cluster-admin");
  const kubeconfig = join(work, `${p}.kubeconfig`);
  await Deno.writeTextFile(kubeconfig, kubeconfigYaml(cp.server, cp.caPem, identity));
  const names = Array.from({ length: scaleN }, (_, i) => `${p}-${String(i).padStart(5, "0")}`);
  await createNamespaces(admin, names, { [RUN_LABEL]: p }, 16);
  for (const sc of scaleSyncConfigs(p, scaleK)) await createObject(admin, collectionFor(sc), sc);
  const expected = scaleN * scaleK;

  let cgroup: Cgroup | undefined;
  let exe = c.exe;
  if (limits) {
    cgroup = await Cgroup.create(`espejo-compare-${p}-${Date.now()}`, memoryLimit, cpuQuota / cpuPeriod, cpuPeriod);
    cgroup.sampleRss();
    exe = await privateCopy(c.exe, work, `${c.id}-exe`);
  }
  const exits: string[] = [];
  const mem: MemorySamples = { maxRssKiB: 0, hwmKiB: 0, maxAnonKiB: 0 };
  let cpuSeconds = 0;
  const [metrics, health] = await freePorts(2);
  const spawn = () =>
    Proc.spawn(
      [exe, ...c.args({ metrics, health })],
      { KUBECONFIG: kubeconfig, WATCH_NAMESPACE: cfg },
      join(out, `${c.id}-scale.log`),
      cgroup,
      c.cwd,
    );
  const memTimeline: [number, number][] = [];
  const collect = (proc: Proc) => {
    memTimeline.push(...proc.rssTimeline);
    mem.maxRssKiB = Math.max(mem.maxRssKiB, proc.mem.maxRssKiB);
    mem.hwmKiB = Math.max(mem.hwmKiB, proc.mem.hwmKiB);
    mem.maxAnonKiB = Math.max(mem.maxAnonKiB, proc.mem.maxAnonKiB);
    cpuSeconds += proc.cpuSeconds;
  };

  await audit.skip();
  const t0 = performance.now();
  const startedMs = Date.now();
  let proc = spawn();
  let converged = false;
  let convergedMs = 0;
  let progress = "";
  let backoffMs = 10_000; // as the kubelet restarts a crashed container
  try {
    while (performance.now() - t0 < scaleTimeoutMs) {
      await delay(2000);
      if (proc.exited) {
        collect(proc);
        const s = proc.exited;
        const oom = cgroup ? (await cgroup.stats()).oomKills : NaN;
        exits.push(
          `after ${seconds(performance.now() - t0)}: code ${s.code}${s.signal ? ` (${s.signal})` : ""}` +
            (cgroup ? `, cgroup oom_kill=${oom}` : ""),
        );
        log(`${c.title}: controller exited (${exits.at(-1)}); restarting in ${seconds(backoffMs)}`);
        await delay(backoffMs);
        backoffMs = Math.min(backoffMs * 2, 80_000);
        proc = spawn();
        continue;
      }
      const pr = await scaleProgress(admin, p).catch(() => undefined);
      if (!pr) continue;
      progress = `${pr.objects}/${expected} objects, statuses ${pr.statusOk ? "complete" : "incomplete"}`;
      if (pr.objects === expected && pr.statusOk) {
        converged = true;
        convergedMs = performance.now() - t0;
        break;
      }
    }
    log(`${c.title}: ${converged ? `converged in ${seconds(convergedMs)}` : `NOT converged (${progress})`}`);
    const requests = await windowRequests(audit, identity.username);
    await delay(steadyMs);
    const steadyRequests = await windowRequests(audit, identity.username);
    await proc.sample();
    const stats = cgroup ? await cgroup.stats() : undefined;
    await proc.stop();
    collect(proc);
    return {
      contender: c,
      converged,
      convergedMs,
      progress,
      exits,
      cgroup: stats && cgroup ? { ...stats, peakRssBytes: Math.max(cgroup.peakRssBytes, stats.rssBytes) } : undefined,
      mem,
      cpuSeconds,
      requests,
      steadyRequests,
      timeline: scaleTimeline([...requests, ...steadyRequests], memTimeline, startedMs),
    };
  } finally {
    if (!proc.exited) await proc.stop();
    await cgroup?.remove();
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Report

function verbTable(rows: [string, AuditEvent[], AuditEvent[]][]): string {
  return mdTable(
    ["window", "Go espejo", "espejo (Deno)"],
    rows.map(([w, a, b]) => [
      w,
      `${a.length}: ${formatCounts(countBy(a, (e) => e.verb))}`,
      `${b.length}: ${formatCounts(countBy(b, (e) => e.verb))}`,
    ]),
    2000,
  );
}

function diffTables(rows: DiffRow[]): string {
  const part = (type: DiffRow["type"], title: string) => {
    const rs = rows.filter((r) => r.type === type);
    if (rs.length === 0) return `**${title}:** none\n`;
    return `**${title}** (${rs.length}):\n\n${
      mdTable(
        ["#", "object", "field", "Go espejo", "espejo (Deno)", 'docs/migration.md "Different, on purpose"'],
        rs.map((r, i) => [i + 1, r.object, r.field, r.a, r.b, listedHint(r, onPurpose)]),
        400,
      )
    }\n`;
  };
  const unlisted = rows.filter((r) => !isListed(listedHint(r, onPurpose))).length;
  return [
    `${rows.length} differences, ${
      unlisted ? `**${unlisted} NOT LISTED**` : "all of them listed"
    } in docs/migration.md's "Different, on purpose" (${onPurpose.length} bullets read from ${migrationPath}).\n`,
    part("object", "Objects present in one only"),
    part("field", "Field differences"),
    part("status", "SyncConfig status differences"),
  ].join("\n");
}

const RETIRED_IN = ["team-a", "team-b", "silver", "late"];

function sanityChecks(go: Snapshot, deno: Snapshot): string {
  const P = PREFIX_TOKEN;
  const get = (s: Snapshot, key: string) => s.objects.get(key);
  const field = (s: Snapshot, key: string, path: string) => {
    const o = get(s, key);
    if (!o) return "(no object)";
    return flatten(o).get(path) ?? "(absent)";
  };
  const has = (s: Snapshot, key: string) => get(s, key) ? "present" : "absent";
  const targets = ["team-a", "team-b", "silver", "late", "leaving"];
  const checks: [string, (s: Snapshot) => string][] = [
    [
      "team-a tenant-info data.greeting (adopted, then edited by hand)",
      (s) => field(s, `${P}-team-a/ConfigMap/tenant-info`, "data.greeting"),
    ],
    ["team-a tenant-info labels", (s) => JSON.stringify(get(s, `${P}-team-a/ConfigMap/tenant-info`)?.metadata)],
    [
      "team-b tenant-credentials data (pre-existing with other keys)",
      (s) => JSON.stringify(get(s, `${P}-team-b/Secret/tenant-credentials`)?.data),
    ],
    ...targets.map((t): [string, (s: Snapshot) => string] => [
      `${t} tenant-immutable data.token`,
      (s) => field(s, `${P}-${t}/Secret/tenant-immutable`, "data.token"),
    ]),
    ["silver allow-same-namespace spec.podSelector (edited by hand)", (s) =>
      JSON.stringify(
        (get(s, `${P}-silver/NetworkPolicy.networking.k8s.io/allow-same-namespace`)?.spec as Obj)?.podSelector,
      )],
    [
      "retired-config left (team-a, team-b, silver, late)",
      (s) => RETIRED_IN.map((n) => has(s, `${P}-${n}/ConfigMap/retired-config`)).join(", "),
    ],
    [
      "retired-${PROJECT_NAME} Secrets left (team-a, team-b, silver, late)",
      (s) => RETIRED_IN.map((n) => has(s, `${P}-${n}/Secret/retired-${P}-${n}`)).join(", "),
    ],
    ...["late", "leaving", "team-sandbox", "frozen"].map((t): [string, (s: Snapshot) => string] => [
      `${t} tenant-info`,
      (s) => has(s, `${P}-${t}/ConfigMap/tenant-info`),
    ]),
    [
      "alternation-marker in",
      (s) =>
        [...s.objects.keys()].filter((k) => k.endsWith("/ConfigMap/alternation-marker")).map((k) => k.split("/")[0])
          .join(", ") || "none",
    ],
    [
      "ClusterRole <P>-team-a-viewer",
      (s) => has(s, `(cluster)/ClusterRole.rbac.authorization.k8s.io/${P}-team-a-viewer`),
    ],
    ["alpha unrelated ConfigMap", (s) => has(s, `${P}-alpha/ConfigMap/unrelated`)],
  ];
  return mdTable(["check", "Go espejo", "espejo (Deno)"], checks.map(([n, f]) => [n, f(go), f(deno)]), 400);
}

function markerTable(go: MarkerTally, deno: MarkerTally): string {
  const owners = (t: MarkerTally) => formatCounts(t.ownerValues);
  return mdTable(["", "Go espejo", "espejo (Deno)"], [
    ["objects in target namespaces", go.objects, deno.objects],
    [`label ${"sync.appuio.ch/managed-by"}`, go.label, deno.label],
    ["annotation sync.appuio.ch/owner", go.owner, deno.owner],
    ["annotation sync.appuio.ch/desired-hash", go.hash, deno.hash],
    ["annotation sync.appuio.ch/created-by", go.createdBy, deno.createdBy],
    ["owner values", owners(go), owners(deno)],
  ], 2000);
}

function eventTable(runs: SemanticRun[]): string {
  const rows: unknown[][] = [];
  for (const r of runs) {
    const evs = r.checkpoints.at(-1)?.snapshot.events ?? [];
    if (evs.length === 0) rows.push([r.contender.title, "(no Events)", "", "", "", ""]);
    for (const e of evs) rows.push([r.contender.title, e.object, e.type, e.reason, e.count, e.message]);
  }
  return mdTable(["controller", "involved object", "type", "reason", "count", "message (first)"], rows, 400);
}

function countsTable(runs: SemanticRun[]): string {
  const names = [...new Set(runs.flatMap((r) => [...r.counts.keys()]))].sort();
  const cell = (r: SemanticRun, name: string) =>
    (r.counts.get(name) ?? []).map((c) => `${c.counts} (${seconds(c.atMs)})`).join(" → ");
  return [
    `Each SyncConfig's synchronizedItemCount/deletedItemCount/failedItemCount, listed every ${COUNT_POLL_MS} ms, with the`,
    "time from the controller's start; mutations began at " +
    runs.map((r) => `${seconds(r.mutatedAtMs)} (${r.contender.title})`).join(", ") + ".",
    "",
    mdTable(
      ["SyncConfig", ...runs.map((r) => r.contender.title)],
      names.map((n) => [n, ...runs.map((r) => cell(r, n))]),
      2000,
    ),
  ].join("\n");
}

function semanticReport(go: SemanticRun, deno: SemanticRun): string {
  const out: string[] = [];
  out.push("## Semantic scenario\n");
  out.push(
    mdTable(["", "Go espejo", "espejo (Deno)"], [
      ...go.checkpoints.map((cp, i) => {
        const d = deno.checkpoints[i];
        const f = (c: Convergence) =>
          `${c.stable ? "stable" : "**NOT stable**"}, settled after ${seconds(c.settledMs)} (waited ${
            seconds(c.waitedMs)
          })${c.exited ? `, ${c.exited}` : ""}${c.changing.length ? `; changing: ${c.changing.join(", ")}` : ""}`;
        return [`checkpoint ${cp.name}`, f(cp.convergence), d ? f(d.convergence) : "-"];
      }),
      ["peak resident memory (VmHWM)", mib(go.mem.hwmKiB * 1024), mib(deno.mem.hwmKiB * 1024)],
      ["peak anonymous memory (RssAnon)", mib(go.mem.maxAnonKiB * 1024), mib(deno.mem.maxAnonKiB * 1024)],
      ["CPU time (user+system)", `${go.cpuSeconds.toFixed(2)} s`, `${deno.cpuSeconds.toFixed(2)} s`],
      ["exit after SIGTERM", go.exit, deno.exit],
    ], 2000),
  );
  for (let i = 0; i < go.checkpoints.length; i++) {
    const a = go.checkpoints[i];
    const b = deno.checkpoints[i];
    if (!b) continue;
    out.push(`\n### Differences at checkpoint ${a.name}\n`);
    out.push(diffTables(diffSnapshots(a.snapshot.objects, b.snapshot.objects)));
    out.push(
      `\nespejo (Deno)'s markers (dropped before diffing):\n\n${markerTable(a.snapshot.markers, b.snapshot.markers)}\n`,
    );
  }
  const last = (r: SemanticRun) => r.checkpoints.at(-1)!.snapshot;
  out.push(`\n### Checks on the final state\n\n${sanityChecks(last(go), last(deno))}\n`);
  out.push(`\n### Status counts over the run (not diffed)\n\n${countsTable([go, deno])}\n`);
  out.push(`\n### Events (not diffed)\n\n${eventTable([go, deno])}\n`);
  out.push("\n### Requests (audit log, by controller identity)\n");
  out.push(
    verbTable([
      ...go.checkpoints.map((cp, i): [string, AuditEvent[], AuditEvent[]] => [
        i === 0 ? "start until checkpoint 1" : "mutations until checkpoint 2",
        cp.requests,
        deno.checkpoints[i]?.requests ?? [],
      ]),
      [`steady, ${seconds(steadyMs)} after checkpoint 2`, go.steadyRequests, deno.steadyRequests],
    ]),
  );
  const all = (r: SemanticRun) => [...r.checkpoints.flatMap((c) => c.requests), ...r.steadyRequests];
  out.push(`\nWhole run by verb and resource:\n\n${
    mdTable(["controller", "requests"], [
      [go.contender.title, formatCounts(countBy(all(go), (e) => `${e.verb} ${resourceOf(e)}`))],
      [deno.contender.title, formatCounts(countBy(all(deno), (e) => `${e.verb} ${resourceOf(e)}`))],
    ], 4000)
  }\n`);
  return out.join("\n");
}

function scaleReport(go: ScaleRun, deno: ScaleRun): string {
  const limitText = limits
    ? `memory.limit_in_bytes ${memoryLimit}, cpu.cfs_quota_us ${cpuQuota} / cpu.cfs_period_us ${cpuPeriod}`
    : "none (--no-limits)";
  const f = (r: ScaleRun, fn: (s: CgroupStats & { peakRssBytes: number }) => string) => r.cgroup ? fn(r.cgroup) : "-";
  const rows: unknown[][] = [
    [
      "converged (all objects, statuses counting them)",
      go.converged ? seconds(go.convergedMs) : `**no** (${go.progress})`,
      deno.converged ? seconds(deno.convergedMs) : `**no** (${deno.progress})`,
    ],
    ["exits / restarts", go.exits.join("; ") || "none", deno.exits.join("; ") || "none"],
    ["OOM kills (memory.oom_control oom_kill)", f(go, (s) => String(s.oomKills)), f(deno, (s) => String(s.oomKills))],
    ["memory.failcnt", f(go, (s) => String(s.failcnt)), f(deno, (s) => String(s.failcnt))],
    ["memory.max_usage_in_bytes", f(go, (s) => mib(s.maxUsageBytes)), f(deno, (s) => mib(s.maxUsageBytes))],
    [
      "peak anonymous (memory.stat rss, sampled)",
      f(go, (s) => mib(s.peakRssBytes)),
      f(deno, (s) => mib(s.peakRssBytes)),
    ],
    [
      "at the end: usage / rss / cache / mapped_file",
      f(go, (s) => `${mib(s.usageBytes)} / ${mib(s.rssBytes)} / ${mib(s.cacheBytes)} / ${mib(s.mappedFileBytes)}`),
      f(deno, (s) => `${mib(s.usageBytes)} / ${mib(s.rssBytes)} / ${mib(s.cacheBytes)} / ${mib(s.mappedFileBytes)}`),
    ],
    ["peak resident (VmHWM)", mib(go.mem.hwmKiB * 1024), mib(deno.mem.hwmKiB * 1024)],
    ["CPU time (user+system)", `${go.cpuSeconds.toFixed(1)} s`, `${deno.cpuSeconds.toFixed(1)} s`],
    [
      "CPU throttled periods / time",
      f(go, (s) => `${s.nrThrottled}/${s.nrPeriods} / ${(s.throttledNs / 1e9).toFixed(1)} s`),
      f(deno, (s) => `${s.nrThrottled}/${s.nrPeriods} / ${(s.throttledNs / 1e9).toFixed(1)} s`),
    ],
  ];
  return [
    `## Scale scenario: ${scaleN} namespaces × ${scaleK} items (${Math.ceil(scaleK / ITEMS_PER_SCALE_CONFIG)} ` +
    `SyncConfigs), limits: ${limitText}\n`,
    mdTable(["", "Go espejo", "espejo (Deno)"], rows, 2000),
    "",
    "Memory accounting: each controller runs from a private copy of its executable whose page cache was dropped, so",
    "its code pages are charged to its cgroup as in a container. memory.max_usage_in_bytes and failcnt include page",
    "cache (code, files read, logs are piped out): a usage at the limit with failcnt > 0 means the kernel reclaimed",
    "cache there, not an OOM kill; the anonymous peak is what cannot be reclaimed. Client-side rate limits differ: the",
    "Go espejo has controller-runtime's 20 QPS / burst 30 per REST client, and controller-runtime makes one client per",
    "kind, so about 20 QPS per kind; espejo (Deno) has one limit for all requests, its default 50 / 100.",
    "\nRequests:\n",
    verbTable([
      ["start until converged (or timeout)", go.requests, deno.requests],
      [`steady, ${seconds(steadyMs)} after`, go.steadyRequests, deno.steadyRequests],
    ]),
  ].join("\n");
}

// ---------------------------------------------------------------------------------------------------------------
// Main

const tStart = performance.now();
const loadavg = async () => (await Deno.readTextFile("/proc/loadavg").catch(() => "")).split(" ").slice(0, 3).join(" ");
const loadAtStart = await loadavg();
const out = values.out ?? await Deno.makeTempDir({ prefix: "espejo-compare-" });
await Deno.mkdir(out, { recursive: true });
const work = await Deno.makeTempDir({ prefix: "espejo-compare-work-" });
log(`output in ${out}`);

let cp: ControlPlane | undefined;
const cleanup = async () => {
  for (const p of Proc.running) p.kill();
  await cp?.stop();
  await Deno.remove(work, { recursive: true }).catch(() => {});
};
Deno.addSignalListener("SIGINT", async () => {
  log("interrupted; cleaning up");
  await cleanup();
  Deno.exit(130);
});

let report = "";
try {
  cp = await ControlPlane.start({ audit: true, log: (l) => log(l) });
  await installBase(cp.client());
  const admin = cp.client();
  const audit = new AuditTail(cp.auditLogPath);
  const resources = await discover(admin);

  const semantic: SemanticRun[] = [];
  for (const c of contenders) {
    const run = await runSemantic(c, cp, admin, audit, resources, work, out);
    semantic.push(run);
    for (const [i, chk] of run.checkpoints.entries()) {
      await Deno.writeTextFile(
        join(out, `${c.id}-checkpoint${i + 1}.json`),
        JSON.stringify(Object.fromEntries(chk.snapshot.objects), null, 2),
      );
    }
    await deleteRun(admin, c.semanticPrefix);
  }
  const scale: ScaleRun[] = [];
  if (scaleN > 0 && scaleK > 0) {
    for (const c of contenders) {
      scale.push(await runScale(c, cp, admin, audit, work, out));
      await deleteRun(admin, c.scalePrefix);
    }
  }
  admin.close();

  const [go, deno] = semantic;
  report = [
    "# espejo (Deno) vs the Go espejo\n",
    mdTable(["", ""], [
      ["command", `deno task compare ${Deno.args.join(" ")}`],
      ["date", new Date().toISOString()],
      ["Go espejo", `${goBinary}`],
      ["espejo (Deno)", `deno ${Deno.version.deno} run ${denoFlags.join(" ")} ${denoMain}`],
      [
        "flags of both",
        `--reconcile-interval=${interval} --metrics-addr=127.0.0.1:<free port>; WATCH_NAMESPACE=<P>-cfg`,
      ],
      ["identity of both", "a ServiceAccount in <P>-cfg bound to cluster-admin"],
      ["CPUs; load average at start / end", `${navigator.hardwareConcurrency}; ${loadAtStart} / ${await loadavg()}`],
      ["run time", seconds(performance.now() - tStart)],
      ["snapshots and logs", out],
    ], 2000),
    "",
    semanticReport(go, deno),
    scale.length === 2 ? `\n${scaleReport(scale[0], scale[1])}` : "",
    "",
  ].join("\n");
  await Deno.writeTextFile(join(out, "report.md"), report);
  if (scale.length === 2) {
    const series = (get: (t: Timeline) => [number, number][]) =>
      scale.map((r, i) => ({ label: r.contender.title, color: colorOf(i), points: get(r.timeline) }));
    const what = `${scaleN} namespaces x ${scaleK} items${limits ? ", under 100Mi/300m" : ""}`;
    await Deno.writeTextFile(
      join(out, "compare-requests.svg"),
      lineChart(
        `API requests per second, a new workload of ${what}`,
        "seconds since start",
        "requests / s",
        series((t) => t.requests),
      ),
    );
    await Deno.writeTextFile(
      join(out, "compare-memory.svg"),
      lineChart(`Resident memory, a new workload of ${what}`, "seconds since start", "MiB", series((t) => t.memoryMiB)),
    );
  }
  await Deno.writeTextFile(
    join(out, "requests.json"),
    JSON.stringify(
      {
        semantic: semantic.map((r) => ({
          controller: r.contender.id,
          checkpoints: r.checkpoints.map((c) => countBy(c.requests, (e) => `${e.verb} ${resourceOf(e)}`)),
          steady: countBy(r.steadyRequests, (e) => `${e.verb} ${resourceOf(e)}`),
        })),
        scale: scale.map((r) => ({
          controller: r.contender.id,
          converging: countBy(r.requests, (e) => `${e.verb} ${resourceOf(e)}`),
          steady: countBy(r.steadyRequests, (e) => `${e.verb} ${resourceOf(e)}`),
        })),
      },
      null,
      2,
    ),
  );
} finally {
  await cleanup();
}
console.log(report);
log(`done in ${seconds(performance.now() - tStart)}; report in ${join(out, "report.md")}`);
Deno.exit(0);

/** The semantic phase: the documented semantics run by each controller, snapshotted twice, diffed and labelled. */
import { join } from "node:path";
import { type AuditEvent, ControlPlane, delay, freePorts } from "../../testenv/controlplane.ts";
import { type MemorySamples, Proc } from "../kit/process.ts";
import type { HttpKubeClient } from "../../lib/kube/client.ts";
import { AuditTail, countBy } from "../kit/audit.ts";
import { createNamespaces } from "../kit/namespaces.ts";
import {
  type DiffRow,
  diffSnapshots,
  emptyTally,
  flatten,
  formatCounts,
  isListed,
  listedHint,
  mapPrefix,
  type MarkerTally,
  mdTable,
  mib,
  normalizeObject,
  type Obj,
  preexistingObjects,
  PREFIX_TOKEN,
  resourceOf,
  SCENARIO_RESOURCES,
  scenarioMutations,
  scenarioNamespaces,
  scenarioSyncConfigs,
} from "../compare_lib.ts";
import {
  type Contender,
  convergeTimeoutMs,
  intervalMs,
  log,
  migrationPath,
  onPurpose,
  seconds,
  steadyMs,
} from "./options.ts";
import { clusterAdminIn, collectionFor, createObject, list, md, type Resource, windowRequests } from "./cluster.ts";

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
async function pollCounts(
  admin: HttpKubeClient,
  p: string,
  proc: Proc,
  history: CountHistory,
  stop: AbortSignal,
) {
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
async function waitStable(
  admin: HttpKubeClient,
  p: string,
  proc: Proc,
  timeoutMs: number,
): Promise<Convergence> {
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

export interface SemanticRun {
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

export async function runSemantic(
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
  const { identity, kubeconfig } = await clusterAdminIn(cp, admin, cfg, join(work, `${p}.kubeconfig`));
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
  /** Waits until stable, then snapshots the objects and takes the requests of the window. */
  const checkpoint = async (n: number, name: string) => {
    const convergence = await waitStable(admin, p, proc, convergeTimeoutMs);
    const settled = `settled after ${seconds(convergence.settledMs)}`;
    log(`${c.title}: checkpoint ${n} ${convergence.stable ? "stable" : "NOT stable"}, ${settled}`);
    const requests = await windowRequests(audit, identity.username);
    checkpoints.push({ name, convergence, snapshot: await snapshot(admin, p, resources), requests });
  };
  const counts: CountHistory = new Map();
  const stopPolling = new AbortController();
  const polling = pollCounts(admin, p, proc, counts, stopPolling.signal);
  try {
    await checkpoint(1, "1: converged");

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
    await checkpoint(2, "2: after relabels, hand edits, SyncConfig edits");
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

// ---------------------------------------------------------------------------------------------------------------
// Report

export function verbTable(rows: [string, AuditEvent[], AuditEvent[]][]): string {
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

export function semanticReport(go: SemanticRun, deno: SemanticRun): string {
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

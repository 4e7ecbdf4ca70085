/** The scale phase: N namespaces and K items under the Go espejo's limits, timed to convergence. */
import { join } from "node:path";
import { type AuditEvent, ControlPlane, delay, freePorts } from "../../testenv/controlplane.ts";
import { Cgroup, type CgroupStats } from "../../testenv/cgroup.ts";
import { type MemorySamples, Proc } from "../kit/process.ts";
import type { HttpKubeClient } from "../../lib/kube/client.ts";
import { AuditTail } from "../kit/audit.ts";
import { createNamespaces } from "../kit/namespaces.ts";
import { memoryMiB, requestsPerSecond, type Timeline } from "../timeline.ts";
import {
  ITEMS_PER_SCALE_CONFIG,
  mdTable,
  mib,
  type Obj,
  RUN_LABEL,
  SCALE_LABEL,
  SCALE_RESOURCES,
  scaleSyncConfigs,
} from "../compare_lib.ts";
import {
  type Contender,
  cpuPeriod,
  cpuQuota,
  limits,
  log,
  memoryLimit,
  scaleK,
  scaleN,
  scaleTimeoutMs,
  seconds,
  steadyMs,
} from "./options.ts";
import { clusterAdminIn, collectionFor, createObject, list, privateCopy, windowRequests } from "./cluster.ts";
import { verbTable } from "./semantic.ts";

export interface ScaleRun {
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

export async function runScale(
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
  const { identity, kubeconfig } = await clusterAdminIn(cp, admin, cfg, join(work, `${p}.kubeconfig`));
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

export function scaleReport(go: ScaleRun, deno: ScaleRun): string {
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

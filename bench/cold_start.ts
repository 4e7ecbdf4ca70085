/**
 * `deno task bench --cold-start [--sizes 1000] [--restarts 3] [--profile] [--try-v8-flags="--a;--b"] [--limits]
 * [--name cold-start]`: how long a single replica takes from its start to every namespace synced, on N namespaces ×
 * M SyncConfigs × K items that are in sync already (a restart, a rollout, a leader's replacement without a standby),
 * and where its CPU goes.
 *
 * Per size: the workload is set up and converged by a controller outside the limits (setup, not measured); then each
 * restart runs inside them. A restart has two parts, told apart by the controller's own log line "Filled the caches
 * of ..." (its time) and its CPU time sampled from /proc every 100 ms (which costs the controller nothing):
 *  - the fill: every object espejo manages arrives by its cache's WatchList and is judged on arrival;
 *  - the units: every namespace's unit finds its items judged in sync (0 requests).
 * Synced is `espejo_syncs_total` reaching N, read from /metrics once a second. With --profile, one more restart runs
 * under the inspector's sampling profiler, and the table of where its time went is added. With --try-v8-flags, one
 * more restart per set of V8 flags, added to the shipped ones (a trial of a flag, on the same workload).
 */
import { join } from "node:path";
import { Cgroup } from "../testenv/cgroup.ts";
import { freePorts } from "../testenv/controlplane.ts";
import { ControllerDied, ControllerProcess, until } from "./kit/controller.ts";
import { CONFIG_NS, convergedWorkload } from "./kit/converged.ts";
import { type CpuProfile, InspectorSession, selfTimes } from "./kit/cpu_profile.ts";
import { cpuTicksOf } from "./kit/process.ts";
import { sumOf } from "./prometheus_text.ts";
import { ITEMS_PER_CONFIG } from "./workload.ts";

const M = 5;
const K = ITEMS_PER_CONFIG;
const TICK_MS = 10; // /proc's clock ticks
const log = (s: string) => console.error(`bench: ${s}`);

export interface ColdStartOptions {
  sizes: number[];
  restarts: number;
  profile: boolean;
  /**
   * V8 flags to try: after the restarts as shipped, one more restart for each set, with `--v8-flags=<set>` added to
   * the shipped flags, on the same converged workload (a trial, not how it ships).
   */
  tryV8Flags?: string[];
  /** Inside 100Mi / 300m (cgroup v1; root). */
  limits?: { memoryBytes: number; cpuQuota: number };
}

export interface RestartFigures {
  /** When the process was spawned (Unix ms). */
  spawnedAt: number;
  /** From the process's spawn to the managed caches' fill logged. */
  fillSeconds: number;
  fillCpuSeconds: number;
  /** From the fill to every namespace's unit done. */
  unitsSeconds: number;
  unitsCpuSeconds: number;
  totalSeconds: number;
  totalCpuSeconds: number;
  objects: number;
  peakAnonMiB: number;
  /** When the peak was sampled, from the spawn (absent in results from before it was recorded). */
  peakAnonSeconds?: number;
  /** The largest V8 heap (committed) of the once-a-second scrapes (absent in results from before it was recorded). */
  peakHeapMiB?: number;
  /** The V8 flags this restart added to the shipped ones (a trial); absent as shipped. */
  v8Flags?: string;
}

export interface TrialEnded {
  v8Flags: string;
  how: string;
}

export interface ColdStartSize {
  n: number;
  m: number;
  k: number;
  setupConvergenceSeconds: number;
  restarts: RestartFigures[];
  /** OOM kills of the restarts as shipped (a trial's are in {@link trialsEnded}). */
  oomKills: number;
  /** Trial restarts that ended before every namespace was synced, and how. */
  trialsEnded?: TrialEnded[];
  /** Where a profiled restart's time went: its fill and its units apart. */
  profile?: { fill: ProfilePart; units: ProfilePart };
}

type ProfileRow = { what: string; ms: number; share: number };
type ProfilePart = { totalMs: number; byFunction: ProfileRow[]; byFile: ProfileRow[] };

/** Runs every size; returns the results (the caller writes them). */
export async function coldStart(o: ColdStartOptions): Promise<ColdStartSize[]> {
  const out: ColdStartSize[] = [];
  for (const n of o.sizes) out.push(await coldStartAt(n, o));
  return out;
}

async function coldStartAt(N: number, o: ColdStartOptions): Promise<ColdStartSize> {
  const slowdown = o.limits ? 1 / o.limits.cpuQuota : 1;
  const w = await convergedWorkload(N, M, log);
  let cgroup: Cgroup | undefined;
  try {
    const [metricsPort, healthPort, inspectorPort] = await freePorts(3);
    const logFile = join(w.dir, "controller.log");
    const process = (cg?: Cgroup) =>
      new ControllerProcess({
        kubeconfig: w.kubeconfig,
        metricsPort,
        healthPort,
        logFile,
        configNamespace: CONFIG_NS,
        cgroup: cg,
        readyTimeoutMs: 60_000 * slowdown,
      });
    if (o.limits) cgroup = await Cgroup.create("espejo-cold-start", o.limits.memoryBytes, o.limits.cpuQuota);
    const restarts: RestartFigures[] = [];
    for (let r = 0; r < o.restarts; r++) {
      log(`cold start N=${N}: restart ${r + 1} of ${o.restarts}`);
      restarts.push(await restart(process(cgroup), logFile, N, slowdown));
      log(`cold start N=${N}: ${describe(restarts.at(-1)!)}`);
    }
    const oomKills = cgroup ? await cgroup.oomKills() : 0;
    const trialsEnded: TrialEnded[] = [];
    for (const flags of o.tryV8Flags ?? []) {
      log(`cold start N=${N}: a restart with --v8-flags=${flags} added`);
      const killsBefore = cgroup ? await cgroup.oomKills() : 0;
      try {
        const tried = await restart(process(cgroup), logFile, N, slowdown, { denoFlags: [`--v8-flags=${flags}`] });
        restarts.push({ ...tried, v8Flags: flags });
        log(`cold start N=${N}: with ${flags}: ${describe(tried)}`);
      } catch (e) {
        // A trial that ends the controller (the memory limit's kill) is a result, not the end of the run.
        if (!(e instanceof ControllerDied)) throw e;
        const killed = (cgroup ? await cgroup.oomKills() : 0) > killsBefore;
        trialsEnded.push({ v8Flags: flags, how: killed ? "killed by the memory limit (OOM)" : e.message });
        log(`cold start N=${N}: with ${flags}: ${trialsEnded.at(-1)!.how}`);
      }
    }
    let profile: ColdStartSize["profile"];
    if (o.profile) {
      // The profiler keeps every sample and the inspector its own buffers: the same CPU quota, room in memory.
      log(`cold start N=${N}: one more restart under the sampling profiler (memory limit raised to 400 MiB)`);
      await cgroup?.remove();
      cgroup = o.limits ? await Cgroup.create("espejo-cold-start", 400 * 2 ** 20, o.limits.cpuQuota) : undefined;
      let session: InspectorSession | undefined;
      let cpuProfile: CpuProfile | undefined;
      let profiledFrom = 0;
      const profiled = await restart(process(cgroup), logFile, N, slowdown, {
        denoFlags: [`--inspect-wait=127.0.0.1:${inspectorPort}`],
        attached: async () => {
          session = await InspectorSession.connect(inspectorPort);
          await session.startProfiling();
          profiledFrom = Date.now();
        },
        beforeStop: async () => {
          cpuProfile = await session!.stopProfiling();
          session!.close();
        },
      });
      // The fill's samples and the units' apart, split at the fill's log line (its time since the profile began).
      const fillEndMs = profiled.spawnedAt + profiled.fillSeconds * 1000 - profiledFrom;
      const part = (window: { fromMs?: number; toMs?: number }) => {
        const t = selfTimes(cpuProfile!, window);
        return { totalMs: t.totalMs, byFunction: t.byFunction.slice(0, 25), byFile: t.byFile.slice(0, 15) };
      };
      profile = { fill: part({ toMs: fillEndMs }), units: part({ fromMs: fillEndMs }) };
    }
    return {
      n: N,
      m: M,
      k: K,
      setupConvergenceSeconds: w.setupSeconds,
      restarts,
      oomKills,
      trialsEnded: trialsEnded.length ? trialsEnded : undefined,
      profile,
    };
  } finally {
    await cgroup?.remove();
    await w.stop();
  }
}

/** One restart of `ctl`, timed from its spawn to every namespace synced, its fill told apart by its log. */
async function restart(
  ctl: ControllerProcess,
  logFile: string,
  N: number,
  slowdown: number,
  o: { denoFlags?: string[]; attached?: () => Promise<void>; beforeStop?: () => Promise<void> } = {},
): Promise<RestartFigures> {
  const logStart = (await Deno.stat(logFile).catch(() => undefined))?.size ?? 0;
  const spawnedAt = Date.now();
  const cpu: [number, number][] = []; // [Unix ms, ticks]
  let heapTotal = 0; // the largest V8 heap (committed) of the scrapes: the part of the anonymous peak that is V8's
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      if (ctl.child?.pid) cpu.push([Date.now(), await cpuTicksOf(ctl.child.pid)]);
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  try {
    await ctl.start(3600, [], { denoFlags: o.denoFlags, attached: o.attached });
    await until(
      "every namespace synced after the restart",
      async () => {
        ctl.alive();
        // A scrape refused while the controller is busy is asked again (alive() above tells an ended process).
        return await ctl.metrics().then((m) => {
          heapTotal = Math.max(heapTotal, sumOf(m, "nodejs_heap_size_total_bytes"));
          return sumOf(m, "espejo_syncs_total") >= N;
        }, () => false);
      },
      Math.max(600_000, N * 100 * slowdown),
      1000,
    );
    const syncedAt = Date.now();
    const totalTicks = await cpuTicksOf(ctl.child.pid);
    const objects = sumOf(await ctl.metrics(), "espejo_cache_objects", { cache: "managed:" }, true);
    await o.beforeStop?.();
    const filledAt = await filledTime(logFile, logStart);
    const ticksAt = (t: number) => cpu.findLast(([at]) => at <= t)?.[1] ?? 0;
    const fillTicks = ticksAt(filledAt);
    return {
      spawnedAt,
      fillSeconds: (filledAt - spawnedAt) / 1000,
      fillCpuSeconds: (fillTicks * TICK_MS) / 1000,
      unitsSeconds: (syncedAt - filledAt) / 1000,
      unitsCpuSeconds: ((totalTicks - fillTicks) * TICK_MS) / 1000,
      totalSeconds: (syncedAt - spawnedAt) / 1000,
      totalCpuSeconds: (totalTicks * TICK_MS) / 1000,
      objects,
      peakAnonMiB: ctl.memory.peakAnonKiB / 1024,
      peakAnonSeconds: (ctl.memory.peakAnonAt - spawnedAt) / 1000,
      peakHeapMiB: heapTotal / 2 ** 20,
    };
  } finally {
    sampling = false;
    await sampler;
    await ctl.stop();
  }
}

/** When the controller logged that the managed caches were filled, in this start's part of the log. */
async function filledTime(logFile: string, from: number): Promise<number> {
  const text = (await Deno.readTextFile(logFile)).slice(from);
  for (const line of text.split("\n")) {
    if (!line.includes("Filled the caches")) continue;
    try {
      return Date.parse((JSON.parse(line) as { time: string }).time);
    } catch {
      continue;
    }
  }
  throw new Error("bench: the controller's log has no 'Filled the caches' line for this start");
}

const s1 = (v: number) => v.toFixed(1);
const peakWhen = (r: RestartFigures) =>
  (r.peakAnonSeconds === undefined ? "" : ` at ${s1(r.peakAnonSeconds)} s`) +
  (r.peakHeapMiB === undefined ? "" : ` (V8 heap at most ${s1(r.peakHeapMiB)} MiB)`);

function describe(r: RestartFigures): string {
  return `synced after ${s1(r.totalSeconds)} s (${s1(r.totalCpuSeconds)} s CPU): fill ${s1(r.fillSeconds)} s ` +
    `(${s1(r.fillCpuSeconds)} s CPU, ${r.objects} objects), units ${s1(r.unitsSeconds)} s (${
      s1(r.unitsCpuSeconds)
    } s CPU); peak anonymous ${s1(r.peakAnonMiB)} MiB${peakWhen(r)}`;
}

/** The results as a page of bench/results. */
export function coldStartMarkdown(
  sizes: ColdStartSize[],
  meta: { date: string; command: string; cpus: number; commit: string; limits: boolean },
): string {
  const lines = [
    "# espejo cold start",
    "",
    `${meta.date}, ${meta.cpus} CPUs, commit ${meta.commit}, \`${meta.command}\`. ` +
    `${meta.limits ? "Each restart inside 100Mi / 300m (cgroup v1)" : "Without limits"}; the workload converged ` +
    "beforehand by a controller outside them. Times from the process's spawn; the fill ends at the controller's log " +
    'line "Filled the caches of ..."; synced is every namespace\'s unit done. CPU from /proc (user and system).',
    "",
    "| N | objects | V8 flags added | restart until synced: wall / CPU | fill: wall / CPU | CPU per object on arrival | units: wall / CPU | CPU per namespace's unit | peak anonymous | OOM kills |",
    "|---|---|---|---|---|---|---|---|---|---|",
  ];
  for (const s of sizes) {
    for (const r of s.restarts) {
      lines.push(
        `| ${s.n} | ${r.objects} | ${r.v8Flags ? `\`${r.v8Flags}\` (a trial)` : "none (as shipped)"} | ${
          s1(r.totalSeconds)
        } s / ${s1(r.totalCpuSeconds)} s | ${s1(r.fillSeconds)} s / ${s1(r.fillCpuSeconds)} s | ${
          Math.round((r.fillCpuSeconds * 1e6) / Math.max(1, r.objects))
        } µs | ${s1(r.unitsSeconds)} s / ${s1(r.unitsCpuSeconds)} s | ${
          ((r.unitsCpuSeconds * 1000) / s.n).toFixed(2)
        } ms | ${s1(r.peakAnonMiB)} MiB${peakWhen(r)} | ${r.v8Flags ? 0 : s.oomKills} |`,
      );
    }
  }
  for (const s of sizes) {
    for (const t of s.trialsEnded ?? []) {
      lines.push("", `A trial restart at N=${s.n} with \`${t.v8Flags}\` added ended before it was synced: ${t.how}.`);
    }
  }
  for (const s of sizes) {
    if (!s.profile) continue;
    lines.push(
      "",
      `## Where a restart's CPU went at N=${s.n} (sampling profiler, 1 ms)`,
      "",
      "Self time, idle included (inside the quota a throttled moment counts where it fell); a profiled restart runs " +
        "slower than the ones above, its shares are what count. The fill and the units apart, split at the fill's " +
        "log line.",
    );
    for (const [what, part] of [["the fill", s.profile.fill], ["the units", s.profile.units]] as const) {
      lines.push(
        "",
        `### ${what}: ${s1(part.totalMs / 1000)} s sampled`,
        "",
        "| file | self time | share |",
        "|---|---|---|",
        ...part.byFile.map((r) => `| ${r.what} | ${Math.round(r.ms)} ms | ${pct(r.share)} |`),
        "",
        "| function | self time | share |",
        "|---|---|---|",
        ...part.byFunction.map((r) => `| \`${r.what}\` | ${Math.round(r.ms)} ms | ${pct(r.share)} |`),
      );
    }
  }
  return lines.join("\n") + "\n";
}

const pct = (v: number) => `${(v * 100).toFixed(1)} %`;

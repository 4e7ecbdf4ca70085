/** Renders benchmark results as a Markdown table (with the targets) and an SVG chart of latencies. */
import type { LimitFigures } from "./limits.ts";
import type { Timeline } from "./timeline.ts";
import { STATUS_MAX_HOLD_MS } from "../lib/controller/status_schedule.ts";

export interface Latency {
  n: number;
  p50: number;
  p99: number;
}

export interface SizeResult {
  n: number;
  m: number;
  k: number;
  convergence: { seconds: number; byVerb: Record<string, number> };
  a: { byVerb: Record<string, number>; otherNamespaces: number; statusWrites: number; events: number };
  /** A steady pass as it runs normally (namespaces found in sync are skipped), and one that compares everything. */
  b: { skip: PassFigures; full?: PassFigures };
  /** `idleInController`: mean queue wait and duration of the controller's unit for a new namespace (writes included). */
  c: {
    idle: Latency;
    /** Not measured by `--scale` runs, nor `idleAsAdmin`, `b.full`, `e` and `p`. */
    duringPass?: Latency;
    idleInController: {
      queueMs: number;
      unitMs: number;
      /** The controller's CPU time per new namespace, and the API server's mean time per create (absent in older results). */
      cpuMsPerNamespace?: number;
      serverMsPerWrite?: number;
    };
    /** The same idle measurement with the controller running as a cluster admin (no RBAC escalation checks). */
    idleAsAdmin?: Latency;
  };
  d: {
    seconds: number;
    writes: number;
    byVerb: Record<string, number>;
    statusWrites: number;
    namespaces: number;
    /** Namespace units it cost (a unit per namespace is the least). */
    units?: number;
  };
  e?: { writes: number; byVerb: Record<string, number>; namespaces: number };
  /** Requests per second and memory over the run, for the charts (absent in older results). */
  timeline?: Timeline;
  /** One item removed from a SyncConfig with pruning on (absent in results from before pruning). */
  p?: { deletes: number; otherObjectWrites: number; finalizerWrites: number; namespaces: number };
  /** `heapUsedMiB`: V8's heap in use at rest (absent in older results). */
  f: { rssMiB: number; anonMiB: number; fileMiB: number; managedObjects: number; heapUsedMiB?: number };
  g: { byVerb: Record<string, number>; objectWrites?: Record<string, number> };
  /** With `--limits`: the controller ran inside the Go espejo's container limits. */
  /** `restartPeakAnonMiB`: a restart's own (until synced); `fullPassPeakAnonMiB`: a full-compare pass's after it. */
  h?: LimitFigures & { restartPeakAnonMiB: number; fullPassPeakAnonMiB?: number };
}

export interface PassFigures {
  requests: number;
  statusWrites: number;
  byVerb: Record<string, number>;
  /** Per pass, from the controller's espejo_full_pass_* histograms. */
  passSeconds: number;
  cpuSeconds: number;
  /** Namespaces synced (not skipped) per pass. */
  synced: number;
}

const verbs = (v: Record<string, number>) =>
  Object.keys(v).length ? Object.entries(v).sort().map(([k, n]) => `${n} ${k}`).join(", ") : "none";
const ms = (v: number) => (Number.isFinite(v) ? `${Math.round(v)} ms` : "n/a");
const mark = (ok: boolean) => (ok ? "✅" : "❌");
/** A cell of a phase that this run left out (`--scale`). */
const measured = <T>(v: T | undefined, cell: (v: T) => string) => (v === undefined ? "–" : cell(v));

export function renderMarkdown(
  results: SizeResult[],
  meta: { date: string; command: string; cpus: number; commit: string },
): string {
  const lines = [
    `# espejo benchmark`,
    ``,
    `${meta.date}, ${meta.cpus} CPUs, commit ${meta.commit}, \`${meta.command}\`. Requests are counted from the API server's audit log ` +
    `(the controller's identity, watches excluded). M SyncConfigs of K items and 2 deleteItems each.`,
    ``,
    `| measure | target | ${results.map((r) => `N=${r.n}`).join(" | ")} |`,
    `|---|---|${results.map(() => "---").join("|")}|`,
  ];
  const row = (name: string, target: string, cell: (r: SizeResult) => string) =>
    lines.push(`| ${name} | ${target} | ${results.map(cell).join(" | ")} |`);
  row("(a) one new namespace: requests in namespaces", "M*K creates", (r) => {
    const creates = r.a.byVerb.create ?? 0;
    const ok = creates === r.m * r.k && Object.keys(r.a.byVerb).every((v) => v === "create");
    return `${verbs(r.a.byVerb)} ${mark(ok)}`;
  });
  row(
    "(a) requests touching other namespaces",
    "0",
    (r) => `${r.a.otherNamespaces} ${mark(r.a.otherNamespaces === 0)}`,
  );
  row(
    "(a) status writes (counts changed) / events",
    "≤ M",
    (r) => `${r.a.statusWrites} / ${r.a.events} ${mark(r.a.statusWrites <= r.m)}`,
  );
  const requests = (p: PassFigures) => `${p.requests + p.statusWrites} ${mark(p.requests + p.statusWrites === 0)}`;
  const seconds = (s: number) => (s < 1 ? `${(s * 1000).toFixed(s < 0.01 ? 1 : 0)} ms` : `${s.toFixed(2)} s`);
  row("(b) one steady pass: requests", "0", (r) => requests(r.b.skip));
  row(
    "(b) steady pass: namespaces synced / wall time / CPU",
    "CPU < 200 ms",
    (r) =>
      `${r.b.skip.synced} / ${seconds(r.b.skip.passSeconds)} / ${seconds(r.b.skip.cpuSeconds)} ${
        mark(r.b.skip.cpuSeconds < 0.2)
      }`,
  );
  row("(b) full-compare pass (every 10 min): requests", "0", (r) => measured(r.b.full, requests));
  row(
    "(b) full-compare pass: namespaces synced / wall time / CPU",
    "",
    (r) => measured(r.b.full, (f) => `${f.synced} / ${seconds(f.passSeconds)} / ${seconds(f.cpuSeconds)}`),
  );
  row(
    "(c) new namespace to all items, idle: p50 / p99",
    "p99 < 250 ms",
    (r) => `${ms(r.c.idle.p50)} / ${ms(r.c.idle.p99)} (n=${r.c.idle.n}) ${mark(r.c.idle.p99 < 250)}`,
  );
  row(
    "(c) idle, inside the controller: mean queue wait / unit (writes included)",
    "",
    (r) => `${ms(r.c.idleInController.queueMs)} / ${ms(r.c.idleInController.unitMs)}`,
  );
  row(
    "(c) idle: controller CPU per new namespace / API server time per create",
    "",
    (r) => {
      const { cpuMsPerNamespace: cpu, serverMsPerWrite: server } = r.c.idleInController;
      return cpu === undefined ? "–" : `${ms(cpu)} / ${server === undefined ? "–" : ms(server)}`;
    },
  );
  row(
    "(c) idle, controller as cluster admin (no RBAC escalation checks): p50 / p99",
    "",
    (r) => measured(r.c.idleAsAdmin, (l) => `${ms(l.p50)} / ${ms(l.p99)} (n=${l.n})`),
  );
  row(
    "(c) same, during a full pass: p50 / p99",
    "p99 < 1 s",
    (r) => measured(r.c.duringPass, (l) => `${ms(l.p50)} / ${ms(l.p99)} (n=${l.n}) ${mark(l.p99 < 1000)}`),
  );
  row(
    "(d) new SyncConfig: writes / namespaces×K",
    "N*K",
    (r) => `${r.d.writes} / ${r.d.namespaces * r.k} ${mark(r.d.writes === r.d.namespaces * r.k)}`,
  );
  row(
    "(d) time to converge / status writes",
    // A status is held back by its SyncConfig's own work for at most a minute (lib/controller/status_schedule.ts):
    // a burst shorter than that writes one status, a longer one shows its progress once a minute.
    "1 status write per burst (+1 per minute of burst)",
    (r) =>
      `${r.d.seconds.toFixed(1)} s / ${r.d.statusWrites} ${
        mark(r.d.statusWrites <= 1 + Math.floor(r.d.seconds / (STATUS_MAX_HOLD_MS / 1000)))
      }`,
  );
  row(
    "(d) units of work / namespaces",
    "N (no unit from espejo's own echo)",
    (r) => (r.d.units === undefined ? "n/a" : `${r.d.units} / ${r.d.namespaces} ${mark(r.d.units <= r.d.namespaces)}`),
  );
  row(
    "(e) one edited item: writes / namespaces",
    "N",
    (r) => measured(r.e, (e) => `${e.writes} / ${e.namespaces} ${mark(e.writes === e.namespaces)}`),
  );
  row(
    "(p) one item removed, pruning on: deletes / namespaces; other object writes; finalizer writes",
    "N deletes, 0 other, 1 finalizer",
    (r) =>
      r.p === undefined
        ? "n/a"
        : `${r.p.deletes} / ${r.p.namespaces}; ${r.p.otherObjectWrites}; ${r.p.finalizerWrites} ${
          mark(r.p.deletes === r.p.namespaces && r.p.otherObjectWrites === 0 && r.p.finalizerWrites === 1)
        }`,
  );
  row(
    "(f) resident memory at rest / managed objects cached",
    "< 100 MiB at 20,000",
    // The target is stated at 20,000 objects; smaller runs are reported without a verdict.
    (r) =>
      `${r.f.rssMiB.toFixed(0)} MiB / ${r.f.managedObjects}${
        r.f.managedObjects >= 20_000 ? ` ${mark(r.f.rssMiB < 100)}` : ""
      }`,
  );
  row(
    "(f) of which anonymous (heap, allocator) / executable code (file-backed)",
    "",
    (r) => `${r.f.anonMiB.toFixed(0)} MiB / ${r.f.fileMiB.toFixed(0)} MiB`,
  );
  row("(g) restart: requests until synced", "", (r) => verbs(r.g.byVerb));
  row(
    "(g) restart: writes to target objects",
    "≤ one no-op update per item the server extends (M+1 NetworkPolicies)",
    (r) => {
      const writes = r.g.objectWrites ?? {};
      const ok = Object.entries(writes).every(([k, n]) => k === "update networkpolicies" && n <= r.m + 1);
      return `${verbs(writes)} ${mark(ok)}`;
    },
  );
  if (results.some((r) => r.h)) {
    const h = (cell: (h: NonNullable<SizeResult["h"]>) => string) => (r: SizeResult) => (r.h ? cell(r.h) : "n/a");
    row(
      "(h) inside 100Mi / 300m: OOM kills",
      "0",
      h((x) => `${x.oomKills} ${mark(x.oomKills === 0)}`),
    );
    row(
      "(h) peak anonymous memory during convergence (M configs, then a new one)",
      "< 64 MiB",
      h((x) => `${x.peakAnonMiB.toFixed(0)} MiB ${mark(x.peakAnonMiB < 64)}`),
    );
    row(
      "(h) peak anonymous memory during a restart (every object read again, then synced)",
      "< 64 MiB",
      h((x) => `${x.restartPeakAnonMiB.toFixed(0)} MiB ${mark(x.restartPeakAnonMiB < 64)}`),
    );
    row(
      "(h) peak anonymous memory during a full-compare pass",
      "",
      h((x) => (x.fullPassPeakAnonMiB === undefined ? "–" : `${x.fullPassPeakAnonMiB.toFixed(0)} MiB`)),
    );
    row(
      "(h) peak resident (VmHWM) / cgroup peak usage",
      "",
      h((x) => `${x.peakRssMiB.toFixed(0)} MiB / ${x.cgroupPeakMiB.toFixed(0)} MiB`),
    );
    row(
      "(h) resident memory at rest",
      "< 96 MiB",
      (r) => (r.h ? `${r.f.rssMiB.toFixed(0)} MiB ${mark(r.f.rssMiB < 96)}` : "n/a"),
    );
  }
  row(
    "initial convergence (M configs)",
    "",
    (r) => `${r.convergence.seconds.toFixed(1)} s; ${verbs(r.convergence.byVerb)}`,
  );
  return lines.join("\n") + "\n";
}

/** Grouped bars: p50 and p99, idle and during a pass, per N. */
export function renderSvg(results: SizeResult[]): string {
  const series = [
    { label: "idle p50", color: "#7fb3d5", get: (r: SizeResult) => r.c.idle.p50 },
    { label: "idle p99", color: "#1f618d", get: (r: SizeResult) => r.c.idle.p99 },
    { label: "during pass p50", color: "#f5b7b1", get: (r: SizeResult) => r.c.duringPass?.p50 ?? 0 },
    { label: "during pass p99", color: "#b03a2e", get: (r: SizeResult) => r.c.duringPass?.p99 ?? 0 },
  ];
  const width = 640;
  const height = 320;
  const left = 60;
  const bottom = 260;
  const top = 40;
  const max = Math.max(1, ...results.flatMap((r) => series.map((s) => s.get(r) || 0)));
  const scale = (v: number) => ((v || 0) / max) * (bottom - top);
  const groupWidth = (width - left - 20) / Math.max(1, results.length);
  const barWidth = Math.min(28, (groupWidth - 20) / series.length);
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<text x="${left}" y="20" font-size="14">New namespace until all items exist (ms), by number of namespaces</text>`,
    `<line x1="${left}" y1="${bottom}" x2="${width - 10}" y2="${bottom}" stroke="#333"/>`,
    `<line x1="${left}" y1="${top}" x2="${left}" y2="${bottom}" stroke="#333"/>`,
    `<text x="${left - 6}" y="${top + 4}" text-anchor="end">${Math.round(max)}</text>`,
    `<text x="${left - 6}" y="${bottom}" text-anchor="end">0</text>`,
  ];
  results.forEach((r, gi) => {
    const x0 = left + gi * groupWidth + 10;
    series.forEach((s, si) => {
      const h = scale(s.get(r));
      const x = x0 + si * barWidth;
      parts.push(`<rect x="${x}" y="${bottom - h}" width="${barWidth - 2}" height="${h}" fill="${s.color}"/>`);
      parts.push(
        `<text x="${x + barWidth / 2}" y="${bottom - h - 3}" text-anchor="middle" font-size="9">${
          Math.round(s.get(r))
        }</text>`,
      );
    });
    parts.push(
      `<text x="${x0 + (series.length * barWidth) / 2}" y="${bottom + 16}" text-anchor="middle">N=${r.n}</text>`,
    );
  });
  series.forEach((s, i) => {
    const x = left + i * 140;
    parts.push(`<rect x="${x}" y="${height - 24}" width="10" height="10" fill="${s.color}"/>`);
    parts.push(`<text x="${x + 14}" y="${height - 15}">${s.label}</text>`);
  });
  parts.push("</svg>");
  return parts.join("\n") + "\n";
}

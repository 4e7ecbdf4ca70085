/**
 * Memory against the number of namespaces, for runs inside the limits (`--limits`): one row per size, including a
 * size the controller did not survive, the heap's growth per object and per namespace between sizes, and a chart.
 */
import { colorOf, lineChart } from "./charts.ts";
import type { SizeResult } from "./report.ts";

/** A size whose run ended early: the controller died (the memory limit's kill) or a wait ran out. */
export interface FailedSize {
  n: number;
  failure: string;
  oomKills: number;
  peakAnonMiB: number;
}

type Any = SizeResult | FailedSize;
const failed = (r: Any): r is FailedSize => "failure" in r;
const mib = (v: number | undefined) => (v === undefined ? "–" : `${v.toFixed(0)} MiB`);

/** Heap and anonymous memory at rest per managed object and per namespace, between consecutive sizes that ran. */
export function growth(
  results: SizeResult[],
): { from: number; to: number; heapPerObject: number; heapPerNs: number }[] {
  const ok = results.filter((r) => r.f.heapUsedMiB !== undefined).sort((a, b) => a.n - b.n);
  return ok.slice(1).map((r, i) => {
    const prev = ok[i];
    const heap = (r.f.heapUsedMiB! - prev.f.heapUsedMiB!) * 2 ** 20;
    return {
      from: prev.n,
      to: r.n,
      heapPerObject: heap / (r.f.managedObjects - prev.f.managedObjects),
      heapPerNs: heap / (r.d.namespaces - prev.d.namespaces),
    };
  });
}

export function renderMemoryByN(all: Any[]): string {
  const lines = [
    "## Memory against N (inside 100Mi / 300m)",
    "",
    "| N | objects cached | OOM kills | peak anonymous: convergence / restart | at rest: resident / anonymous / V8 heap used | result |",
    "|---|---|---|---|---|---|",
  ];
  for (const r of [...all].sort((a, b) => a.n - b.n)) {
    if (failed(r)) {
      lines.push(`| ${r.n} | – | ${r.oomKills} | ${mib(r.peakAnonMiB)} / – | – | ❌ ${r.failure} |`);
      continue;
    }
    const h = r.h;
    const ok = h && h.oomKills === 0 && h.peakAnonMiB < 64 && r.f.rssMiB < 96;
    lines.push(
      `| ${r.n} | ${r.f.managedObjects} | ${h?.oomKills ?? "–"} | ${mib(h?.peakAnonMiB)} / ${
        mib(h?.restartPeakAnonMiB)
      } | ${mib(r.f.rssMiB)} / ${mib(r.f.anonMiB)} / ${mib(r.f.heapUsedMiB)} | ${ok ? "✅" : "❌"} |`,
    );
  }
  const steps = growth(all.filter((r): r is SizeResult => !failed(r)));
  if (steps.length) {
    lines.push(
      "",
      "V8 heap in use at rest, growth between sizes (each namespace brings its M×K objects). The controller collects " +
        "once when quiet after a burst, if that frees enough (lib/controller/memory_return.ts), so some garbage may " +
        "be in it; `deno task memory-terms` measures each term after a forced collection:",
      "",
      "| from N | to N | bytes per cached object | bytes per namespace (its objects included) |",
      "|---|---|---|---|",
      ...steps.map((s) => `| ${s.from} | ${s.to} | ${Math.round(s.heapPerObject)} | ${Math.round(s.heapPerNs)} |`),
    );
  }
  return lines.join("\n") + "\n";
}

/** Peak anonymous (convergence, restart) and memory at rest against N, as a line chart. */
export function memoryByNChart(all: Any[]): string {
  const sorted = [...all].sort((a, b) => a.n - b.n);
  const ok = sorted.filter((r): r is SizeResult => !failed(r));
  const series = [
    {
      label: "peak anonymous, convergence",
      points: sorted.map((r) => [r.n, failed(r) ? r.peakAnonMiB : r.h?.peakAnonMiB ?? 0]),
    },
    { label: "peak anonymous, restart", points: ok.map((r) => [r.n, r.h?.restartPeakAnonMiB ?? 0]) },
    { label: "resident at rest", points: ok.map((r) => [r.n, r.f.rssMiB]) },
    { label: "anonymous at rest", points: ok.map((r) => [r.n, r.f.anonMiB]) },
    { label: "limit", points: sorted.map((r) => [r.n, 100]) },
  ];
  return lineChart(
    "espejo's memory against the number of namespaces (M=5 SyncConfigs of 4 items), inside 100Mi / 300m",
    "namespaces",
    "MiB",
    series.map((s, i) => ({ label: s.label, color: colorOf(i), points: s.points as [number, number][] })),
  );
}

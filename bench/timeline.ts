import { eachLine } from "./kit/audit.ts";

/** What a bench run looked like over time, for the charts: the controller's requests per second and its memory. */

export interface Timeline {
  /** [seconds since the run started, requests per second over the bucket]. */
  requests: [number, number][];
  /** [seconds since the run started, resident MiB]. */
  memoryMiB: [number, number][];
}

const BUCKET_S = 5;

/** Requests per second in 5 s buckets from `startedMs` until `endS` (the later of it and the last request). */
export function requestsPerSecond(timestamps: number[], startedMs: number, endS = 0): [number, number][] {
  const counts = new Map<number, number>();
  for (const t of timestamps) {
    const bucket = Math.floor((t - startedMs) / 1000 / BUCKET_S) * BUCKET_S;
    counts.set(bucket, (counts.get(bucket) ?? 0) + 1);
  }
  const last = Math.max(endS, ...counts.keys());
  const out: [number, number][] = [];
  for (let t = 0; t <= last; t += BUCKET_S) out.push([t, (counts.get(t) ?? 0) / BUCKET_S]);
  return out;
}

/** [Unix ms, KiB] samples as [seconds since `startedMs`, MiB], every `every`th. */
export function memoryMiB(samples: [number, number][], startedMs: number, every = 1): [number, number][] {
  return samples.filter((_, i) => i % every === 0)
    .map(([t, kib]) => [Math.round((t - startedMs) / 1000), Math.round(kib / 102.4) / 10] as [number, number]);
}

/** From the audit log (the requests of `username`, watches excluded) and the memory samples of the controller. */
export async function timelineOf(
  auditLogPath: string,
  username: string,
  memory: [number, number][],
  startedMs: number,
): Promise<Timeline> {
  const timestamps: number[] = [];
  // Line by line: the log of a run at 100,000 objects is longer than one string can be.
  await eachLine(auditLogPath, 0, (line) => {
    if (!line.includes(username)) return;
    try {
      const e = JSON.parse(line) as { user?: { username?: string }; verb?: string; requestReceivedTimestamp?: string };
      if (e.user?.username !== username || e.verb === "watch" || !e.requestReceivedTimestamp) return;
      timestamps.push(Date.parse(e.requestReceivedTimestamp));
    } catch {
      // a line cut while the API server writes it
    }
  });
  const endS = Math.max(0, ...memory.map(([t]) => (t - startedMs) / 1000));
  // Every 5th memory sample (one per 5 s) keeps the JSON small.
  return {
    requests: requestsPerSecond(timestamps, startedMs, endS),
    memoryMiB: memoryMiB(memory, startedMs, BUCKET_S),
  };
}

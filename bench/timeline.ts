/** What a bench run looked like over time, for the charts: the controller's requests per second and its memory. */

export interface Timeline {
  /** [seconds since the run started, requests per second over the bucket]. */
  requests: [number, number][];
  /** [seconds since the run started, resident MiB]. */
  memoryMiB: [number, number][];
}

const BUCKET_S = 5;

/** From the audit log (the requests of `username`, watches excluded) and the memory samples of the controller. */
export async function timelineOf(
  auditLogPath: string,
  username: string,
  memory: [number, number][],
  startedMs: number,
): Promise<Timeline> {
  const counts = new Map<number, number>();
  for (const line of (await Deno.readTextFile(auditLogPath)).split("\n")) {
    if (!line.includes(username)) continue;
    try {
      const e = JSON.parse(line) as { user?: { username?: string }; verb?: string; requestReceivedTimestamp?: string };
      if (e.user?.username !== username || e.verb === "watch" || !e.requestReceivedTimestamp) continue;
      const s = (Date.parse(e.requestReceivedTimestamp) - startedMs) / 1000;
      const bucket = Math.floor(s / BUCKET_S) * BUCKET_S;
      counts.set(bucket, (counts.get(bucket) ?? 0) + 1);
    } catch {
      // a line cut while the API server writes it
    }
  }
  const last = Math.max(0, ...counts.keys(), ...memory.map(([t]) => (t - startedMs) / 1000));
  const requests: [number, number][] = [];
  for (let t = 0; t <= last; t += BUCKET_S) requests.push([t, (counts.get(t) ?? 0) / BUCKET_S]);
  // Every 5th memory sample (one per 5 s) keeps the JSON small.
  const memoryMiB = memory.filter((_, i) => i % BUCKET_S === 0)
    .map(([t, kib]) => [Math.round((t - startedMs) / 1000), Math.round(kib / 102.4) / 10] as [number, number]);
  return { requests, memoryMiB };
}

/**
 * A process's memory from /proc/PID/status, sampled while it runs: the anonymous peak (RssAnon) is what a memory
 * limit counts against and what the kernel does not keep a high-water mark of. Shared by bench/ and the tests that
 * run the controller inside a cgroup. Linux only; elsewhere the figures stay zero.
 */

/** The kB fields of /proc/PID/status (VmRSS, VmHWM, RssAnon, RssFile...) by name; 0 when absent or ended. */
export async function statusKiB(pid: number): Promise<(field: string) => number> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`).catch(() => "");
  return (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0);
}

/** Samples /proc/PID/status every 100 ms until stopped; keeps the peaks. */
export class MemorySampler {
  peakAnonKiB = 0;
  /** When the anonymous peak was sampled (Unix ms): whether a restart peaks while its caches fill or after. */
  peakAnonAt = 0;
  peakRssKiB = 0;
  /** Resident memory once a second, [Unix ms, KiB], across restarts of the process (for the charts). */
  readonly timeline: [number, number][] = [];
  #timer?: ReturnType<typeof setInterval>;

  start(pid: number): void {
    this.stop();
    this.#timer = setInterval(async () => {
      const kib = await statusKiB(pid);
      if (kib("RssAnon") > this.peakAnonKiB) {
        this.peakAnonKiB = kib("RssAnon");
        this.peakAnonAt = Date.now();
      }
      this.peakRssKiB = Math.max(this.peakRssKiB, kib("VmHWM"));
      const now = Date.now();
      const last = this.timeline.at(-1);
      if (kib("VmRSS") && (!last || now - last[0] >= 1000)) this.timeline.push([now, kib("VmRSS")]);
    }, 100);
  }

  /** The next peaks count from now (a restart's are its own). */
  resetPeaks(): void {
    this.peakAnonKiB = 0;
    this.peakAnonAt = 0;
    this.peakRssKiB = 0;
  }

  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }
}

/**
 * What the bench reports of the controller inside the Go espejo's container limits (memory 100Mi, CPU 300m; the group
 * is testenv/cgroup.ts), and a sampler of the process's resident memory. A process killed by the memory limit is
 * counted, not hidden: that is the failure this measures.
 */
export interface LimitFigures {
  memoryLimitMiB: number;
  cpuQuota: number;
  /** Peak of anonymous resident memory (heap, allocator), sampled every 100 ms. */
  peakAnonMiB: number;
  /** Peak resident memory (anonymous and file-backed), the kernel's VmHWM. */
  peakRssMiB: number;
  /** The cgroup's peak usage (resident memory and page cache charged to it). */
  cgroupPeakMiB: number;
  oomKills: number;
}

/** Samples /proc/PID/status every 100 ms until stopped; keeps the peaks. */
export class MemorySampler {
  peakAnonKiB = 0;
  peakRssKiB = 0;
  /** Resident memory once a second, [Unix ms, KiB], across restarts of the process (for the charts). */
  readonly timeline: [number, number][] = [];
  #timer?: ReturnType<typeof setInterval>;

  start(pid: number): void {
    this.stop();
    this.#timer = setInterval(async () => {
      const status = await Deno.readTextFile(`/proc/${pid}/status`).catch(() => "");
      const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0);
      this.peakAnonKiB = Math.max(this.peakAnonKiB, kib("RssAnon"));
      this.peakRssKiB = Math.max(this.peakRssKiB, kib("VmHWM"));
      const now = Date.now();
      const last = this.timeline.at(-1);
      if (status && (!last || now - last[0] >= 1000)) this.timeline.push([now, kib("VmRSS")]);
    }, 100);
  }

  /** The next peaks count from now (a restart's are its own). */
  resetPeaks(): void {
    this.peakAnonKiB = 0;
    this.peakRssKiB = 0;
  }

  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }
}

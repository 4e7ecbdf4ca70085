/**
 * The Go espejo's container limits (memory 100Mi, CPU 300m) for the controller under benchmark: a cgroup v1 memory
 * and cpu group (root only; Linux), and a sampler of the process's resident memory. A process killed by the memory
 * limit is counted, not hidden: that is the failure this measures.
 */
import { join } from "node:path";

const MEMORY = "/sys/fs/cgroup/memory";
const CPU = "/sys/fs/cgroup/cpu";

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

export class Cgroup {
  readonly #dirs: string[];

  private constructor(readonly name: string, readonly memoryBytes: number, readonly cpuQuota: number) {
    this.#dirs = [join(MEMORY, name), join(CPU, name)];
  }

  /** Creates (or resets) the group: `memoryBytes` limit, `cpuQuota` of one CPU (0.3 = 300m). */
  static async create(name: string, memoryBytes: number, cpuQuota: number): Promise<Cgroup> {
    const g = new Cgroup(name, memoryBytes, cpuQuota);
    for (const dir of g.#dirs) await Deno.mkdir(dir, { recursive: true });
    const [mem, cpu] = g.#dirs;
    await Deno.writeTextFile(join(mem, "memory.limit_in_bytes"), String(memoryBytes));
    // Without swap, the limit is on memory alone (memsw exists only with swap accounting).
    await Deno.writeTextFile(join(mem, "memory.max_usage_in_bytes"), "0").catch(() => {});
    await Deno.writeTextFile(join(cpu, "cpu.cfs_period_us"), "100000");
    await Deno.writeTextFile(join(cpu, "cpu.cfs_quota_us"), String(Math.round(cpuQuota * 100_000)));
    return g;
  }

  /** Shell words that move the shell into the group before it execs the command. */
  enterCommand(): string {
    return this.#dirs.map((d) => `echo $$ > '${join(d, "cgroup.procs")}'`).join(" && ");
  }

  async oomKills(): Promise<number> {
    const text = await Deno.readTextFile(join(this.#dirs[0], "memory.oom_control")).catch(() => "");
    return Number(/^oom_kill (\d+)/m.exec(text)?.[1] ?? 0);
  }

  async peakBytes(): Promise<number> {
    return Number(await Deno.readTextFile(join(this.#dirs[0], "memory.max_usage_in_bytes")).catch(() => "0"));
  }

  /** Removes the group (its processes must have exited). */
  async remove(): Promise<void> {
    for (const dir of this.#dirs) await Deno.remove(dir).catch(() => {});
  }
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

  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }
}

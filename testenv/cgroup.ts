/**
 * A cgroup v1 memory and cpu group (root only; Linux) to run a controller inside container limits (the Go espejo's:
 * memory 100Mi, CPU 300m), for the bench, the comparison with the Go espejo and the memory tests. A process the limit
 * kills is counted ({@link Cgroup.oomKills}), not hidden: that is the failure they look for.
 */
import { join } from "node:path";

const MEMORY = "/sys/fs/cgroup/memory";
const CPU = "/sys/fs/cgroup/cpu";

/** What the kernel keeps about the group: memory.* and cpu.stat. */
export interface CgroupStats {
  limitBytes: number;
  usageBytes: number;
  maxUsageBytes: number;
  failcnt: number;
  oomKills: number;
  rssBytes: number;
  cacheBytes: number;
  mappedFileBytes: number;
  nrPeriods: number;
  nrThrottled: number;
  throttledNs: number;
}

export class Cgroup {
  readonly #dirs: string[];
  /** The peak of memory.stat's rss seen by {@link sampleRss} (the kernel keeps no peak of anonymous memory). */
  peakRssBytes = 0;
  #timer?: ReturnType<typeof setInterval>;
  /** The kernel's kill count when the group was created: a group left by an earlier run keeps its count. */
  #killsBefore = 0;

  private constructor(readonly name: string) {
    this.#dirs = [join(MEMORY, name), join(CPU, name)];
  }

  /**
   * Creates (or resets) the group: a memory limit (bytes, or as memory.limit_in_bytes takes it: "100M"), `cpuQuota`
   * of one CPU (0.3 = 300m) over CFS periods of `periodUs`.
   */
  static async create(name: string, memory: number | string, cpuQuota: number, periodUs = 100_000): Promise<Cgroup> {
    const g = new Cgroup(name);
    for (const dir of g.#dirs) await Deno.mkdir(dir, { recursive: true });
    const [mem, cpu] = g.#dirs;
    await Deno.writeTextFile(join(mem, "memory.limit_in_bytes"), String(memory));
    // Without swap, the limit is on memory alone (memsw exists only with swap accounting).
    await Deno.writeTextFile(join(mem, "memory.max_usage_in_bytes"), "0").catch(() => {});
    await Deno.writeTextFile(join(cpu, "cpu.cfs_period_us"), String(periodUs));
    await Deno.writeTextFile(join(cpu, "cpu.cfs_quota_us"), String(Math.round(cpuQuota * periodUs)));
    g.#killsBefore = await g.#kernelKills();
    return g;
  }

  /** Shell words that move the shell into the group before it execs the command. */
  enterCommand(): string {
    return this.#dirs.map((d) => `echo $$ > '${join(d, "cgroup.procs")}'`).join(" && ");
  }

  /** Processes the memory limit killed since the group was created (or reset). */
  async oomKills(): Promise<number> {
    return await this.#kernelKills() - this.#killsBefore;
  }

  async #kernelKills(): Promise<number> {
    const text = await Deno.readTextFile(join(this.#dirs[0], "memory.oom_control")).catch(() => "");
    return Number(/^oom_kill (\d+)/m.exec(text)?.[1] ?? 0);
  }

  async peakBytes(): Promise<number> {
    return Number(await Deno.readTextFile(join(this.#dirs[0], "memory.max_usage_in_bytes")).catch(() => "0"));
  }

  /** Starts the peak over (the next {@link peakBytes} counts from now). */
  async resetPeak(): Promise<void> {
    await Deno.writeTextFile(join(this.#dirs[0], "memory.max_usage_in_bytes"), "0").catch(() => {});
  }

  /** Samples memory.stat's rss every `everyMs` into {@link peakRssBytes}, until {@link remove}. */
  sampleRss(everyMs = 500): void {
    clearInterval(this.#timer);
    this.#timer = setInterval(async () => {
      const s = await this.stats().catch(() => undefined);
      if (s) this.peakRssBytes = Math.max(this.peakRssBytes, s.rssBytes);
    }, everyMs);
  }

  async stats(): Promise<CgroupStats> {
    const [mem, cpu] = this.#dirs;
    const num = async (dir: string, f: string) => Number((await Deno.readTextFile(join(dir, f))).trim());
    const kv = async (dir: string, f: string) => {
      const out: Record<string, number> = {};
      for (const line of (await Deno.readTextFile(join(dir, f))).split("\n")) {
        const [k, v] = line.split(" ");
        if (k) out[k] = Number(v);
      }
      return out;
    };
    const stat = await kv(mem, "memory.stat");
    const oom = await kv(mem, "memory.oom_control");
    const cpuStat = await kv(cpu, "cpu.stat");
    return {
      limitBytes: await num(mem, "memory.limit_in_bytes"),
      usageBytes: await num(mem, "memory.usage_in_bytes"),
      maxUsageBytes: await num(mem, "memory.max_usage_in_bytes"),
      failcnt: await num(mem, "memory.failcnt"),
      oomKills: (oom.oom_kill ?? NaN) - this.#killsBefore,
      rssBytes: stat.rss ?? 0,
      cacheBytes: stat.cache ?? 0,
      mappedFileBytes: stat.mapped_file ?? 0,
      nrPeriods: cpuStat.nr_periods ?? 0,
      nrThrottled: cpuStat.nr_throttled ?? 0,
      throttledNs: cpuStat.throttled_time ?? 0,
    };
  }

  /** Removes the group once its processes have exited (the kernel may take a moment after the last exit). */
  async remove(): Promise<void> {
    clearInterval(this.#timer);
    for (const dir of this.#dirs) {
      for (let i = 0; i < 20; i++) {
        try {
          await Deno.remove(dir);
          break;
        } catch (e) {
          if (e instanceof Deno.errors.NotFound) break;
          await new Promise((r) => setTimeout(r, 250));
        }
      }
    }
  }
}

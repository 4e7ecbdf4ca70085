/**
 * A cgroup v1 memory and cpu group (root only; Linux) to run the controller inside the Go espejo's container limits
 * (memory 100Mi, CPU 300m), for the bench and the memory tests. A process the limit kills is counted
 * ({@link Cgroup.oomKills}), not hidden: that is the failure they look for.
 */
import { join } from "node:path";

const MEMORY = "/sys/fs/cgroup/memory";
const CPU = "/sys/fs/cgroup/cpu";

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

  /** Starts the peak over (the next {@link peakBytes} counts from now). */
  async resetPeak(): Promise<void> {
    await Deno.writeTextFile(join(this.#dirs[0], "memory.max_usage_in_bytes"), "0").catch(() => {});
  }

  /** Removes the group (its processes must have exited). */
  async remove(): Promise<void> {
    for (const dir of this.#dirs) await Deno.remove(dir).catch(() => {});
  }
}

/**
 * The controller under measurement as a process: its memory (from /proc/PID/status) and CPU time sampled while it
 * runs. Linux only; elsewhere the figures stay zero.
 */
import type { Cgroup } from "../../testenv/cgroup.ts";
import { delay } from "../../testenv/controlplane.ts";
import { spawnLogged } from "../../testenv/process.ts";
import { statusKiB } from "../../testenv/memory_sampler.ts";

export { MemorySampler, statusKiB } from "../../testenv/memory_sampler.ts";

const CLK_TCK = 100;

/** CPU time (user and system) of process `pid` so far, in clock ticks of 10 ms; 0 when it ended. */
export async function cpuTicksOf(pid: number): Promise<number> {
  const stat = await Deno.readTextFile(`/proc/${pid}/stat`).catch(() => "");
  const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(rest[11] ?? 0) + Number(rest[12] ?? 0); // utime, stime
}

export interface MemorySamples {
  maxRssKiB: number;
  hwmKiB: number;
  maxAnonKiB: number;
}

/** A controller process: its log appended to a file, its memory and CPU time sampled from /proc every 500 ms. */
export class Proc {
  /** The processes not yet ended, to kill on an interrupt. */
  static readonly running = new Set<Proc>();
  readonly mem: MemorySamples = { maxRssKiB: 0, hwmKiB: 0, maxAnonKiB: 0 };
  /** Resident memory over the run, [Unix ms, KiB], about once a second (for the charts). */
  readonly rssTimeline: [number, number][] = [];
  cpuTicks = 0;
  exited?: Deno.CommandStatus;
  readonly status: Promise<Deno.CommandStatus>;
  readonly #timer: ReturnType<typeof setInterval>;
  #sampling = false;

  constructor(readonly child: Deno.ChildProcess, readonly startedAt: number) {
    this.status = child.status.then((s) => {
      this.exited = s;
      Proc.running.delete(this);
      return s;
    });
    this.#timer = setInterval(() => this.sample(), 500);
    Proc.running.add(this);
  }

  static spawn(
    argv: string[],
    env: Record<string, string>,
    logPath: string,
    cgroup?: Cgroup,
    cwd?: string,
  ): Proc {
    return new Proc(spawnLogged(argv, { env, logFile: logPath, cgroup, cwd }), performance.now());
  }

  get pid(): number {
    return this.child.pid;
  }

  async sample(): Promise<void> {
    if (this.#sampling || this.exited) return;
    this.#sampling = true;
    try {
      const kib = await statusKiB(this.pid);
      if (!kib("VmRSS")) return; // exited meanwhile
      this.mem.maxRssKiB = Math.max(this.mem.maxRssKiB, kib("VmRSS"));
      const last = this.rssTimeline.at(-1);
      if (!last || Date.now() - last[0] >= 1000) this.rssTimeline.push([Date.now(), kib("VmRSS")]);
      this.mem.hwmKiB = Math.max(this.mem.hwmKiB, kib("VmHWM"));
      this.mem.maxAnonKiB = Math.max(this.mem.maxAnonKiB, kib("RssAnon"));
      const ticks = await cpuTicksOf(this.pid);
      if (ticks) this.cpuTicks = ticks;
    } catch {
      /* exited meanwhile */
    } finally {
      this.#sampling = false;
    }
  }

  get cpuSeconds(): number {
    return this.cpuTicks / CLK_TCK;
  }

  async stop(): Promise<Deno.CommandStatus> {
    await this.sample();
    clearInterval(this.#timer);
    if (!this.exited) {
      try {
        this.child.kill("SIGTERM");
      } catch { /* gone */ }
      const done = await Promise.race([this.status.then(() => true), delay(15_000).then(() => false)]);
      if (!done) {
        try {
          this.child.kill("SIGKILL");
        } catch { /* gone */ }
      }
    }
    return await this.status;
  }

  kill(): void {
    try {
      this.child.kill("SIGKILL");
    } catch { /* gone */ }
  }
}

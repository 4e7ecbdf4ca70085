/**
 * The controller under measurement as a process started with the shipped flags (main.ts, `deno.permissions`,
 * `deno.v8-flags`), its log appended to a file, its memory sampled, its /metrics read; and the bench's wait for a
 * condition, polled.
 */
import type { Cgroup } from "../../testenv/cgroup.ts";
import { imageEnvironment } from "../../testenv/image_env.ts";
import { shippedFlags } from "../../testenv/permissions.ts";
import { shippedArgv, spawnLogged } from "../../testenv/process.ts";
import { parsePrometheusText, type Samples } from "../prometheus_text.ts";
import { MemorySampler } from "./process.ts";

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `check` every `everyMs` until it gives a value; throws after `timeoutMs`, naming `what`. */
export async function until<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 600_000,
  everyMs = 25,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`bench: timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** The process ended on its own (the memory limit's kill, a crash) while the bench waited on it. */
export class ControllerDied extends Error {}

export interface ControllerOptions {
  kubeconfig: string;
  metricsPort: number;
  healthPort: number;
  logFile: string;
  /** WATCH_NAMESPACE: where the bench's SyncConfigs are. */
  configNamespace: string;
  cgroup?: Cgroup;
  /** How long a start may take until /readyz answers (longer inside a CPU quota). */
  readyTimeoutMs: number;
}

/** The controller as a process, with its /metrics. */
export class ControllerProcess {
  child!: Deno.ChildProcess;
  /** Set when the process ended on its own (killed by the memory limit, crashed): waits stop at once. */
  exited = false;
  #stopping = false;
  readonly memory = new MemorySampler();
  constructor(readonly o: ControllerOptions) {}

  /**
   * Starts the process and waits until it is ready. `denoFlags` are added to the shipped ones (an inspector for a CPU
   * profile); `attached` runs once the process is spawned, before the wait (a profiler connecting).
   */
  async start(
    intervalSeconds: number,
    extraArgs: string[] = [],
    o: { denoFlags?: string[]; attached?: () => Promise<void> } = {},
  ): Promise<void> {
    const argv = shippedArgv(
      [
        "--kubeconfig",
        this.o.kubeconfig,
        `--metrics-addr=127.0.0.1:${this.o.metricsPort}`,
        `--health-addr=127.0.0.1:${this.o.healthPort}`,
        `--reconcile-interval=${intervalSeconds}s`,
        "--kube-api-qps=1000",
        "--kube-api-burst=2000",
        "--log-format=json",
        ...extraArgs,
      ],
      undefined,
      [...shippedFlags(), ...(o.denoFlags ?? [])],
    );
    this.child = spawnLogged(argv, {
      env: { ...imageEnvironment(), WATCH_NAMESPACE: this.o.configNamespace },
      logFile: this.o.logFile,
      cgroup: this.o.cgroup,
    });
    this.exited = false;
    this.#stopping = false;
    void this.child.status.then(() => this.exited = !this.#stopping);
    this.memory.start(this.child.pid);
    await o.attached?.();
    await until("controller ready", async () => {
      try {
        return (await fetch(`http://127.0.0.1:${this.o.healthPort}/readyz`)).status === 200;
      } catch {
        return false;
      }
    }, this.o.readyTimeoutMs);
  }

  /** Throws when the controller ended on its own; the bench reports that size as failed, with its OOM kills. */
  alive(): void {
    if (this.exited) throw new ControllerDied(`the controller exited during the run`);
  }

  async metrics(): Promise<Samples> {
    return parsePrometheusText(await (await fetch(`http://127.0.0.1:${this.o.metricsPort}/metrics`)).text());
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    this.memory.stop();
    try {
      this.child.kill("SIGTERM");
    } catch {
      // it ended already (the memory limit's kill, a crash): its status says how
    }
    await this.child.status;
  }
}

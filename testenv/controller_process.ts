/**
 * The controller as the image runs it (deno.permissions, deno.v8-flags, the image's environment), as a process inside
 * a cgroup (the Go espejo's limits), for the tests that measure or break it from outside: its log goes to a file, its
 * readiness is polled on /readyz, and its end by the memory limit is told with the cgroup's count of kills.
 */
import type { Cgroup } from "./cgroup.ts";
import { eventually } from "./shared.ts";
import { imageEnvironment } from "./image_env.ts";
import { shippedArgv, spawnLogged } from "./process.ts";

/** The controller as a process inside `cgroup`; its output goes to a file (nothing here must keep a pipe drained). */
export class ControllerProcess {
  child?: Deno.ChildProcess;
  exit?: Promise<Deno.CommandStatus>;
  exited?: Deno.CommandStatus;
  constructor(
    readonly cgroup: Cgroup,
    readonly kubeconfig: string,
    readonly healthPort: number,
    readonly logFile: string,
    readonly watchNamespace: string,
    /** Flags beyond the kubeconfig, the ports and the log format. */
    readonly extraArgs: string[] = [],
  ) {}

  async start(): Promise<void> {
    const argv = shippedArgv([
      "--kubeconfig",
      this.kubeconfig,
      "--metrics-addr=0",
      `--health-addr=127.0.0.1:${this.healthPort}`,
      "--log-format=json",
      ...this.extraArgs,
    ]);
    this.child = spawnLogged(argv, {
      env: { ...imageEnvironment(), WATCH_NAMESPACE: this.watchNamespace },
      logFile: this.logFile,
      cgroup: this.cgroup,
    });
    this.exited = undefined;
    this.exit = this.child.status.then((s) => (this.exited = s));
    await eventually(
      async () => {
        if (this.exited) {
          throw new Error(`the controller exited (${JSON.stringify(this.exited)}): ${await this.logTail()}`);
        }
        return (await fetch(`http://127.0.0.1:${this.healthPort}/readyz`).catch(() => undefined))?.status === 200;
      },
      180_000,
      "the controller to be ready",
    );
  }

  /** Whether the process still runs (a kill by the memory limit ends it). */
  running(): boolean {
    return this.child !== undefined && this.exited === undefined;
  }

  /** Fails (for `eventually` to report) once the process has ended, with the cgroup's count of kills. */
  async alive(): Promise<void> {
    if (this.running()) return;
    const kills = await this.cgroup.oomKills();
    throw new Error(`the controller ended (${JSON.stringify(this.exited)}, ${kills} kills by the memory limit)`);
  }

  async stop(): Promise<Deno.CommandStatus | undefined> {
    if (!this.child) return undefined;
    if (this.running()) this.child.kill("SIGTERM");
    const status = await this.exit!;
    this.child = undefined;
    return status;
  }

  async logTail(): Promise<string> {
    return (await Deno.readTextFile(this.logFile).catch(() => "")).slice(-2000);
  }
}

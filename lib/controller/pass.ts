/**
 * One interval pass at a time: the namespaces it queued, and when the last of them is done, its wall time and CPU
 * time for the metrics. A namespace event may take a pass's unit over; the unit counts for the pass either way. A
 * pass stuck for 10 minutes is abandoned, so one wedged unit cannot stop passes for ever.
 */
import { sleep } from "../kube/backoff.ts";
import process from "node:process";

const ABANDON_AFTER_MS = 600_000;

export class PassTracker {
  #pass?: { pending: Set<string>; startedMs: number; cpu: { user: number; system: number } };

  constructor(private readonly onDone: (wallSeconds: number, cpuSeconds: number) => void) {}

  /** Whether a pass is still running (and not abandoned): the next one must wait. */
  get running(): boolean {
    return this.#pass !== undefined && performance.now() - this.#pass.startedMs < ABANDON_AFTER_MS;
  }

  /** Starts a pass over the namespaces that `queue` queues for it (it returns those it queued). */
  start(queue: () => Iterable<string>): void {
    this.#pass = { pending: new Set(), startedMs: performance.now(), cpu: process.cpuUsage() };
    for (const name of queue()) this.#pass.pending.add(name);
    if (this.#pass.pending.size === 0) this.#done();
  }

  /** A unit of `namespace` finished, whatever queued it. */
  finished(namespace: string): void {
    if (this.#pass?.pending.delete(namespace) && this.#pass.pending.size === 0) this.#done();
  }

  #done(): void {
    const pass = this.#pass!;
    this.#pass = undefined;
    const cpu = process.cpuUsage(pass.cpu);
    this.onDone((performance.now() - pass.startedMs) / 1000, (cpu.user + cpu.system) / 1e6);
  }
}

/** Calls `startPass` every `intervalMs` (`--reconcile-interval`; 0 turns passes off) until `signal` aborts. */
export async function runIntervalPasses(signal: AbortSignal, intervalMs: number, startPass: () => void): Promise<void> {
  if (intervalMs <= 0) return;
  while (!signal.aborted) {
    await sleep(intervalMs, signal);
    if (!signal.aborted) startPass();
  }
}

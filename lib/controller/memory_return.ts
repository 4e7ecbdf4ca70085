/**
 * Gives the memory of a burst back to the system once the workers have been quiet for a while. V8 keeps the heap it
 * grew to during a burst (a restart's relist, a new SyncConfig over 5,000 namespaces) and returns little of it on its
 * own: measured at 120,000 cached objects, 29 MiB of heap in use held 37 MiB of pages. A collection of the
 * 'last-resort' flavour compacts the heap and releases the free pages, which regular and idle collections keep for
 * reuse.
 *
 * It runs when the workers have been quiet for {@link QUIET_MS}: the first time after the start, and later only when
 * the heap holds at least {@link SLACK_BYTES} of free pages, or its use has grown by as much since the last collection
 * left it, so a steady cluster (passes that allocate next to nothing) never pays for it; after a burst it costs one
 * full collection, about 100 ms of CPU at that size. The growth counts because a quiet controller allocates too little
 * for V8 to collect on its own: the garbage of a burst stays "in use" in full pages, with no free page to show for it
 * (a team's 1,000 edits of its SyncConfig left 6 MiB so, for good, after the SyncConfig was deleted). A quiet within
 * {@link MIN_INTERVAL_MS} of the last collection is served when that interval ends. It needs V8's gc extension
 * (`--expose-gc` in deno.v8-flags); without it nothing happens.
 *
 * Its timer is its own, not the work queue's: it waits for the queue to be quiet, which a key in the queue would end,
 * and it is unref'd, so a pending return never keeps the process from ending.
 */
import { type Later, unrefLater } from "./later.ts";
import { getLogger } from "@logtape/logtape";

const log = getLogger(["espejo", "memory"]);

/** How long the workers must have had nothing to do. */
export const QUIET_MS = 5_000;
/** Free heap pages (committed, not in use), or growth of the heap in use since the last collection, worth one. */
export const SLACK_BYTES = 4 * 2 ** 20;
/** At most one collection a minute, whatever the bursts: each costs 60-230 ms of CPU at 30 MiB of heap. */
export const MIN_INTERVAL_MS = 60_000;

type Gc = (options: { type: "major"; execution: "sync"; flavor: "last-resort" }) => void;

export interface HeapFigures {
  heapTotal: number;
  heapUsed: number;
}

/** Runs `fn` after `ms` unless cancelled; the returned function cancels. */
export type Schedule = Later;

export interface MemoryReturnOptions {
  gc?: Gc;
  heap?: () => HeapFigures;
  schedule?: Schedule;
  now?: () => number;
}

export class MemoryReturn {
  readonly #gc: Gc | undefined;
  readonly #heap: () => HeapFigures;
  readonly #schedule: Schedule;
  readonly #now: () => number;
  #cancel?: () => void;
  #lastAt = -Infinity;
  /** The heap in use that the last collection left, lowered whenever less is found in use (V8's own collections). */
  #live = Infinity;

  constructor(opts: MemoryReturnOptions = {}) {
    this.#gc = "gc" in opts ? opts.gc : (globalThis as { gc?: Gc }).gc;
    this.#heap = opts.heap ?? (() => Deno.memoryUsage());
    this.#schedule = opts.schedule ?? unrefLater;
    this.#now = opts.now ?? (() => performance.now());
  }

  /** A worker took a key: not quiet any more. */
  taken(): void {
    this.stop();
  }

  /** A worker finished a key; `idle`: nothing else is queued or running. */
  worked(idle: boolean): void {
    if (!this.#gc) return;
    this.stop();
    if (idle) this.#cancel = this.#schedule(() => this.#collect(), QUIET_MS);
  }

  stop(): void {
    this.#cancel?.();
    this.#cancel = undefined;
  }

  #collect(): void {
    this.#cancel = undefined;
    const wait = this.#lastAt + MIN_INTERVAL_MS - this.#now();
    if (wait > 0) {
      this.#cancel = this.#schedule(() => this.#collect(), wait); // still quiet then (work cancels it)
      return;
    }
    const before = this.#heap();
    this.#live = Math.min(this.#live, before.heapUsed);
    // The start read every object espejo manages: its garbage, counted as in use until a collection, can fill the
    // pages V8 added for it and leave few free. So the first quiet after the start always collects.
    const first = this.#lastAt === -Infinity;
    const free = before.heapTotal - before.heapUsed;
    if (!first && free < SLACK_BYTES && before.heapUsed - this.#live < SLACK_BYTES) return;
    this.#lastAt = this.#now();
    this.#gc!({ type: "major", execution: "sync", flavor: "last-resort" });
    const after = this.#heap();
    this.#live = after.heapUsed;
    log.debug("Gave back {freedMiB} MiB of heap after a burst: {totalMiB} MiB now, {usedMiB} MiB in use", {
      freedMiB: ((before.heapTotal - after.heapTotal) / 2 ** 20).toFixed(1),
      totalMiB: (after.heapTotal / 2 ** 20).toFixed(1),
      usedMiB: (after.heapUsed / 2 ** 20).toFixed(1),
    });
  }
}

/**
 * A soft limit on V8's heap, as GOMEMLIMIT is on Go's: once the heap in use passes {@link SOFT_LIMIT_BYTES}, the
 * garbage is collected sooner than V8 would collect it on its own.
 *
 * V8 lets the old generation grow to 1.3 times what its last full collection found live (its memory-reducing mode,
 * which lite mode implies) before it collects again. During a restart at 200,000 objects about 43 MiB are live, so
 * V8 waits until about 56 MiB, and what is in flight when a unit or an event crosses a young collection is promoted
 * and waits there with it: the restart's peak (docs/performance.md). Above the soft limit this collects once the heap
 * has grown by {@link MIN_HEADROOM_BYTES} (or an eighth of what was live, if more) past what its last collection
 * left, so the peak is the live heap and a few MiB, not a third more.
 *
 * Below the soft limit it does nothing (at 100,000 objects a restart stays below it). Above it, it collects after a
 * growth of an eighth of the live heap where V8 would wait for a third, so up to about 2.4 times as many full
 * collections, and never more than a tenth of the wall time: after one of `t` ms the next waits `9 t`, so a live heap
 * beyond the limit (more objects than the limit was chosen for) is never collected in a loop. What the last
 * collection left is lowered whenever the heap in use is found below it (V8's own collections, the return of free
 * pages after a burst), so an old figure never lifts the limit. It needs V8's gc extension (`--expose-gc` in
 * deno.v8-flags); without it nothing happens.
 */
import { getLogger } from "@logtape/logtape";

const log = getLogger(["espejo", "memory"]);

const MiB = 2 ** 20;
/** Heap in use above which collections come sooner. 44 MiB of a 100Mi container: the allocator and code take 35. */
export const SOFT_LIMIT_BYTES = 44 * MiB;
/** The least growth past the last collection's live heap that is worth a collection. */
export const MIN_HEADROOM_BYTES = 4 * MiB;
/** The largest share of the wall time this spends collecting. */
export const MAX_GC_SHARE = 0.1;
/** How often the heap in use is looked at (`Deno.memoryUsage()`: about 3 µs). */
export const CHECK_MS = 200;

type Gc = (options: { type: "major"; execution: "sync" }) => void;

/** Runs `fn` every `ms` until the returned function is called. */
export type Every = (fn: () => void, ms: number) => () => void;

const unrefInterval: Every = (fn, ms) => {
  const timer = setInterval(fn, ms);
  Deno.unrefTimer(timer); // it never keeps the process from ending
  return () => clearInterval(timer);
};

/** What a collection must wait for: the heap's growth, and the time the last one took. */
export interface BudgetState {
  /** The heap in use that the last forced collection left (0 before the first). */
  live: number;
  /** Not before this time (the CPU cap). */
  nextAllowedAt: number;
}

/** The heap in use at which a collection is due, given what the last one left live. */
export function collectAt(live: number, softLimit = SOFT_LIMIT_BYTES): number {
  return Math.max(softLimit, live + Math.max(MIN_HEADROOM_BYTES, live / 8));
}

/** Whether to collect now. */
export function collectionDue(used: number, now: number, state: BudgetState, softLimit = SOFT_LIMIT_BYTES): boolean {
  return now >= state.nextAllowedAt && used >= collectAt(state.live, softLimit);
}

/** When the next collection may run, after one that ran from `startedAt` to `endedAt`. */
export function nextAllowed(startedAt: number, endedAt: number): number {
  return endedAt + (endedAt - startedAt) * (1 / MAX_GC_SHARE - 1);
}

export interface HeapBudgetOptions {
  gc?: Gc;
  heapUsed?: () => number;
  now?: () => number;
  every?: Every;
  softLimit?: number;
}

export class HeapBudget {
  readonly #gc: Gc | undefined;
  readonly #heapUsed: () => number;
  readonly #now: () => number;
  readonly #every: Every;
  readonly #softLimit: number;
  readonly #state: BudgetState = { live: 0, nextAllowedAt: -Infinity };
  /** Forced collections so far, and the time they took: for the debug log and tests. */
  collections = 0;
  collectingMs = 0;

  constructor(opts: HeapBudgetOptions = {}) {
    this.#gc = "gc" in opts ? opts.gc : (globalThis as { gc?: Gc }).gc;
    this.#heapUsed = opts.heapUsed ?? (() => Deno.memoryUsage().heapUsed);
    this.#now = opts.now ?? (() => performance.now());
    this.#every = opts.every ?? unrefInterval;
    this.#softLimit = opts.softLimit ?? SOFT_LIMIT_BYTES;
  }

  /** Looks at the heap every {@link CHECK_MS} until `signal` aborts. */
  start(signal: AbortSignal): void {
    if (!this.#gc || signal.aborted) return;
    const stop = this.#every(() => this.check(), CHECK_MS);
    signal.addEventListener("abort", stop, { once: true });
  }

  /** Collects if the heap has grown past its budget; returns whether it did. */
  check(): boolean {
    if (!this.#gc) return false;
    const used = this.#heapUsed();
    this.#state.live = Math.min(this.#state.live, used);
    const startedAt = this.#now();
    if (!collectionDue(used, startedAt, this.#state, this.#softLimit)) return false;
    this.#gc({ type: "major", execution: "sync" });
    const endedAt = this.#now();
    this.#state.live = this.#heapUsed();
    this.#state.nextAllowedAt = nextAllowed(startedAt, endedAt);
    this.collections++;
    this.collectingMs += endedAt - startedAt;
    log.debug(
      "Collected early at {usedMiB} MiB of heap in use (soft limit {limitMiB} MiB): {liveMiB} MiB left, {ms} ms",
      {
        usedMiB: (used / MiB).toFixed(1),
        limitMiB: (this.#softLimit / MiB).toFixed(0),
        liveMiB: (this.#state.live / MiB).toFixed(1),
        ms: (endedAt - startedAt).toFixed(0),
      },
    );
    return true;
  }
}

/**
 * A stingy, prioritized work queue of keys, after client-go's workqueue:
 * - a key added several times before it is processed is processed once;
 * - a key added while it is being processed is processed once more afterwards;
 * - a key is never handed out twice at the same time;
 * - lower priority numbers go first, and adding a queued key with a lower number promotes it, so a namespace
 *   event overtakes the remaining units of a full pass;
 * - a key carries a tag (why it was queued: the metrics' trigger), that of the add that gave it its priority.
 *
 * Within a priority, keys take turns as flows do in API Priority and Fairness (start-time fair queuing, the flow
 * being the key, the cost the time its processing held a worker): a key is placed at the queue's virtual time (the
 * place of the key handed out last), or, if it comes back before that time has passed its last turn, at its last
 * place plus the time its last processing took. A fresh key therefore goes before keys whose units held a worker for
 * seconds (a tenant fighting espejo in its namespaces, its units waiting for the client's budget), and one
 * namespace's repeated re-adds cannot keep a fresh key waiting for more than one unit of each key placed before it.
 * Keys of the same place keep the order of their adds, so without such costs (a steady pass) the order is the adds'.
 * A turn is kept for a key only while it is ahead of the virtual time (at most {@link MAX_TURN_MS} ahead), and once
 * the queue is idle only for keys that a timer of {@link WorkQueue.addAfter} (a retry, a fight's hold) brings back.
 *
 * The queue owns back-off, as client-go's rate-limited queue does: {@link WorkQueue.addRateLimited} counts a key's
 * failures in a row and brings it back after espejo's one schedule (lib/kube/backoff.ts, from the base delay the retry
 * policy names, doubling to {@link MAX_DELAY_MS}, +-20 %); {@link WorkQueue.forget} starts it over. Every kind of
 * work retries through it: namespace units, SyncConfig changes, pruning bookkeeping and status writes.
 */
import { exponentialMs, jitter } from "../kube/backoff.ts";
import { MAX_DELAY_MS } from "../sync/retry_policy.ts";
import { type Entry, pop, push } from "./place_heap.ts";

/**
 * How far ahead of the virtual time a key's next turn may be: the processing times a key carries over from one unit
 * to the next (a cheap unit after an expensive one keeps the expensive one's turn) are capped by this.
 */
export const MAX_TURN_MS = 10_000;

/** A key's place in its priority: when it counts as added, then the order of adds. */
interface Place {
  priority: number;
  at: number;
  seq: number;
}

export class WorkQueue<K, T = undefined> {
  /** Per priority, the places of its keys in a min-heap; an entry whose key has moved or gone is skipped later. */
  readonly #levels: Entry<K>[][];
  readonly #sizes: number[];
  readonly #queued = new Map<K, Place>();
  readonly #queuedAt = new Map<K, number>();
  /** Keys being processed: when each was handed out, and its place then. */
  readonly #processing = new Map<K, { since: number; at: number }>();
  readonly #readdAfterDone = new Map<K, { priority: number; tag?: T }>();
  readonly #tags = new Map<K, T | undefined>();
  readonly #timers = new Set<ReturnType<typeof setTimeout>>();
  /**
   * Keys whose next turn is ahead of the virtual time: the place of their last processing plus the time it took (at
   * most {@link MAX_TURN_MS} ahead). An entry goes once the virtual time has passed it, and when the queue is idle
   * unless a timer brings its key back.
   */
  readonly #turns = new Map<K, number>();
  /** The virtual time: the place of the key handed out last. A key that comes fresh is placed here. */
  #virtual = 0;
  /** Keys with timers of {@link addAfter} pending, how many each: their turns are kept when the queue is idle. */
  readonly #timersOf = new Map<K, number>();
  /** Failures in a row of keys brought back by {@link addRateLimited}, until {@link forget}. */
  readonly #failures = new Map<K, number>();
  #sweepAt = 64;
  #seq = 0;
  #waiters: (() => void)[] = [];
  #shutDown = false;
  /**
   * Told when `key` starts waiting: an add that the queue did not absorb into a key already waiting, as client-go
   * counts `workqueue_adds_total`. A key added during its processing is reported once, when it starts waiting again.
   */
  onAdd?: (key: K, tag: T | undefined) => void;

  constructor(
    readonly priorities: number,
    private readonly now: () => number = () => performance.now(),
    /** A factor applied to each back-off; default +-20 % at random. */
    private readonly jitterOf: () => number = jitter,
  ) {
    this.#levels = Array.from({ length: priorities }, () => []);
    this.#sizes = new Array<number>(priorities).fill(0);
  }

  /** Queues `key` at `priority` (0 = most urgent), tagged `tag`. */
  add(key: K, priority: number, tag?: T): void {
    if (this.#shutDown) return;
    const p = Math.max(0, Math.min(this.priorities - 1, priority));
    if (this.#processing.has(key)) {
      const pending = this.#readdAfterDone.get(key);
      if (!pending || p < pending.priority) this.#readdAfterDone.set(key, { priority: p, tag });
      return;
    }
    const current = this.#queued.get(key);
    if (current !== undefined) {
      if (current.priority <= p) return;
      this.#sizes[current.priority]--;
    }
    const now = this.now();
    const place = { priority: p, at: Math.max(this.#virtual, this.#turns.get(key) ?? 0), seq: this.#seq++ };
    this.#compact(p);
    push(this.#levels[p], { key, at: place.at, seq: place.seq });
    this.#sizes[p]++;
    this.#queued.set(key, place);
    this.#tags.set(key, tag);
    if (current === undefined) {
      this.#queuedAt.set(key, now);
      this.onAdd?.(key, tag);
    }
    this.#wake();
  }

  /** Queues `key` after `ms` milliseconds (for backoff). */
  addAfter(key: K, priority: number, ms: number, tag?: T): void {
    if (this.#shutDown) return;
    this.#timersOf.set(key, (this.#timersOf.get(key) ?? 0) + 1);
    const t = setTimeout(() => {
      this.#timers.delete(t);
      const left = this.#timersOf.get(key)! - 1;
      if (left) this.#timersOf.set(key, left);
      else this.#timersOf.delete(key);
      this.add(key, priority, tag);
    }, ms);
    this.#timers.add(t);
  }

  /**
   * Counts a failure of `key` and queues it after its back-off: `baseMs` after the first failure in a row, doubling
   * with each further one up to {@link MAX_DELAY_MS}, jittered, and never later than `capMs` when given (a fight's
   * hold, a cache still listing). Returns the wait.
   */
  addRateLimited(key: K, priority: number, backoff: { baseMs: number; capMs?: number }, tag?: T): number {
    if (this.#shutDown) return 0;
    const failures = (this.#failures.get(key) ?? 0) + 1;
    this.#failures.set(key, failures);
    const ms = Math.min(
      backoff.capMs ?? Infinity,
      Math.round(exponentialMs(failures, backoff.baseMs, MAX_DELAY_MS) * this.jitterOf()),
    );
    this.addAfter(key, priority, ms, tag);
    return ms;
  }

  /** `key` succeeded (or will not be retried): its next failure starts the back-off over. */
  forget(key: K): void {
    this.#failures.delete(key);
  }

  /** Failures of `key` in a row, as {@link addRateLimited} counted them. */
  numRequeues(key: K): number {
    return this.#failures.get(key) ?? 0;
  }

  /**
   * The next key, its priority and how long it waited; waits while empty; undefined after {@link shutdown}.
   * Call {@link done} after.
   */
  async get(): Promise<{ key: K; priority: number; tag?: T; waitedMs: number } | undefined> {
    for (;;) {
      if (this.#shutDown) return undefined;
      for (let p = 0; p < this.priorities; p++) {
        const level = this.#levels[p];
        while (level.length) {
          const { key, seq, at } = pop(level)!;
          if (this.#queued.get(key)?.seq !== seq) continue; // moved to another priority since
          this.#queued.delete(key);
          this.#sizes[p]--;
          const now = this.now();
          this.#processing.set(key, { since: now, at });
          this.#virtual = Math.max(this.#virtual, at);
          const waitedMs = now - (this.#queuedAt.get(key) ?? now);
          this.#queuedAt.delete(key);
          const tag = this.#tags.get(key);
          this.#tags.delete(key);
          return { key, priority: p, waitedMs, ...(tag === undefined ? {} : { tag }) };
        }
      }
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
  }

  /** Marks `key` finished; if it was added meanwhile it is queued again (at its next turn: see the class comment). */
  done(key: K): void {
    const run = this.#processing.get(key);
    this.#processing.delete(key);
    const now = this.now();
    if (run) {
      const turn = Math.min(run.at + (now - run.since), this.#virtual + MAX_TURN_MS);
      if (turn > this.#virtual) this.#turns.set(key, turn);
      else this.#turns.delete(key);
    }
    const again = this.#readdAfterDone.get(key);
    if (again !== undefined) {
      this.#readdAfterDone.delete(key);
      this.add(key, again.priority, again.tag);
    }
    this.#forgetPastTurns();
  }

  /** Number of keys waiting (not counting those being processed), optionally at one priority. */
  length(priority?: number): number {
    if (priority !== undefined) return this.#sizes[priority] ?? 0;
    return this.#queued.size;
  }

  /** Whether `key` is waiting to be handed out. */
  isQueued(key: K): boolean {
    return this.#queued.has(key);
  }

  /** Whether nothing is queued or being processed. */
  get idle(): boolean {
    return this.#queued.size === 0 && this.#processing.size === 0;
  }

  /** Number of keys the queue keeps anything for (queued, processing, re-added, with a timer or failures): for tests. */
  get keysKept(): number {
    const keys = new Set<K>([
      ...this.#queued.keys(),
      ...this.#processing.keys(),
      ...this.#readdAfterDone.keys(),
      ...this.#turns.keys(),
      ...this.#timersOf.keys(),
      ...this.#queuedAt.keys(),
      ...this.#tags.keys(),
      ...this.#failures.keys(),
    ]);
    return keys.size;
  }

  /** Stops handing out keys; pending `get` calls resolve with undefined. */
  shutdown(): void {
    this.#shutDown = true;
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    this.#turns.clear();
    this.#timersOf.clear();
    this.#failures.clear();
    this.#wake();
  }

  /**
   * Forgets the turns the virtual time has passed, when they may be many; once the queue is idle, every turn but those
   * of keys a timer brings back.
   */
  #forgetPastTurns(): void {
    const idle = this.idle;
    if (!idle && this.#turns.size < this.#sweepAt) return;
    for (const [key, turn] of this.#turns) {
      if (turn <= this.#virtual || (idle && !this.#timersOf.has(key))) this.#turns.delete(key);
    }
    this.#sweepAt = 2 * this.#turns.size + 64;
  }

  /** Drops the entries of keys that moved or went from priority `p`'s heap once they outnumber its keys. */
  #compact(p: number): void {
    const level = this.#levels[p];
    if (level.length < 2 * this.#sizes[p] + 64) return;
    const live = level.filter((e) => this.#queued.get(e.key)?.seq === e.seq);
    level.length = 0;
    for (const e of live) push(level, e);
  }

  #wake(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }
}

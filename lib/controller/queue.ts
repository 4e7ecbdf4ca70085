/**
 * A stingy, prioritized work queue of keys, after client-go's workqueue:
 * - a key added several times before it is processed is processed once;
 * - a key added while it is being processed is processed once more afterwards;
 * - a key is never handed out twice at the same time;
 * - lower priority numbers go first, and adding a queued key with a lower number promotes it, so a namespace
 *   event overtakes the remaining units of a full pass;
 * - a key carries a tag (why it was queued: the metrics' trigger), that of the add that gave it its priority.
 */
export class WorkQueue<K, T = undefined> {
  readonly #levels: Set<K>[];
  readonly #queued = new Map<K, number>();
  readonly #queuedAt = new Map<K, number>();
  readonly #processing = new Set<K>();
  readonly #readdAfterDone = new Map<K, { priority: number; tag?: T }>();
  readonly #tags = new Map<K, T | undefined>();
  readonly #timers = new Set<ReturnType<typeof setTimeout>>();
  #waiters: (() => void)[] = [];
  #shutDown = false;
  /**
   * Told when `key` starts waiting: an add that the queue did not absorb into a key already waiting, as client-go
   * counts `workqueue_adds_total`. A key added during its processing is reported once, when it starts waiting again.
   */
  onAdd?: (key: K, tag: T | undefined) => void;

  constructor(readonly priorities: number) {
    this.#levels = Array.from({ length: priorities }, () => new Set<K>());
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
      if (current <= p) return;
      this.#levels[current].delete(key);
    }
    this.#levels[p].add(key);
    this.#queued.set(key, p);
    this.#tags.set(key, tag);
    if (current === undefined) {
      this.#queuedAt.set(key, performance.now());
      this.onAdd?.(key, tag);
    }
    this.#wake();
  }

  /** Queues `key` after `ms` milliseconds (for backoff). */
  addAfter(key: K, priority: number, ms: number, tag?: T): void {
    if (this.#shutDown) return;
    const t = setTimeout(() => {
      this.#timers.delete(t);
      this.add(key, priority, tag);
    }, ms);
    this.#timers.add(t);
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
        const first = level.values().next();
        if (!first.done) {
          level.delete(first.value);
          this.#queued.delete(first.value);
          this.#processing.add(first.value);
          const waitedMs = performance.now() - (this.#queuedAt.get(first.value) ?? performance.now());
          this.#queuedAt.delete(first.value);
          const tag = this.#tags.get(first.value);
          this.#tags.delete(first.value);
          return { key: first.value, priority: p, waitedMs, ...(tag === undefined ? {} : { tag }) };
        }
      }
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
  }

  /** Marks `key` finished; if it was added meanwhile it is queued again. */
  done(key: K): void {
    this.#processing.delete(key);
    const again = this.#readdAfterDone.get(key);
    if (again !== undefined) {
      this.#readdAfterDone.delete(key);
      this.add(key, again.priority, again.tag);
    }
  }

  /** Number of keys waiting (not counting those being processed), optionally at one priority. */
  length(priority?: number): number {
    if (priority !== undefined) return this.#levels[priority]?.size ?? 0;
    return this.#queued.size;
  }

  /** Whether nothing is queued or being processed. */
  get idle(): boolean {
    return this.#queued.size === 0 && this.#processing.size === 0;
  }

  /** Stops handing out keys; pending `get` calls resolve with undefined. */
  shutdown(): void {
    this.#shutDown = true;
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    this.#wake();
  }

  #wake(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }
}

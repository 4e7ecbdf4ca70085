/**
 * When a SyncConfig's status may be written: once its own burst of work is over, whatever other SyncConfigs are
 * doing. A status written in the middle of its own burst would show an intermediate count and be written again
 * right after; one held back until the whole controller is idle would hide an Invalid condition for as long as
 * another SyncConfig's thousands of writes take.
 *
 * A SyncConfig's own work is the namespaces queued because of it (its change, an interval pass, a namespace event
 * it selects). Retries are not: a permanently failing item must not hold the status back for ever. Nor may a steady
 * stream of namespace events: a status is held back at most `maxHoldMs` (a minute) after it became dirty, so a burst
 * shorter than that writes its status once, and a longer one (or an endless stream) shows its progress once a minute.
 *
 * Two writes of one SyncConfig's status are at least `minGapMs` (a second) apart: work that keeps ending (a namespace
 * whose labels flap ten times a second, each unit changing the counts) costs one status write a second, not one per
 * unit. The last change is still written, a second at most after the write before it.
 */
/** The longest a dirty status waits for its SyncConfig's own work to end. */
export const STATUS_MAX_HOLD_MS = 60_000;
/** The shortest time between two status writes of one SyncConfig. */
export const STATUS_MIN_GAP_MS = 1_000;

export class StatusSchedule {
  /** By SyncConfig key: when its status became dirty. */
  readonly #dirty = new Map<string, number>();
  /** By SyncConfig key: namespaces queued as its work and not finished yet. */
  readonly #pending = new Map<string, Set<string>>();
  /** SyncConfigs whose namespaces are still being queued (their work is not all known yet). */
  readonly #queueing = new Set<string>();
  /** By SyncConfig key: when its status was last taken for a write. */
  readonly #taken = new Map<string, number>();
  /** SyncConfigs whose last write failed: held until the queue brings them back (see {@link hold}). */
  readonly #held = new Set<string>();

  constructor(
    private readonly maxHoldMs = STATUS_MAX_HOLD_MS,
    private readonly now: () => number = () => performance.now(),
    private readonly minGapMs = STATUS_MIN_GAP_MS,
  ) {}

  /** The status of `cfgKey` may have changed. */
  markDirty(cfgKey: string): void {
    if (!this.#dirty.has(cfgKey)) this.#dirty.set(cfgKey, this.now());
  }

  /**
   * The status write of `cfgKey` failed: it is dirty again, and held until {@link release} (the queue's back-off),
   * however often its counts change meanwhile.
   */
  hold(cfgKey: string): void {
    this.#held.add(cfgKey);
    this.markDirty(cfgKey);
  }

  /** The back-off of a failed write of `cfgKey` is over: it is due as any dirty status. */
  release(cfgKey: string): void {
    this.#held.delete(cfgKey);
    this.markDirty(cfgKey);
  }

  /** `namespace` was queued as work of each of `cfgKeys`. */
  queued(cfgKeys: Iterable<string>, namespace: string): void {
    for (const key of cfgKeys) {
      let set = this.#pending.get(key);
      if (!set) this.#pending.set(key, set = new Set());
      set.add(namespace);
    }
  }

  /**
   * A unit of `namespace` finished (or the namespace went): it is no SyncConfig's pending work any more, except for
   * the SyncConfigs in `stale`, whose generation changed while it ran: their new generation's unit is still to come.
   */
  finished(namespace: string, stale: readonly string[] = []): void {
    for (const [key, set] of this.#pending) {
      if (stale.includes(key)) continue;
      if (set.delete(namespace) && set.size === 0) this.#pending.delete(key);
    }
  }

  /**
   * Marks the time while the namespaces of `cfgKey` are being queued. Their start replaces the work known so far:
   * what the new generation selects is queued again, and a namespace it no longer selects must not hold its status.
   */
  queueing(cfgKey: string, busy: boolean): void {
    if (busy) {
      this.#queueing.add(cfgKey);
      this.#pending.delete(cfgKey);
    } else this.#queueing.delete(cfgKey);
  }

  /**
   * The SyncConfig's queued work no longer counts (it became Invalid: its namespaces sync nothing for it), so its
   * status does not wait for units of the old generation.
   */
  dropWork(cfgKey: string): void {
    this.#pending.delete(cfgKey);
    this.#queueing.delete(cfgKey);
  }

  /** The SyncConfig went: nothing of it is pending or dirty. */
  forget(cfgKey: string): void {
    this.#dirty.delete(cfgKey);
    this.#pending.delete(cfgKey);
    this.#queueing.delete(cfgKey);
    this.#taken.delete(cfgKey);
    this.#held.delete(cfgKey);
  }

  /**
   * Dirty SyncConfigs whose own work is done (or that were held back long enough) and whose last write is at least
   * `minGapMs` ago; not dirty once taken.
   */
  takeReady(): string[] {
    const now = this.now();
    const ready = [...this.#dirty].filter(([k, since]) => this.#dueAt(k, since) <= now).map(([k]) => k);
    for (const k of ready) {
      this.#dirty.delete(k);
      this.#taken.set(k, now);
    }
    return ready;
  }

  /**
   * How long until the next dirty status is due: at once when its work is done and the gap after its last write
   * is over, else at the end of the gap or of its hold. Undefined when none is dirty but those held after a failure.
   */
  untilNextDueMs(): number | undefined {
    let next: number | undefined;
    for (const [k, since] of this.#dirty) {
      if (!this.#held.has(k)) next = Math.min(next ?? Infinity, this.#dueAt(k, since));
    }
    return next === undefined ? undefined : Math.max(0, next - this.now());
  }

  /** When the status of `k`, dirty since `since`, may be written. */
  #dueAt(k: string, since: number): number {
    const afterGap = (this.#taken.get(k) ?? -Infinity) + this.minGapMs;
    const afterWork = this.workDone(k) ? -Infinity : since + this.maxHoldMs;
    return this.#held.has(k) ? Infinity : Math.max(afterGap, afterWork);
  }

  /**
   * Whether every namespace queued as work of `cfgKey` (its latest generation's included) has been synced: a status
   * taken now is that generation's outcome, not a progress report.
   */
  workDone(k: string): boolean {
    return !this.#pending.has(k) && !this.#queueing.has(k);
  }

  /** Namespaces still pending for `cfgKey` (for tests and logs). */
  pendingOf(cfgKey: string): number {
    return this.#pending.get(cfgKey)?.size ?? 0;
  }
}

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
 */
/** The longest a dirty status waits for its SyncConfig's own work to end. */
export const STATUS_MAX_HOLD_MS = 60_000;

export class StatusSchedule {
  /** By SyncConfig key: when its status became dirty. */
  readonly #dirty = new Map<string, number>();
  /** By SyncConfig key: namespaces queued as its work and not finished yet. */
  readonly #pending = new Map<string, Set<string>>();
  /** SyncConfigs whose namespaces are still being queued (their work is not all known yet). */
  readonly #queueing = new Set<string>();

  constructor(
    private readonly maxHoldMs = STATUS_MAX_HOLD_MS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** The status of `cfgKey` may have changed. */
  markDirty(cfgKey: string): void {
    if (!this.#dirty.has(cfgKey)) this.#dirty.set(cfgKey, this.now());
  }

  /** `namespace` was queued as work of each of `cfgKeys`. */
  queued(cfgKeys: Iterable<string>, namespace: string): void {
    for (const key of cfgKeys) {
      let set = this.#pending.get(key);
      if (!set) this.#pending.set(key, set = new Set());
      set.add(namespace);
    }
  }

  /** A unit of `namespace` finished (or the namespace went): it is no SyncConfig's pending work any more. */
  finished(namespace: string): void {
    for (const [key, set] of this.#pending) if (set.delete(namespace) && set.size === 0) this.#pending.delete(key);
  }

  /** Marks the time while the namespaces of `cfgKey` are being queued. */
  queueing(cfgKey: string, busy: boolean): void {
    if (busy) this.#queueing.add(cfgKey);
    else this.#queueing.delete(cfgKey);
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
  }

  /** Dirty SyncConfigs whose own work is done, or that were held back long enough; not dirty once taken. */
  takeReady(): string[] {
    const now = this.now();
    const ready = [...this.#dirty].filter(([k, since]) =>
      (!this.#pending.has(k) && !this.#queueing.has(k)) || now - since >= this.maxHoldMs
    ).map(([k]) => k);
    for (const k of ready) this.#dirty.delete(k);
    return ready;
  }

  /** How long until the oldest dirty status must be written whatever its work (undefined: none is dirty). */
  untilHoldEndsMs(): number | undefined {
    let oldest: number | undefined;
    for (const since of this.#dirty.values()) oldest = Math.min(oldest ?? since, since);
    return oldest === undefined ? undefined : Math.max(0, oldest + this.maxHoldMs - this.now());
  }

  /** Namespaces still pending for `cfgKey` (for tests and logs). */
  pendingOf(cfgKey: string): number {
    return this.#pending.get(cfgKey)?.size ?? 0;
  }
}

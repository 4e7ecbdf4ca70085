/**
 * How a cache's first fill is waited for without polling: the reflector stamps each object or event that arrives
 * ({@link FillProgress.arrived}, a clock read, no wake-up) and tells when the fill settles ({@link FillProgress.settled}:
 * synced, failed or stopped). A waiter sleeps until the fill settles or until nothing has arrived for its stall time;
 * its one timer is re-armed at the end of each window for the time left since the last arrival, so a cache that keeps
 * filling costs a waiter one wake-up per stall time, not one per object.
 */
export class FillProgress {
  #lastArrivalAt = -Infinity;
  readonly #waiters = new Set<() => void>();

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** An object or event arrived: the fill is alive. */
  arrived(): void {
    this.#lastArrivalAt = this.now();
  }

  /** The fill settled (synced, failed or stopped): every waiter wakes. */
  settled(): void {
    for (const wake of [...this.#waiters]) wake();
  }

  /**
   * Resolves at the next {@link settled}, or once nothing has arrived for `stallMs` (counted from the call at the
   * earliest). The caller checks first whether the fill has settled already.
   */
  settledOrStalled(stallMs: number): Promise<void> {
    const since = this.now();
    return new Promise((resolve) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const wake = () => {
        clearTimeout(timer);
        this.#waiters.delete(wake);
        resolve();
      };
      const look = () => {
        const left = Math.max(since, this.#lastArrivalAt) + stallMs - this.now();
        if (left <= 0) wake();
        else timer = setTimeout(look, left);
      };
      this.#waiters.add(wake);
      look();
    });
  }

  /** Waiters now (for tests). */
  get waiting(): number {
    return this.#waiters.size;
  }
}

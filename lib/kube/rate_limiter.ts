/**
 * A token bucket like client-go's `flowcontrol.NewTokenBucketRateLimiter`: up to `burst` requests at once, refilled
 * at `qps` per second. Waiters are served in arrival order, except that urgent ones (status and Event writes: a few,
 * and what users watch) go before the others, so a SyncConfig's status does not wait behind thousands of another
 * SyncConfig's queued writes.
 */
interface Waiter {
  resolve: () => void;
}

export class TokenBucket {
  #tokens: number;
  #last: number;
  readonly #urgent: Waiter[] = [];
  readonly #normal: Waiter[] = [];
  #timer?: ReturnType<typeof setTimeout>;

  constructor(
    readonly qps: number,
    readonly burst: number,
    // Monotonic: a wall clock stepped back (NTP) would stall every request until it catches up.
    private readonly now: () => number = () => performance.now(),
  ) {
    this.#tokens = burst;
    this.#last = now();
  }

  /** Resolves when a request may be sent; rejects when `signal` aborts first. A qps of 0 or less is unlimited. */
  take(signal?: AbortSignal, urgent = false): Promise<void> {
    if (this.qps <= 0) return Promise.resolve();
    signal?.throwIfAborted();
    return new Promise<void>((resolve, reject) => {
      const queue = urgent ? this.#urgent : this.#normal;
      const onAbort = () => {
        const i = queue.indexOf(waiter);
        if (i >= 0) queue.splice(i, 1);
        reject(signal!.reason);
      };
      const waiter: Waiter = {
        resolve: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      queue.push(waiter);
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#serve();
    });
  }

  /** Hands out the tokens there are, urgent waiters first; sleeps until the next token when some wait. */
  #serve(): void {
    if (this.#timer !== undefined) return;
    for (;;) {
      const next = this.#urgent[0] ?? this.#normal[0];
      if (!next) return;
      const now = this.now();
      this.#tokens = Math.min(this.burst, this.#tokens + ((now - this.#last) / 1000) * this.qps);
      this.#last = now;
      if (this.#tokens < 1) {
        const waitMs = Math.ceil(((1 - this.#tokens) / this.qps) * 1000);
        this.#timer = setTimeout(() => {
          this.#timer = undefined;
          this.#serve();
        }, waitMs);
        return;
      }
      this.#tokens -= 1;
      (this.#urgent[0] === next ? this.#urgent : this.#normal).shift();
      next.resolve();
    }
  }
}

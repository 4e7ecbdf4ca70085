/**
 * A token bucket like client-go's `flowcontrol.NewTokenBucketRateLimiter`: up to `burst` requests at once,
 * refilled at `qps` per second. Waiters are served in arrival order.
 */
export class TokenBucket {
  #tokens: number;
  #last: number;
  #queue: Promise<void> = Promise.resolve();

  constructor(readonly qps: number, readonly burst: number, private readonly now: () => number = Date.now) {
    this.#tokens = burst;
    this.#last = now();
  }

  /** Resolves when a request may be sent. A qps of 0 or less means unlimited. */
  take(signal?: AbortSignal): Promise<void> {
    if (this.qps <= 0) return Promise.resolve();
    const turn = this.#queue.then(() => this.#wait(signal));
    this.#queue = turn.catch(() => {});
    return turn;
  }

  async #wait(signal?: AbortSignal): Promise<void> {
    for (;;) {
      signal?.throwIfAborted();
      const now = this.now();
      this.#tokens = Math.min(this.burst, this.#tokens + ((now - this.#last) / 1000) * this.qps);
      this.#last = now;
      if (this.#tokens >= 1) {
        this.#tokens -= 1;
        return;
      }
      const waitMs = Math.ceil(((1 - this.#tokens) / this.qps) * 1000);
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(resolve, waitMs);
        signal?.addEventListener("abort", () => {
          clearTimeout(timer);
          reject(signal.reason);
        }, { once: true });
      });
    }
  }
}

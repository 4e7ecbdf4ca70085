/**
 * What checking the tokens of `--metrics-secure` scrapers may cost, whoever sends them: a budget of its own, apart
 * from the client that syncs. Anyone who reaches the metrics port can send a new token with every request, and each
 * unknown token needs a TokenReview from the API server; without a bound, a flood of them queues reviews without end
 * (memory) and takes the API server's attention from the restores (the sync client's rate).
 *
 * So a check that needs a review first takes one of {@link ReviewBudgetOptions.maxInFlight} slots, waiting in a
 * bounded line ({@link ReviewBudgetOptions.maxWaiting}) when all are taken; past that it is refused at once with
 * {@link OverBudget}, which the server answers with 429 and `Retry-After`. Each review a slot makes then takes a token
 * of the budget's own bucket ({@link ReviewBudgetOptions.qps}, {@link ReviewBudgetOptions.burst}). A waiter whose
 * client went away (its signal aborts) leaves the line and its slot at once.
 *
 * Two lines: known tokens (lib/app/metrics_auth.ts says which: a scraper whose cached verdict expired, or its new
 * token) go before unknown ones, and when the line is full a known token takes the place of the newest unknown one,
 * which is refused. Holding a slot, a known check's reviews take the bucket's tokens before those of unknown checks
 * that hold the others. A flood of unknown tokens thus delays a known scraper by at most one slot's freeing and a few
 * tokens of the bucket, never refuses it.
 */
import { TokenBucket } from "../kube/rate_limiter.ts";

export interface ReviewBudgetOptions {
  /** Reviews started per second, sustained. */
  qps: number;
  /** Reviews that may start at once after a quiet time. */
  burst: number;
  /** Checks holding a slot: reviewing, or waiting for the bucket. */
  maxInFlight: number;
  /** Checks waiting for a slot (both lines together); past it a check is refused at once. */
  maxWaiting: number;
  /** Monotonic milliseconds, for the bucket (performance.now by default). */
  now?: () => number;
}

/** The budget is spent: the request is refused, not queued. */
export class OverBudget extends Error {
  constructor(readonly retryAfterSeconds: number) {
    super("too many token reviews waiting");
    this.name = "OverBudget";
  }
}

interface Waiter {
  grant: () => void;
  refuse: (e: unknown) => void;
}

/** Seconds a refused client is told to wait: a slot frees within 1/qps seconds, a second or two at most. */
export const RETRY_AFTER_SECONDS = 1;

export class ReviewBudget {
  readonly #bucket: TokenBucket;
  #inFlight = 0;
  readonly #known: Waiter[] = [];
  readonly #unknown: Waiter[] = [];
  /** Checks refused since the start (for the log and tests). */
  refused = 0;

  constructor(readonly opts: ReviewBudgetOptions) {
    this.#bucket = new TokenBucket(opts.qps, opts.burst, opts.now);
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  get waiting(): number {
    return this.#known.length + this.#unknown.length;
  }

  /**
   * Runs `fn` holding a slot; `fn` calls `pace` before each review it sends (a token of the bucket, a known check's
   * before the others'). Rejects with {@link OverBudget} when the line is full (or a known token took this one's
   * place), and with the signal's reason when it aborts while waiting or pacing.
   */
  async run<T>(
    known: boolean,
    signal: AbortSignal,
    fn: (pace: () => Promise<void>) => Promise<T>,
  ): Promise<T> {
    signal.throwIfAborted();
    await this.#slot(known, signal);
    try {
      return await fn(() => this.#bucket.take(signal, known));
    } finally {
      this.#release();
    }
  }

  #slot(known: boolean, signal: AbortSignal): Promise<void> {
    if (this.#inFlight < this.opts.maxInFlight && this.waiting === 0) {
      this.#inFlight++;
      return Promise.resolve();
    }
    if (this.waiting >= this.opts.maxWaiting) {
      const displaced = known ? this.#unknown.pop() : undefined;
      if (!displaced) {
        this.refused++;
        return Promise.reject(new OverBudget(RETRY_AFTER_SECONDS));
      }
      this.refused++;
      displaced.refuse(new OverBudget(RETRY_AFTER_SECONDS));
    }
    const line = known ? this.#known : this.#unknown;
    return new Promise<void>((resolve, reject) => {
      const leave = () => {
        const i = line.indexOf(waiter);
        if (i >= 0) line.splice(i, 1);
        reject(signal.reason);
      };
      const waiter: Waiter = {
        grant: () => {
          signal.removeEventListener("abort", leave);
          resolve();
        },
        refuse: (e) => {
          signal.removeEventListener("abort", leave);
          reject(e);
        },
      };
      line.push(waiter);
      signal.addEventListener("abort", leave, { once: true });
    });
  }

  /** Hands the slot to the next waiter, known ones first; otherwise frees it. */
  #release(): void {
    const next = this.#known.shift() ?? this.#unknown.shift();
    if (next) next.grant();
    else this.#inFlight--;
  }
}

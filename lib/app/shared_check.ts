/**
 * One check of a metrics scrape (lib/app/metrics_auth.ts) shared by the requests that wait for it. Its signal aborts
 * when every one of them has gone away, or after {@link CHECK_TIMEOUT_MS}.
 */
import { RETRY_AFTER_SECONDS } from "./review_budget.ts";

/** controller-runtime's `TokenAccessReviewTimeout`; here for the whole check, waiting for the budget included. */
export const CHECK_TIMEOUT_MS = 10_000;

/** What a scrape is answered: the user, or the refusal with its HTTP status. */
export type Verdict =
  | { ok: true; user: string }
  | { ok: false; status: 401 | 403 | 500; reason: string }
  | { ok: false; status: 429 | 503; reason: string; retryAfterSeconds: number };

export class Flight {
  readonly #stop = new AbortController();
  #waiting = 0;
  readonly result: Promise<Verdict>;

  constructor(run: (signal: AbortSignal) => Promise<Verdict>) {
    const timer = setTimeout(
      () => this.#stop.abort(new DOMException(`no verdict within ${CHECK_TIMEOUT_MS} ms`, "TimeoutError")),
      CHECK_TIMEOUT_MS,
    );
    this.result = run(this.#stop.signal).finally(() => clearTimeout(timer));
  }

  /** The verdict, or {@link GONE} as soon as `signal` aborts (nobody reads it then). */
  join(signal: AbortSignal): Promise<Verdict> {
    if (signal.aborted) return Promise.resolve(GONE);
    this.#waiting++;
    return new Promise<Verdict>((resolve) => {
      const gone = () => {
        if (--this.#waiting === 0) this.#stop.abort(signal.reason);
        resolve(GONE);
      };
      signal.addEventListener("abort", gone, { once: true });
      this.result.then((v) => {
        signal.removeEventListener("abort", gone);
        resolve(v);
      });
    });
  }
}

/** The verdict for a client that went away before it had one. */
export const GONE: Verdict = {
  ok: false,
  status: 503,
  reason: "Service Unavailable: the client went away",
  retryAfterSeconds: RETRY_AFTER_SECONDS,
};

/**
 * The watch backoff of a reflector, and a sleep that an AbortSignal ends early. Kept apart from the reflector so that
 * the decision after each list-and-watch round ({@link nextRound}) is a table-tested pure function.
 */

/** A watch open this long without an error counts as healthy, even with no event (a quiet resource). */
export const HEALTHY_WATCH_MS = 10_000;

/**
 * How one list-and-watch round ended: the server closed the watch, answered 410 Gone (relist), or failed. Healthy:
 * the watch delivered an event or stayed open for {@link HEALTHY_WATCH_MS}.
 */
export interface Round {
  healthy: boolean;
  ended: "closed" | "gone" | "failed";
  retryAfterMs?: number;
}

/**
 * The failures so far after `round`, and how long to wait before the next one. A healthy watch resets the count,
 * whatever ended it; after one, a close or 410 goes on at once. Anything else backs off.
 */
export function nextRound(failures: number, round: Round): { failures: number; waitMs: number } {
  const before = round.healthy ? 0 : failures;
  if (round.ended !== "failed" && round.healthy) return { failures: 0, waitMs: 0 };
  const after = before + 1;
  return { failures: after, waitMs: Math.max(round.retryAfterMs ?? 0, watchBackoffMs(after)) };
}

/**
 * espejo's one back-off schedule: `baseMs` after the first failure, doubling with each failure in a row, at most
 * `maxMs`; 0 before any. The watches use it here, the retry policy (lib/sync/retry_policy.ts) with its own constants.
 */
export function exponentialMs(failures: number, baseMs: number, maxMs: number): number {
  return failures <= 0 ? 0 : Math.min(maxMs, baseMs * 2 ** (failures - 1));
}

/** A factor of 0.8 to 1.2 at random, so that what failed together does not come back together. */
export function jitter(): number {
  return 0.8 + Math.random() * 0.4;
}

/** A watch's back-off, as client-go's reflector's: 0.8 s, 1.6 s, 3.2 s, ... capped at 30 s, each +-20%. */
export function watchBackoffMs(failures: number): number {
  return Math.round(exponentialMs(Math.max(1, failures), 800, 30_000) * jitter());
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** Resolves when `signal` aborts. */
export function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((r) => signal.addEventListener("abort", () => r(), { once: true }));
}

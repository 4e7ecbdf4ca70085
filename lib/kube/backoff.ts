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
  return { failures: after, waitMs: Math.max(round.retryAfterMs ?? 0, backoffMs(after)) };
}

/** Jittered exponential backoff: 0.8 s, 1.6 s, 3.2 s, ... capped at 30 s, each +-20%. */
export function backoffMs(failures: number): number {
  const base = Math.min(30_000, 800 * 2 ** Math.max(0, failures - 1));
  return Math.round(base * (0.8 + Math.random() * 0.4));
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

/** A fake clock for the unit tests of timed code (rate_limiter_test, metrics_auth_test, metrics_auth_budget_test). */
import FakeTimers from "@sinonjs/fake-timers";

export type Clock = ReturnType<ReturnType<typeof FakeTimers.withGlobal>["install"]>;

/**
 * A test body run with setTimeout, clearTimeout, Date and performance faked (time moves only as `clock` is ticked),
 * the real ones back when it ends, whatever its outcome.
 */
export function withClock(fn: (clock: Clock) => Promise<void>): () => Promise<void> {
  return async () => {
    const clock = FakeTimers.withGlobal(globalThis).install({
      toFake: ["setTimeout", "clearTimeout", "Date", "performance"],
    });
    try {
      await fn(clock);
    } finally {
      clock.uninstall();
    }
  };
}

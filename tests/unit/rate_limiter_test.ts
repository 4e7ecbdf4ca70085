import assert from "node:assert/strict";
import FakeTimers from "@sinonjs/fake-timers";
import { TokenBucket } from "../../lib/kube/rate_limiter.ts";

type Clock = ReturnType<ReturnType<typeof FakeTimers.withGlobal>["install"]>;

function withClock(fn: (clock: Clock) => Promise<void>): () => Promise<void> {
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

Deno.test(
  "TokenBucket lets a burst through at once, then qps a second, in arrival order",
  withClock(async (clock) => {
    const bucket = new TokenBucket(10, 2);
    const order: number[] = [];
    const all = [0, 1, 2, 3].map((i) => bucket.take().then(() => order.push(i)));
    await clock.tickAsync(0);
    assert.deepEqual(order, [0, 1], "the burst");
    await clock.tickAsync(100);
    assert.deepEqual(order, [0, 1, 2]);
    await clock.tickAsync(100);
    assert.deepEqual(order, [0, 1, 2, 3]);
    await Promise.all(all);
  }),
);

Deno.test(
  "TokenBucket serves an urgent waiter before the others already waiting",
  withClock(async (clock) => {
    const bucket = new TokenBucket(10, 1);
    const order: string[] = [];
    const all = ["a", "b", "c"].map((k) => bucket.take().then(() => order.push(k)));
    await clock.tickAsync(0);
    all.push(bucket.take(undefined, true).then(() => order.push("status")));
    await clock.tickAsync(1000);
    assert.deepEqual(order, ["a", "status", "b", "c"]);
    await Promise.all(all);
  }),
);

Deno.test(
  "TokenBucket drops an aborted waiter and rejects it with the reason",
  withClock(async (clock) => {
    const bucket = new TokenBucket(10, 1);
    await bucket.take();
    const stop = new AbortController();
    const aborted = bucket.take(stop.signal);
    const next = bucket.take();
    stop.abort(new Error("stopped"));
    await assert.rejects(aborted, /stopped/);
    await clock.tickAsync(100);
    await next; // got the token the aborted one would have had
  }),
);

Deno.test("TokenBucket with qps 0 never waits", async () => {
  const bucket = new TokenBucket(0, 1);
  for (let i = 0; i < 100; i++) await bucket.take();
});

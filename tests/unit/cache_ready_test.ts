/**
 * Waiting for a cache's first list (lib/sync/resource_caches.ts `ready`, woken by lib/kube/fill_progress.ts): never
 * for one that cannot fill, for as long as one keeps filling, and without a poll.
 */
import assert from "node:assert/strict";
import FakeTimers from "@sinonjs/fake-timers";
import { FillProgress } from "../../lib/kube/fill_progress.ts";
import { ready } from "../../lib/sync/resource_caches.ts";

/** A cache as `ready` sees it, filled by hand; its progress on the fake clock `now`. */
function fakeCache(now: () => number) {
  const progress = new FillProgress(now);
  return {
    hasSynced: false,
    lastError: undefined as unknown,
    stopped: false,
    progress,
    settledOrStalled: (ms: number) => progress.settledOrStalled(ms),
  };
}

type Clock = ReturnType<ReturnType<typeof FakeTimers.withGlobal>["install"]>;

function withClock(test: (clock: Clock) => Promise<void>): () => Promise<void> {
  return async () => {
    const clock = FakeTimers.withGlobal(globalThis).install({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      await test(clock);
    } finally {
      clock.uninstall();
    }
  };
}

Deno.test("ready: a synced cache is ready at once, and one that failed or was stopped is given up at once", async () => {
  const now = () => 0; // no time passes: an answer that needed a wait would never come
  const synced = { ...fakeCache(now), hasSynced: true };
  assert.equal(await ready(synced), true);
  assert.equal(await ready({ ...fakeCache(now), lastError: new Error("403") }), false);
  // Stopped because no item names its kind any more: it would never fill, and a unit waiting for it held its
  // namespace for 30 s (a SyncConfig deleted and created again under its name waited that long for its first write).
  assert.equal(await ready({ ...fakeCache(now), stopped: true }), false);
});

Deno.test(
  "ready: a cache that fills, fails or stops while it is waited for wakes the wait",
  withClock(async (clock) => {
    for (const end of ["synced", "failed", "stopped"] as const) {
      const cache = fakeCache(() => clock.now);
      const waiting = ready(cache, 30_000);
      assert.equal(cache.progress.waiting, 1);
      if (end === "synced") cache.hasSynced = true;
      if (end === "failed") cache.lastError = new Error("403");
      if (end === "stopped") cache.stopped = true;
      cache.progress.settled();
      assert.equal(await waiting, end === "synced", end);
      assert.equal(cache.progress.waiting, 0);
      assert.equal(clock.countTimers(), 0, "its stall timer is cleared");
    }
  }),
);

Deno.test(
  "ready: a cache still filling is waited for past the stall time; one that stalls is given up after it, not before",
  withClock(async (clock) => {
    const stallMs = 1_000;
    // Filling: an object arrives every 100 ms for 2.5 stall times, then it is filled.
    const filling = fakeCache(() => clock.now);
    const waiting = ready(filling, stallMs);
    for (let i = 0; i < 25; i++) {
      await clock.tickAsync(100);
      filling.progress.arrived();
    }
    filling.hasSynced = true;
    filling.progress.settled();
    assert.equal(await waiting, true);

    // Stalled: nothing arrives; given up once the stall time has passed since the last arrival, not before.
    const stalled = fakeCache(() => clock.now);
    stalled.progress.arrived();
    let given: boolean | undefined;
    void ready(stalled, stallMs).then((r) => (given = r));
    await clock.tickAsync(600);
    stalled.progress.arrived();
    await clock.tickAsync(999);
    assert.equal(given, undefined, "1 s has not passed since the last arrival");
    await clock.tickAsync(1);
    assert.equal(given, false);
  }),
);

Deno.test(
  "ready: a cache filling for a long time wakes a waiter once per stall time, not once per object",
  withClock(async (clock) => {
    const cache = fakeCache(() => clock.now);
    let looks = 0;
    const setTimeoutBefore = globalThis.setTimeout;
    globalThis.setTimeout = ((fn: () => void, ms?: number) => (looks++, setTimeoutBefore(fn, ms))) as typeof setTimeout;
    try {
      const waiting = ready(cache, 1_000);
      for (let i = 0; i < 10_000; i++) {
        cache.progress.arrived(); // 10,000 objects over 10 s
        await clock.tickAsync(1);
      }
      cache.hasSynced = true;
      cache.progress.settled();
      assert.equal(await waiting, true);
    } finally {
      globalThis.setTimeout = setTimeoutBefore;
    }
    assert.ok(looks <= 11, `${looks} timers for 10 s of filling with a stall time of 1 s`);
  }),
);

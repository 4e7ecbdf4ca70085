/** Waiting for a cache's first list (lib/sync/resource_caches.ts `ready`): never for one that cannot fill. */
import assert from "node:assert/strict";
import { ready } from "../../lib/sync/resource_caches.ts";

const never = new Promise<void>(() => {});

Deno.test("ready: a synced cache is ready at once", async () => {
  assert.equal(
    await ready({ hasSynced: true, lastError: undefined, synced: never, stopped: false, received: 0 }),
    true,
  );
});

Deno.test("ready: a cache whose list failed, or that was stopped, is given up at once", async () => {
  const started = performance.now();
  assert.equal(
    await ready({ hasSynced: false, lastError: new Error("403"), synced: never, stopped: false, received: 0 }),
    false,
  );
  // Stopped because no item names its kind any more: it would never fill, and a unit waiting for it held its
  // namespace for 30 s (a SyncConfig deleted and created again under its name waited that long for its first write).
  assert.equal(
    await ready({ hasSynced: false, lastError: undefined, synced: never, stopped: true, received: 0 }),
    false,
  );
  assert.ok(performance.now() - started < 1_000);
});

Deno.test("ready: a cache that fills while it is waited for is ready", async () => {
  let fill!: () => void;
  const cache = {
    hasSynced: false,
    lastError: undefined,
    stopped: false,
    received: 0,
    synced: new Promise<void>((r) => (fill = r)),
  };
  const waiting = ready(cache);
  cache.hasSynced = true;
  fill();
  assert.equal(await waiting, true);
});

Deno.test("ready: a cache still filling is waited for past the stall time; one that stalls is given up", async () => {
  const stallMs = 1_000;
  // Filling: an object arrives every 100 ms for 2.5 stall times, then it is filled.
  let fill!: () => void;
  const filling = {
    hasSynced: false,
    lastError: undefined,
    stopped: false,
    received: 0,
    synced: new Promise<void>((r) => (fill = r)),
  };
  const timer = setInterval(() => {
    if (++filling.received < 25) return;
    clearInterval(timer);
    filling.hasSynced = true;
    fill();
  }, 100);
  assert.equal(await ready(filling, stallMs), true);

  // Stalled: nothing arrives; given up once the stall time has passed, not before.
  const started = performance.now();
  const stalled = { hasSynced: false, lastError: undefined, stopped: false, received: 5, synced: never };
  assert.equal(await ready(stalled, stallMs), false);
  assert.ok(performance.now() - started >= stallMs);
});

Deno.test("ready: a long wait holds one reaction on the cache's promise, not one per look", async () => {
  let reactions = 0;
  const synced = new Promise<void>(() => {});
  const counting = {
    then(onFulfilled?: () => unknown) {
      reactions++;
      return synced.then(onFulfilled);
    },
  } as unknown as Promise<void>;
  let received = 0;
  const cache = {
    hasSynced: false,
    lastError: undefined,
    stopped: false,
    synced: counting,
    get received() {
      return received;
    },
  };
  const timer = setInterval(() => received++, 20);
  const waiting = ready(cache, 1_000);
  // Polled until a dozen looks have passed (a look every 50 ms), then stopped by a failure.
  while (received < 30) await new Promise((r) => setTimeout(r, 20));
  (cache as { lastError: unknown }).lastError = new Error("403");
  assert.equal(await waiting, false);
  clearInterval(timer);
  assert.equal(reactions, 1);
});

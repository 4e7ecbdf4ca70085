/** Waiting for a cache's first list (lib/sync/resource_caches.ts `ready`): never for one that cannot fill. */
import assert from "node:assert/strict";
import { ready } from "../../lib/sync/resource_caches.ts";

const never = new Promise<void>(() => {});

Deno.test("ready: a synced cache is ready at once", async () => {
  assert.equal(await ready({ hasSynced: true, lastError: undefined, synced: never, stopped: false }), true);
});

Deno.test("ready: a cache whose list failed, or that was stopped, is given up at once", async () => {
  const started = performance.now();
  assert.equal(await ready({ hasSynced: false, lastError: new Error("403"), synced: never, stopped: false }), false);
  // Stopped because no item names its kind any more: it would never fill, and a unit waiting for it held its
  // namespace for 30 s (a SyncConfig deleted and created again under its name waited that long for its first write).
  assert.equal(await ready({ hasSynced: false, lastError: undefined, synced: never, stopped: true }), false);
  assert.ok(performance.now() - started < 1_000);
});

Deno.test("ready: a cache that fills while it is waited for is ready", async () => {
  let fill!: () => void;
  const cache = {
    hasSynced: false,
    lastError: undefined,
    stopped: false,
    synced: new Promise<void>((r) => (fill = r)),
  };
  const waiting = ready(cache);
  cache.hasSynced = true;
  fill();
  assert.equal(await waiting, true);
});

/** Work run concurrently with a bound (lib/sync/bounded.ts). */
import assert from "node:assert/strict";
import fc from "fast-check";
import { mapBounded } from "../../lib/sync/bounded.ts";

Deno.test("mapBounded keeps at most `limit` in flight, uses them all, and keeps the order of results", async () => {
  await fc.assert(
    fc.asyncProperty(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 1, max: 20 }), async (n, limit) => {
      let inFlight = 0;
      let most = 0;
      const items = Array.from({ length: n }, (_, i) => i);
      const out = await mapBounded(items, limit, async (i) => {
        most = Math.max(most, ++inFlight);
        await Promise.resolve();
        inFlight--;
        return i * 2;
      });
      assert.deepEqual(out, items.map((i) => i * 2));
      assert.equal(most, Math.min(n, limit));
    }),
  );
});

Deno.test("mapBounded: one item's slowness does not hold the others back", async () => {
  let releaseSlow!: () => void;
  const slow = new Promise<void>((r) => releaseSlow = r);
  const done: number[] = [];
  const all = mapBounded([0, 1, 2, 3], 2, async (i) => {
    if (i === 0) await slow;
    done.push(i);
  });
  for (let k = 0; k < 10 && done.length < 3; k++) await Promise.resolve();
  assert.deepEqual(done, [1, 2, 3]);
  releaseSlow();
  await all;
  assert.deepEqual(done, [1, 2, 3, 0]);
});

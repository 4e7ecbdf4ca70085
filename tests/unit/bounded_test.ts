/** Work run concurrently with a bound (lib/sync/bounded.ts). */
import assert from "node:assert/strict";
import fc from "fast-check";
import { Gate, mapBounded } from "../../lib/sync/bounded.ts";

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

Deno.test("Gate runs at most `limit` tasks at once, in the order they came, and passes on after a failure", async () => {
  await fc.assert(
    fc.asyncProperty(fc.integer({ min: 1, max: 30 }), fc.integer({ min: 1, max: 4 }), async (n, limit) => {
      const gate = new Gate(limit);
      let inFlight = 0;
      let most = 0;
      const started: number[] = [];
      const runs = Array.from({ length: n }, (_, i) =>
        gate.run(async () => {
          started.push(i);
          most = Math.max(most, ++inFlight);
          await Promise.resolve();
          inFlight--;
          if (i % 3 === 0) throw new Error(`task ${i}`);
          return i;
        }).catch(() => -1));
      const out = await Promise.all(runs);
      assert.deepEqual(out, out.map((_, i) => (i % 3 === 0 ? -1 : i)));
      assert.deepEqual(started, Array.from({ length: n }, (_, i) => i));
      assert.equal(most, Math.min(n, limit));
    }),
  );
});

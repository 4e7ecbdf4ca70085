/** The heap's soft limit (lib/controller/heap_budget.ts): collections come sooner only above it, and never in a loop. */
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  CHECK_MS,
  collectAt,
  collectionDue,
  HeapBudget,
  MAX_GC_SHARE,
  MIN_HEADROOM_BYTES,
  nextAllowed,
  SOFT_LIMIT_BYTES,
} from "../../lib/controller/heap_budget.ts";

const MiB = 2 ** 20;

/** A heap that grows by hand, whose collections leave `live` in use and take `gcMs` of the test's clock. */
function setup(o: { used: number; live: number; gcMs: number }) {
  let now = 0;
  const heap = { used: o.used, live: o.live };
  const calls: unknown[] = [];
  const budget = new HeapBudget({
    gc: (options) => {
      calls.push(options);
      heap.used = heap.live;
      now += o.gcMs;
    },
    heapUsed: () => heap.used,
    now: () => now,
  });
  return { budget, heap, calls, advance: (ms: number) => now += ms };
}

Deno.test("HeapBudget: below the soft limit nothing is collected, however the heap grows there", () => {
  const { budget, heap, calls, advance } = setup({ used: 10 * MiB, live: 10 * MiB, gcMs: 100 });
  for (let used = 10 * MiB; used < SOFT_LIMIT_BYTES; used += MiB / 2) {
    heap.used = used;
    advance(200);
    assert.equal(budget.check(), false, `at ${used / MiB} MiB in use`);
  }
  assert.equal(calls.length, 0);
});

Deno.test("HeapBudget: above the soft limit, one synchronous major collection; the next only after the heap grew again", () => {
  const { budget, heap, calls, advance } = setup({ used: SOFT_LIMIT_BYTES, live: 40 * MiB, gcMs: 100 });
  assert.equal(budget.check(), true);
  assert.deepEqual(calls, [{ type: "major", execution: "sync" }]);
  // 40 MiB live: due again at 45 MiB (an eighth more), but not before 900 ms (a tenth of the time collecting).
  heap.used = 45 * MiB;
  advance(899);
  assert.equal(budget.check(), false, "within the CPU cap");
  advance(1);
  heap.used = 45 * MiB - 1;
  assert.equal(budget.check(), false, "past the CPU cap, but not grown by the headroom");
  heap.used = 45 * MiB;
  assert.equal(budget.check(), true, "past the CPU cap, above the budget");
  assert.equal(budget.collections, 2);
  assert.equal(budget.collectingMs, 200);
});

Deno.test("HeapBudget: a live heap above the soft limit is collected only once it grew by the headroom", () => {
  const live = 60 * MiB; // more objects than the soft limit was chosen for
  const { budget, heap, calls, advance } = setup({ used: 61 * MiB, live, gcMs: 50 });
  assert.equal(budget.check(), true);
  advance(10_000);
  heap.used = live + live / 8 - 1;
  assert.equal(budget.check(), false, "an eighth of the live heap is the headroom at that size");
  heap.used = live + live / 8;
  assert.equal(budget.check(), true);
  assert.equal(calls.length, 2);
});

Deno.test("HeapBudget: what the last collection left is lowered when the heap in use is found below it", () => {
  // A burst leaves 60 MiB live; V8's own collections later bring the heap down to 40 MiB: the next burst is collected
  // at 45 MiB, not at 67.5 (60 MiB and an eighth).
  const { budget, heap, calls, advance } = setup({ used: 61 * MiB, live: 60 * MiB, gcMs: 10 });
  assert.equal(budget.check(), true);
  advance(1_000);
  heap.used = 40 * MiB;
  assert.equal(budget.check(), false);
  heap.used = 45 * MiB;
  assert.equal(budget.check(), true, "due at 40 MiB and an eighth");
  assert.equal(calls.length, 2);
});

Deno.test("HeapBudget: started, it looks every CHECK_MS until its signal aborts; without V8's gc extension never", () => {
  const intervals: { ms: number; stopped: boolean }[] = [];
  let tick = () => {};
  const every = (fn: () => void, ms: number) => {
    const t = { ms, stopped: false };
    intervals.push(t);
    tick = fn;
    return () => t.stopped = true;
  };
  let collected = 0;
  const budget = new HeapBudget({ gc: () => collected++, heapUsed: () => 99 * MiB, now: () => 0, every });
  const run = new AbortController();
  budget.start(run.signal);
  assert.deepEqual(intervals, [{ ms: CHECK_MS, stopped: false }]);
  tick();
  assert.equal(collected, 1);
  run.abort();
  assert.equal(intervals[0].stopped, true);

  const aborted = new AbortController();
  aborted.abort();
  budget.start(aborted.signal);
  const without = new HeapBudget({ gc: undefined, heapUsed: () => 99 * MiB, now: () => 0, every });
  without.start(new AbortController().signal);
  assert.equal(intervals.length, 1, "no interval for an aborted run, nor without the gc extension");
  assert.equal(without.check(), false);
});

Deno.test("HeapBudget: the time spent collecting stays under a tenth of the wall time, whatever the heap does", () => {
  fc.assert(
    fc.property(
      fc.array(fc.record({ used: fc.integer({ min: 0, max: 120 }), waitMs: fc.integer({ min: 1, max: 2_000 }) }), {
        minLength: 1,
        maxLength: 200,
      }),
      fc.integer({ min: 1, max: 500 }),
      (steps, gcMs) => {
        let now = 0;
        let used = 0;
        const budget = new HeapBudget({
          gc: () => now += gcMs,
          heapUsed: () => used * MiB,
          now: () => now,
        });
        for (const s of steps) {
          used = s.used;
          budget.check();
          now += s.waitMs;
        }
        // Each collection but the last is followed by nine times its duration without one.
        assert.ok(budget.collectingMs <= MAX_GC_SHARE * now + gcMs, `${budget.collectingMs} ms of ${now}`);
      },
    ),
    { numRuns: 500 },
  );
});

Deno.test("collectAt and collectionDue: the soft limit, the headroom, the CPU cap", () => {
  const table: [live: number, due: number][] = [
    [0, SOFT_LIMIT_BYTES],
    [30 * MiB, SOFT_LIMIT_BYTES],
    [35 * MiB, SOFT_LIMIT_BYTES],
    [40 * MiB, 45 * MiB],
    [41 * MiB, 41 * MiB + Math.max(MIN_HEADROOM_BYTES, 41 * MiB / 8)],
    [43 * MiB, 43 * MiB + 43 * MiB / 8],
    [80 * MiB, 90 * MiB],
  ];
  for (const [live, due] of table) assert.equal(collectAt(live), due, `live ${live / MiB} MiB`);
  assert.equal(nextAllowed(1_000, 1_200), 1_200 + 1_800);
  const state = { live: 30 * MiB, nextAllowedAt: 5_000 };
  assert.equal(collectionDue(SOFT_LIMIT_BYTES, 4_999, state), false);
  assert.equal(collectionDue(SOFT_LIMIT_BYTES, 5_000, state), true);
  assert.equal(collectionDue(SOFT_LIMIT_BYTES - 1, 5_000, state), false);
});

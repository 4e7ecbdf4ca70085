/** Memory given back after a burst (lib/controller/memory_return.ts): only when quiet, and only when worth it. */
import assert from "node:assert/strict";
import {
  MemoryReturn,
  MIN_INTERVAL_MS,
  QUIET_MS,
  type Schedule,
  SLACK_BYTES,
} from "../../lib/controller/memory_return.ts";

const MiB = 2 ** 20;

/** A clock of pending timers that the test moves on by hand. */
function manualClock() {
  let now = 0;
  const clockNow = () => now;
  const pending = new Set<{ at: number; fn: () => void }>();
  const schedule: Schedule = (fn, ms) => {
    const t = { at: now + ms, fn };
    pending.add(t);
    return () => pending.delete(t);
  };
  const advance = (ms: number) => {
    now += ms;
    for (const t of [...pending]) {
      if (t.at > now) continue;
      pending.delete(t);
      t.fn();
    }
  };
  return { schedule, advance, pending, now: clockNow };
}

/** `live`: what a collection leaves in use (default: all of it, no garbage). */
function setup(heap: { heapTotal: number; heapUsed: number; live?: number }) {
  const clock = manualClock();
  const calls: unknown[] = [];
  const memory = new MemoryReturn({
    gc: (o) => {
      calls.push(o);
      heap.heapUsed = heap.live ?? heap.heapUsed; // the garbage goes
      heap.heapTotal = heap.heapUsed; // and the pages it took
    },
    heap: () => ({ heapTotal: heap.heapTotal, heapUsed: heap.heapUsed }),
    schedule: clock.schedule,
    now: clock.now,
  });
  return { memory, clock, calls, heap };
}

Deno.test("MemoryReturn: after a burst, once quiet, the heap's free pages go back in one last-resort collection", () => {
  const { memory, clock, calls } = setup({ heapTotal: 37 * MiB, heapUsed: 29 * MiB });
  for (let i = 0; i < 100; i++) memory.worked(false);
  memory.worked(true);
  clock.advance(QUIET_MS - 1);
  assert.equal(calls.length, 0, "not before the quiet time");
  clock.advance(1);
  assert.deepEqual(calls, [{ type: "major", execution: "sync", flavor: "last-resort" }]);
  memory.worked(true);
  clock.advance(QUIET_MS);
  assert.equal(calls.length, 1, "nothing to give back: no second collection");
});

Deno.test("MemoryReturn: work within the quiet time puts it off; little slack or no gc extension, never", () => {
  const busy = setup({ heapTotal: 40 * MiB, heapUsed: 20 * MiB });
  busy.memory.worked(true);
  busy.clock.advance(QUIET_MS - 1);
  busy.memory.worked(false); // a new namespace arrived
  busy.clock.advance(QUIET_MS * 10);
  assert.equal(busy.calls.length, 0, "still working: not idle");
  assert.equal(busy.clock.pending.size, 0);

  const tight = setup({ heapTotal: 30 * MiB, heapUsed: 30 * MiB - SLACK_BYTES + 1 });
  tight.memory.worked(true);
  tight.clock.advance(QUIET_MS);
  assert.equal(tight.calls.length, 1, "the first quiet after the start");
  tight.clock.advance(MIN_INTERVAL_MS);
  tight.heap.heapTotal = 30 * MiB;
  tight.memory.worked(true);
  tight.clock.advance(QUIET_MS);
  assert.equal(tight.calls.length, 1, "a steady pass leaves less than the slack: no collection");

  const clock = manualClock();
  const without = new MemoryReturn({ gc: undefined, schedule: clock.schedule });
  without.worked(true);
  assert.equal(clock.pending.size, 0, "without --expose-gc nothing is scheduled");
});

Deno.test("MemoryReturn: a key taken while the quiet time runs puts it off; one collection a minute at most", () => {
  const { memory, clock, calls, heap } = setup({ heapTotal: 40 * MiB, heapUsed: 20 * MiB });
  memory.worked(true);
  clock.advance(QUIET_MS - 1);
  memory.taken(); // a long unit starts: its burst is not quiet, however long it takes
  clock.advance(QUIET_MS * 3);
  assert.equal(calls.length, 0);
  memory.worked(true);
  clock.advance(QUIET_MS);
  assert.equal(calls.length, 1);

  heap.heapTotal = 40 * MiB; // another burst, soon after
  memory.worked(true);
  clock.advance(QUIET_MS);
  assert.equal(calls.length, 1, "within a minute of the last: not again");
  clock.advance(MIN_INTERVAL_MS);
  memory.worked(true);
  clock.advance(QUIET_MS);
  assert.equal(calls.length, 2);
});

Deno.test("MemoryReturn: the first quiet after the start collects even with few free pages (the start's garbage)", () => {
  const { memory, clock, calls } = setup({ heapTotal: 31.6 * MiB, heapUsed: 28.4 * MiB });
  memory.worked(true);
  clock.advance(QUIET_MS);
  assert.equal(calls.length, 1);
});

Deno.test("MemoryReturn: garbage a burst left in use, in full pages, is collected once quiet", () => {
  // A team's 1,000 edits of its SyncConfig, then its deletion: 6 MiB more in use, under 2 MiB free.
  const { memory, clock, calls, heap } = setup({ heapTotal: 9.3 * MiB, heapUsed: 8.6 * MiB });
  memory.worked(true);
  clock.advance(QUIET_MS);
  assert.equal(calls.length, 1, "the first quiet after the start");
  clock.advance(MIN_INTERVAL_MS);
  Object.assign(heap, { heapTotal: 16.8 * MiB, heapUsed: 15 * MiB, live: 8.6 * MiB });
  memory.worked(true);
  clock.advance(QUIET_MS);
  assert.equal(calls.length, 2, "4 MiB more in use than the last collection left: collected");
  assert.equal(heap.heapTotal, 8.6 * MiB);
  Object.assign(heap, { heapTotal: 9.6 * MiB, heapUsed: 8.6 * MiB + SLACK_BYTES - 1 });
  clock.advance(MIN_INTERVAL_MS);
  memory.worked(true);
  clock.advance(QUIET_MS);
  assert.equal(calls.length, 2, "less growth than the slack: no collection");
});

Deno.test("MemoryReturn: a quiet within a minute of the last collection is served at the minute's end, unless work comes", () => {
  const { memory, clock, calls, heap } = setup({ heapTotal: 40 * MiB, heapUsed: 20 * MiB });
  memory.worked(true);
  clock.advance(QUIET_MS);
  assert.equal(calls.length, 1);
  heap.heapTotal = 40 * MiB; // a burst right after
  memory.worked(true);
  clock.advance(QUIET_MS);
  assert.equal(calls.length, 1, "not within the minute");
  clock.advance(MIN_INTERVAL_MS - 2 * QUIET_MS);
  assert.equal(calls.length, 1);
  clock.advance(QUIET_MS);
  assert.equal(calls.length, 2, "at the minute's end: the burst's pages go back without another burst");
  heap.heapTotal = 40 * MiB;
  memory.worked(true);
  clock.advance(QUIET_MS);
  memory.taken(); // work came before the minute's end
  clock.advance(MIN_INTERVAL_MS);
  assert.equal(calls.length, 2, "work puts it off again");
});

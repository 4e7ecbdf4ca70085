import assert from "node:assert/strict";
import fc from "fast-check";
import FakeTimers from "@sinonjs/fake-timers";
import { WorkQueue } from "../../lib/controller/queue.ts";

/** Drops the measured wait, which the structural assertions do not compare. */
function withoutWait<T extends { waitedMs: number }>(item: T | undefined): Omit<T, "waitedMs"> | undefined {
  if (!item) return item;
  const { waitedMs: _, ...rest } = item;
  return rest;
}

const PENDING = Symbol("pending");

/** Whether `p` is still unsettled once every already-queued microtask has run (no timers involved). */
async function settled<T>(p: Promise<T>): Promise<T | typeof PENDING> {
  // A macrotask-free check: resolve a sentinel after a few microtask turns and race it.
  let sentinel: Promise<typeof PENDING> = Promise.resolve(PENDING);
  for (let i = 0; i < 5; i++) sentinel = sentinel.then((v) => v);
  return await Promise.race([p, sentinel]);
}

Deno.test("WorkQueue hands out a key added several times before processing once", async () => {
  const q = new WorkQueue<string>(3);
  q.add("a", 1);
  q.add("a", 1);
  q.add("a", 2);
  assert.equal(q.length(), 1);
  assert.deepEqual(withoutWait(await q.get()), { key: "a", priority: 1 });
  assert.equal(q.length(), 0);
  q.done("a");
  assert.equal(q.idle, true);
  assert.equal(await settled(q.get()), PENDING);
  q.shutdown();
});

Deno.test("WorkQueue runs a key re-added during processing once more", async () => {
  const q = new WorkQueue<string>(2);
  q.add("a", 0);
  assert.deepEqual(withoutWait(await q.get()), { key: "a", priority: 0 });
  q.add("a", 1);
  q.add("a", 1);
  assert.equal(q.length(), 0, "a key being processed is not queued again before done");
  assert.equal(q.idle, false);
  q.done("a");
  assert.equal(q.length(), 1);
  assert.deepEqual(withoutWait(await q.get()), { key: "a", priority: 1 });
  q.done("a");
  assert.equal(q.idle, true);
  assert.equal(await settled(q.get()), PENDING, "it runs once more, not twice more");
  q.shutdown();
});

Deno.test("WorkQueue never hands out a key that is being processed", async () => {
  const q = new WorkQueue<string>(1);
  q.add("a", 0);
  assert.equal((await q.get())?.key, "a");
  q.add("a", 0);
  q.add("b", 0);
  assert.equal((await q.get())?.key, "b");
  assert.equal(await settled(q.get()), PENDING, "a must wait for done");
  q.shutdown();
});

Deno.test("WorkQueue hands a waiting get the key re-added during processing once done", async () => {
  const q = new WorkQueue<string>(1);
  q.add("a", 0);
  await q.get();
  q.add("a", 0);
  const next = q.get();
  assert.equal(await settled(next), PENDING);
  q.done("a");
  assert.deepEqual(withoutWait(await next), { key: "a", priority: 0 });
  q.shutdown();
});

Deno.test("WorkQueue re-queues a key re-added during processing at the most urgent priority asked", async () => {
  const q = new WorkQueue<string>(3);
  q.add("a", 2);
  await q.get();
  q.add("a", 2);
  q.add("a", 1);
  q.add("a", 2);
  q.done("a");
  assert.deepEqual(withoutWait(await q.get()), { key: "a", priority: 1 });
  q.shutdown();
});

Deno.test("WorkQueue hands out lower priority numbers first and keys of one priority in order", async () => {
  const q = new WorkQueue<string>(3);
  q.add("x2", 2);
  q.add("y0", 0);
  q.add("z1", 1);
  q.add("w0", 0);
  q.add("v2", 2);
  const order: string[] = [];
  while (q.length() > 0) {
    const item = await q.get();
    order.push(`${item?.key}@${item?.priority}`);
    q.done(item!.key);
  }
  assert.deepEqual(order, ["y0@0", "w0@0", "z1@1", "x2@2", "v2@2"]);
  q.shutdown();
});

Deno.test("WorkQueue promotes a queued key added again with a lower priority number", async () => {
  const q = new WorkQueue<string>(3);
  q.add("a", 2);
  q.add("b", 2);
  q.add("c", 1);
  q.add("b", 0);
  assert.equal(q.length(), 3, "promotion does not duplicate");
  assert.equal(q.length(0), 1);
  assert.equal(q.length(1), 1);
  assert.equal(q.length(2), 1);
  assert.deepEqual(withoutWait(await q.get()), { key: "b", priority: 0 });
  assert.deepEqual(withoutWait(await q.get()), { key: "c", priority: 1 });
  assert.deepEqual(withoutWait(await q.get()), { key: "a", priority: 2 });
  q.shutdown();
});

Deno.test("WorkQueue does not demote a queued key added again with a higher priority number", async () => {
  const q = new WorkQueue<string>(3);
  q.add("a", 0);
  q.add("a", 2);
  assert.equal(q.length(0), 1);
  assert.equal(q.length(2), 0);
  assert.deepEqual(withoutWait(await q.get()), { key: "a", priority: 0 });
  q.shutdown();
});

Deno.test("WorkQueue clamps priorities into 0..priorities-1", async () => {
  const q = new WorkQueue<string>(3);
  q.add("low", 99);
  q.add("high", -5);
  assert.equal(q.length(0), 1);
  assert.equal(q.length(2), 1);
  assert.deepEqual(withoutWait(await q.get()), { key: "high", priority: 0 });
  assert.deepEqual(withoutWait(await q.get()), { key: "low", priority: 2 });
  assert.equal(q.length(7), 0, "an unknown priority has nothing queued");
  q.shutdown();
});

Deno.test("WorkQueue get waits while empty and resolves with the next added key", async () => {
  const q = new WorkQueue<string>(2);
  const next = q.get();
  assert.equal(await settled(next), PENDING);
  q.add("a", 1);
  assert.deepEqual(withoutWait(await next), { key: "a", priority: 1 });
  q.shutdown();
});

Deno.test("WorkQueue shutdown resolves every pending get with undefined", async () => {
  const q = new WorkQueue<string>(2);
  const gets = [q.get(), q.get(), q.get()];
  assert.equal(await settled(gets[0]), PENDING);
  q.shutdown();
  assert.deepEqual(await Promise.all(gets), [undefined, undefined, undefined]);
});

Deno.test("WorkQueue hands out nothing after shutdown, even keys queued before", async () => {
  const q = new WorkQueue<string>(2);
  q.add("a", 0);
  q.shutdown();
  assert.equal(await q.get(), undefined);
  q.add("b", 0);
  assert.equal(q.length(0), 1, "adds after shutdown are ignored");
});

Deno.test("WorkQueue idle is true only when nothing is queued or being processed", async () => {
  const q = new WorkQueue<string>(1);
  assert.equal(q.idle, true);
  q.add("a", 0);
  assert.equal(q.idle, false);
  await q.get();
  assert.equal(q.idle, false, "processing is not idle");
  q.done("a");
  assert.equal(q.idle, true);
  q.shutdown();
});

Deno.test("WorkQueue addAfter queues the key only once the delay has passed", async () => {
  const clock = FakeTimers.withGlobal(globalThis).install({ toFake: ["setTimeout", "clearTimeout"] });
  try {
    const q = new WorkQueue<string>(3);
    const next = q.get();
    q.addAfter("a", 1, 5_000);
    assert.equal(q.length(), 0);
    clock.tick(4_999);
    assert.equal(q.length(), 0);
    assert.equal(await settled(next), PENDING);
    clock.tick(1);
    assert.deepEqual(withoutWait(await next), { key: "a", priority: 1 });
    assert.equal(clock.countTimers(), 0);
    q.shutdown();
  } finally {
    clock.uninstall();
  }
});

Deno.test("WorkQueue addAfter of a queued key does not duplicate it and may promote it", async () => {
  const clock = FakeTimers.withGlobal(globalThis).install({ toFake: ["setTimeout", "clearTimeout"] });
  try {
    const q = new WorkQueue<string>(3);
    q.add("a", 2);
    q.addAfter("a", 0, 100);
    clock.tick(100);
    assert.equal(q.length(), 1);
    assert.deepEqual(withoutWait(await q.get()), { key: "a", priority: 0 });
    q.shutdown();
  } finally {
    clock.uninstall();
  }
});

Deno.test("WorkQueue shutdown cancels keys waiting in addAfter", async () => {
  const clock = FakeTimers.withGlobal(globalThis).install({ toFake: ["setTimeout", "clearTimeout"] });
  try {
    const q = new WorkQueue<string>(2);
    q.addAfter("a", 0, 1_000);
    q.addAfter("b", 1, 2_000);
    assert.equal(clock.countTimers(), 2);
    q.shutdown();
    assert.equal(clock.countTimers(), 0, "no timer may keep the process alive after shutdown");
    clock.tick(5_000);
    assert.equal(q.length(), 0);
    assert.equal(await q.get(), undefined);
    q.addAfter("c", 0, 10);
    assert.equal(clock.countTimers(), 0, "addAfter after shutdown sets no timer");
  } finally {
    clock.uninstall();
  }
});

Deno.test("WorkQueue addRateLimited backs a key off by its failures in a row; forget starts it over", async () => {
  const clock = FakeTimers.withGlobal(globalThis).install({ toFake: ["setTimeout", "clearTimeout"] });
  try {
    const q = new WorkQueue<string>(2, undefined, () => 1); // no jitter: the schedule itself
    const waits = [1, 2, 3, 4, 5].map(() => q.addRateLimited("a", 0, { baseMs: 1_000 }));
    assert.deepEqual(waits, [1_000, 2_000, 4_000, 8_000, 16_000], "doubling from the base asked");
    assert.equal(q.numRequeues("a"), 5);
    assert.equal(q.addRateLimited("b", 0, { baseMs: 5_000, capMs: 3_000 }), 3_000, "never later than the cap");
    clock.tick(999);
    assert.equal(q.length(), 0, "not before its wait");
    clock.tick(1);
    assert.deepEqual(withoutWait(await q.get()), { key: "a", priority: 0 });
    q.done("a");
    q.forget("a");
    assert.equal(q.numRequeues("a"), 0);
    assert.equal(q.addRateLimited("a", 0, { baseMs: 1_000 }), 1_000, "after forget, the back-off starts over");
    for (let i = 0; i < 30; i++) q.addRateLimited("c", 0, { baseMs: 1_000 });
    assert.equal(q.addRateLimited("c", 0, { baseMs: 1_000 }), 300_000, "at most the policy's longest wait");
    q.shutdown();
    assert.equal(q.numRequeues("b"), 0, "shutdown forgets every count");
    assert.equal(q.keysKept, 0);
  } finally {
    clock.uninstall();
  }
});

Deno.test("WorkQueue addRateLimited jitters each wait by at most 20 % either way", () => {
  const clock = FakeTimers.withGlobal(globalThis).install({ toFake: ["setTimeout", "clearTimeout"] });
  try {
    const q = new WorkQueue<string>(1);
    for (let i = 0; i < 200; i++) {
      q.forget("a");
      const ms = q.addRateLimited("a", 0, { baseMs: 2_000 });
      assert.ok(ms >= 1_600 && ms <= 2_400, `${ms} ms`);
    }
    q.shutdown();
  } finally {
    clock.uninstall();
  }
});

type Op = { op: "add"; key: string; priority: number } | { op: "get" } | { op: "done"; which: number };

const ops = fc.array(
  fc.oneof(
    fc.record({ op: fc.constant("add" as const), key: fc.constantFrom("a", "b", "c", "d"), priority: fc.nat(3) }),
    fc.constant({ op: "get" as const }),
    fc.record({ op: fc.constant("done" as const), which: fc.nat(3) }),
  ),
  { maxLength: 60 },
);

Deno.test("WorkQueue follows client-go semantics for any sequence of add, get and done", async () => {
  await fc.assert(
    fc.asyncProperty(ops, async (script: Op[]) => {
      const PRIORITIES = 3;
      const q = new WorkQueue<string>(PRIORITIES);
      // Specification model: which keys wait and at what priority; which run; which must run again after done.
      const queued = new Map<string, number>();
      const processing: string[] = [];
      const again = new Map<string, number>();
      const clamp = (p: number) => Math.min(PRIORITIES - 1, p);
      const add = (key: string, p: number) => {
        if (processing.includes(key)) again.set(key, Math.min(p, again.get(key) ?? p));
        else queued.set(key, Math.min(p, queued.get(key) ?? p));
      };
      for (const step of script) {
        if (step.op === "add") {
          add(step.key, clamp(step.priority));
          q.add(step.key, step.priority);
        } else if (step.op === "get") {
          if (queued.size === 0) {
            assert.equal(q.length(), 0);
            continue; // get would wait forever
          }
          const got = await q.get();
          assert.ok(got);
          assert.ok(!processing.includes(got.key), `${got.key} handed out while being processed`);
          assert.equal(queued.get(got.key), got.priority, `${got.key} handed out at the wrong priority`);
          assert.equal(got.priority, Math.min(...queued.values()), "a more urgent key was waiting");
          queued.delete(got.key);
          processing.push(got.key);
        } else if (processing.length > 0) {
          const [key] = processing.splice(step.which % processing.length, 1);
          q.done(key);
          const p = again.get(key);
          again.delete(key);
          if (p !== undefined) add(key, p);
        }
        assert.equal(q.length(), queued.size);
        for (let p = 0; p < PRIORITIES; p++) {
          assert.equal(q.length(p), [...queued.values()].filter((v) => v === p).length, `length(${p})`);
        }
        assert.equal(q.idle, queued.size === 0 && processing.length === 0);
      }
      q.shutdown();
    }),
  );
});

Deno.test("WorkQueue reports how long a key waited, counted from its first add", async () => {
  const clock = FakeTimers.withGlobal(globalThis).install({ toFake: ["performance"] });
  try {
    const q = new WorkQueue<string>(2);
    q.add("a", 1);
    clock.tick(30);
    q.add("a", 0); // promotion keeps the original enqueue time
    clock.tick(20);
    assert.equal((await q.get())?.waitedMs, 50);
  } finally {
    clock.uninstall();
  }
});

Deno.test("WorkQueue keeps the tag of the add that gave a key its priority", async () => {
  const q = new WorkQueue<string, string>(3);
  q.add("ns/a", 2, "interval");
  q.add("ns/a", 2, "other-interval");
  q.add("ns/b", 1, "syncconfig");
  q.add("ns/b", 0, "namespace");
  assert.deepEqual(withoutWait(await q.get()), { key: "ns/b", priority: 0, tag: "namespace" }, "promoted: its tag");
  q.done("ns/b");
  assert.deepEqual(withoutWait(await q.get()), { key: "ns/a", priority: 2, tag: "interval" }, "same priority: first");
  // Re-added while processing: once more afterwards, with the most urgent re-add's tag.
  q.add("ns/a", 2, "interval");
  q.add("ns/a", 0, "retry");
  q.done("ns/a");
  assert.deepEqual(withoutWait(await q.get()), { key: "ns/a", priority: 0, tag: "retry" });
  q.done("ns/a");
  q.shutdown();
});

Deno.test(
  "WorkQueue places a key that comes back from a long processing behind keys that have not had their turn",
  async () => {
    let now = 0;
    const q = new WorkQueue<string>(1, () => now);
    q.add("tenant", 0);
    assert.equal((await q.get())?.key, "tenant");
    now = 2000; // its unit waited 2 s for the client's budget
    q.add("earlier", 0);
    q.add("tenant", 0); // its own object changed again meanwhile
    q.done("tenant"); // queued again at its last place (0) plus the 2 s it took
    now = 2010;
    q.add("fresh", 0);
    now = 5000;
    q.add("late", 0);
    const order: string[] = [];
    for (let i = 0; i < 4; i++) {
      const got = await q.get();
      order.push(got!.key);
      q.done(got!.key);
    }
    assert.deepEqual(order, ["earlier", "fresh", "late", "tenant"]);
    assert.equal(q.keysKept, 0);
    q.shutdown();
  },
);

Deno.test("WorkQueue places a key brought back by addAfter after its last processing's turn", async () => {
  const clock = FakeTimers.withGlobal(globalThis).install({ toFake: ["setTimeout", "clearTimeout", "performance"] });
  try {
    const q = new WorkQueue<string>(1);
    q.add("tenant", 0);
    assert.equal((await q.get())?.key, "tenant");
    clock.tick(1500);
    q.addAfter("tenant", 0, 1000); // the retry policy's decision, before done
    q.done("tenant");
    assert.equal(q.keysKept, 1, "its turn is kept while it is ahead");
    clock.tick(1000); // queued at its last place plus the 1.5 s it took
    q.add("fresh", 0);
    assert.equal((await q.get())?.key, "fresh");
    q.done("fresh");
    assert.equal((await q.get())?.key, "tenant");
    q.done("tenant");
    assert.equal(q.keysKept, 0, "nothing kept of keys gone from the queue");
    q.shutdown();
  } finally {
    clock.uninstall();
  }
});

Deno.test("WorkQueue promotes a key that comes back late, as it did before", async () => {
  let now = 0;
  const q = new WorkQueue<string>(2, () => now);
  q.add("a", 1);
  await q.get();
  now = 1000;
  q.add("a", 1); // during processing
  q.done("a"); // at priority 1, placed at its turn, 1000
  q.add("b", 0);
  q.add("a", 0); // promoted: placed as an add now, behind b
  assert.equal(q.length(1), 0);
  assert.deepEqual([(await q.get())?.key, (await q.get())?.key], ["b", "a"]);
  q.shutdown();
});

/** One step of the fairness property: what the tenant's keys and the workers do. */
type FairOp =
  | { op: "add"; key: number }
  | { op: "addAfter"; key: number; ms: number }
  | { op: "tick"; ms: number }
  | { op: "get" }
  | { op: "done"; which: number };

const fairOps = fc.array(
  fc.oneof(
    fc.record({ op: fc.constant("add" as const), key: fc.nat(5) }),
    fc.record({ op: fc.constant("addAfter" as const), key: fc.nat(5), ms: fc.integer({ min: 1, max: 3000 }) }),
    fc.record({ op: fc.constant("tick" as const), ms: fc.integer({ min: 0, max: 3000 }) }),
    fc.constant({ op: "get" as const }),
    fc.record({ op: fc.constant("done" as const), which: fc.nat(3) }),
  ),
  { maxLength: 80 },
);

Deno.test(
  "WorkQueue (property): however other keys are re-added, a fresh key waits one turn of the round at most, " +
    "and nothing is kept of keys gone from the queue",
  async () => {
    await fc.assert(
      fc.asyncProperty(fairOps, fc.nat(80), async (script: FairOp[], at: number) => {
        const clock = FakeTimers.withGlobal(globalThis).install({
          toFake: ["setTimeout", "clearTimeout", "performance"],
        });
        const q = new WorkQueue<string>(1);
        try {
          const processing: string[] = [];
          const handedOut: string[] = [];
          let queuedWhenFreshCame: Set<string> | undefined;
          let handedBeforeFresh = -1;
          const step = async (s: FairOp) => {
            if (s.op === "add") q.add(`t${s.key}`, 0);
            else if (s.op === "addAfter") q.addAfter(`t${s.key}`, 0, s.ms);
            else if (s.op === "tick") await clock.tickAsync(s.ms);
            else if (s.op === "get") {
              if (!q.length()) return;
              const got = (await q.get())!;
              processing.push(got.key);
              handedOut.push(got.key);
            } else if (processing.length) {
              q.done(processing.splice(s.which % processing.length, 1)[0]);
            }
          };
          for (const [i, s] of script.entries()) {
            if (i === Math.min(at, script.length - 1)) {
              // A fresh key: what is queued now may go first, once each; nothing added later.
              queuedWhenFreshCame = new Set(queuedKeys(q, processing));
              handedBeforeFresh = handedOut.length;
              q.add("fresh", 0);
            }
            await step(s);
          }
          if (handedBeforeFresh < 0) return;
          // Workers take the rest, one key at a time, until the fresh key is out.
          while (!handedOut.slice(handedBeforeFresh).includes("fresh")) {
            if (processing.length) q.done(processing.shift()!);
            if (!q.length()) {
              await clock.tickAsync(3000);
              continue;
            }
            const got = (await q.get())!;
            processing.push(got.key);
            handedOut.push(got.key);
          }
          const ahead = handedOut.slice(handedBeforeFresh, handedOut.indexOf("fresh", handedBeforeFresh));
          assert.equal(new Set(ahead).size, ahead.length, `a key went twice before the fresh one: ${ahead}`);
          for (const k of ahead) assert.ok(queuedWhenFreshCame!.has(k), `${k}, added after the fresh key, went first`);
          // Drain: nothing is kept of keys that are done and have no timer.
          for (const k of processing.splice(0)) q.done(k);
          await clock.runAllAsync();
          while (q.length()) q.done((await q.get())!.key);
          assert.equal(q.keysKept, 0);
        } finally {
          q.shutdown();
          clock.uninstall();
        }
      }),
      { numRuns: 300 },
    );
  },
);

/** The keys waiting in `q`, seen from outside: every key the model knows that is neither processing nor absent. */
function queuedKeys(q: WorkQueue<string>, processing: string[]): string[] {
  return [0, 1, 2, 3, 4, 5].map((k) => `t${k}`).filter((k) => !processing.includes(k) && q.isQueued(k));
}

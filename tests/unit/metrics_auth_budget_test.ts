/** The token reviews' own budget (lib/app/review_budget.ts): slots, a bounded line in two lanes, its own rate. */
import assert from "node:assert/strict";
import fc from "fast-check";
import { OverBudget, ReviewBudget } from "../../lib/app/review_budget.ts";
import { withClock } from "./fake_clock.ts";

/** A check that holds its slot until `finish` is called; its outcome is recorded. */
interface Check {
  known: boolean;
  stop: AbortController;
  outcome: "waiting" | "running" | "done" | "refused" | "aborted";
  finish?: () => void;
}

function start(budget: ReviewBudget, known: boolean): Check {
  const check: Check = { known, stop: new AbortController(), outcome: "waiting" };
  budget.run(known, check.stop.signal, () => {
    check.outcome = "running";
    return new Promise<void>((resolve) => check.finish = resolve);
  }).then(
    () => check.outcome = "done",
    (e) => check.outcome = e instanceof OverBudget ? "refused" : "aborted",
  );
  return check;
}

const settle = async () => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

Deno.test("ReviewBudget keeps its bounds, and refuses a known token only when only known ones wait", async () => {
  const step = fc.oneof(
    fc.record({ kind: fc.constant("arrive" as const), known: fc.boolean() }),
    fc.record({ kind: fc.constant("finish" as const), pick: fc.nat() }),
    fc.record({ kind: fc.constant("abort" as const), pick: fc.nat() }),
  );
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 1, max: 4 }),
      fc.integer({ min: 0, max: 6 }),
      fc.array(step, { maxLength: 60 }),
      async (maxInFlight, maxWaiting, steps) => {
        const budget = new ReviewBudget({ qps: 0, burst: 1, maxInFlight, maxWaiting });
        const checks: Check[] = [];
        for (const s of steps) {
          if (s.kind === "arrive") {
            const waitingBefore = checks.filter((c) => c.outcome === "waiting");
            const check = start(budget, s.known);
            checks.push(check);
            await settle();
            if (check.outcome === "refused") {
              assert.ok(
                waitingBefore.length >= maxWaiting && (!s.known || waitingBefore.every((c) => c.known)),
                "refused with room in the line, or a known token refused while an unknown one waited",
              );
            }
          } else {
            const pool = checks.filter((c) => c.outcome === (s.kind === "finish" ? "running" : "waiting"));
            if (pool.length === 0) continue;
            const c = pool[s.pick % pool.length];
            if (s.kind === "finish") c.finish!();
            else c.stop.abort(new Error("client gone"));
            await settle();
          }
          const running = checks.filter((c) => c.outcome === "running").length;
          const waiting = checks.filter((c) => c.outcome === "waiting").length;
          assert.ok(running <= maxInFlight, `${running} running, at most ${maxInFlight}`);
          assert.ok(waiting <= maxWaiting, `${waiting} waiting, at most ${maxWaiting}`);
          assert.equal(budget.waiting, waiting);
          // No slot idles while a check waits.
          if (waiting > 0) assert.equal(running, maxInFlight);
          assert.equal(budget.inFlight, running);
        }
        for (const c of checks) c.finish?.();
      },
    ),
  );
});

Deno.test("ReviewBudget serves known tokens first, and a known token takes the newest unknown one's place", async () => {
  const budget = new ReviewBudget({ qps: 0, burst: 1, maxInFlight: 1, maxWaiting: 2 });
  const first = start(budget, false);
  const a = start(budget, false);
  const b = start(budget, false);
  await settle();
  assert.deepEqual([first.outcome, a.outcome, b.outcome], ["running", "waiting", "waiting"]);
  const known = start(budget, true);
  await settle();
  assert.equal(b.outcome, "refused", "the newest unknown check gives its place");
  assert.equal(start(budget, false).outcome, "waiting");
  await settle();
  first.finish!();
  await settle();
  assert.equal(known.outcome, "running", "the known check goes before the unknown one that came earlier");
  assert.equal(a.outcome, "waiting");
  known.finish!();
  await settle();
  assert.equal(a.outcome, "running");
  assert.equal(budget.refused, 2);
});

Deno.test("ReviewBudget: a check whose client went away leaves the line and frees its place", async () => {
  const budget = new ReviewBudget({ qps: 0, burst: 1, maxInFlight: 1, maxWaiting: 1 });
  const running = start(budget, false);
  const gone = start(budget, false);
  await settle();
  gone.stop.abort(new Error("client gone"));
  await settle();
  assert.equal(gone.outcome, "aborted");
  const next = start(budget, false);
  await settle();
  assert.equal(next.outcome, "waiting", "the place was free again");
  running.finish!();
  await settle();
  assert.equal(next.outcome, "running");
  next.finish!();
  await settle();
  assert.equal(budget.inFlight, 0);
});

Deno.test(
  "ReviewBudget paces reviews with its own bucket: burst, then qps a second, whatever the flood",
  withClock(async (clock) => {
    const budget = new ReviewBudget({ qps: 5, burst: 10, maxInFlight: 4, maxWaiting: 8 });
    let reviews = 0;
    let refused = 0;
    const all: Promise<unknown>[] = [];
    // 150 checks a second for 10 s, each making one review and giving up after 1 s.
    for (let t = 0; t < 10_000; t += 20) {
      for (let i = 0; i < 3; i++) {
        const stop = new AbortController();
        setTimeout(() => stop.abort(new Error("client gave up")), 1000);
        all.push(
          budget.run(false, stop.signal, async (pace) => {
            await pace();
            reviews++;
          }).catch((e) => {
            if (e instanceof OverBudget) refused++;
          }),
        );
      }
      await clock.tickAsync(20);
    }
    await clock.tickAsync(2000);
    await Promise.all(all);
    assert.ok(reviews <= 10 + 5 * 12, `${reviews} reviews in 12 s`);
    assert.ok(reviews >= 5 * 10, `${reviews} reviews: the budget was used`);
    assert.ok(refused > 1000, `${refused} refused at once`);
    assert.equal(budget.inFlight, 0);
    assert.equal(budget.waiting, 0);
  }),
);

Deno.test(
  "ReviewBudget: a known check's reviews take the bucket's tokens before those of unknown checks holding slots",
  withClock(async (clock) => {
    const budget = new ReviewBudget({ qps: 1, burst: 1, maxInFlight: 3, maxWaiting: 0 });
    const order: string[] = [];
    const review = (name: string, known: boolean) =>
      budget.run(known, new AbortController().signal, async (pace) => {
        await pace();
        order.push(name);
      });
    const all = [review("unknown 1", false), review("unknown 2", false)];
    await clock.tickAsync(0);
    all.push(review("known", true));
    await clock.tickAsync(2000);
    await Promise.all(all);
    assert.deepEqual(order, ["unknown 1", "known", "unknown 2"]);
  }),
);

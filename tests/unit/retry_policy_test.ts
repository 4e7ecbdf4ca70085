/**
 * The retry policy (lib/sync/retry_policy.ts): one decision after each try, one after each piece of work, and the
 * delays of both books.
 */
import assert from "node:assert/strict";
import {
  afterTry,
  afterWork,
  fightDelayMs,
  type Requeue,
  type RetryDecision,
  type TryOutcome,
  type WorkFacts,
} from "../../lib/sync/retry_policy.ts";
import { exponentialMs } from "../../lib/kube/backoff.ts";
import { FightBook } from "../../lib/sync/fights.ts";

Deno.test("afterTry: the table of outcomes, restores and what the books keep", () => {
  const table: [TryOutcome, boolean, RetryDecision][] = [
    ["done", false, { fightMove: false, attempt: "forget" }],
    ["done", true, { fightMove: true, attempt: "forget" }],
    // A stale cache on espejo's own write: re-read once by the applier, else backed off as transient.
    ["conflict", false, { fightMove: false, attempt: "transient" }],
    // A conflict on a restore is the other writer's move: the fight's back-off, not a second schedule.
    ["conflict", true, { fightMove: true, attempt: "forget" }],
    ["transient", false, { fightMove: false, attempt: "transient" }],
    ["transient", true, { fightMove: true, attempt: "forget" }],
    ["terminal", false, { fightMove: false, attempt: "terminal" }],
    ["terminal", true, { fightMove: true, attempt: "terminal" }],
  ];
  for (const [outcome, restore, want] of table) {
    assert.deepEqual(afterTry({ outcome, restore }), want, `${outcome}, restore ${restore}`);
  }
});

Deno.test("fightDelayMs and exponentialMs double from 1 s up to their limit", () => {
  assert.deepEqual([0, 1, 2, 3, 4, 5, 6].map((m) => fightDelayMs(m, 10_000)), [
    0,
    1000,
    2000,
    4000,
    8000,
    10_000,
    10_000,
  ]);
  assert.deepEqual([0, 1, 2, 10].map((f) => exponentialMs(f, 1000, 300_000)), [0, 1000, 2000, 300_000]);
});

Deno.test("FightBook: a writer as fast as it can gets a bounded number of moves from espejo", () => {
  // Every conflict or restore is a move (afterTry); espejo tries only when the wait is over. A tenant writing every
  // millisecond for 60 s against an interval of 10 s gets at most 1 + log2 steps + 60/10 moves.
  let now = 0;
  const book = new FightBook(10_000, () => now);
  let moves = 0;
  for (; now < 60_000; now += 1) {
    if (book.waitMs("cm") === 0) {
      book.restored("cm");
      moves++;
    }
  }
  assert.ok(moves <= 11, `${moves} moves in 60 s`);
  assert.ok(moves >= 6, `${moves} moves in 60 s: espejo keeps trying`);
  assert.equal(book.inFight("cm"), true);
  now += 20_001;
  assert.equal(book.inFight("cm"), false, "left alone for twice the longest delay: the fight is over");
});

const workCases: [string, WorkFacts, Requeue][] = [
  ["done, nothing pending: forgotten", { retry: false }, { kind: "forget" }],
  ["done, a fight's hold or a listing cache: back after that", { retry: false, retryInMs: 700 }, {
    kind: "after",
    ms: 700,
  }],
  ["a transient failure (or an exception): back off from 1 s", { retry: true }, { kind: "backoff", baseMs: 1000 }],
  ["a transient failure beside a shorter hold: back off, but no later than the hold", {
    retry: true,
    retryInMs: 300,
  }, { kind: "backoff", baseMs: 1000, capMs: 300 }],
  ["a look that must be repeated: back off from its own first wait", { retry: true, baseMs: 5000 }, {
    kind: "backoff",
    baseMs: 5000,
  }],
];
for (const [name, facts, want] of workCases) {
  Deno.test(`afterWork: ${name}`, () => assert.deepEqual(afterWork(facts), want));
}

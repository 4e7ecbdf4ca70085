/** One book of retries (lib/sync/retry_book.ts). */
import assert from "node:assert/strict";
import { RetryBook } from "../../lib/sync/retry_book.ts";

function book() {
  const clock = { ms: 0 };
  return { b: new RetryBook<string>({ jitter: () => 1, now: () => clock.ms }), clock };
}

Deno.test("RetryBook: a retriable failure waits 1 s, doubling to 5 min", () => {
  const { b } = book();
  const delays = Array.from({ length: 12 }, () => b.failed("k", "a", "r", false));
  assert.deepEqual(delays.slice(0, 4), [1000, 2000, 4000, 8000]);
  assert.equal(delays.at(-1), 300_000);
  assert.equal(b.failures("k"), 12);
});

Deno.test("RetryBook: the same attempt waits, another is tried at once", () => {
  const { b, clock } = book();
  b.failed("k", "a", "failed-a", false);
  assert.equal(b.waiting("k", "a"), "failed-a");
  assert.equal(b.waiting("k", "b"), undefined);
  clock.ms = 1000;
  assert.equal(b.waiting("k", "a"), undefined, "its backoff is over");
  assert.equal(b.failed("k", "b", "failed-b", false), 1000, "a new attempt starts the backoff over");
});

Deno.test("RetryBook: a terminal failure waits an hour, not a backoff step", () => {
  const { b, clock } = book();
  assert.equal(b.failed("k", "a", "r", true), 3_600_000);
  clock.ms = 3_599_999;
  assert.equal(b.waiting("k", "a"), "r");
  clock.ms = 3_600_000;
  assert.equal(b.waiting("k", "a"), undefined);
});

Deno.test("RetryBook: success, forgetConfig and forgetNamespace clear entries", () => {
  const { b } = book();
  b.failed("1", "a", "r", false, { cfgKey: "c/one", namespace: "n1" });
  b.failed("2", "a", "r", false, { cfgKey: "c/two", namespace: "n1" });
  b.failed("3", "a", "r", false, { cfgKey: "c/two", namespace: "n2" });
  b.failed("4", "a", "r", false);
  b.forgetConfig("c/one");
  assert.equal(b.waiting("1", "a"), undefined);
  b.forgetNamespace("n1");
  assert.equal(b.waiting("2", "a"), undefined);
  assert.equal(b.waiting("3", "a"), "r");
  b.succeeded("3");
  assert.equal(b.size, 1);
});

Deno.test("RetryBook: the book is bounded; the oldest entry goes first", () => {
  const b = new RetryBook<string>({ maxEntries: 3, jitter: () => 1, now: () => 0 });
  for (const k of ["a", "b", "c", "d"]) b.failed(k, "x", k, false);
  assert.equal(b.size, 3);
  assert.equal(b.waiting("a", "x"), undefined);
  assert.equal(b.waiting("d", "x"), "d");
});

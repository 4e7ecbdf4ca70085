/** The reflector's retry decision after each list-and-watch round (see nextRound in lib/kube/backoff.ts). */
import assert from "node:assert/strict";
import { exponentialMs, nextRound, type Round, watchBackoffMs } from "../../lib/kube/backoff.ts";

/** watchBackoffMs(n) is 800 ms × 2^(n-1), at most 30 s, ±20 %. */
const within = (ms: number, failures: number) => {
  const base = Math.min(30_000, 800 * 2 ** (failures - 1));
  return ms >= Math.floor(base * 0.8) && ms <= Math.ceil(base * 1.2);
};

const CASES: [string, number, Round, number, "none" | "backoff"][] = [
  ["a healthy watch the server closed goes on at once", 5, { healthy: true, ended: "closed" }, 0, "none"],
  ["a watch closed at once backs off", 2, { healthy: false, ended: "closed" }, 3, "backoff"],
  ["410 after a healthy watch relists at once", 4, { healthy: true, ended: "gone" }, 0, "none"],
  ["410 again and again backs off", 3, { healthy: false, ended: "gone" }, 4, "backoff"],
  ["an error after a healthy watch starts the backoff over", 6, { healthy: true, ended: "failed" }, 1, "backoff"],
  ["errors in a row grow the backoff", 6, { healthy: false, ended: "failed" }, 7, "backoff"],
];

for (const [name, failures, round, expected, wait] of CASES) {
  Deno.test(`nextRound: ${name}`, () => {
    const next = nextRound(failures, round);
    assert.equal(next.failures, expected);
    if (wait === "none") assert.equal(next.waitMs, 0);
    else assert.ok(within(next.waitMs, expected), `${next.waitMs} ms for ${expected} failures`);
  });
}

Deno.test("nextRound: Retry-After is honoured when longer than the backoff", () => {
  assert.equal(nextRound(0, { healthy: false, ended: "failed", retryAfterMs: 20_000 }).waitMs, 20_000);
  assert.ok(nextRound(0, { healthy: false, ended: "failed", retryAfterMs: 10 }).waitMs >= 640);
});

Deno.test("nextRound: the backoff never exceeds 36 s, however many failures", () => {
  let failures = 0;
  for (let i = 0; i < 100; i++) {
    const next = nextRound(failures, { healthy: false, ended: i % 2 ? "gone" : "failed" });
    assert.ok(next.waitMs <= 36_000);
    failures = next.failures;
  }
});

/** Runs `fn` with Math.random() returning `r` (0: the most negative jitter; just below 1: the most positive). */
function withRandom<T>(r: number, fn: () => T): T {
  const random = Math.random;
  Math.random = () => r;
  try {
    return fn();
  } finally {
    Math.random = random;
  }
}

Deno.test("watchBackoffMs doubles from 0.8 s to the 30 s cap, at most 20 % either way", () => {
  const failures = [1, 2, 3, 4, 5, 6, 7, 8, 20];
  assert.deepEqual(failures.map((n) => withRandom(0.5, () => watchBackoffMs(n))), [
    800,
    1_600,
    3_200,
    6_400,
    12_800,
    25_600,
    30_000,
    30_000,
    30_000,
  ]);
  assert.deepEqual(failures.map((n) => withRandom(0, () => watchBackoffMs(n))), [
    640,
    1_280,
    2_560,
    5_120,
    10_240,
    20_480,
    24_000,
    24_000,
    24_000,
  ]);
  assert.deepEqual(failures.map((n) => withRandom(1 - Number.EPSILON, () => watchBackoffMs(n))), [
    960,
    1_920,
    3_840,
    7_680,
    15_360,
    30_720,
    36_000,
    36_000,
    36_000,
  ]);
});

Deno.test("nextRound: failures in a row wait 0.8 s, 1.6 s, 3.2 s, ... as the outage test sees them", () => {
  let failures = 0;
  const waits: number[] = [];
  for (let i = 0; i < 8; i++) {
    const next = withRandom(0.5, () => nextRound(failures, { healthy: false, ended: "failed" }));
    failures = next.failures;
    waits.push(next.waitMs);
  }
  assert.deepEqual(waits, [800, 1_600, 3_200, 6_400, 12_800, 25_600, 30_000, 30_000]);
  // The first failure of a watch that was healthy (the server just went away) starts at 0.8 s again.
  assert.equal(withRandom(0.5, () => nextRound(failures, { healthy: true, ended: "failed" })).waitMs, 800);
});

Deno.test("exponentialMs: 0 before any failure, then the base, doubling up to the cap", () => {
  assert.deepEqual([0, 1, 2, 3, 10].map((f) => exponentialMs(f, 1000, 300_000)), [0, 1000, 2000, 4000, 300_000]);
  assert.deepEqual([1, 2, 3, 4].map((f) => exponentialMs(f, 800, 3_000)), [800, 1600, 3000, 3000]);
});

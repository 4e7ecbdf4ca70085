import assert from "node:assert/strict";
import fc from "fast-check";
import { Freshness } from "../../lib/controller/freshness.ts";

const MAX_AGE = 60_000;

type Step =
  | { op: "sync"; noop: boolean }
  | { op: "changedIn"; ns: string }
  | { op: "changedEverywhere" }
  | { op: "forget" };

/** Runs steps against namespace "a" (changes to "b" are noise) and tells whether "a" is fresh at `now`. */
function freshAfter(steps: Step[], now = 1000): boolean {
  const f = new Freshness(MAX_AGE);
  for (const s of steps) {
    if (s.op === "sync") f.synced("a", f.begin(), s.noop, 0);
    else if (s.op === "changedIn") f.changedIn(s.ns);
    else if (s.op === "changedEverywhere") f.changedEverywhere();
    else f.forget("a");
  }
  return f.isFresh("a", now);
}

const CASES: [string, Step[], boolean][] = [
  ["never synced", [], false],
  ["a sync that changed nothing", [{ op: "sync", noop: true }], true],
  ["a sync that wrote or failed", [{ op: "sync", noop: false }], false],
  ["a change in the namespace after the sync", [{ op: "sync", noop: true }, { op: "changedIn", ns: "a" }], false],
  ["a change in another namespace", [{ op: "sync", noop: true }, { op: "changedIn", ns: "b" }], true],
  ["a SyncConfig change after the sync", [{ op: "sync", noop: true }, { op: "changedEverywhere" }], false],
  ["a namespace deleted after its sync", [{ op: "sync", noop: true }, { op: "forget" }], false],
  [
    "a change, then a sync that changed nothing",
    [{ op: "sync", noop: true }, { op: "changedIn", ns: "a" }, { op: "sync", noop: true }],
    true,
  ],
  [
    "a write, then a sync that changed nothing",
    [{ op: "sync", noop: false }, { op: "sync", noop: true }],
    true,
  ],
];

for (const [name, steps, want] of CASES) {
  Deno.test(`Freshness: ${name} is ${want ? "fresh" : "stale"}`, () => {
    assert.equal(freshAfter(steps), want);
  });
}

Deno.test("Freshness: a change reported while a sync runs keeps the namespace stale", () => {
  const f = new Freshness(MAX_AGE);
  const started = f.begin();
  f.changedIn("a"); // e.g. someone edits an object between our read and the end of the unit
  f.synced("a", started, true, 0);
  assert.equal(f.isFresh("a", 0), false);
  const everywhere = f.begin();
  f.changedEverywhere();
  f.synced("a", everywhere, true, 0);
  assert.equal(f.isFresh("a", 0), false);
});

Deno.test("Freshness expires after maxAge, so every namespace is compared in full now and then", () => {
  const f = new Freshness(MAX_AGE);
  f.synced("a", f.begin(), true, 5_000);
  assert.equal(f.isFresh("a", 5_000 + MAX_AGE - 1), true);
  assert.equal(f.isFresh("a", 5_000 + MAX_AGE), false);
});

Deno.test("Freshness with maxAge 0 is never fresh (every pass compares everything)", () => {
  const f = new Freshness(0);
  f.synced("a", f.begin(), true, 5_000);
  assert.equal(f.isFresh("a", 5_000), false);
});

Deno.test("Freshness: fresh exactly when the last sync was a no-op and nothing concerning it changed since", () => {
  const step: fc.Arbitrary<Step> = fc.oneof(
    fc.record({ op: fc.constant("sync" as const), noop: fc.boolean() }),
    fc.record({ op: fc.constant("changedIn" as const), ns: fc.constantFrom("a", "b") }),
    fc.constant({ op: "changedEverywhere" as const }),
    fc.constant({ op: "forget" as const }),
  );
  fc.assert(fc.property(fc.array(step, { maxLength: 20 }), (steps) => {
    // The model: the last sync of "a", and whether anything concerning "a" happened after it.
    let last = -1;
    steps.forEach((s, i) => s.op === "sync" && (last = i));
    const expected = last >= 0 && (steps[last] as { noop: boolean }).noop &&
      steps.slice(last + 1).every((s) => s.op === "changedIn" && s.ns === "b");
    assert.equal(freshAfter(steps), expected);
  }));
});

/** The counts behind each SyncConfig's status (lib/status_ledger.ts). */
import assert from "node:assert/strict";
import fc from "fast-check";
import { StatusLedger } from "../../lib/controller/status_ledger.ts";

const ok = (synced: number) => ({ synced, deleted: 0, failed: 0, errors: [] });

Deno.test("StatusLedger records per namespace and says when an outcome changed", () => {
  const l = new StatusLedger();
  l.track("c/a");
  assert.deepEqual(l.record("c/a", "n1", ok(2)), { changed: true, before: undefined });
  assert.deepEqual(l.record("c/a", "n1", ok(2)), { changed: false, before: ok(2) });
  assert.deepEqual(l.record("c/a", "n1", ok(3)), { changed: true, before: ok(2) });
  l.record("c/a", "n2", ok(1));
  assert.deepEqual([...l.outcomes("c/a")].map((o) => o.synced), [3, 1]);
});

Deno.test("StatusLedger keeps nothing for a SyncConfig it does not track (deleted or invalid)", () => {
  const l = new StatusLedger();
  assert.deepEqual(l.record("c/gone", "n1", ok(1)), { changed: false });
  l.track("c/a");
  l.record("c/a", "n1", ok(1));
  l.drop("c/a");
  assert.deepEqual([...l.outcomes("c/a")], []);
  l.track("c/a");
  assert.deepEqual([...l.outcomes("c/a")], [], "tracked again: starts empty");
});

Deno.test("StatusLedger forgets a namespace for every SyncConfig and says which changed", () => {
  const l = new StatusLedger();
  for (const k of ["c/a", "c/b", "c/c"]) l.track(k);
  l.record("c/a", "n1", ok(1));
  l.record("c/b", "n1", ok(1));
  l.record("c/c", "n2", ok(1));
  assert.equal(l.counts("n1"), true);
  assert.deepEqual(l.forgetNamespace("n1"), ["c/a", "c/b"]);
  assert.equal(l.counts("n1"), false);
  assert.equal(l.remove("c/c", "n2"), true);
  assert.equal(l.remove("c/c", "n2"), false);
});

Deno.test("StatusLedger: outcomes without failures are shared across namespaces (a few objects, not one each)", () => {
  const l = new StatusLedger();
  l.track("c/a");
  for (let i = 0; i < 5000; i++) l.record("c/a", `ns-${i}`, ok(4));
  l.record("c/a", "ns-odd", ok(3));
  const failing = { synced: 3, deleted: 0, failed: 1, errors: ["boom"] };
  l.record("c/a", "ns-failing", failing);
  const distinct = new Set(l.outcomes("c/a"));
  assert.equal(distinct.size, 3, "ok(4) once, ok(3) once, the failing outcome as it came");
  assert.ok(distinct.has(failing));
  assert.deepEqual([...l.outcomes("c/a")].reduce((n, o) => n + o.synced, 0), 5000 * 4 + 3 + 3);
  // A later change of the namespace's counts is recorded as a change, not written into the shared copy.
  assert.deepEqual(l.record("c/a", "ns-1", ok(5)).changed, true);
  assert.equal([...l.outcomes("c/a")].filter((o) => o.synced === 4).length, 4999);
});

/** The sum as it would be added up from scratch: the reference for {@link StatusLedger.total}. */
function addedUp(l: StatusLedger, cfgKey: string) {
  const total = { synced: 0, deleted: 0, failed: 0, errors: [] as string[] };
  for (const o of l.outcomes(cfgKey)) {
    total.synced += o.synced;
    total.deleted += o.deleted;
    total.failed += o.failed;
    total.errors.push(...o.errors);
  }
  return total;
}

Deno.test("StatusLedger.total: kept as outcomes come and go, it is what adding them all up gives", () => {
  const configs = ["c/a", "c/b"];
  const namespaces = ["n1", "n2", "n3", "n4"];
  const outcome = fc.record({
    synced: fc.nat(5),
    deleted: fc.nat(2),
    failed: fc.nat(2),
    errors: fc.array(fc.constantFrom("boom", "denied", "invalid"), { maxLength: 2 }),
  });
  const op = fc.oneof(
    fc.record({
      op: fc.constant("record" as const),
      cfg: fc.constantFrom(...configs),
      ns: fc.constantFrom(...namespaces),
      outcome,
    }),
    fc.record({
      op: fc.constant("remove" as const),
      cfg: fc.constantFrom(...configs),
      ns: fc.constantFrom(...namespaces),
    }),
    fc.record({ op: fc.constant("forget" as const), ns: fc.constantFrom(...namespaces) }),
    fc.record({ op: fc.constantFrom("track" as const, "drop" as const), cfg: fc.constantFrom(...configs) }),
  );
  fc.assert(fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
    const l = new StatusLedger();
    for (const c of configs) l.track(c);
    for (const o of ops) {
      if (o.op === "record") l.record(o.cfg, o.ns, o.outcome);
      else if (o.op === "remove") l.remove(o.cfg, o.ns);
      else if (o.op === "forget") l.forgetNamespace(o.ns);
      else if (o.op === "track") l.track(o.cfg);
      else l.drop(o.cfg);
      for (const c of configs) {
        const kept = l.total(c), expected = addedUp(l, c);
        assert.deepEqual({ ...kept, errors: [...kept.errors].sort() }, { ...expected, errors: expected.errors.sort() });
      }
    }
  }));
});

Deno.test("StatusLedger.total: a namespace that keeps failing keeps its place among the errors", () => {
  const l = new StatusLedger();
  l.track("c/a");
  const failing = (error: string) => ({ synced: 0, deleted: 0, failed: 1, errors: [error] });
  l.record("c/a", "n1", failing("n1 first"));
  l.record("c/a", "n2", failing("n2"));
  l.record("c/a", "n1", failing("n1 again"));
  assert.deepEqual(l.total("c/a").errors, ["n1 again", "n2"]);
  l.record("c/a", "n1", ok(1));
  assert.deepEqual(l.total("c/a"), { synced: 1, deleted: 0, failed: 1, errors: ["n2"] });
});

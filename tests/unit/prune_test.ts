/** Which objects a SyncConfig with pruning on deletes (lib/sync/prune_decisions.ts), as a table. */
import assert from "node:assert/strict";
import type { ResourceInfo } from "../../lib/kube/discovery.ts";
import fc from "fast-check";
import { compileSyncConfig } from "../../lib/model/syncconfig.ts";
import {
  confirmedPrunes,
  type FinalizerAction,
  finalizerAction,
  planPrunes,
  type PruneCandidate,
  pruneEnabled,
  type PruneScope,
  pruneScope,
  RELABEL_SETTLE_MS,
  settlingMs,
} from "../../lib/sync/prune_decisions.ts";

const CM = { group: "", version: "v1", resource: "configmaps", kind: "ConfigMap", namespaced: true } as ResourceInfo;
const candidate = (name: string): PruneCandidate => ({ resource: CM, namespace: "team-a", name, uid: `uid-${name}` });

const cases: [string, PruneScope, Record<string, string[]>, string[]][] = [
  // [case, scope, who names each candidate (by name), candidates pruned]
  ["pruning off prunes nothing", { kind: "off" }, { a: [], b: [] }, []],
  ["an item still naming it keeps it", { kind: "active", selects: true }, { a: ["cfg"], b: [] }, ["b"]],
  ["a namespace no longer selected loses everything", { kind: "active", selects: false }, { a: [], b: [] }, ["a", "b"]],
  ["a deleted SyncConfig loses everything", { kind: "deleting" }, { a: [], b: [] }, ["a", "b"]],
  ["another SyncConfig's item takes it over", { kind: "active", selects: true }, { a: ["other"], b: [] }, ["b"]],
  ["another's item keeps it even from a deletion", { kind: "deleting" }, { a: ["other", "cfg"] }, []],
];
for (const [name, scope, namedBy, pruned] of cases) {
  Deno.test(`planPrunes: ${name}`, () => {
    const plans = planPrunes("cfg", scope, Object.keys(namedBy).map(candidate), (c) => namedBy[c.name]);
    assert.deepEqual(plans.map((p) => p.candidate.name), pruned);
    for (const p of plans) assert.match(p.message, new RegExp(`ConfigMap team-a/${p.candidate.name}: `));
  });
}

Deno.test("planPrunes: the reason names the trigger", () => {
  const reason = (scope: PruneScope) => planPrunes("cfg", scope, [candidate("a")], () => [])[0].reason;
  assert.equal(reason({ kind: "active", selects: true }), "item removed");
  assert.equal(reason({ kind: "active", selects: false }), "namespace not selected");
  assert.equal(reason({ kind: "deleting" }), "SyncConfig deleted");
});

const enabled: [string | undefined, boolean, boolean][] = [
  [undefined, false, false],
  [undefined, true, true],
  ["true", false, true],
  ["false", true, false],
  ["yes", false, false], // only "true" turns it on
  ["yes", true, true],
];
for (const [annotation, pruneDefault, on] of enabled) {
  Deno.test(`pruneEnabled: annotation ${annotation}, --prune-default=${pruneDefault} -> ${on}`, () => {
    const metadata = annotation === undefined ? {} : { annotations: { "sync.appuio.ch/prune": annotation } };
    assert.equal(pruneEnabled(metadata, pruneDefault), on);
  });
}

Deno.test("confirmedPrunes: a unit prunes only what it decided at its start and still decides after its writes", () => {
  const plan = (scope: PruneScope, names: string[], namedBy: (n: string) => string[] = () => []) =>
    planPrunes("cfg", scope, names.map(candidate), (c) => namedBy(c.name));
  const names = (plans: { candidate: PruneCandidate }[]) => plans.map((p) => p.candidate.name);
  // The label came back during the unit: the start (not selected) prunes, the end (selected, items named) keeps.
  const selected = plan({ kind: "active", selects: true }, ["a", "b"], () => ["cfg"]);
  assert.deepEqual(names(confirmedPrunes(plan({ kind: "active", selects: false }, ["a", "b"]), selected)), []);
  // The unit created "new" (selected at its start); at its end the label is gone: "new" stays for the next unit.
  const atStart = plan({ kind: "active", selects: true }, ["old"], () => []);
  const atEnd = plan({ kind: "active", selects: false }, ["old", "new"]);
  assert.deepEqual(names(confirmedPrunes(atStart, atEnd)), ["old"]);
  // Another SyncConfig claimed "a" during the writes: it stays.
  const claimed = plan({ kind: "active", selects: false }, ["a", "b"], (n) => n === "a" ? ["other"] : []);
  assert.deepEqual(names(confirmedPrunes(plan({ kind: "active", selects: false }, ["a", "b"]), claimed)), ["b"]);
});

Deno.test("confirmedPrunes: never more than either decision", () => {
  fc.assert(fc.property(
    fc.uniqueArray(fc.constantFrom("a", "b", "c", "d", "e")),
    fc.uniqueArray(fc.constantFrom("a", "b", "c", "d", "e")),
    (start, end) => {
      const plans = (ns: string[]) => planPrunes("cfg", { kind: "deleting" }, ns.map(candidate), () => []);
      const out = confirmedPrunes(plans(start), plans(end)).map((p) => p.candidate.name);
      assert.deepEqual(out, end.filter((n) => start.includes(n)));
    },
  ));
});

Deno.test("settlingMs: a deselection is pruned only once the namespace's labels stayed put for the settle time", () => {
  assert.equal(settlingMs(undefined, 1_000_000), 0, "labels never changed since espejo saw the namespace");
  assert.equal(settlingMs(1_000_000, 1_000_000), RELABEL_SETTLE_MS);
  assert.equal(settlingMs(1_000_000, 1_000_000 + RELABEL_SETTLE_MS - 1), 1);
  assert.equal(settlingMs(1_000_000, 1_000_000 + RELABEL_SETTLE_MS), 0);
});

Deno.test("finalizerAction: one action per (being deleted, finalizer present, prunes)", () => {
  const table: [boolean, boolean, boolean, FinalizerAction][] = [
    [false, false, false, "none"],
    [false, false, true, "add"],
    [false, true, false, "remove"],
    [false, true, true, "watch"],
    // Nothing holds a deleted SyncConfig without the finalizer: there is nothing left to do for it.
    [true, false, false, "none"],
    [true, false, true, "none"],
    // Deleted with pruning off (or an item it cannot read): released, what it created stays.
    [true, true, false, "release"],
    [true, true, true, "prune"],
  ];
  for (const [deleting, present, prunes, want] of table) {
    assert.equal(finalizerAction(deleting, present, prunes), want, `${deleting} ${present} ${prunes}`);
  }
});

Deno.test("pruneScope: one rule for where a SyncConfig stands, for the controller and espejo plan", () => {
  const compile = (syncItems: unknown[]) =>
    compileSyncConfig({
      metadata: { namespace: "espejo", name: "p" },
      spec: { namespaceSelector: { matchNames: [".*"] }, syncItems } as never,
    });
  const good = compile([{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a" } }]);
  const typo = compile([{ apiVersion: "v1", kind: "ConfigMap", metadata: {} }]);
  const base = { enabled: true, deleting: false, result: good, selects: true };
  const table: [string, Parameters<typeof pruneScope>[0], PruneScope][] = [
    ["on, selecting", base, { kind: "active", selects: true }],
    ["on, not selecting", { ...base, selects: false }, { kind: "active", selects: false }],
    ["off", { ...base, enabled: false }, { kind: "off" }],
    ["an item it cannot read", { ...base, result: typo }, { kind: "off" }],
    ["invalid", { ...base, result: { ok: false, key: "espejo/p", message: "m" } }, { kind: "off" }],
    ["unknown", { ...base, result: undefined }, { kind: "off" }],
    ["a kind the server does not know", { ...base, unknownKind: true }, { kind: "off" }],
    ["being deleted", { ...base, deleting: true, selects: false }, { kind: "deleting" }],
    ["being deleted, its kind gone with its CRD", { ...base, deleting: true, unknownKind: true }, { kind: "deleting" }],
    ["being deleted with an item it cannot read", { ...base, deleting: true, result: typo }, { kind: "off" }],
  ];
  for (const [name, facts, want] of table) assert.deepEqual(pruneScope(facts), want, name);
});

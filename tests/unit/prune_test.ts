/** Which objects a SyncConfig with pruning on deletes (lib/sync/prune.ts), as a table. */
import assert from "node:assert/strict";
import type { ResourceInfo } from "../../lib/kube/discovery.ts";
import { planPrunes, type PruneCandidate, pruneEnabled, type PruneScope } from "../../lib/sync/prune.ts";

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

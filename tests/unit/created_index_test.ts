/** The candidates of pruning by namespace (lib/sync/created_index.ts): what goes in comes out, and drops stay dropped. */
import assert from "node:assert/strict";
import fc from "fast-check";
import { type CreatedEntry, CreatedIndex } from "../../lib/sync/created_index.ts";

const entry = fc.record({
  namespace: fc.constantFrom("a", "b", "c"),
  cfgKey: fc.constantFrom("espejo/one", "espejo/two", "other/x"),
  resourceKey: fc.constantFrom("/v1/configmaps", "rbac.authorization.k8s.io/v1/roles"),
  name: fc.stringMatching(/^[a-z0-9]([-a-z0-9.]{0,20}[a-z0-9])?$/),
});

const key = (e: CreatedEntry) => `${e.cfgKey} ${e.resourceKey} ${e.name}`;

Deno.test("CreatedIndex answers as a plain list of its entries would, whatever is added and dropped", () => {
  fc.assert(fc.property(fc.array(entry), fc.array(fc.nat()), (added, drops) => {
    const index = new CreatedIndex();
    const model = new Map<string, Set<string>>();
    for (const e of added) {
      index.add(e.namespace, e.cfgKey, e.resourceKey, e.name);
      if (!model.has(e.namespace)) model.set(e.namespace, new Set());
      model.get(e.namespace)!.add(key(e));
    }
    for (const d of drops.slice(0, added.length)) {
      const e = added[d % added.length];
      index.drop(e.namespace, e);
      model.get(e.namespace)?.delete(key(e));
    }
    for (const ns of ["a", "b", "c"]) {
      const expected = [...model.get(ns) ?? []].sort();
      assert.deepEqual([...index.in(ns)].map(key).sort(), expected);
      assert.deepEqual(index.creatorsIn(ns).sort(), [...new Set(expected.map((k) => k.split(" ")[0]))].sort());
    }
    for (const cfg of ["espejo/one", "espejo/two", "other/x"]) {
      const expected = ["a", "b", "c"].filter((ns) => [...model.get(ns) ?? []].some((k) => k.startsWith(`${cfg} `)));
      assert.deepEqual(index.namespacesOf(cfg).sort(), expected);
    }
    const roles = [...model.values()].some((s) => [...s].some((k) => k.includes(" rbac.")));
    assert.equal(index.hasResource("rbac.authorization.k8s.io/v1/roles", () => true), roles);
    assert.equal(index.hasResource("rbac.authorization.k8s.io/v1/roles", () => false), false);
  }));
});

Deno.test("CreatedIndex forgets a namespace whole", () => {
  const index = new CreatedIndex();
  index.add("a", "espejo/one", "/v1/configmaps", "x");
  index.forgetNamespace("a");
  assert.deepEqual([...index.in("a")], []);
  assert.deepEqual(index.namespacesOf("espejo/one"), []);
});

Deno.test("CreatedIndex.forgetConfig drops every entry of one SyncConfig, and only those", () => {
  fc.assert(fc.property(fc.array(entry), fc.constantFrom("espejo/one", "espejo/two", "other/x"), (added, gone) => {
    const index = new CreatedIndex();
    for (const e of added) index.add(e.namespace, e.cfgKey, e.resourceKey, e.name);
    index.forgetConfig(gone);
    for (const ns of ["a", "b", "c"]) {
      const expected = [...new Set(added.filter((e) => e.namespace === ns && e.cfgKey !== gone).map(key))].sort();
      assert.deepEqual([...index.in(ns)].map(key).sort(), expected);
    }
    assert.deepEqual(index.namespacesOf(gone), []);
  }));
});

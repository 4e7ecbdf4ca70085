import assert from "node:assert/strict";
import fc from "fast-check";
import { SelectionIndex } from "../../lib/model/selection_index.ts";
import { type CompiledSyncConfig, compileSyncConfig } from "../../lib/model/syncconfig.ts";

interface Ns {
  name: string;
  labels: Record<string, string>;
  phase: string;
}

function config(name: string, namespaceSelector: Record<string, unknown>): CompiledSyncConfig {
  const r = compileSyncConfig({
    apiVersion: "sync.appuio.ch/v1alpha1",
    kind: "SyncConfig",
    metadata: { namespace: "cfg", name, generation: 1, uid: name },
    spec: { namespaceSelector, deleteItems: [{ apiVersion: "v1", kind: "ConfigMap", name: "x" }] },
  } as never);
  if (!r.ok) throw new Error(r.message);
  return r.config;
}

/** Counts selector evaluations, to see what the index saves. */
function counting(configs: CompiledSyncConfig[]) {
  const counter = { calls: 0 };
  const wrapped = configs.map((c) => ({
    ...c,
    selector: { selects: (ns: Ns) => (counter.calls++, c.selector.selects(ns)) },
  }));
  return { counter, list: () => wrapped };
}

const team = config("team", { labelSelector: { matchLabels: { team: "a" } } });
const named = config("named", { matchNames: ["app-.*"] });

Deno.test("SelectionIndex evaluates selectors once per namespace version", () => {
  const index = new SelectionIndex<Ns>();
  const { counter, list } = counting([team, named]);
  const ns: Ns = { name: "app-1", labels: { team: "a" }, phase: "Active" };
  assert.deepEqual(index.selecting(ns, list), ["cfg/team", "cfg/named"]);
  assert.deepEqual(index.selecting(ns, list), ["cfg/team", "cfg/named"]);
  assert.equal(counter.calls, 2);
  // The namespace cache replaces the object on every change: a new object is evaluated again.
  const relabelled = { ...ns, labels: { team: "b" } };
  assert.deepEqual(index.selecting(relabelled, list), ["cfg/named"]);
  assert.equal(counter.calls, 4);
});

Deno.test("SelectionIndex: namespaces selected by the same SyncConfigs share one frozen list", () => {
  const index = new SelectionIndex<Ns>();
  const lists = Array.from(
    { length: 1000 },
    (_, i) => index.selecting({ name: `app-${i}`, labels: { team: "a" }, phase: "Active" }, () => [team, named]),
  );
  assert.equal(new Set(lists).size, 1);
  assert.ok(Object.isFrozen(lists[0]));
  const other = index.selecting({ name: "other", labels: { team: "a" }, phase: "Active" }, () => [team, named]);
  assert.deepEqual(other, ["cfg/team"]);
});

Deno.test("SelectionIndex: invalidate() (a SyncConfig recompiled) makes every entry stale", () => {
  const index = new SelectionIndex<Ns>();
  const ns: Ns = { name: "app-1", labels: {}, phase: "Active" };
  assert.deepEqual(index.selecting(ns, () => [named]), ["cfg/named"]);
  assert.deepEqual(index.selecting(ns, () => [team]), ["cfg/named"], "still the cached answer");
  index.invalidate();
  assert.deepEqual(index.selecting(ns, () => [team]), []);
});

Deno.test("SelectionIndex: a terminating namespace is selected by nothing; forget drops the entry", () => {
  const index = new SelectionIndex<Ns>();
  assert.deepEqual(index.selecting({ name: "app-1", labels: {}, phase: "Terminating" }, () => [named]), []);
  assert.equal(index.size, 1);
  index.forget("app-1");
  assert.equal(index.size, 0);
});

Deno.test("SelectionIndex answers as the selectors do, for any sequence of namespaces and invalidations", () => {
  const configs = [team, named];
  const ns: fc.Arbitrary<Ns> = fc.record({
    name: fc.constantFrom("app-1", "app-2", "other"),
    labels: fc.constantFrom<Record<string, string>>({}, { team: "a" }, { team: "b" }),
    phase: fc.constantFrom("Active", "Terminating"),
  });
  const step = fc.oneof(ns, fc.constant("invalidate" as const));
  fc.assert(fc.property(fc.array(step, { maxLength: 30 }), (steps) => {
    const index = new SelectionIndex<Ns>();
    let active = configs;
    for (const s of steps) {
      if (s === "invalidate") {
        active = active.length === 2 ? [named] : configs;
        index.invalidate();
        continue;
      }
      const want = s.phase === "Active" ? active.filter((c) => c.selector.selects(s)).map((c) => c.key) : [];
      assert.deepEqual(index.selecting(s, () => active), want);
    }
  }));
});

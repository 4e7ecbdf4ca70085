/**
 * Packed entries a namespace's to a string (lib/kube/packed_groups.ts) behind the store (lib/kube/store.ts): whatever
 * is stored, replaced or deleted reads back as from a plain map, whichever keys and values a tenant chooses.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { GROUP_MAX, PackedGroups } from "../../lib/kube/packed_groups.ts";
import { type Entry, ObjectStore } from "../../lib/kube/store.ts";
import { type Item, itemPacking as packing } from "./store_item.ts";

// Namespaces and names: DNS ones (grouped), a Role's name with the separators in it, one without a namespace, and
// enough names in one namespace to fill its group.
const key = fc.oneof(
  fc.tuple(fc.constantFrom("a", "team-b", "c"), fc.integer({ min: 0, max: GROUP_MAX + 5 })).map(([ns, i]) =>
    `${ns}/obj-${i}.x`
  ),
  fc.constantFrom("a/Role\x1eName", "a/x\x1fy", "a/", "cluster-scoped", "a/obj-1.x/sub", "A/upper"),
);
const packed = fc.oneof(
  fc.stringMatching(/^[0-9]{1,4}\nu-[a-z]{1,3}\n[a-z0-9=\n]{0,12}$/),
  fc.constantFrom("1\nu\nwith\x1erecord", "1\nu\nwith\x1fname-end", "1\nu\n"),
);
const op = fc.oneof(
  fc.record({ kind: fc.constant("set" as const), key, packed }),
  fc.record({ kind: fc.constant("delete" as const), key }),
);

Deno.test("PackedGroups: reads back as a map would, groups full or not, keys and values as a tenant likes", () => {
  fc.assert(
    fc.property(fc.array(op, { maxLength: 300 }), (ops) => {
      const groups = new PackedGroups();
      const model = new Map<string, string>();
      for (const o of ops) {
        if (o.kind === "set") {
          if (groups.set(o.key, o.packed)) model.set(o.key, o.packed);
          else assert.equal(groups.get(o.key), model.get(o.key), `a refused set changes nothing (${o.key})`);
        } else {
          assert.equal(groups.delete(o.key), model.delete(o.key));
        }
        assert.equal(groups.size, model.size);
      }
      for (const [k, v] of model) assert.equal(groups.get(k), v);
      assert.deepEqual(new Map(groups.entries()), model);
    }),
    { numRuns: 300 },
  );
});

Deno.test("PackedGroups: a namespace takes at most GROUP_MAX names; separators and odd names are refused", () => {
  const groups = new PackedGroups();
  for (let i = 0; i < GROUP_MAX; i++) assert.ok(groups.set(`ns/o-${i}`, `${i}\nu\n`));
  assert.equal(groups.set("ns/one-more", "1\nu\n"), false);
  assert.ok(groups.set("ns/o-0", "2\nu\nreplaced"), "a name already in the group is replaced");
  assert.equal(groups.get("ns/o-0"), "2\nu\nreplaced");
  assert.equal(groups.set("ns/a", "1\nu\n\x1e"), false);
  assert.equal(groups.set("ns/Role\x1e", "1\nu\n"), false);
  assert.equal(groups.set("cluster-scoped", "1\nu\n"), false);
});

const item = fc.record({
  resourceVersion: fc.stringMatching(/^[0-9]{1,4}$/),
  uid: fc.oneof(fc.constantFrom("u1", "u2"), fc.uuid()),
  note: fc.option(fc.constantFrom("judged", "x\x1ey", "in sync"), { nil: undefined }),
  busy: fc.option(fc.constant(true as const), { nil: undefined }),
}).map((o) => {
  const out: Item = { resourceVersion: o.resourceVersion, uid: o.uid };
  if (o.note !== undefined) out.note = o.note;
  if (o.busy) out.busy = true;
  return out;
});
const storeOp = fc.oneof(
  fc.record({ kind: fc.constant("set" as const), key, item }),
  fc.record({ kind: fc.constant("delete" as const), key }),
  fc.record({ kind: fc.constant("settle" as const) }),
);

Deno.test("ObjectStore: packed or not, grouped or not, every value reads back as stored", async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(storeOp, { maxLength: 200 }), async (ops) => {
      const store = new ObjectStore<Item>(packing);
      const model = new Map<string, Item>();
      for (const o of ops) {
        if (o.kind === "set") {
          store.set(o.key, { ...o.item }, o.item.resourceVersion, o.item.uid);
          model.set(o.key, o.item);
        } else if (o.kind === "delete") {
          store.delete(o.key);
          model.delete(o.key);
        } else await new Promise<void>((r) => queueMicrotask(r)); // packing runs
        assert.equal(store.size, model.size);
      }
      for (const [k, v] of model) assert.deepEqual(store.get(k), v);
      const seen = new Map<string, Item>();
      for (const [k, e] of store.entries()) seen.set(k, store.valueOf(e as Entry));
      assert.deepEqual(seen, model);
    }),
    { numRuns: 200 },
  );
});

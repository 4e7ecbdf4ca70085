/**
 * An initial list or WatchList replacing a cache's store (lib/kube/initial_state.ts): the first one is taken over as
 * it is (never held twice), a later one reports only what changed, packed entries included.
 */
import assert from "node:assert/strict";
import { InitialState } from "../../lib/kube/initial_state.ts";
import { ObjectStore, type Packing } from "../../lib/kube/store.ts";
import type { KubeObject } from "../../lib/kube/objects.ts";

interface Item {
  resourceVersion: string;
  uid: string;
  note: string;
}
const packing: Packing<Item> = {
  pack: (v) => v.note,
  unpack: (note, resourceVersion, uid) => ({ resourceVersion, uid, note }),
};
const raw = (name: string, rv: string, uid = `u-${name}`): KubeObject => ({
  metadata: { name, namespace: "team-a", uid, resourceVersion: rv },
});
const decode = (o: KubeObject): Item => ({
  resourceVersion: o.metadata!.resourceVersion!,
  uid: o.metadata!.uid!,
  note: `decoded ${o.metadata!.resourceVersion}`,
});

Deno.test("InitialState: the first list fills the empty store and reports every object added", () => {
  const store = new ObjectStore<Item>(packing);
  const state = new InitialState(store, decode);
  for (let i = 0; i < 40; i++) state.add(raw(`o-${i}`, `${i + 1}`)); // more than a group holds
  state.remove(raw("o-3", "4"));
  const changes: string[] = [];
  state.commit((type, _v, _old, key) => changes.push(`${type} ${key}`));
  assert.equal(store.size, 39);
  assert.equal(changes.length, 39);
  assert.ok(changes.every((c) => c.startsWith("added ")));
  assert.deepEqual(store.get("team-a/o-7"), { resourceVersion: "8", uid: "u-o-7", note: "decoded 8" });
  assert.equal(store.get("team-a/o-3"), undefined);
});

Deno.test("InitialState: a relist reports what changed, went or came, and keeps what was learnt of the rest", () => {
  const store = new ObjectStore<Item>(packing);
  const first = new InitialState(store, decode);
  for (const name of ["a", "b", "c"]) first.add(raw(name, "1"));
  first.commit(undefined);
  store.set("team-a/a", { resourceVersion: "1", uid: "u-a", note: "judged in sync" }, "1", "u-a");

  const relist = new InitialState(store, decode);
  relist.add(raw("a", "1")); // unchanged: what was learnt stays
  relist.add(raw("b", "2")); // changed
  relist.add(raw("d", "1")); // new; c went
  const changes: string[] = [];
  relist.commit((type, _v, _old, key) => changes.push(`${type} ${key}`));
  assert.deepEqual(changes.sort(), ["added team-a/d", "deleted team-a/c", "modified team-a/b"]);
  assert.equal(store.get("team-a/a")!.note, "judged in sync");
  assert.equal(store.size, 3);
});

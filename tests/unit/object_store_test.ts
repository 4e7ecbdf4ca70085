/** What a reflector keeps per object (lib/kube/store.ts): no wrapper where the value carries its version, and a
 * settled value kept as one string. */
import assert from "node:assert/strict";
import { ObjectStore } from "../../lib/kube/store.ts";
import { type Item, itemPacking as packing } from "./store_item.ts";

const settle = () => new Promise<void>((resolve) => queueMicrotask(resolve));

Deno.test("ObjectStore: a value that carries its version and uid is its own entry; another is wrapped", () => {
  const store = new ObjectStore<unknown>();
  const item = { resourceVersion: "3", uid: "u" };
  assert.equal(store.make(item, "3", "u"), item);
  const other = store.make({ resourceVersion: "2", uid: "u" }, "3", "u");
  assert.notEqual(other, item);
  assert.equal(store.versionOf(other), "3");
  assert.deepEqual(store.valueOf(other), { resourceVersion: "2", uid: "u" });
  const text = store.make("a namespace", "4", undefined);
  assert.equal(store.valueOf(text), "a namespace");
  assert.equal(store.uidOf(text), undefined);
});

Deno.test("ObjectStore: a settled value is kept as one string once the code that was handed it has run", async () => {
  const store = new ObjectStore<Item>(packing);
  store.set("ns/a", { resourceVersion: "7", uid: "u-a", busy: true }, "7", "u-a");
  await settle();
  assert.equal(typeof store.entry("ns/a"), "object", "busy: kept as it is");
  // The caller settles the value it was handed, synchronously (as a unit judges an object): packed right after.
  const handed = store.get("ns/a")!;
  delete handed.busy;
  handed.note = "judged";
  await settle();
  assert.equal(store.entry("ns/a"), "7\nu-a\njudged");
  assert.deepEqual(store.get("ns/a"), { resourceVersion: "7", uid: "u-a", note: "judged" });
  assert.equal(store.versionOf(store.entry("ns/a")!), "7");
  assert.equal(store.uidOf(store.entry("ns/a")!), "u-a");
});

Deno.test("ObjectStore: a version or uid with a newline, or no uid, is not packed", async () => {
  const store = new ObjectStore<Item>(packing);
  store.set("ns/a", { resourceVersion: "7\n8", uid: "u" }, "7\n8", "u");
  store.set("ns/b", { resourceVersion: "7", uid: "u\nv" }, "7", "u\nv");
  store.set("ns/c", { resourceVersion: "7", uid: "" }, "7", undefined);
  await settle();
  for (const key of ["ns/a", "ns/b", "ns/c"]) assert.equal(typeof store.entry(key), "object", key);
});

Deno.test("ObjectStore: without a packing every value stays as it is", async () => {
  const store = new ObjectStore<Item>();
  store.set("ns/a", { resourceVersion: "7", uid: "u" }, "7", "u");
  store.get("ns/a");
  await settle();
  assert.equal(typeof store.entry("ns/a"), "object");
});

Deno.test("ObjectStore: an entry made of a value that has settled already is packed at once", () => {
  // Thousands of objects of a restart's list wait in the list's state, judged as they came: never as objects.
  const store = new ObjectStore<Item>(packing);
  assert.equal(store.make({ resourceVersion: "9", uid: "u", note: "in sync" }, "9", "u"), "9\nu\nin sync");
  assert.equal(typeof store.make({ resourceVersion: "9", uid: "u", busy: true }, "9", "u"), "object");
});

Deno.test("ObjectStore: a value that settles after an await is packed once told so", async () => {
  const store = new ObjectStore<Item>(packing);
  store.set("ns/a", { resourceVersion: "7", uid: "u-a", busy: true }, "7", "u-a");
  const handed = store.get("ns/a")!;
  await settle(); // a read or a wait in between: the look at it for packing has passed
  delete handed.busy;
  store.settled("ns/a", handed);
  await settle();
  assert.equal(store.entry("ns/a"), "7\nu-a\n");
  store.settled("ns/gone", handed);
  assert.equal(store.size, 1, "a key that is not stored stays so");
});

Deno.test("ObjectStore: a copy of a packed entry that learnt something after an await is put back, if still current", async () => {
  const store = new ObjectStore<Item>(packing);
  store.set("ns/a", { resourceVersion: "7", uid: "u-a", note: "out of sync" }, "7", "u-a");
  const copy = store.get("ns/a")!;
  await settle(); // the unit's await (a write of the same item elsewhere, to learn what the server adds)
  copy.note = "in sync";
  store.settled("ns/a", copy);
  assert.deepEqual(store.get("ns/a"), { resourceVersion: "7", uid: "u-a", note: "in sync" });
  await settle();
  assert.equal(store.entry("ns/a"), "7\nu-a\nin sync", "packed again");

  // Changed meanwhile: the copy is of an older version (or of an object deleted and created again) and is dropped.
  const old = store.get("ns/a")!;
  store.set("ns/a", { resourceVersion: "8", uid: "u-a", note: "someone's edit" }, "8", "u-a");
  old.note = "stale verdict";
  store.settled("ns/a", old);
  assert.equal(store.get("ns/a")!.note, "someone's edit");
  store.set("ns/a", { resourceVersion: "7", uid: "u-b", note: "recreated" }, "7", "u-b");
  store.settled("ns/a", old);
  assert.equal(store.get("ns/a")!.note, "recreated");
});

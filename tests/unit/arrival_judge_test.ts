/**
 * Objects judged as their cache reads them (lib/controller/arrival_judge.ts): after a restart their content is not kept
 * until a unit gets to them, and the verdict is the one a unit would reach.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import type { ResourceInfo } from "../../lib/kube/discovery.ts";
import type { KubeObject } from "../../lib/kube/objects.ts";
import type { SyncConfig } from "../../lib/model/syncconfig.ts";
import { Registry } from "../../lib/model/registry.ts";
import { arrivalJudge } from "../../lib/controller/arrival_judge.ts";
import type { NamespaceInfo } from "../../lib/model/namespace_info.ts";
import { decodeManaged, MAX_KEPT_CONTENT, MAX_KEPT_REFERENCES } from "../../lib/sync/cached_object.ts";
import { assess, remember } from "../../lib/sync/verdict.ts";
import { desiredObjectNow } from "../../lib/sync/desired.ts";
import { packedObjects } from "../../lib/sync/packed_object.ts";

const CM = { group: "", version: "v1", resource: "configmaps", kind: "ConfigMap", namespaced: true } as ResourceInfo;
const spec = (data: Record<string, string>) => ({
  namespaceSelector: { matchNames: ["team-.*"] },
  syncItems: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "policy" }, data }],
});
const sc = (name: string, data: Record<string, string>) =>
  ({ metadata: { namespace: "espejo", name, generation: 1, uid: `uid-${name}` }, spec: spec(data) }) as SyncConfig;

const namespaces = new Map<string, NamespaceInfo>(
  ["team-a", "other"].map((name) => [name, { name, labels: {}, phase: "Active" }]),
);

/** The API server's copy of what espejo would write for config `a` in `namespace`, changed by `change`. */
function served(registry: Registry<NamespaceInfo>, namespace: string, change: (o: KubeObject) => void = () => {}) {
  const entry = registry.get("espejo/a")!.result;
  if (!entry.ok) throw new Error(entry.message);
  const o = structuredClone(desiredObjectNow(entry.config, entry.config.syncItems[0], namespace).object);
  o.metadata!.uid = "5f0c6c2e-0000-4000-8000-000000000000";
  o.metadata!.resourceVersion = "42";
  change(o);
  return o;
}

function setup() {
  const registry = new Registry<NamespaceInfo>();
  registry.compile("espejo/a", sc("a", { k: "v" }));
  const judge = arrivalJudge(registry, namespaces);
  /** `raw` as a cache reads it in its initial state: offered to the judge before anything of it is kept. */
  const read = (raw: KubeObject, namespace: string) =>
    decodeManaged(raw, undefined, true, true, (entry, content) => judge(CM, entry, namespace, "policy", content));
  return { registry, read };
}

Deno.test("arrivalJudge: an object in sync keeps its verdict, not its content, and is then packed", () => {
  const { registry, read } = setup();
  const entry = read(served(registry, "team-a"), "team-a");
  assert.equal(entry.json, undefined);
  assert.equal(entry.inSync, true);
  assert.ok(packedObjects.pack(entry) !== undefined);
});

Deno.test("arrivalJudge: an object someone changed keeps an out-of-sync record (hashes), not its content", () => {
  const { registry, read } = setup();
  const entry = read(served(registry, "team-a", (o) => (o.data = { k: "tenant" })), "team-a");
  assert.equal(entry.json, undefined);
  assert.equal(entry.inSync, undefined);
  assert.match(entry.outOfSync!.reason, /data.k differs/);
});

Deno.test("arrivalJudge: an object too large to keep is judged as it is read, and needs no GET later", () => {
  const { registry, read } = setup();
  const big = "x".repeat(MAX_KEPT_CONTENT);
  const entry = read(served(registry, "team-a", (o) => (o.metadata!.annotations!.big = big)), "team-a");
  assert.equal(entry.contentless, undefined);
  assert.equal(entry.json, undefined);
  assert.match(entry.outOfSync!.reason, /metadata.annotations.big is not set by the item/);
});

Deno.test("arrivalJudge: an object with ownerReferences keeps its verdict and the references, not its content", () => {
  const { registry, read } = setup();
  const ref = { apiVersion: "v1", kind: "ConfigMap", name: "owner", uid: "u" };
  const entry = read(served(registry, "team-a", (o) => (o.metadata!.ownerReferences = [ref])), "team-a");
  assert.equal(entry.json, undefined);
  assert.equal(entry.inSync, true, "references are the owners', not the item's");
  assert.deepEqual(JSON.parse(entry.ownerReferences!), [ref]);
});

Deno.test("arrivalJudge: an object with more ownerReferences than are kept is judged as it arrives, and keeps none", () => {
  const { registry, read } = setup();
  const refs = Array.from(
    { length: 100 },
    (_, i) => ({ apiVersion: "v1", kind: "ConfigMap", name: `o${i}`, uid: "u" }),
  );
  assert.ok(JSON.stringify(refs).length > MAX_KEPT_REFERENCES);
  const entry = read(served(registry, "team-a", (o) => (o.metadata!.ownerReferences = refs)), "team-a");
  assert.deepEqual([entry.json, entry.ownerReferences, entry.contentless, entry.referencesUnkept, entry.inSync], [
    undefined,
    undefined,
    undefined,
    true,
    true,
  ]);
});

Deno.test("arrivalJudge: an object it cannot judge is left to the unit, the entry untouched, the cache reading on", () => {
  const { registry } = setup();
  const judge = arrivalJudge(registry, namespaces);
  const content = served(registry, "team-a");
  const entry = decodeManaged(content, undefined, true, true);
  const before = structuredClone(entry);
  Object.defineProperty(content, "data", {
    enumerable: true,
    get: () => {
      throw new RangeError("Maximum call stack size exceeded");
    },
  });
  assert.equal(judge(CM, entry, "team-a", "policy", content), false);
  assert.deepEqual(entry, before);
});

Deno.test("arrivalJudge: its verdict from the parsed object is the one a unit reaches from the kept JSON", () => {
  const { registry, read } = setup();
  const entryOf = registry.get("espejo/a")!.result;
  if (!entryOf.ok) throw new Error(entryOf.message);
  const { object: desired, hash } = desiredObjectNow(entryOf.config, entryOf.config.syncItems[0], "team-a");
  const change = fc.oneof(
    fc.constant((_o: KubeObject) => {}),
    fc.string().map((v) => (o: KubeObject) => (o.data = { k: v })),
    fc.string({ minLength: 1 }).map((k) => (o: KubeObject) => (o.metadata!.annotations![k] = "x")),
    fc.string({ minLength: 1 }).map((k) => (o: KubeObject) => ((o as Record<string, unknown>)[`x${k}`] = [k])),
    fc.constant((o: KubeObject) => (o.metadata!.finalizers = ["tenant.example/keep"])),
    fc.constant((o: KubeObject) => delete o.data),
  );
  fc.assert(fc.property(fc.array(change, { maxLength: 3 }), (changes) => {
    const raw = served(registry, "team-a", (o) => changes.forEach((c) => c(o)));
    const onArrival = read(structuredClone(raw), "team-a");
    const kept = decodeManaged(structuredClone(raw), undefined, true, true);
    const byUnit = assess(desired, hash, kept);
    remember(kept, byUnit.memo);
    assert.deepEqual(onArrival, kept);
  }));
});

Deno.test("arrivalJudge: an object no SyncConfig names there, or that two name, is left to the unit", () => {
  const { registry, read } = setup();
  const unselected = read(served(registry, "other"), "other");
  assert.ok(unselected.json !== undefined, "not selected there");
  registry.compile("espejo/b", sc("b", { k: "w" }));
  const contested = read(served(registry, "team-a"), "team-a");
  assert.ok(contested.json !== undefined, "two SyncConfigs name it: the unit reports the conflict");
});

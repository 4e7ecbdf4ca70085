/**
 * Objects judged as their cache reads them (lib/controller/arrival_judge.ts): after a restart their content is not kept
 * until a unit gets to them, and the verdict is the one a unit would reach.
 */
import assert from "node:assert/strict";
import type { ResourceInfo } from "../../lib/kube/discovery.ts";
import type { KubeObject } from "../../lib/kube/objects.ts";
import type { SyncConfig } from "../../lib/model/syncconfig.ts";
import { Registry } from "../../lib/model/registry.ts";
import { arrivalJudge } from "../../lib/controller/arrival_judge.ts";
import type { NamespaceInfo } from "../../lib/model/namespace_info.ts";
import { decodeManaged } from "../../lib/sync/cached_object.ts";
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
  return { registry, judge: arrivalJudge(registry, namespaces) };
}

Deno.test("arrivalJudge: an object in sync keeps its verdict, not its content, and is then packed", () => {
  const { registry, judge } = setup();
  const entry = decodeManaged(served(registry, "team-a"), undefined, true, true);
  assert.ok(entry.json !== undefined);
  judge(CM, entry, "team-a", "policy");
  assert.equal(entry.json, undefined);
  assert.equal(entry.inSync, true);
  assert.ok(packedObjects.pack(entry) !== undefined);
});

Deno.test("arrivalJudge: an object someone changed keeps an out-of-sync record (hashes), not its content", () => {
  const { registry, judge } = setup();
  const entry = decodeManaged(served(registry, "team-a", (o) => (o.data = { k: "tenant" })), undefined, true, true);
  judge(CM, entry, "team-a", "policy");
  assert.equal(entry.json, undefined);
  assert.equal(entry.inSync, undefined);
  assert.match(entry.outOfSync!.reason, /data.k differs/);
});

Deno.test("arrivalJudge: an object no SyncConfig names there, or that two name, is left to the unit", () => {
  const { registry, judge } = setup();
  const unselected = decodeManaged(served(registry, "other"), undefined, true, true);
  judge(CM, unselected, "other", "policy");
  assert.ok(unselected.json !== undefined, "not selected there");
  registry.compile("espejo/b", sc("b", { k: "w" }));
  const contested = decodeManaged(served(registry, "team-a"), undefined, true, true);
  judge(CM, contested, "team-a", "policy");
  assert.ok(contested.json !== undefined, "two SyncConfigs name it: the unit reports the conflict");
});

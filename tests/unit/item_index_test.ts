import assert from "node:assert/strict";
import { ItemIndex } from "../../lib/model/item_index.ts";
import { type CompiledSyncConfig, compileSyncConfig } from "../../lib/model/syncconfig.ts";

function compiled(name: string, syncItems: unknown[], deleteItems: unknown[] = []): CompiledSyncConfig {
  const r = compileSyncConfig({
    apiVersion: "sync.appuio.ch/v1alpha1",
    kind: "SyncConfig",
    metadata: { name, namespace: "espejo" },
    spec: { namespaceSelector: { matchNames: [".*"] }, syncItems, deleteItems },
  } as never);
  if (!r.ok) throw new Error(r.message);
  return r.config;
}

const cm = (name: string) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name } });
const np = (name: string) => ({ apiVersion: "networking.k8s.io/v1", kind: "NetworkPolicy", metadata: { name } });

Deno.test("ItemIndex names the SyncConfigs with an item for an object, templates rendered per namespace", () => {
  const index = new ItemIndex();
  index.rebuild([compiled("a", [cm("info"), np("deny")]), compiled("b", [cm("cfg-${PROJECT_NAME}")])]);
  assert.deepEqual(index.naming("", "ConfigMap", "team", "info"), ["espejo/a"]);
  assert.deepEqual(index.naming("", "ConfigMap", "team", "cfg-team"), ["espejo/b"]);
  assert.deepEqual(index.naming("", "ConfigMap", "other", "cfg-team"), []);
  assert.deepEqual(index.naming("networking.k8s.io", "NetworkPolicy", "x", "deny"), ["espejo/a"]);
  assert.deepEqual(index.naming("", "NetworkPolicy", "x", "deny"), [], "the group counts");
  assert.deepEqual(index.naming("", "ConfigMap", "team", "junk"), []);
});

Deno.test("ItemIndex tells which kinds items and deleteItems still name", () => {
  const index = new ItemIndex();
  index.rebuild([compiled("a", [cm("info")], [{ apiVersion: "v1", kind: "Secret", name: "old" }])]);
  assert.ok(index.hasSyncKind("", "ConfigMap"));
  assert.ok(!index.hasSyncKind("", "Secret"));
  assert.ok(index.hasDeleteKind("", "Secret"));
  index.rebuild([]);
  assert.ok(!index.hasSyncKind("", "ConfigMap"));
  assert.ok(!index.hasDeleteKind("", "Secret"));
});

Deno.test("ItemIndex skips items with a problem", () => {
  const index = new ItemIndex();
  index.rebuild([compiled("a", [{ apiVersion: "v1", kind: "ConfigMap", metadata: {} }])]);
  assert.ok(!index.hasSyncKind("", "ConfigMap"));
});

/** The compiled SyncConfigs and what is derived from them (lib/registry.ts). */
import assert from "node:assert/strict";
import type { ResourceInfo } from "../../lib/kube/discovery.ts";
import type { SyncConfig } from "../../lib/model/syncconfig.ts";
import { Registry } from "../../lib/model/registry.ts";

const CM = { group: "", version: "v1", resource: "configmaps", kind: "ConfigMap", namespaced: true } as ResourceInfo;
const ns = (name: string, labels: Record<string, string> = {}) => ({ name, labels, phase: "Active" });

function sc(name: string, generation: number, spec: Record<string, unknown>, uid = `uid-${name}`): SyncConfig {
  return { metadata: { namespace: "espejo", name, generation, uid }, spec } as SyncConfig;
}

const spec = {
  namespaceSelector: { matchNames: ["team-.*"] },
  syncItems: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "policy-${PROJECT_NAME}" } }],
  deleteItems: [{ apiVersion: "v1", kind: "ConfigMap", name: "legacy-${PROJECT_NAME}" }],
};

Deno.test("Registry compiles a SyncConfig once per generation and uid", () => {
  const r = new Registry<ReturnType<typeof ns>>();
  assert.equal(r.compile("espejo/a", sc("a", 1, spec)).changed, true);
  assert.equal(r.compile("espejo/a", sc("a", 1, spec)).changed, false);
  assert.equal(r.isCurrent("espejo/a", sc("a", 1, spec)), true);
  assert.equal(r.isCurrent("espejo/a", sc("a", 2, spec)), false, "a new generation");
  assert.equal(r.isCurrent("espejo/a", sc("a", 1, spec, "other")), false, "deleted and created again");
  assert.equal(r.isCurrent("espejo/a", undefined), false, "gone");
  assert.equal(r.compile("espejo/a", sc("a", 2, spec)).changed, true);
  assert.equal(r.delete("espejo/a"), true);
  assert.equal(r.delete("espejo/a"), false);
  assert.equal(r.size, 0);
});

Deno.test("Registry: selection, item owners and deleteItems follow a recompile", () => {
  const r = new Registry<ReturnType<typeof ns>>();
  r.compile("espejo/a", sc("a", 1, spec));
  assert.deepEqual(r.selecting(ns("team-x")), ["espejo/a"]);
  assert.deepEqual(r.selecting(ns("other")), []);
  assert.deepEqual(r.itemOwners(CM, ns("team-x"), "policy-team-x"), ["espejo/a"]);
  assert.deepEqual(r.itemOwners(CM, ns("team-x"), "policy-team-y"), []);
  assert.deepEqual(r.itemOwners(CM, ns("other"), "policy-other"), [], "not selected: no owner");
  assert.deepEqual(r.itemOwners(CM, undefined, "policy-team-x"), [], "an unknown namespace");
  assert.equal(r.namedByDeleteItem("team-x", "legacy-team-x"), true);
  assert.equal(r.namedByDeleteItem("team-x", "legacy-team-y"), false);
  r.compile("espejo/a", sc("a", 2, { ...spec, namespaceSelector: { matchNames: ["other"] } }));
  assert.deepEqual(r.selecting(ns("team-x")), [], "the selection index was invalidated");
  assert.deepEqual(r.itemOwners(CM, ns("other"), "policy-other"), ["espejo/a"]);
});

Deno.test("Registry: an invalid SyncConfig is kept but selects nothing", () => {
  const r = new Registry<ReturnType<typeof ns>>();
  const { entry } = r.compile("espejo/bad", sc("bad", 1, { namespaceSelector: {}, syncItems: spec.syncItems }));
  assert.equal(entry.result.ok, false);
  assert.equal(r.size, 1);
  assert.deepEqual(r.selecting(ns("team-x")), []);
  assert.deepEqual([...r.valid()], []);
});

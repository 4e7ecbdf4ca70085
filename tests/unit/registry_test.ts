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

/** A SyncConfig of namespace `namespace` with the ServiceAccount annotation `serviceAccount` (none: undefined). */
function teamSc(namespace: string, name: string, serviceAccount?: string, generation = 1): SyncConfig {
  const annotations = serviceAccount === undefined ? undefined : { "sync.appuio.ch/service-account": serviceAccount };
  return { metadata: { namespace, name, generation, uid: `uid-${name}`, annotations }, spec } as SyncConfig;
}

Deno.test("Registry compiles again when the ServiceAccount annotation changes, though the generation does not", () => {
  const r = new Registry<ReturnType<typeof ns>>();
  r.compile("team/a", teamSc("team", "a"));
  assert.equal(r.isCurrent("team/a", teamSc("team", "a", "writer")), false);
  const { entry, changed } = r.compile("team/a", teamSc("team", "a", "writer"));
  assert.equal(changed, true);
  assert.equal(entry.result.ok && entry.result.config.writeAs?.username, "system:serviceaccount:team:writer");
  assert.equal(r.compile("team/a", teamSc("team", "a", "writer")).changed, false);
  assert.equal(r.compile("team/a", teamSc("team", "a")).changed, true, "the annotation removed");
});

Deno.test("Registry in delegated mode: a SyncConfig outside the trusted namespaces needs a ServiceAccount", () => {
  const r = new Registry<ReturnType<typeof ns>>(undefined, { trustedNamespaces: ["espejo"] });
  assert.equal(r.compile("espejo/a", teamSc("espejo", "a")).entry.result.ok, true);
  const { entry } = r.compile("team/b", teamSc("team", "b"));
  assert.equal(entry.result.ok, false);
  assert.match(
    !entry.result.ok ? entry.result.message : "",
    /^SyncConfig team\/b: names no ServiceAccount to write as, and its namespace team is not trusted \(--trusted-namespaces espejo\): annotate it with sync\.appuio\.ch\/service-account: <name>/,
  );
  assert.deepEqual(r.selecting(ns("team-x")), ["espejo/a"], "the Invalid one selects nothing");
  assert.equal(r.compile("team/b", teamSc("team", "b", "writer")).entry.result.ok, true);
});

Deno.test("Registry.holds: a SyncConfig of an untrusted namespace yields to one of a trusted namespace", () => {
  const r = new Registry<ReturnType<typeof ns>>(undefined, { trustedNamespaces: ["espejo"] });
  r.compile("espejo/platform", teamSc("espejo", "platform"));
  r.compile("espejo/other", teamSc("espejo", "other"));
  // Trust is the namespace's: the platform's SyncConfig that writes as a ServiceAccount is still the platform's.
  r.compile("espejo/as-sa", teamSc("espejo", "as-sa", "platform-writer"));
  r.compile("team/a", teamSc("team", "a", "writer"));
  r.compile("team/b", teamSc("team", "b", "writer"));
  const owners = ["espejo/platform", "espejo/other", "espejo/as-sa", "team/a", "team/b"];
  // [owner, claimant, holds]
  const table: [string, string, boolean][] = [
    ["espejo/platform", "espejo/other", true],
    ["espejo/platform", "team/a", true],
    ["espejo/as-sa", "team/a", true],
    ["espejo/as-sa", "espejo/platform", true],
    ["team/a", "espejo/platform", false],
    ["team/a", "espejo/as-sa", false],
    ["team/a", "team/b", true],
  ];
  for (const [owner, claimant, holds] of table) {
    assert.equal(r.holds(owner, claimant, owners), holds, `${owner} against ${claimant}`);
  }
  assert.equal(r.holds("espejo/platform", "team/a", ["team/a"]), false, "no item for the object: holds nothing");
});

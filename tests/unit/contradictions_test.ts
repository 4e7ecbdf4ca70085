/** Which items contradict each other in one namespace (lib/model/contradictions.ts): a table of SyncConfig pairs. */
import assert from "node:assert/strict";
import { contradictions } from "../../lib/model/contradictions.ts";
import { type CompiledSyncConfig, compileSyncConfig } from "../../lib/model/syncconfig.ts";

type Spec = { syncItems?: unknown[]; deleteItems?: unknown[] };

function config(name: string, spec: Spec): CompiledSyncConfig {
  const r = compileSyncConfig({
    metadata: { namespace: "espejo", name, generation: 1, uid: name },
    spec: { namespaceSelector: { matchNames: [".*"] }, ...spec } as never,
  });
  if (!r.ok) throw new Error(r.message);
  return r.config;
}

const cm = (name: string) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name }, data: {} });
const policy = (apiVersion: string, name: string) => ({ apiVersion, kind: "NetworkPolicy", metadata: { name } });
const del = (apiVersion: string, kind: string, name: string) => ({ apiVersion, kind, name });

/** The contested items as `cfg field: problem`, sorted. */
function contested(configs: CompiledSyncConfig[], namespace = "team-a"): string[] {
  const out: string[] = [];
  for (const [cfgKey, items] of contradictions(configs, namespace)) {
    for (const [field, { problem }] of items) out.push(`${cfgKey} ${field}: ${problem}`);
  }
  return out.sort();
}

const NEITHER = "neither is done while both name it";

const cases: { name: string; configs: CompiledSyncConfig[]; want: string[] }[] = [
  {
    name: "one deletes what another syncs: both items, each naming the other",
    configs: [
      config("deny", { deleteItems: [del("v1", "ConfigMap", "other"), del("v1", "ConfigMap", "shared")] }),
      config("sync", { syncItems: [cm("mine"), cm("shared")] }),
    ],
    want: [
      `espejo/deny .spec.deleteItems[1]: contradicts .spec.syncItems[1] of SyncConfig espejo/sync, which syncs the ` +
      `same object: ${NEITHER}`,
      `espejo/sync .spec.syncItems[1]: contradicts .spec.deleteItems[1] of SyncConfig espejo/deny, which deletes the ` +
      `same object: ${NEITHER}`,
    ],
  },
  {
    name: "names are compared as rendered in the namespace",
    configs: [
      config("deny", { deleteItems: [del("v1", "ConfigMap", "cm-team-a")] }),
      config("sync", { syncItems: [cm("cm-${PROJECT_NAME}")] }),
    ],
    want: [
      `espejo/deny .spec.deleteItems[0]: contradicts .spec.syncItems[0] of SyncConfig espejo/sync, which syncs the ` +
      `same object: ${NEITHER}`,
      `espejo/sync .spec.syncItems[0]: contradicts .spec.deleteItems[0] of SyncConfig espejo/deny, which deletes the ` +
      `same object: ${NEITHER}`,
    ],
  },
  {
    name: "a rendered name that differs in another namespace contests nothing there",
    configs: [
      config("deny", { deleteItems: [del("v1", "ConfigMap", "cm-team-b")] }),
      config("sync", { syncItems: [cm("cm-${PROJECT_NAME}")] }),
    ],
    want: [],
  },
  {
    name: "one API group is one object, whatever the version",
    configs: [
      config("deny", { deleteItems: [del("networking.k8s.io/v1beta1", "NetworkPolicy", "allow")] }),
      config("sync", { syncItems: [policy("networking.k8s.io/v1", "allow")] }),
    ],
    want: [
      `espejo/deny .spec.deleteItems[0]: contradicts .spec.syncItems[0] of SyncConfig espejo/sync, which syncs the ` +
      `same object: ${NEITHER}`,
      `espejo/sync .spec.syncItems[0]: contradicts .spec.deleteItems[0] of SyncConfig espejo/deny, which deletes the ` +
      `same object: ${NEITHER}`,
    ],
  },
  {
    name: "another kind or another group under the same name is another object",
    configs: [
      config("deny", { deleteItems: [del("v1", "Secret", "shared"), del("example.com/v1", "ConfigMap", "shared")] }),
      config("sync", { syncItems: [cm("shared")] }),
    ],
    want: [],
  },
  {
    name: "two SyncConfigs deleting one object agree",
    configs: [
      config("a", { deleteItems: [del("v1", "ConfigMap", "old")] }),
      config("b", { deleteItems: [del("v1", "ConfigMap", "old")] }),
    ],
    want: [],
  },
  {
    name: "one SyncConfig that deletes what it syncs contradicts itself",
    configs: [config("self", { syncItems: [cm("x")], deleteItems: [del("v1", "ConfigMap", "x")] })],
    want: [
      `espejo/self .spec.deleteItems[0]: contradicts .spec.syncItems[0] of this SyncConfig, which syncs the same ` +
      `object: ${NEITHER}`,
      `espejo/self .spec.syncItems[0]: contradicts .spec.deleteItems[0] of this SyncConfig, which deletes the same ` +
      `object: ${NEITHER}`,
    ],
  },
  {
    name: "one deleteItem against two syncing SyncConfigs names both",
    configs: [
      config("deny", { deleteItems: [del("v1", "ConfigMap", "shared")] }),
      config("b", { syncItems: [cm("shared")] }),
      config("c", { syncItems: [cm("shared")] }),
    ],
    want: [
      `espejo/b .spec.syncItems[0]: contradicts .spec.deleteItems[0] of SyncConfig espejo/deny, which deletes the ` +
      `same object: ${NEITHER}`,
      `espejo/c .spec.syncItems[0]: contradicts .spec.deleteItems[0] of SyncConfig espejo/deny, which deletes the ` +
      `same object: ${NEITHER}`,
      `espejo/deny .spec.deleteItems[0]: contradicts .spec.syncItems[0] of SyncConfig espejo/b and ` +
      `.spec.syncItems[0] of SyncConfig espejo/c, which sync the same object: ${NEITHER}`,
    ],
  },
  {
    name: "an item with a problem (here: shadowed by a later one) contests nothing; the later one does",
    configs: [
      config("deny", { deleteItems: [del("v1", "ConfigMap", "shared")] }),
      config("sync", { syncItems: [cm("shared"), cm("shared")] }),
    ],
    want: [
      `espejo/deny .spec.deleteItems[0]: contradicts .spec.syncItems[1] of SyncConfig espejo/sync, which syncs the ` +
      `same object: ${NEITHER}`,
      `espejo/sync .spec.syncItems[1]: contradicts .spec.deleteItems[0] of SyncConfig espejo/deny, which deletes the ` +
      `same object: ${NEITHER}`,
    ],
  },
  {
    name: "a deleteItem with a problem (no apiVersion) contests nothing",
    configs: [
      config("deny", { deleteItems: [{ kind: "ConfigMap", name: "shared" }] }),
      config("sync", { syncItems: [cm("shared")] }),
    ],
    want: [],
  },
];

for (const c of cases) {
  Deno.test(`contradictions: ${c.name}`, () => {
    assert.deepEqual(contested(c.configs), c.want);
  });
}

Deno.test("contradictions: the order of the SyncConfigs does not change the decision", () => {
  const configs = cases[cases.length - 3].configs;
  assert.deepEqual(contested([...configs].reverse()), contested(configs));
});

Deno.test("contradictions: a contested item carries the object it names, rendered in the namespace", () => {
  const found = contradictions([
    config("deny", { deleteItems: [del("v1", "ConfigMap", "cm-team-a")] }),
    config("sync", { syncItems: [cm("cm-${PROJECT_NAME}")] }),
  ], "team-a");
  const { kind, name } = found.get("espejo/sync")!.get(".spec.syncItems[0]")!;
  assert.deepEqual({ kind, name }, { kind: "ConfigMap", name: "cm-team-a" });
});

/** A team's SyncConfig in namespace `team`, writing as its ServiceAccount `writer`. */
function teamConfig(name: string, spec: Spec): CompiledSyncConfig {
  const r = compileSyncConfig({
    metadata: {
      namespace: "team",
      name,
      generation: 1,
      uid: name,
      annotations: { "sync.appuio.ch/service-account": "writer" },
    },
    spec: { namespaceSelector: { matchNames: [".*"] }, ...spec } as never,
  });
  if (!r.ok) throw new Error(r.message);
  return r.config;
}

const YIELDS = "this SyncConfig writes as a ServiceAccount and yields to one that writes as espejo";

const rankCases: { name: string; configs: CompiledSyncConfig[]; want: string[] }[] = [
  {
    name: "a team's deleteItem does not switch off the platform's syncItem: only the team's item fails",
    configs: [
      config("platform", { syncItems: [policy("networking.k8s.io/v1", "deny-all")] }),
      teamConfig("mine", { deleteItems: [del("networking.k8s.io/v1", "NetworkPolicy", "deny-all")] }),
    ],
    want: [
      "team/mine .spec.deleteItems[0]: contradicts .spec.syncItems[0] of SyncConfig espejo/platform, which syncs " +
      `the same object: ${YIELDS}`,
    ],
  },
  {
    name: "a team's syncItem does not switch off the platform's deleteItem",
    configs: [
      config("platform", { deleteItems: [del("v1", "ConfigMap", "legacy")] }),
      teamConfig("mine", { syncItems: [cm("legacy")] }),
    ],
    want: [
      "team/mine .spec.syncItems[0]: contradicts .spec.deleteItems[0] of SyncConfig espejo/platform, which deletes " +
      `the same object: ${YIELDS}`,
    ],
  },
  {
    name: "two teams contradicting each other: neither, as between two platform SyncConfigs",
    configs: [
      teamConfig("a", { deleteItems: [del("v1", "ConfigMap", "x")] }),
      teamConfig("b", { syncItems: [cm("x")] }),
    ],
    want: [
      `team/a .spec.deleteItems[0]: contradicts .spec.syncItems[0] of SyncConfig team/b, which syncs the same object: ${NEITHER}`,
      `team/b .spec.syncItems[0]: contradicts .spec.deleteItems[0] of SyncConfig team/a, which deletes the same object: ${NEITHER}`,
    ],
  },
  {
    name: "two platform SyncConfigs contradicting each other and a team's: both platform items fail, and the team's",
    configs: [
      config("p1", { deleteItems: [del("v1", "ConfigMap", "x")] }),
      config("p2", { syncItems: [cm("x")] }),
      teamConfig("t", { deleteItems: [del("v1", "ConfigMap", "x")] }),
    ],
    want: [
      `espejo/p1 .spec.deleteItems[0]: contradicts .spec.syncItems[0] of SyncConfig espejo/p2, which syncs the same object: ${NEITHER}`,
      `espejo/p2 .spec.syncItems[0]: contradicts .spec.deleteItems[0] of SyncConfig espejo/p1, which deletes the same object: ${NEITHER}`,
      `team/t .spec.deleteItems[0]: contradicts .spec.syncItems[0] of SyncConfig espejo/p2, which syncs the same object: ${YIELDS}`,
    ],
  },
];

for (const { name, configs, want } of rankCases) {
  Deno.test(`contradictions between a team's and the platform's SyncConfigs: ${name}`, () => {
    assert.deepEqual(contested(configs), want.sort());
  });
}

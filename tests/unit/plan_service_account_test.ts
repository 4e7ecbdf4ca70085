/**
 * What `espejo plan --check-rights` asks of a SyncConfig's ServiceAccount (lib/plan/service_account_rights.ts) and of
 * espejo itself for it (lib/plan/rights.ts), and how a missing right is said (lib/plan/render_rights.ts): pure, on a
 * snapshot built here.
 */
import assert from "node:assert/strict";
import type { ResourceInfo } from "../../lib/kube/discovery.ts";
import type { SyncConfig } from "../../lib/model/syncconfig.ts";
import { planSnapshot } from "../../lib/plan/plan.ts";
import { cannot, rightsText } from "../../lib/plan/render_rights.ts";
import { neededRights } from "../../lib/plan/rights.ts";
import { serviceAccountRights } from "../../lib/plan/service_account_rights.ts";
import type { Snapshot } from "../../lib/plan/snapshot.ts";

const resource = (group: string, resource: string, kind: string): ResourceInfo => ({
  resource,
  namespaced: true,
  group,
  version: "v1",
  kind,
  verbs: [],
});
const CONFIG_MAPS = resource("", "configmaps", "ConfigMap");
const ROLE_BINDINGS = resource("rbac.authorization.k8s.io", "rolebindings", "RoleBinding");
const TARGETS = ["t-1", "t-2"];

function syncConfig(name: string, spec: Record<string, unknown>, serviceAccount?: string): SyncConfig {
  const annotations = serviceAccount ? { "sync.appuio.ch/service-account": serviceAccount } : undefined;
  return {
    apiVersion: "sync.appuio.ch/v1alpha1",
    kind: "SyncConfig",
    metadata: { name, namespace: "team", generation: 1, uid: `uid-${name}`, annotations },
    spec: { namespaceSelector: { matchNames: TARGETS }, ...spec },
  } as SyncConfig;
}
const cm = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "settings" }, data: { a: "1" } };
const binding = { apiVersion: "rbac.authorization.k8s.io/v1", kind: "RoleBinding", metadata: { name: "old" } };

function snapshot(configs: SyncConfig[]): Snapshot {
  return {
    namespaces: TARGETS.map((name) => ({ name, labels: {}, phase: "Active" })),
    syncConfigs: configs.map((syncConfig) => ({ syncConfig, source: "cluster", fromFile: false })),
    resources: new Map([["v1|ConfigMap", CONFIG_MAPS], ["rbac.authorization.k8s.io/v1|RoleBinding", ROLE_BINDINGS]]),
    objects: new Map(),
  };
}

async function needs(configs: SyncConfig[], trusted?: string[]) {
  const snap = snapshot(configs);
  const result = await planSnapshot(snap, false, { files: false, all: true }, { trustedNamespaces: trusted });
  return { snap, result, needs: serviceAccountRights(snap, result.configs) };
}

const words = (rights: { namespace?: string; resource: string; verb: string }[]) =>
  rights.map((r) => `${r.namespace} ${r.resource} ${r.verb}`);

Deno.test("serviceAccountRights: in each selected namespace, a syncItem's kind to get, create and update, a deleteItem's to delete", async () => {
  const sc = syncConfig("a", { syncItems: [cm], deleteItems: [binding] }, "writer");
  const [need, ...others] = (await needs([sc])).needs;
  assert.deepEqual(others, []);
  assert.equal(need.serviceAccount, "team/writer");
  assert.equal(need.username, "system:serviceaccount:team:writer");
  assert.deepEqual(need.syncConfigs, ["team/a"]);
  assert.deepEqual(
    words(need.rights),
    TARGETS.flatMap((ns) => [
      `${ns} configmaps get`,
      `${ns} configmaps create`,
      `${ns} configmaps update`,
      `${ns} rolebindings delete`,
    ]),
  );
});

Deno.test("serviceAccountRights: forceRecreate or pruning adds delete for a syncItem's kind", async (t) => {
  for (
    const [what, spec, annotations] of [
      ["forceRecreate", { syncItems: [cm], forceRecreate: true }, {}],
      ["pruning", { syncItems: [cm] }, { "sync.appuio.ch/prune": "true" }],
    ] as const
  ) {
    await t.step(what, async () => {
      const sc = syncConfig("a", spec, "writer");
      sc.metadata!.annotations = { ...sc.metadata!.annotations, ...annotations };
      const [need] = (await needs([sc])).needs;
      assert.deepEqual(
        words(need.rights.filter((r) => r.verb === "delete")),
        TARGETS.map((ns) => `${ns} configmaps delete`),
      );
    });
  }
});

Deno.test("serviceAccountRights: two SyncConfigs of one ServiceAccount are one review, each right once; espejo's own and Invalid ones none", async () => {
  const configs = [
    syncConfig("b", { syncItems: [cm] }, "writer"),
    syncConfig("a", { syncItems: [cm] }, "writer"),
    syncConfig("mine", { syncItems: [cm] }), // Invalid in delegated mode: the namespace team is not trusted
  ];
  const { needs: found, result } = await needs(configs, ["espejo-system"]);
  assert.match(result.configs.find((c) => c.syncConfig === "team/mine")?.invalid ?? "", /names no ServiceAccount/);
  assert.equal(found.length, 1);
  assert.deepEqual(found[0].syncConfigs, ["team/a", "team/b"]);
  // get, create and update of ConfigMaps, and (the namespace team is not trusted) get of each namespace itself.
  assert.equal(found[0].rights.length, TARGETS.length * 4);
  assert.deepEqual(
    words(found[0].rights.filter((r) => r.resource === "namespaces")),
    TARGETS.map((ns) => `${ns} namespaces get`),
  );
  const { needs: trusted } = await needs([syncConfig("mine", { syncItems: [cm] })], ["team"]);
  assert.deepEqual(trusted, [], "a trusted SyncConfig writes as espejo: no ServiceAccount to review");
});

Deno.test("neededRights: for a SyncConfig that writes as a ServiceAccount, espejo reads the kinds and impersonates it by name, and writes nothing itself", async () => {
  const { snap, result } = await needs([syncConfig("a", { syncItems: [cm], deleteItems: [binding] }, "writer")]);
  const rights = neededRights(snap, result.configs);
  const forItems = rights.filter((r) => r.resource === "configmaps" || r.resource === "rolebindings");
  assert.deepEqual(forItems.map((r) => `${r.resource} ${r.verb}`).sort(), [
    "configmaps list",
    "configmaps watch",
    "rolebindings list",
    "rolebindings watch",
  ]);
  const impersonations = rights.filter((r) => r.verb === "impersonate");
  assert.deepEqual(impersonations, [
    { group: "", resource: "serviceaccounts", verb: "impersonate", namespace: "team", name: "writer" },
    { group: "authentication.k8s.io", resource: "userextras/sync.appuio.ch/syncconfig", verb: "impersonate" },
  ]);
});

Deno.test("cannot: a missing right in the API server's words, subject first", () => {
  const table: [string, Parameters<typeof cannot>[1], string][] = [
    [
      "system:serviceaccount:team:writer",
      { group: "", resource: "configmaps", verb: "create", namespace: "t-1" },
      "ServiceAccount team/writer cannot create configmaps in namespace t-1",
    ],
    [
      "system:serviceaccount:team:writer",
      { group: "rbac.authorization.k8s.io", resource: "rolebindings", verb: "delete", namespace: "t-2" },
      "ServiceAccount team/writer cannot delete rolebindings.rbac.authorization.k8s.io in namespace t-2",
    ],
    [
      "system:serviceaccount:espejo-system:espejo",
      { group: "", resource: "serviceaccounts", verb: "impersonate", namespace: "team", name: "writer" },
      "ServiceAccount espejo-system/espejo cannot impersonate serviceaccounts/writer in namespace team",
    ],
    [
      "jane",
      { group: "authentication.k8s.io", resource: "userextras/sync.appuio.ch/syncconfig", verb: "impersonate" },
      'User "jane" cannot impersonate userextras/sync.appuio.ch/syncconfig in API group authentication.k8s.io',
    ],
  ];
  for (const [user, right, said] of table) assert.equal(cannot(user, right), said);
});

Deno.test("rightsText: a ServiceAccount's missing rights, at most 20 lines, the rest in JSON; how its team grants them", () => {
  const missing = Array.from({ length: 23 }, (_, i) => ({
    group: "",
    resource: "configmaps",
    verb: "create",
    namespace: `t-${i}`,
  }));
  const lines = rightsText({ identity: "system:serviceaccount:espejo-system:espejo", missing: [] }, [
    {
      serviceAccount: "team/writer",
      username: "system:serviceaccount:team:writer",
      syncConfigs: ["team/a", "team/b"],
      missing,
      unreviewed: 4,
    },
  ]);
  assert.deepEqual(lines.slice(0, 3), [
    "Rights checked for system:serviceaccount:espejo-system:espejo:",
    "  it has every right this plan needs.",
    "Rights checked for ServiceAccount team/writer, which SyncConfigs team/a, team/b write as:",
  ]);
  assert.equal(lines.filter((l) => l.includes(" cannot create configmaps")).length, 20);
  assert.ok(lines.includes("  ... and 3 more (--output json lists them all)"));
  assert.match(lines.join("\n"), /4 of its rights not reviewed: a plan asks at most 2000 namespaced reviews/);
  assert.match(lines.at(-1)!, /kubectl create rolebinding \.\.\. --serviceaccount team:writer; docs\/delegation\.md/);
});

/**
 * What `espejo plan` plans (lib/plan/selection.ts): with -f only the files' SyncConfigs, as `kubectl diff -f`, the
 * others read as context that still decides contradictions and prunes; --all, or no -f, plans every one.
 */
import assert from "node:assert/strict";
import { type ResourceInfo, resourceKey } from "../../lib/kube/discovery.ts";
import type { KubeObject } from "../../lib/kube/objects.ts";
import { CREATED_ANNOTATION } from "../../lib/model/markers.ts";
import { compileSyncConfig, type SyncConfig } from "../../lib/model/syncconfig.ts";
import { planSnapshot } from "../../lib/plan/plan.ts";
import { exitCodeOf, renderText } from "../../lib/plan/render.ts";
import { type PlanScope, selectPlanned } from "../../lib/plan/selection.ts";
import type { Snapshot, SnapshotConfig } from "../../lib/plan/snapshot.ts";
import { desiredObjectNow } from "../../lib/sync/desired.ts";

const NS = "team-a";
const CONFIG_MAPS: ResourceInfo = {
  resource: "configmaps",
  namespaced: true,
  group: "",
  version: "v1",
  kind: "ConfigMap",
  verbs: [],
};
const cm = (name: string, v = name) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name }, data: { v } });

function syncConfig(name: string, spec: Record<string, unknown>, annotations?: Record<string, string>): SyncConfig {
  return {
    apiVersion: "sync.appuio.ch/v1alpha1",
    kind: "SyncConfig",
    metadata: { name, namespace: "espejo", generation: 1, uid: `uid-${name}`, annotations },
    spec: { namespaceSelector: { matchNames: [NS] }, ...spec },
  } as SyncConfig;
}
const fromCluster = (sc: SyncConfig): SnapshotConfig => ({ syncConfig: sc, source: "cluster", fromFile: false });
const fromFile = (sc: SyncConfig): SnapshotConfig => ({ syncConfig: sc, source: "f.yaml (new)", fromFile: true });

/** The object item `index` of `sc` wants in team-a, as espejo created it (in sync), or with `data` changed since. */
function created(sc: SyncConfig, index = 0, data?: Record<string, string>): KubeObject {
  const compiled = compileSyncConfig(sc);
  if (!compiled.ok) throw new Error(compiled.message);
  const { object } = desiredObjectNow(compiled.config, compiled.config.syncItems[index], NS);
  const key = compiled.config.key;
  const metadata = { ...object.metadata, uid: `uid-${key}-${index}` };
  metadata.annotations = { ...metadata.annotations, [CREATED_ANNOTATION]: key };
  return { ...object, metadata, ...(data ? { data } : {}) };
}

function snapshot(configs: SnapshotConfig[], objects: KubeObject[]): Snapshot {
  return {
    namespaces: [{ name: NS, labels: {}, phase: "Active" }],
    syncConfigs: configs,
    resources: new Map([["v1|ConfigMap", CONFIG_MAPS]]),
    objects: new Map([[resourceKey(CONFIG_MAPS), new Map(objects.map((o) => [`${NS}/${o.metadata?.name}`, o]))]]),
  };
}

const names = (entries: SnapshotConfig[]) => entries.map((e) => e.syncConfig.metadata?.name);

Deno.test("selectPlanned plans the files' SyncConfigs with -f, every one with --all or without -f", async (t) => {
  const read = [fromCluster(syncConfig("a", {})), fromFile(syncConfig("b", {})), fromCluster(syncConfig("c", {}))];
  const cases: [string, PlanScope, SnapshotConfig[], string[], string[]][] = [
    ["no -f: every SyncConfig read", { files: false, all: false }, read, ["a", "b", "c"], []],
    ["-f: the files' only, the others as context", { files: true, all: false }, read, ["b"], ["a", "c"]],
    ["-f --all: every one", { files: true, all: true }, read, ["a", "b", "c"], []],
    ["--all without -f: every one", { files: false, all: true }, read, ["a", "b", "c"], []],
    [
      "-f whose files hold no SyncConfig: nothing",
      { files: true, all: false },
      read.filter((e) => !e.fromFile),
      [],
      ["a", "c"],
    ],
  ];
  for (const [name, scope, given, planned, context] of cases) {
    await t.step(name, () => {
      const s = selectPlanned(given, scope);
      assert.deepEqual({ planned: names(s.planned), context: names(s.context) }, { planned, context });
    });
  }
});

/** The cluster: `drifted` (its object changed by hand), `broken` (Invalid); the file: `mine`, in sync. */
const drifted = syncConfig("drifted", { syncItems: [cm("d")] });
const others = [
  fromCluster(syncConfig("broken", { namespaceSelector: { matchNames: ["("] }, syncItems: [cm("b")] })),
  fromCluster(drifted),
];
const mine = fromFile(syncConfig("mine", { syncItems: [cm("m")] }));
const objects = [created(drifted, 0, { v: "changed by hand" }), created(mine.syncConfig)];

Deno.test("planSnapshot with -f: drift and an Invalid SyncConfig elsewhere are context, not shown, not in the exit code", async () => {
  const result = await planSnapshot(snapshot([...others, mine], objects), false, { files: true, all: false });
  assert.deepEqual(result.configs.map((c) => c.syncConfig), ["espejo/mine"]);
  assert.deepEqual(result.configs[0].entries, []);
  assert.deepEqual(result.context, ["espejo/broken", "espejo/drifted"]);
  const report = { ...result, syncConfigsFrom: "namespace espejo", comparison: { mode: "none" as const, why: "" } };
  assert.equal(exitCodeOf(report), 0);
  assert.match(renderText(report), /^Planned: the SyncConfigs of -f; 2 others are read as context only \(--all/m);
  assert.doesNotMatch(renderText(report), /drifted|broken/);
});

Deno.test("planSnapshot with -f --all shows and counts the SyncConfigs elsewhere too", async () => {
  const result = await planSnapshot(snapshot([...others, mine], objects), false, { files: true, all: true });
  assert.deepEqual(result.configs.map((c) => c.syncConfig), ["espejo/broken", "espejo/drifted", "espejo/mine"]);
  assert.match(result.configs[0].invalid ?? "", /matchNames/);
  assert.deepEqual(result.configs[1].entries.map((e) => `${e.action} ${e.name}`), ["update d"]);
  assert.deepEqual(result.context, []);
  const report = { ...result, syncConfigsFrom: "namespace espejo", comparison: { mode: "none" as const, why: "" } };
  assert.equal(exitCodeOf(report), 1);
  assert.doesNotMatch(renderText(report), /^Planned:/m);
});

Deno.test("planSnapshot with -f reports a file's item that contradicts a context SyncConfig's, or takes its object", async () => {
  const planOf = async (spec: Record<string, unknown>) => {
    const file = fromFile(syncConfig("mine", spec));
    const result = await planSnapshot(snapshot([...others, file], objects), false, { files: true, all: false });
    assert.deepEqual(result.configs.map((c) => c.syncConfig), ["espejo/mine"]);
    return result.configs[0].entries.map((e) => `${e.action} ${e.reason}`);
  };
  const deletes = await planOf({ deleteItems: [{ apiVersion: "v1", kind: "ConfigMap", name: "d" }] });
  assert.equal(deletes.length, 1, deletes.join("\n"));
  assert.match(
    deletes[0],
    /^fail .*deleteItems\[0\].*contradicts \.spec\.syncItems\[0\] of SyncConfig espejo\/drifted/,
  );
  const syncs = await planOf({ syncItems: [cm("d", "mine")] });
  assert.equal(syncs.length, 1, syncs.join("\n"));
  assert.match(syncs[0], /^fail .*syncItems\[0\].*already managed by SyncConfig espejo\/drifted/);
});

Deno.test("planSnapshot with -f leaves to a context SyncConfig what it names, when the file's stops naming it", async () => {
  const pruning = { "sync.appuio.ch/prune": "true" };
  const shared = fromCluster(syncConfig("shared", { syncItems: [cm("s")] }));
  // `mine` created `m`, `s` and `gone`; its edit keeps `m`, and `shared` names `s`.
  const before = syncConfig("mine", { syncItems: [cm("m"), cm("s"), cm("gone")] }, pruning);
  const edit = fromFile(syncConfig("mine", { syncItems: [cm("m")] }, pruning));
  const made = [0, 1, 2].map((i) => created(before, i));
  const result = await planSnapshot(snapshot([shared, edit], made), false, { files: true, all: false });
  assert.deepEqual(result.configs.map((c) => c.syncConfig), ["espejo/mine"]);
  assert.deepEqual(result.configs[0].entries.map((e) => `${e.action} ${e.name}`), ["prune gone"]);
});

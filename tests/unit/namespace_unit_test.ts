/**
 * The unit of work (lib/controller/namespace_unit.ts) with recording fakes: it returns what it came to (each
 * SyncConfig's counts, what it wrote, whether and when to come back) and decides contradicting items once.
 */
import assert from "node:assert/strict";
import { NamespaceUnit } from "../../lib/controller/namespace_unit.ts";
import { Registry } from "../../lib/model/registry.ts";
import type { NamespaceInfo } from "../../lib/model/namespace_info.ts";
import type { SyncConfig } from "../../lib/model/syncconfig.ts";
import type { ItemResult } from "../../lib/sync/failures.ts";
import type { Step } from "../../lib/sync/step.ts";
import { DelegatedView } from "../../lib/sync/delegated_view.ts";
import { ReviewsPaced } from "../../lib/sync/rights.ts";

const NS: NamespaceInfo = { name: "team-a", labels: { team: "a" }, phase: "Active" };

function syncConfig(name: string, spec: Record<string, unknown>, generation = 1): SyncConfig {
  return { metadata: { namespace: "espejo", name, generation, uid: name }, spec } as SyncConfig;
}

const cm = (name: string) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name }, data: {} });
const selectsTeamA = { labelSelector: { matchLabels: { team: "a" } } };

function unit(
  configs: SyncConfig[],
  answer: (item: string) => ItemResult,
  /** What the prune step comes to; an Error: it throws. */
  pruned: Step | Error = { wrote: false, retry: false },
) {
  const registry = new Registry<NamespaceInfo>();
  for (const sc of configs) registry.compile(`espejo/${sc.metadata!.name}`, sc);
  const calls: string[] = [];
  const changes: string[] = [];
  /** Namespaces the unit asked to read again (labels not known). */
  const reads: string[] = [];
  /** What the unit told the turns at large objects. */
  const turns: string[] = [];
  const item = (cfgKey: string, list: string, name: string) => {
    calls.push(`${cfgKey} ${list} ${name}`);
    return Promise.resolve(answer(name));
  };
  const u = new NamespaceUnit({
    namespaces: { get: (name) => name === NS.name ? NS : undefined },
    configs: { catchUp: () => registry },
    syncEvents: { recordChange: (k, a, ns) => changes.push(`${k} ${a} ${ns}`) },
    executor: {
      syncItem: (ref, i) => item(ref.cfg.key, "sync", i.name),
      deleteItem: (ref, i) => item(ref.cfg.key, "delete", i.name),
    },
    pruning: {
      decide: () => Promise.resolve({ plans: [], listing: false, deleting: [] }),
      pruneNamespace: () => pruned instanceof Error ? Promise.reject(pruned) : Promise.resolve(pruned),
    },
    trimmedLabels: { readSoon: (name) => (reads.push(name), Promise.resolve()) },
    // Trusted SyncConfigs only: nothing is asked (tests/unit/delegated_view_test.ts has the rest).
    view: new DelegatedView({
      rights: { may: () => Promise.reject(new Error("asked")), forgetConfig: () => {} },
      resolve: () => Promise.reject(new Error("resolved")),
    }),
    large: { began: (name) => turns.push(`began ${name}`), ended: (name) => turns.push(`ended ${name}`) },
  });
  return { u, calls, changes, registry, reads, turns };
}

Deno.test("NamespaceUnit.run returns each selecting SyncConfig's counts and the SyncConfigs that do not select it", async () => {
  const { u, changes } = unit([
    syncConfig("a", { namespaceSelector: selectsTeamA, syncItems: [cm("one"), cm("two")] }),
    syncConfig("other", { namespaceSelector: { matchNames: ["team-b"] }, syncItems: [cm("x")] }),
  ], (name) => name === "one" ? { state: "synced", action: "create" } : { state: "synced", action: "none" });
  const r = await u.run("team-a");
  assert.deepEqual(r.configs.map((c) => [c.cfgKey, c.outcome]), [
    ["espejo/a", { synced: 2, deleted: 0, failed: 0, errors: [] }],
  ]);
  assert.deepEqual(r.unselected, ["espejo/other"]);
  assert.deepEqual({ wrote: r.wrote, retry: r.retry, failed: r.failed, retryInMs: r.retryInMs }, {
    wrote: true,
    retry: false,
    failed: false,
    retryInMs: undefined,
  });
  assert.deepEqual(changes, ["espejo/a create team-a"]);
});

Deno.test("NamespaceUnit.run folds the prune step's wait and the items' transient failures", async () => {
  const { u } = unit(
    [syncConfig("a", { namespaceSelector: selectsTeamA, syncItems: [cm("one")] })],
    () => ({ state: "failed", message: "m", terminal: false }),
    { wrote: true, retry: false, retryInMs: 5000 },
  );
  const r = await u.run("team-a");
  assert.deepEqual({ wrote: r.wrote, retry: r.retry, failed: r.failed, retryInMs: r.retryInMs }, {
    wrote: true,
    retry: true,
    failed: true,
    retryInMs: 5000,
  });
});

Deno.test("NamespaceUnit.run performs neither of two contradicting items and reports both", async () => {
  const { u, calls } = unit([
    syncConfig("deny", {
      namespaceSelector: selectsTeamA,
      deleteItems: [{ apiVersion: "v1", kind: "ConfigMap", name: "shared" }],
    }),
    syncConfig("sync", { namespaceSelector: selectsTeamA, syncItems: [cm("mine"), cm("shared")] }),
  ], () => ({ state: "synced", action: "none" }));
  const r = await u.run("team-a");
  assert.deepEqual(calls, ["espejo/sync sync mine"], "nothing is sent for the contested object");
  const byKey = Object.fromEntries(r.configs.map((c) => [c.cfgKey, c.outcome]));
  assert.equal(byKey["espejo/deny"].failed, 1);
  assert.match(
    byKey["espejo/deny"].errors[0],
    /^SyncConfig espejo\/deny: \.spec\.deleteItems\[0\] \(ConfigMap shared\) in namespace team-a: contradicts \.spec\.syncItems\[1\] of SyncConfig espejo\/sync/,
  );
  assert.deepEqual([byKey["espejo/sync"].synced, byKey["espejo/sync"].failed], [1, 1]);
  assert.match(
    byKey["espejo/sync"].errors[0],
    /contradicts \.spec\.deleteItems\[0\] of SyncConfig espejo\/deny, which deletes/,
  );
  assert.equal(r.retry, false, "terminal: nothing brings the namespace back until a SyncConfig changes");
  assert.equal(r.wrote, false);
});

Deno.test("NamespaceUnit.run leaves out a SyncConfig changed while it ran: its counts belong to the new generation", async () => {
  const configs = [syncConfig("a", { namespaceSelector: selectsTeamA, syncItems: [cm("one")] })];
  const edited: { registry?: Registry<NamespaceInfo> } = {};
  const made = unit(configs, () => {
    edited.registry!.compile(
      "espejo/a",
      syncConfig("a", { namespaceSelector: selectsTeamA, syncItems: [cm("two")] }, 2),
    );
    return { state: "synced", action: "none" };
  });
  edited.registry = made.registry;
  const r = await made.u.run("team-a");
  assert.deepEqual(r.configs, []);
  assert.deepEqual(r.stale, ["espejo/a"], "named, so that its status waits for the new generation's unit");
});

Deno.test("NamespaceUnit.run holds off a SyncConfig whose label keys came after the namespace's labels were trimmed, asks for them, and syncs the others", async () => {
  const { u, calls, registry, reads } = unit(
    [syncConfig("a", { namespaceSelector: selectsTeamA, syncItems: [cm("one")] })],
    () => ({ state: "synced", action: "create" }),
  );
  // Trimmed (namespace_info.ts) when only `team` was read; then a SyncConfig reading `tier` came.
  NS.labelsFor = registry.labelKeys.version;
  try {
    registry.compile(
      "espejo/b",
      syncConfig("b", { namespaceSelector: { labelSelector: { matchLabels: { tier: "x" } } }, syncItems: [cm("two")] }),
    );
    const r = await u.run("team-a");
    // a's keys were kept: it goes on. b's selection is unknown: not written, and not uncounted either.
    assert.deepEqual([r.configs.map((c) => c.cfgKey), r.unselected, calls], [["espejo/a"], [], ["espejo/a sync one"]]);
    assert.deepEqual(reads, ["team-a"], "it asks for the namespace to be read again, which queues it once known");
  } finally {
    delete NS.labelsFor;
  }
});

Deno.test("NamespaceUnit.run folds an item left waiting for its turn at large objects, and tells the turns when it begins and ends", async () => {
  const { u, turns } = unit(
    [syncConfig("a", { namespaceSelector: selectsTeamA, syncItems: [cm("large"), cm("small")] })],
    (name) => {
      turns.push(`item ${name}`);
      return name === "large"
        ? { state: "synced", action: "none", waiting: true }
        : { state: "synced", action: "update" };
    },
  );
  const r = await u.run("team-a");
  assert.deepEqual(turns, ["began team-a", "item large", "item small", "ended team-a"]);
  assert.deepEqual({ wrote: r.wrote, retry: r.retry, waiting: r.waiting, retryInMs: r.retryInMs }, {
    wrote: true,
    retry: false,
    waiting: true,
    retryInMs: undefined,
  });
  assert.deepEqual(
    r.configs[0].outcome,
    { synced: 2, deleted: 0, failed: 0, errors: [] },
    "counted as a fight's hold is",
  );
});

Deno.test("NamespaceUnit.run tells the turns at large objects that it ended when it throws", async () => {
  const { u, turns } = unit(
    [syncConfig("a", { namespaceSelector: selectsTeamA, syncItems: [cm("one")] })],
    () => ({ state: "synced", action: "none" }),
    new Error("prune step broke"),
  );
  await assert.rejects(u.run("team-a"), /prune step broke/);
  assert.deepEqual(turns, ["began team-a", "ended team-a"]);
});

Deno.test("NamespaceUnit.run syncs a trusted SyncConfig without waiting for a team's reviews, and defers the team's while they wait", async () => {
  const registry = new Registry<NamespaceInfo>(undefined, { trustedNamespaces: ["espejo"] });
  registry.compile(
    "espejo/platform",
    syncConfig("platform", { namespaceSelector: selectsTeamA, syncItems: [cm("p")] }),
  );
  const team = {
    metadata: {
      namespace: "team",
      name: "t",
      generation: 1,
      uid: "t",
      annotations: { "sync.appuio.ch/service-account": "writer" },
    },
    spec: { namespaceSelector: selectsTeamA, syncItems: [cm("t")] },
  } as SyncConfig;
  registry.compile("team/t", team);
  const calls: string[] = [];
  let release: (() => void) | undefined;
  const u = new NamespaceUnit({
    namespaces: { get: (name) => name === NS.name ? NS : undefined },
    configs: { catchUp: () => registry },
    syncEvents: { recordChange: () => {} },
    executor: {
      syncItem: (
        ref,
        i,
      ) => (calls.push(`${ref.cfg.key} ${i.name}`), Promise.resolve({ state: "synced", action: "none" })),
      deleteItem: () => Promise.resolve({ state: "absent" }),
    },
    pruning: {
      decide: () => Promise.resolve({ plans: [], listing: false, deleting: [] }),
      pruneNamespace: () => Promise.resolve({ wrote: false, retry: false }),
    },
    trimmedLabels: { readSoon: () => Promise.resolve() },
    view: new DelegatedView({
      // The team's first review hangs until released, then its pace is spent.
      rights: {
        may: () => new Promise((_, reject) => release = () => reject(new ReviewsPaced(2000))),
        forgetConfig: () => {},
      },
      resolve: () =>
        Promise.resolve({
          resource: "configmaps",
          namespaced: true,
          group: "",
          version: "v1",
          kind: "ConfigMap",
          verbs: [],
        }),
    }),
    large: { began: () => {}, ended: () => {} },
  });
  const running = u.run("team-a");
  // The platform's item is synced while the team's review is still out.
  for (let i = 0; i < 10 && !calls.length; i++) await new Promise((r) => setTimeout(r, 0));
  assert.deepEqual(calls, ["espejo/platform p"]);
  release!();
  const r = await running;
  assert.deepEqual(r.configs.map((c) => c.cfgKey), ["espejo/platform"]);
  assert.deepEqual(r.unselected, [], "the team's SyncConfig is deferred: its counts here are not dropped");
  assert.equal(r.retryInMs, 2000, "the unit comes back when the team's reviews may go on");
});

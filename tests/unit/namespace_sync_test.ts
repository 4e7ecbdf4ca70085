/**
 * One SyncConfig in one namespace (lib/sync/namespace_sync.ts) with a recording executor: order of deletes and
 * waves, folding of item results into counts, and which failures bring the namespace back.
 */
import assert from "node:assert/strict";
import { compileSyncConfig, type DeleteItemSpec, type SyncItemSpec } from "../../lib/model/syncconfig.ts";
import type { ItemResult } from "../../lib/sync/failures.ts";
import { syncConfigInNamespace } from "../../lib/sync/namespace_sync.ts";

const compiled = compileSyncConfig({
  metadata: { namespace: "espejo", name: "cfg", generation: 1, uid: "u" },
  spec: {
    namespaceSelector: { matchNames: [".*"] },
    syncItems: [
      { apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role", metadata: { name: "role" }, rules: [] },
      {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "RoleBinding",
        metadata: { name: "bind" },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "role" },
        subjects: [],
      },
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cm-${PROJECT_NAME}" }, data: {} },
    ],
    deleteItems: [{ apiVersion: "v1", kind: "ConfigMap", name: "legacy" }],
  },
});
if (!compiled.ok) throw new Error(compiled.message);
const cfg = compiled.config;

type Results = Partial<Record<string, ItemResult | Error>>;

/** An executor answering from `results` by item name (synced, no write, by default), recording the call order. */
function recording(results: Results = {}) {
  const calls: string[] = [];
  const answer = async (name: string, fallback: ItemResult): Promise<ItemResult> => {
    calls.push(name);
    for (let i = 0; i < 3; i++) await Promise.resolve();
    calls.push(`done ${name}`);
    const r = results[name];
    if (r instanceof Error) throw r;
    return r ?? fallback;
  };
  return {
    calls,
    syncItem: (_: unknown, item: SyncItemSpec) => answer(item.name, { state: "synced", action: "none" }),
    deleteItem: (_: unknown, item: DeleteItemSpec) => answer(item.name, { state: "absent" }),
  };
}

async function run(results: Results = {}) {
  const executor = recording(results);
  const changes: string[] = [];
  const r = await syncConfigInNamespace(executor, cfg, "team-a", (k, a, ns) => changes.push(`${k} ${a} ${ns}`));
  return { ...r, calls: executor.calls, changes };
}

Deno.test("namespace sync: deleteItems first, then a RoleBinding only after the earlier Role it binds", async () => {
  const { calls } = await run();
  assert.ok(calls.indexOf("done legacy") < calls.indexOf("role"), calls.join(","));
  assert.ok(calls.indexOf("done role") < calls.indexOf("bind"), calls.join(","));
  // Items of one wave go out together: the ConfigMap does not wait for the Role.
  assert.ok(calls.indexOf("cm-${PROJECT_NAME}") < calls.indexOf("done role"), calls.join(","));
});

Deno.test("namespace sync: nothing to do counts every item, writes nothing, needs no retry", async () => {
  const r = await run();
  assert.deepEqual(r.outcome, { synced: 3, deleted: 0, failed: 0, errors: [] });
  assert.equal(r.wrote, false);
  assert.equal(r.retry, false);
  assert.equal(r.retryInMs, undefined);
  assert.deepEqual(r.changes, []);
});

Deno.test("namespace sync: writes and deletes are counted and recorded for the summary event", async () => {
  const r = await run({
    legacy: { state: "deleted" },
    role: { state: "synced", action: "create" },
    "cm-${PROJECT_NAME}": { state: "synced", action: "update", reason: "data differs" },
  });
  assert.deepEqual(r.outcome, { synced: 3, deleted: 1, failed: 0, errors: [] });
  assert.equal(r.wrote, true);
  assert.deepEqual(r.changes.sort(), [
    "espejo/cfg create team-a",
    "espejo/cfg delete team-a",
    "espejo/cfg update team-a",
  ]);
});

const failed = (terminal: boolean): ItemResult => ({ state: "failed", message: "m", detail: "d", terminal });

const cases: [string, Results, { retry: boolean; failed: number }][] = [
  ["a terminal failure waits for a change: no retry", { role: failed(true) }, { retry: false, failed: 1 }],
  ["a transient failure backs the namespace off", { role: failed(false) }, { retry: true, failed: 1 }],
  ["one transient among terminal ones retries", { role: failed(true), legacy: failed(false) }, {
    retry: true,
    failed: 2,
  }],
  ["an exception fails that item only, as transient", { bind: new Error("boom") }, { retry: true, failed: 1 }],
];
for (const [name, results, want] of cases) {
  Deno.test(`namespace sync: ${name}`, async () => {
    const r = await run(results);
    assert.equal(r.retry, want.retry);
    assert.equal(r.outcome.failed, want.failed);
    assert.equal(
      r.outcome.synced + r.outcome.failed,
      want.failed + (3 - Object.keys(results).filter((k) => k !== "legacy").length),
    );
    assert.equal(r.details.length, want.failed);
  });
}

Deno.test("namespace sync: an exception names the SyncConfig, the field and the namespace", async () => {
  const r = await run({ bind: new Error("boom") });
  assert.deepEqual(r.outcome.errors, [
    "SyncConfig espejo/cfg: .spec.syncItems[1] in namespace team-a: unexpected error: boom",
  ]);
});

Deno.test("namespace sync: held-back restores bring the namespace back after the shortest wait", async () => {
  const r = await run({
    role: { state: "synced", action: "none", retryInMs: 4000 },
    bind: { state: "synced", action: "none", retryInMs: 1000 },
  });
  assert.equal(r.retryInMs, 1000);
  assert.equal(r.retry, false);
});

Deno.test("namespace sync: contested items are not performed; each fails as terminal, naming its object", async () => {
  const executor = recording();
  const contested = new Map([
    [".spec.deleteItems[0]", { kind: "ConfigMap", name: "legacy", problem: "contradicts X" }],
    [".spec.syncItems[2]", { kind: "ConfigMap", name: "cm-team-a", problem: "contradicts Y" }],
  ]);
  const r = await syncConfigInNamespace(executor, cfg, "team-a", () => {}, contested);
  assert.deepEqual(executor.calls.filter((c) => !c.startsWith("done")), ["role", "bind"]);
  assert.deepEqual(r.outcome, {
    synced: 2,
    deleted: 0,
    failed: 2,
    errors: [
      "SyncConfig espejo/cfg: .spec.deleteItems[0] (ConfigMap legacy) in namespace team-a: contradicts X",
      "SyncConfig espejo/cfg: .spec.syncItems[2] (ConfigMap cm-team-a) in namespace team-a: contradicts Y",
    ],
  });
  assert.equal(r.retry, false);
  assert.equal(r.wrote, false);
  assert.deepEqual(r.details[1].fields, {
    item: ".spec.syncItems[2]",
    kind: "ConfigMap",
    name: "cm-team-a",
    error: "contradicts Y",
  });
});

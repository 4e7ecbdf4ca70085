/** The pure planner (lib/sync/planner.ts) with an in-memory view: every branch without a server. */
import assert from "node:assert/strict";
import type { ResourceInfo } from "../../lib/kube/discovery.ts";
import type { KubeObject } from "../../lib/kube/objects.ts";
import { compileSyncConfig } from "../../lib/model/syncconfig.ts";
import { type CachedObject, decodeManaged } from "../../lib/sync/cached_object.ts";
import { desiredObject } from "../../lib/sync/desired.ts";
import type { ItemResult } from "../../lib/sync/failures.ts";
import {
  keysOf,
  planAdoption,
  planDeleteItem,
  planSyncItem,
  type PlanView,
  type SyncTarget,
} from "../../lib/sync/planner.ts";
import { acceptWritten, remember } from "../../lib/sync/verdict.ts";
import { CREATED_ANNOTATION } from "../../lib/model/markers.ts";

const RESOURCE: ResourceInfo = {
  group: "",
  version: "v1",
  resource: "configmaps",
  kind: "ConfigMap",
  namespaced: true,
} as ResourceInfo;

const compiled = compileSyncConfig({
  metadata: { namespace: "espejo", name: "cfg", generation: 2, uid: "u" },
  spec: {
    namespaceSelector: { matchNames: ["team-a"] },
    syncItems: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "policy" }, data: { a: "1" } }],
    deleteItems: [{ apiVersion: "v1", kind: "ConfigMap", name: "legacy" }],
  },
});
if (!compiled.ok) throw new Error(compiled.message);
const cfg = compiled.config;

function view(over: Partial<PlanView> = {}): PlanView {
  return {
    claims: () => false,
    serverAdds: () => undefined,
    fightWaitMs: () => 0,
    removedByOther: () => false,
    backedOff: () => undefined,
    ...over,
  };
}

async function target(observed?: (desired: KubeObject) => CachedObject): Promise<SyncTarget> {
  const { object, hash } = await desiredObject(cfg, cfg.syncItems[0], "team-a");
  return {
    cfg,
    namespace: "team-a",
    item: cfg.syncItems[0],
    resource: RESOURCE,
    desired: object,
    hash,
    observed: observed?.(object),
  };
}

/** The server's copy of `desired` at `rv` with `change` applied. */
function served(desired: KubeObject, rv: string, change: (o: KubeObject) => void = () => {}): KubeObject {
  const o = structuredClone(desired);
  o.metadata!.resourceVersion = rv;
  o.metadata!.uid = "obj-uid";
  change(o);
  return o;
}

/** The entry after espejo's own write produced version 1, then version `rv` with `change`. */
function afterOwnWrite(rv: string, change: (o: KubeObject) => void) {
  return (desired: KubeObject) => {
    const mine = decodeManaged(served(desired, "1"), undefined);
    acceptWritten(mine, served(desired, "1"), desired.metadata!.annotations!["sync.appuio.ch/desired-hash"]);
    return decodeManaged(served(desired, rv, change), mine);
  };
}

Deno.test("planSyncItem: an absent object is created", async () => {
  assert.deepEqual(planSyncItem(await target(), view()).plan, { kind: "create", restore: false, replace: "never" });
});

Deno.test("planSyncItem: an absent object someone else deleted is created as a restore, after a fight's wait", async () => {
  const removed = view({ removedByOther: () => true });
  assert.deepEqual(planSyncItem(await target(), removed).plan, { kind: "create", restore: true, replace: "immutable" });
  const fighting = view({ removedByOther: () => true, fightWaitMs: () => 4000 });
  assert.deepEqual(planSyncItem(await target(), fighting).plan, { kind: "hold", retryInMs: 4000 });
});

Deno.test("planSyncItem: espejo's own reply is in sync: nothing to do", async () => {
  const t = await target(afterOwnWrite("1", () => {}));
  assert.deepEqual(planSyncItem(t, view()).plan, { kind: "none" });
});

Deno.test("planSyncItem: a tenant's change is an update that restores, keeping the live ownerReferences and creation record", async () => {
  const t = await target(afterOwnWrite("2", (o) => {
    (o as { data: unknown }).data = { a: "evil" };
    o.metadata!.ownerReferences = [{ uid: "theirs" }];
    o.metadata!.annotations = { ...o.metadata!.annotations, [CREATED_ANNOTATION]: "espejo/cfg" };
  }));
  const { plan, memo } = planSyncItem(t, view());
  assert.equal(plan.kind, "update");
  if (plan.kind !== "update") return;
  assert.equal(plan.restore, true);
  assert.match(plan.reason, /\.data\.a differs/);
  assert.deepEqual(plan.live, {
    resourceVersion: "2",
    uid: "obj-uid",
    ownerReferences: [{ uid: "theirs" }],
    owner: "espejo/cfg",
    createdBy: "espejo/cfg",
  });
  assert.equal(memo?.kind, "outOfSync", "the verdict is returned for the caller to record, not recorded");
  assert.notEqual(t.observed!.json, undefined, "the planner changed nothing in the cache entry");
});

Deno.test("planSyncItem: a restore in a fight waits", async () => {
  const t = await target(afterOwnWrite("2", (o) => ((o as { data: unknown }).data = { a: "evil" })));
  assert.deepEqual(planSyncItem(t, view({ fightWaitMs: () => 2000 })).plan, { kind: "hold", retryInMs: 2000 });
});

Deno.test("planSyncItem: an object held by another SyncConfig's item fails, terminally", async () => {
  const t = await target(afterOwnWrite("2", (o) => (o.metadata!.annotations!["sync.appuio.ch/owner"] = "x/other")));
  const { plan } = planSyncItem(t, view({ claims: (owner) => owner === "x/other" }));
  assert.equal(plan.kind, "fail");
  if (plan.kind !== "fail") return;
  assert.equal(plan.result.terminal, true);
  assert.match(
    plan.result.message,
    /^SyncConfig espejo\/cfg: \.spec\.syncItems\[0\] \(ConfigMap policy\) in namespace team-a: the object is already managed by SyncConfig x\/other/,
  );
});

Deno.test("planSyncItem: a SyncConfig of an untrusted namespace is not told the name of a holder of another namespace", async () => {
  const t = await target(afterOwnWrite("2", (o) => (o.metadata!.annotations!["sync.appuio.ch/owner"] = "x/other")));
  const untrusted = { ...t, cfg: { ...t.cfg, trusted: false } };
  const { plan } = planSyncItem(untrusted, view({ claims: (owner) => owner === "x/other" }));
  if (plan.kind !== "fail") throw new Error(plan.kind);
  assert.match(plan.result.message, /the object is already managed by another SyncConfig;/);
  assert.doesNotMatch(plan.result.message, /x\/other/);
  const sameNamespace = { ...t, cfg: { ...t.cfg, key: "x/mine", namespace: "x", trusted: false } };
  const named = planSyncItem(sameNamespace, view({ claims: (owner) => owner === "x/other" })).plan;
  if (named.kind !== "fail") throw new Error(named.kind);
  assert.match(named.result.message, /already managed by SyncConfig x\/other/, "its own namespace's it is told");
});

Deno.test("planSyncItem: an owner annotation no item backs is overwritten", async () => {
  const t = await target(afterOwnWrite("2", (o) => (o.metadata!.annotations!["sync.appuio.ch/owner"] = "x/ghost")));
  const { plan } = planSyncItem(t, view());
  assert.equal(plan.kind, "update");
});

Deno.test("planSyncItem: fields the item does not set are unexplained until the server's additions are known", async () => {
  const t = await target((d) =>
    decodeManaged(served(d, "5", (o) => ((o as { immutable?: boolean }).immutable = false)), undefined)
  );
  const first = planSyncItem(t, view());
  assert.equal(first.plan.kind === "update" && first.plan.unexplained, true);
  remember(t.observed!, first.memo);
  const record = t.observed!.outOfSync!;
  const learnt = planSyncItem(t, view({ serverAdds: () => record.extras }));
  assert.deepEqual(learnt.plan, { kind: "none" });
});

Deno.test("planSyncItem: the same failed attempt waits out its backoff; a new attempt is tried", async () => {
  const t = await target();
  const keys = keysOf(t);
  const failed: ItemResult = { state: "failed", message: "m", terminal: false };
  const book = view({
    backedOff: (key, attempt) => key === keys.retryKey && attempt === keys.attempt ? failed : undefined,
  });
  assert.deepEqual(planSyncItem(t, book).plan, { kind: "backoff", result: failed });
  const edited = { ...t, hash: "another" };
  assert.equal(planSyncItem(edited, book).plan.kind, "create");
});

Deno.test("planDeleteItem: absent, delete with the uid, or the backoff of the same attempt", () => {
  const item = cfg.deleteItems[0];
  assert.deepEqual(planDeleteItem({ cfg, namespace: "team-a", item, existing: undefined }, view()), { kind: "absent" });
  const plan = planDeleteItem({ cfg, namespace: "team-a", item, existing: { uid: "u1" } }, view());
  assert.deepEqual(plan, { kind: "delete", uid: "u1", retryKey: "espejo/cfg|d0|team-a", attempt: "2:u1" });
  const failed: ItemResult = { state: "failed", message: "m", terminal: true };
  assert.deepEqual(
    planDeleteItem({ cfg, namespace: "team-a", item, existing: { uid: "u1" } }, view({ backedOff: () => failed })),
    { kind: "backoff", result: failed },
  );
});

Deno.test("replaceWhen: forceRecreate replaces on any refusal, a restore on an immutable field, else never", async () => {
  const { replaceWhen } = await import("../../lib/sync/planner.ts");
  const table: [forceRecreate: boolean, restore: boolean, want: string][] = [
    [false, false, "never"],
    [false, true, "immutable"],
    [true, false, "invalid"],
    [true, true, "invalid"],
  ];
  for (const [forceRecreate, restore, want] of table) {
    assert.equal(replaceWhen(forceRecreate, restore), want, `forceRecreate ${forceRecreate}, restore ${restore}`);
  }
});

Deno.test("planSyncItem: a restore is replaced when a field cannot change; contested while a fight is on", async () => {
  const t = await target(afterOwnWrite("2", (o) => ((o as { data: unknown }).data = { a: "evil" })));
  const calm = planSyncItem(t, view()).plan;
  assert.equal(calm.kind === "update" && calm.replace, "immutable");
  assert.equal(calm.kind === "update" && calm.contested, false, "no fight: a conflict is re-read once");
  const fight = planSyncItem(t, view({ inFight: () => true })).plan;
  assert.equal(fight.kind === "update" && fight.contested, true, "in a fight a conflict is the next move");
  // espejo's own object whose item changed is no restore: a refused field fails, it is not replaced.
  const own = await target(afterOwnWrite("1", () => {}));
  const edited = { ...own, hash: "another", desired: { ...own.desired, data: { a: "2" } } };
  const update = planSyncItem(edited, view({ inFight: () => true })).plan;
  assert.equal(update.kind === "update" && update.replace, "never");
  assert.equal(update.kind === "update" && update.contested, false);
});

Deno.test("planSyncItem: an object someone else deleted and created again under the name is restored", async () => {
  // Their object: not espejo's version (no baseline for its uid), but the name was espejo's until they deleted it.
  const t = await target((d) =>
    decodeManaged(served(d, "9", (o) => ((o as { data: unknown }).data = { a: "x" })), undefined)
  );
  const plan = planSyncItem(t, view({ removedByOther: () => true })).plan;
  assert.equal(plan.kind === "update" && plan.restore, true);
  assert.equal(plan.kind === "update" && plan.replace, "immutable");
});

Deno.test("keysOf: a restore's attempt is keyed on the object, any other on the live version too", async () => {
  const at = (rv: string) => target(afterOwnWrite(rv, (o) => ((o as { data: unknown }).data = { a: rv })));
  const [a, b] = [await at("2"), await at("3")];
  assert.equal(keysOf(a, true).attempt, keysOf(b, true).attempt, "a new live version is the same restore attempt");
  assert.notEqual(keysOf(a).attempt, keysOf(b).attempt, "a new live version is a new attempt of a plain write");
  assert.notEqual(keysOf(a, true).attempt, keysOf({ ...a, hash: "another" }, true).attempt, "a new desired object is");
  // The planner holds a restore that failed at version 2 when version 3 comes (the tenant's next write).
  const failed: ItemResult = { state: "failed", message: "m", terminal: false };
  const book = view({ backedOff: (_key, attempt) => attempt === keysOf(a, true).attempt ? failed : undefined });
  assert.deepEqual(planSyncItem(b, book).plan, { kind: "backoff", result: failed });
});

Deno.test("planAdoption: an unlabelled object is adopted at its version unless another SyncConfig's item holds it", () => {
  const site = { cfgKey: "espejo/cfg", resource: RESOURCE, namespace: "team-a", name: "policy" };
  const holds = { claims: (owner: string) => owner === "x/holder" };
  const live = { resourceVersion: "7", uid: "u1" };
  const table: [string | undefined, ReturnType<typeof planAdoption>][] = [
    [undefined, { kind: "adopt", live }],
    ["espejo/cfg", { kind: "adopt", live: { ...live, owner: "espejo/cfg" } }],
    // An owner annotation is a hint anyone can write: it holds only for a SyncConfig with an item for the object.
    ["x/stranger", { kind: "adopt", live: { ...live, owner: "x/stranger" } }],
    ["x/holder", { kind: "held", owner: "x/holder" }],
  ];
  for (const [owner, want] of table) {
    const parts = owner === undefined ? live : { ...live, owner };
    assert.deepEqual(planAdoption(site, parts, holds), want, String(owner));
  }
});

/**
 * The prune finalizer's bookkeeping (lib/controller/prune_finalizer.ts, `settle`) with recording fakes: each row of the state
 * table performs its one action, and what comes back is the retry policy's to schedule.
 */
import assert from "node:assert/strict";
import { PruneFinalizer } from "../../lib/controller/prune_finalizer.ts";
import { type PrunerParts, PruneStep } from "../../lib/controller/prune_step.ts";
import type { KubeClient, KubeRequest } from "../../lib/kube/client.ts";
import { ApiError } from "../../lib/kube/errors.ts";
import { Metrics } from "../../lib/metrics/metrics.ts";
import { PRUNE_ANNOTATION, PRUNE_FINALIZER } from "../../lib/model/markers.ts";
import type { NamespaceInfo } from "../../lib/model/namespace_info.ts";
import { Registry } from "../../lib/model/registry.ts";
import type { SyncConfig } from "../../lib/model/syncconfig.ts";
import type { PruneCandidate } from "../../lib/sync/prune_decisions.ts";

const KEY = "espejo/x";

function syncConfig(o: { prune: boolean; finalizer: boolean; deleting?: boolean }): SyncConfig {
  return {
    metadata: {
      namespace: "espejo",
      name: "x",
      generation: 1,
      uid: "uid-x",
      resourceVersion: "5",
      annotations: { [PRUNE_ANNOTATION]: String(o.prune) },
      finalizers: o.finalizer ? [PRUNE_FINALIZER] : [],
      ...(o.deleting ? { deletionTimestamp: "2026-01-01T00:00:00Z" } : {}),
    },
    spec: {
      namespaceSelector: { matchNames: ["team-.*"] },
      syncItems: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cm" } }],
    },
  };
}

/** The finalizer of one SyncConfig, a client that records its patches (or refuses them), and a pruner of `left`. */
function pruning(sc: SyncConfig, o: { left?: string[]; refuse?: ApiError } = {}) {
  const told: string[] = [];
  const cache = new Map([[KEY, sc]]);
  const client: KubeClient = {
    request<T>(req: KubeRequest): Promise<T> {
      const finalizers = (req.body as { metadata: { finalizers: string[] } }).metadata.finalizers;
      told.push(`${req.method} finalizers [${finalizers.join(",")}]`);
      if (o.refuse) return Promise.reject(o.refuse);
      return Promise.resolve({ ...sc, metadata: { ...sc.metadata, finalizers } } as T);
    },
    watch: () => (async function* () {})(),
  };
  const left = o.left ?? [];
  const candidate = (ns: string): PruneCandidate => ({ resource: {} as never, namespace: ns, name: "cm", uid: "u" });
  const pruner: PrunerParts = {
    createdIn: (ns) => ({ created: new Map(left.includes(ns) ? [[KEY, [candidate(ns)]]] : []), listing: false }),
    indexCreatedBy: (k) => void told.push(`index ${k}`),
    creatorsIn: () => [KEY],
    namespacesCreatedBy: () => ["team-a", "team-b"],
    prune: () => Promise.resolve({ state: "deleted" }),
    watchItemKinds: () => Promise.resolve(undefined),
    unindexCreatedBy: (k) => void told.push(`unindex ${k}`),
  };
  const registry = new Registry<NamespaceInfo>();
  registry.compile(KEY, sc);
  const syncConfigs = {
    get: (k: string) => cache.get(k),
    upsert: (reply: unknown) => void cache.set(KEY, reply as SyncConfig),
  };
  const enqueue = (item: unknown) => void told.push(`queue ${JSON.stringify(item)}`);
  const step = new PruneStep({
    syncConfigs,
    namespaces: { get: () => undefined },
    registry,
    metrics: new Metrics(),
    pruneDefault: false,
    enqueue,
    recordChange: () => {},
    pruner,
  });
  step.observe(KEY, sc);
  const p = new PruneFinalizer({ client, syncConfigs, step, pruner, enqueue });
  return { p, told };
}

Deno.test("PruneFinalizer.settle: turned on, the finalizer is added, and what it created is indexed and queued", async () => {
  const { p, told } = pruning(syncConfig({ prune: true, finalizer: false }));
  assert.deepEqual(await p.settle(KEY), { retry: false });
  assert.deepEqual(told, [
    `PATCH finalizers [${PRUNE_FINALIZER}]`,
    `index ${KEY}`,
    `queue {"kind":"namespace","name":"team-a"}`,
    `queue {"kind":"namespace","name":"team-b"}`,
  ]);
});

Deno.test("PruneFinalizer.settle: turned off, the finalizer is removed and what it created leaves the index", async () => {
  const off = pruning(syncConfig({ prune: false, finalizer: true }));
  assert.deepEqual(await off.p.settle(KEY), { retry: false });
  assert.deepEqual(off.told, [`unindex ${KEY}`, "PATCH finalizers []"]);
  const none = pruning(syncConfig({ prune: false, finalizer: false }));
  assert.deepEqual(await none.p.settle(KEY), { retry: false });
  assert.deepEqual(none.told, [`unindex ${KEY}`], "no request: only the index entries go");
});

Deno.test("PruneFinalizer.settle: deleted, what is left is queued and looked at again from 5 s; none left, released", async () => {
  const left = pruning(syncConfig({ prune: true, finalizer: true, deleting: true }), { left: ["team-b"] });
  assert.deepEqual(await left.p.settle(KEY), { retry: true, baseMs: 5000 });
  assert.deepEqual(left.told, [`queue {"kind":"namespace","name":"team-b"}`]);
  const done = pruning(syncConfig({ prune: true, finalizer: true, deleting: true }));
  assert.deepEqual(await done.p.settle(KEY), { retry: false });
  assert.deepEqual(done.told, ["PATCH finalizers []"]);
});

Deno.test("PruneFinalizer.settle: deleted without pruning, released with what it created left in place", async () => {
  const { p, told } = pruning(syncConfig({ prune: false, finalizer: true, deleting: true }), { left: ["team-a"] });
  assert.deepEqual(await p.settle(KEY), { retry: false });
  assert.deepEqual(told, [`unindex ${KEY}`, "PATCH finalizers []"]);
});

Deno.test("PruneFinalizer.settle: a refused finalizer patch comes back by the policy: a conflict soon, else later", async () => {
  const conflict = pruning(syncConfig({ prune: true, finalizer: false }), {
    refuse: new ApiError(409, "Conflict", "the object has been modified"),
  });
  assert.deepEqual(await conflict.p.settle(KEY), { retry: true, baseMs: 1000 });
  const forbidden = pruning(syncConfig({ prune: true, finalizer: false }), {
    refuse: new ApiError(403, "Forbidden", "no"),
  });
  assert.deepEqual(await forbidden.p.settle(KEY), { retry: true, baseMs: 10_000 });
  assert.ok(!forbidden.told.some((t) => t.startsWith("index")), "nothing is indexed before the finalizer holds");
});

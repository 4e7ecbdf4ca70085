/**
 * What a SyncConfig's change sets off (lib/controller/config_changes.ts), with recording fakes: compiled once per
 * generation, the namespaces it selects queued, and a deleted one forgotten by every book in one call.
 */
import assert from "node:assert/strict";
import { ConfigChanges } from "../../lib/controller/config_changes.ts";
import { StatusLedger } from "../../lib/controller/status_ledger.ts";
import type { NamespaceInfo } from "../../lib/model/namespace_info.ts";
import { Registry } from "../../lib/model/registry.ts";
import type { SyncConfig } from "../../lib/model/syncconfig.ts";

function syncConfig(name: string, generation: number, matchNames: string[], deleting = false): SyncConfig {
  return {
    metadata: {
      namespace: "espejo",
      name,
      generation,
      uid: `uid-${name}`,
      ...(deleting ? { deletionTimestamp: "2026-01-01T00:00:00Z" } : {}),
    },
    spec: {
      namespaceSelector: { matchNames },
      syncItems: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cm" } }],
    },
  };
}

const ns = (name: string, phase = "Active"): NamespaceInfo => ({ name, labels: {}, phase });

function changes(namespaces: NamespaceInfo[]) {
  const cache = new Map<string, SyncConfig>();
  const registry = new Registry<NamespaceInfo>();
  const ledger = new StatusLedger();
  const told: string[] = [];
  /** What the status writer was told, in order. */
  const status: string[] = [];
  const c = new ConfigChanges({
    syncConfigs: { get: (k) => cache.get(k), values: () => cache.values() },
    namespaces: { values: () => namespaces.values() },
    registry,
    ledger,
    statusWriter: {
      heard: (f) => {
        if (f.kind === "compiled") status.push(`compiled ${f.cfgKey}${f.valid ? "" : " invalid"}`);
        else if (f.kind === "changed") status.push(`changed ${f.cfgKey}`);
        else if (f.kind === "queued") status.push(`queued ${f.namespace} for ${[...f.cfgKeys]}`);
        else if (f.kind === "queueing") status.push(`queueing ${f.cfgKey}`);
        else if (f.kind === "queuedAll") status.push(`queued all of ${f.cfgKey}`);
        else status.push(`unexpected ${f.kind}`);
      },
    },
    events: { emit: (_ref, _type, reason) => (told.push(`event ${reason}`), Promise.resolve()) },
    freshness: { changedEverywhere: () => void told.push("everything changed") },
    enqueue: (item, trigger) => void told.push(`queued ${JSON.stringify(item)} ${trigger}`),
    pruning: { observe: () => {}, enabled: () => false },
    finalizer: { settle: () => Promise.resolve({ retry: false }) },
    books: { configGone: (k) => void told.push(`forgotten ${k}`) },
    executor: { forgetConfig: (k) => void told.push(`retries of ${k} start over`) },
    view: { forgetConfig: () => {} },
    caches: { retain: () => {}, hasCreated: () => false },
    trimmedLabels: { refresh: () => Promise.resolve() },
  });
  return { c, cache, registry, ledger, status, told };
}

Deno.test("ConfigChanges: a new SyncConfig is compiled once and queues the active namespaces it selects", async () => {
  const t = changes([ns("team-a"), ns("team-b", "Terminating"), ns("other")]);
  t.cache.set("espejo/x", syncConfig("x", 1, ["team-.*"]));
  t.ledger.track("espejo/x");
  t.ledger.record("espejo/x", "other", { synced: 1, deleted: 0, failed: 0, errors: [] });
  const facts = await t.c.process("espejo/x");
  assert.deepEqual(facts, { retry: false }, "its pruning settle's answer goes to the worker");
  assert.equal(t.registry.get("espejo/x")?.result.ok, true);
  assert.deepEqual(t.told, [
    "retries of espejo/x start over",
    "everything changed",
    `queued {"kind":"namespace","name":"team-a"} syncconfig`,
  ]);
  assert.deepEqual([...t.ledger.outcomes("espejo/x")], [], "its counts where it no longer selects are gone");
  assert.deepEqual(t.status, [
    "compiled espejo/x",
    "queueing espejo/x",
    "queued team-a for espejo/x",
    "changed espejo/x",
    "queued all of espejo/x",
  ], "its status waits for the namespaces queued for it, and shows that it left the other");
  t.told.length = 0;
  t.c.changed("espejo/x");
  assert.deepEqual(t.told, [], "the same generation is not compiled again");
});

Deno.test("ConfigChanges: a deleted SyncConfig (or one being deleted) is forgotten by every book in one call", () => {
  for (const deleting of [false, true]) {
    const t = changes([]);
    t.cache.set("espejo/x", syncConfig("x", 1, ["team-.*"]));
    t.c.changed("espejo/x");
    t.told.length = 0;
    if (deleting) t.cache.set("espejo/x", syncConfig("x", 1, ["team-.*"], true));
    else t.cache.delete("espejo/x");
    t.c.changed("espejo/x");
    assert.equal(t.registry.get("espejo/x"), undefined);
    assert.deepEqual(t.told, ["everything changed", "forgotten espejo/x"], `deleting: ${deleting}`);
  }
});

Deno.test("ConfigChanges.catchUp recompiles a SyncConfig whose change is not processed yet, and queues its work", () => {
  const t = changes([]);
  t.cache.set("espejo/x", syncConfig("x", 1, ["a"]));
  t.c.changed("espejo/x");
  t.cache.set("espejo/x", syncConfig("x", 2, ["b"]));
  t.told.length = 0;
  const registry = t.c.catchUp();
  assert.equal(registry.get("espejo/x")?.generation, 2);
  assert.ok(t.told.includes(`queued {"kind":"syncConfig","key":"espejo/x"} syncconfig`), t.told.join("\n"));
});

Deno.test("ConfigChanges warns about templated deleteItems once per SyncConfig, again once it was forgotten", () => {
  const t = changes([]);
  const templated = (generation: number) => {
    const sc = syncConfig("x", generation, ["team-.*"]);
    sc.spec!.deleteItems = [{ apiVersion: "v1", kind: "ConfigMap", name: "old-${PROJECT_NAME}" }];
    return sc;
  };
  const warnings = () => t.told.filter((w) => w === "event TemplatedDeleteItems").length;
  t.cache.set("espejo/x", templated(1));
  t.c.changed("espejo/x");
  t.cache.set("espejo/x", templated(2));
  t.c.changed("espejo/x");
  assert.equal(warnings(), 1, "a new generation of the same SyncConfig is not warned again");
  t.c.forgetConfig("espejo/x"); // what the book of per-SyncConfig state calls when it goes (key_books.ts)
  t.cache.set("espejo/x", templated(3));
  t.c.changed("espejo/x");
  assert.equal(warnings(), 2);
});

Deno.test("ConfigChanges: a burst over 5,000 namespaces queues their keys, nothing rendered", async () => {
  const namespaces = Array.from({ length: 5000 }, (_, i) => ns(`team-${i}`));
  const t = changes(namespaces);
  t.cache.set("espejo/big", syncConfig("big", 1, ["team-.*"]));
  await t.c.process("espejo/big");
  const queued = t.told.filter((l) => l.startsWith("queued "));
  assert.equal(queued.length, 5000, "one work item per namespace");
  // A work item is the namespace's key and nothing else: the unit renders the desired objects when a worker takes
  // it, so what a burst holds grows with the number of namespaces, not with their items or their size.
  for (const [i, line] of queued.entries()) {
    assert.equal(line, `queued {"kind":"namespace","name":"team-${i}"} syncconfig`);
  }
});

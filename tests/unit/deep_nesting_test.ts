/**
 * Objects a tenant nests as deep as the API server lets it (lib/kube/json_depth.ts): a custom resource that preserves
 * unknown fields, its `.spec.size` replaced by, or its `.spec.extra` set to, a value nested 5,000, 8,000 and
 * API_SERVER_MAX_DEPTH levels deep (the whole object counted, itself the first level). Every step an observed object
 * takes (a list or watch stream, the cache's decoding, the judge on arrival, hashing, comparison, the planner, the
 * packed entry, `espejo plan`'s diff) takes it without throwing, and the verdict is "differs": the item is written.
 */
import assert from "node:assert/strict";
import type { WatchEvent } from "../../lib/kube/client.ts";
import type { ResourceInfo } from "../../lib/kube/discovery.ts";
import { canonicalJson } from "../../lib/kube/canonical_json.ts";
import { JsonItemSplitter } from "../../lib/kube/json_items.ts";
import { LineSplitter } from "../../lib/kube/json_lines.ts";
import { API_SERVER_MAX_DEPTH, deeperThan, MAX_WALK_DEPTH } from "../../lib/kube/json_depth.ts";
import type { KubeObject } from "../../lib/kube/objects.ts";
import { compareByValue, contentHash, extrasHash } from "../../lib/model/drift.ts";
import { fieldDiff } from "../../lib/model/field_diff.ts";
import { MAX_ITEM_DEPTH, type SyncConfig } from "../../lib/model/syncconfig.ts";
import { Registry } from "../../lib/model/registry.ts";
import type { NamespaceInfo } from "../../lib/model/namespace_info.ts";
import { arrivalJudge } from "../../lib/controller/arrival_judge.ts";
import { explainedByDefaults } from "../../lib/plan/server_defaults.ts";
import { type CachedObject, decodeManaged } from "../../lib/sync/cached_object.ts";
import { desiredObjectNow } from "../../lib/sync/desired.ts";
import { packedObjects } from "../../lib/sync/packed_object.ts";
import { planSyncItem, type PlanView } from "../../lib/sync/planner.ts";
import { ResourceCaches } from "../../lib/sync/resource_caches.ts";
import { acceptWritten, assess, remember } from "../../lib/sync/verdict.ts";
import { watchListClient } from "./watch_list_client.ts";

const DEPTHS = [5_000, 8_000, API_SERVER_MAX_DEPTH];

const WIDGET = {
  group: "example.com",
  version: "v1",
  resource: "widgets",
  kind: "Widget",
  namespaced: true,
} as ResourceInfo;
const NAMESPACES = ["team-a", "team-b", "team-c"];
const NS = NAMESPACES[0];
const UID = "5f0c6c2e-0000-4000-8000-000000000000";

const syncConfig = {
  metadata: { namespace: "espejo", name: "widgets", generation: 1, uid: "uid-widgets" },
  spec: {
    namespaceSelector: { matchNames: ["team-.*"] },
    syncItems: [{ apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "w" }, spec: { size: 3 } }],
  },
} as SyncConfig;

function setup() {
  const registry = new Registry<NamespaceInfo>();
  registry.compile("espejo/widgets", syncConfig);
  const compiled = registry.get("espejo/widgets")!.result;
  if (!compiled.ok) throw new Error(compiled.message);
  const cfg = compiled.config;
  const { object: desired, hash } = desiredObjectNow(cfg, cfg.syncItems[0], NS);
  const namespaces = new Map(NAMESPACES.map((name) => [name, { name, labels: {}, phase: "Active" }]));
  const judge = arrivalJudge(registry, namespaces);
  return { registry, cfg, desired, hash, judge };
}

/**
 * `levels` levels of objects and arrays, alternately, around an object with more keys than the engine's
 * JSON.stringify writes on its fast path (so that a stringify of the whole would recurse), which is the last level.
 */
function nested(levels: number): unknown {
  let v: unknown = Object.fromEntries(Array.from({ length: 1100 }, (_, i) => [`k${i}`, i]));
  for (let i = 1; i < levels; i++) v = i % 2 ? { a: v } : [v];
  return v;
}

/** The server's copy of the desired Widget with `.spec[field]` nested so that the object is `depth` levels deep. */
function served(desired: KubeObject, depth: number, field: "size" | "extra", rv = "42"): KubeObject {
  const o = JSON.parse(JSON.stringify(desired)) as KubeObject & { spec: Record<string, unknown> };
  o.metadata = { ...o.metadata, uid: UID, resourceVersion: rv };
  o.spec[field] = nested(depth - 2); // the object is level 1, .spec level 2
  assert.ok(deeperThan(o, depth - 1) && !deeperThan(o, depth), `the object is ${depth} levels deep`);
  return o;
}

/** The desired object as the server stored it for espejo's write. */
function written(desired: KubeObject, rv = "41"): KubeObject {
  return { ...desired, metadata: { ...desired.metadata, uid: UID, resourceVersion: rv } };
}

const view: PlanView = {
  claims: () => false,
  serverAdds: () => undefined,
  fightWaitMs: () => 0,
  removedByOther: () => false,
  backedOff: () => undefined,
};

/** The entry a cache keeps of `raw` from a list or watch, read (as the executor reads one kept without content). */
function cached(raw: KubeObject, previous?: CachedObject): CachedObject {
  const entry = decodeManaged(raw, previous, true, true);
  return entry.contentless ? decodeManaged(raw, previous, true, false) : entry;
}

Deno.test("deeperThan counts objects and arrays as levels, without recursion, and stops at the limit", () => {
  const cases: [unknown, number][] = [["x", 0], [null, 0], [{}, 1], [[], 1], [{ a: [1] }, 2], [[[{ b: {} }]], 4]];
  for (const [v, depth] of cases) {
    assert.equal(deeperThan(v, depth), false, `${JSON.stringify(v)} is not deeper than ${depth}`);
    assert.equal(deeperThan(v, depth - 1), true, `${JSON.stringify(v)} is deeper than ${depth - 1}`);
  }
  assert.ok(deeperThan(nested(100_000), MAX_WALK_DEPTH));
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  assert.ok(deeperThan(cyclic, MAX_WALK_DEPTH));
});

Deno.test("MAX_WALK_DEPTH is far over the deepest item and far under what a recursive walk survives", () => {
  assert.ok(MAX_WALK_DEPTH >= 10 * MAX_ITEM_DEPTH);
  // A walk as deep as the bound, from a stack already some frames deep, as a unit's or a cache's is.
  const within = (n: number): unknown => n > 0 ? within(n - 1) : canonicalJson(nested(MAX_WALK_DEPTH));
  assert.equal(typeof within(200), "string");
});

for (const depth of DEPTHS) {
  Deno.test(`compareByValue, contentHash, extrasHash and fieldDiff take an object ${depth} levels deep: it differs`, () => {
    const { desired } = setup();
    const replaced = served(desired, depth, "size");
    assert.deepEqual(compareByValue(desired, replaced), { kind: "differs", path: ".spec.size" });
    assert.notEqual(contentHash(replaced), contentHash(written(desired)));
    assert.equal(typeof extrasHash(desired, replaced), "string");
    const changes = fieldDiff(desired, replaced, WIDGET);
    assert.deepEqual(changes.map((c) => [c.op, c.path, c.to]), [["~", ".spec.size", "3"]]);
    assert.ok(changes[0].from!.length <= 60);
    assert.equal(explainedByDefaults(desired, replaced), false);

    const added = served(desired, depth, "extra");
    assert.deepEqual(compareByValue(desired, added), { kind: "extra", path: ".spec.extra" });
    assert.notEqual(extrasHash(desired, added), extrasHash(desired, written(desired)));
    assert.deepEqual(fieldDiff(desired, added, WIDGET).map((c) => [c.op, c.path]), [["-", ".spec.extra"]]);
  });

  Deno.test(`assess and planSyncItem write the item over an object ${depth} levels deep`, () => {
    const { cfg, desired, hash } = setup();
    const target = (observed: CachedObject) => ({
      cfg,
      namespace: NS,
      item: cfg.syncItems[0],
      resource: WIDGET,
      desired,
      hash,
      observed,
    });
    for (const field of ["size", "extra"] as const) {
      // After a restart: no baseline, judged by value.
      const fresh = cached(served(desired, depth, field));
      const { verdict } = assess(desired, hash, fresh);
      assert.equal(verdict.inSync, false, `${field}: not in sync`);
      assert.equal(planSyncItem(target(fresh), view).plan.kind, "update");
      // After espejo's own write (the baseline), a tenant's change: a restore.
      const own = cached(written(desired));
      acceptWritten(own, written(desired), hash);
      const changed = cached(served(desired, depth, field), own);
      const { plan, memo } = planSyncItem(target(changed), view);
      assert.equal(plan.kind, "update");
      assert.equal(plan.kind === "update" && plan.restore, true, `${field}: a restore`);
      remember(changed, memo);
      assert.equal(changed.json, undefined, "judged: the content is dropped");
      const packed = packedObjects.pack(changed);
      assert.ok(packed !== undefined, "the verdict packs");
      const again = packedObjects.unpack(packed, changed.resourceVersion, changed.uid);
      assert.equal(assess(desired, hash, again).verdict.inSync, false, `${field}: still out of sync once packed`);
    }
  });

  Deno.test(`arrivalJudge judges an object ${depth} levels deep as its cache reads it, and keeps no content`, () => {
    const { desired, hash, judge } = setup();
    for (const field of ["size", "extra"] as const) {
      const entry = decodeManaged(
        served(desired, depth, field),
        undefined,
        true,
        true,
        (e, content) => judge(WIDGET, e, NS, "w", content),
      );
      assert.equal(entry.json, undefined);
      assert.equal(entry.contentless, undefined);
      assert.ok(entry.outOfSync, `${field}: an out-of-sync record`);
      assert.equal(assess(desired, hash, entry).verdict.inSync, false);
      assert.ok(packedObjects.pack(entry) !== undefined);
    }
  });

  Deno.test(`a list page and a watch stream carry an object ${depth} levels deep, parsed without recursion`, () => {
    const { desired } = setup();
    const text = canonicalJson(served(desired, depth, "size"));
    const items: unknown[] = [];
    const splitter = new JsonItemSplitter((json) => items.push(JSON.parse(json)));
    const list = `{"kind":"WidgetList","metadata":{"resourceVersion":"42"},"items":[${text},${text}]}`;
    for (let i = 0; i < list.length; i += 4096) splitter.push(list.slice(i, i + 4096));
    assert.deepEqual(splitter.end(), { kind: "WidgetList", metadata: { resourceVersion: "42" } });
    assert.equal(items.length, 2);
    assert.ok(canonicalJson(items[1]) === text);
    const lines = new LineSplitter();
    const events = [...lines.push(`{"type":"MODIFIED","object":${text}}\n`.slice(0, 1000))];
    events.push(...lines.push(`{"type":"MODIFIED","object":${text}}\n`.slice(1000)));
    assert.equal(events.length, 1);
    assert.ok(canonicalJson((JSON.parse(events[0]) as WatchEvent).object) === text);
  });
}

Deno.test("a cache fills with objects nested as deep as the API server takes, and reads on after one on its watch", async () => {
  const { cfg, judge } = setup();
  const at = (depth: number, namespace: string, rv: string) => {
    const o = served(desiredObjectNow(cfg, cfg.syncItems[0], namespace).object, depth, "size", rv);
    o.metadata = { ...o.metadata, uid: `uid-${namespace}` };
    return o;
  };
  const initial: WatchEvent[] = DEPTHS.map((d, i) => ({ type: "ADDED", object: at(d, NAMESPACES[i], `${40 + i}`) }));
  const later: WatchEvent = { type: "MODIFIED", object: at(API_SERVER_MAX_DEPTH, NS, "43") };
  const stop = new AbortController();
  const changed: string[] = [];
  const caches = new ResourceCaches(watchListClient([...initial, later], initial.length, "42"), stop.signal, {
    judge,
    onManagedChange: (ns) => changed.push(ns),
  });
  try {
    const cache = caches.managed(WIDGET);
    // A throw while the initial state is read fails it at every retry: the cache would never sync.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const stuck = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the cache did not sync: ${cache.lastError}`)), 20_000);
    });
    await Promise.race([cache.synced, stuck]).finally(() => clearTimeout(timer));
    // The watch event after the initial state is left to the unit, which reads it: the cache took it.
    for (let i = 0; cache.get(`${NS}/w`)?.resourceVersion !== "43"; i++) {
      assert.ok(i < 1000, "the watch event is stored");
      await new Promise((r) => setTimeout(r, 1));
    }
    assert.equal(cache.size, DEPTHS.length);
    assert.equal(cache.lastError, undefined);
    assert.deepEqual(changed, [NS]);
    for (const ns of NAMESPACES.slice(1)) assert.ok(cache.get(`${ns}/w`)?.outOfSync, `${ns}: judged on arrival`);
    const w = cache.get(`${NS}/w`)!;
    assert.ok(w.json !== undefined || w.large, "kept for the unit to judge, or to read when it judges");
  } finally {
    stop.abort();
  }
});

import assert from "node:assert/strict";
import fc from "fast-check";
import { type CompileResult, compileSyncConfig, keyOf, type SyncConfig } from "../../lib/syncconfig.ts";

type Spec = NonNullable<SyncConfig["spec"]>;

const CM = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cm" }, data: { a: "1" } };

function config(spec: Spec | undefined, metadata: Record<string, unknown> = {}): SyncConfig {
  return {
    apiVersion: "sync.appuio.ch/v1alpha1",
    kind: "SyncConfig",
    metadata: { name: "tenant-defaults", namespace: "espejo", generation: 3, uid: "u-1", ...metadata },
    spec,
  };
}

function compiled(r: CompileResult) {
  assert.ok(r.ok, r.ok ? "" : r.message);
  return r.config;
}

function problem(r: CompileResult): string {
  assert.ok(!r.ok, "expected an invalid SyncConfig");
  return r.message;
}

Deno.test("keyOf is namespace/name", () => {
  assert.equal(keyOf(config({})), "espejo/tenant-defaults");
});

Deno.test("compileSyncConfig compiles a valid spec with its identity, selector and items", () => {
  const c = compiled(compileSyncConfig(config({
    namespaceSelector: { matchNames: ["team-.*"], ignoreNames: ["team-x"] },
    syncItems: [CM],
    deleteItems: [{ apiVersion: "v1", kind: "Secret", name: "old" }],
    forceRecreate: true,
  })));
  assert.equal(c.key, "espejo/tenant-defaults");
  assert.equal(c.namespace, "espejo");
  assert.equal(c.name, "tenant-defaults");
  assert.equal(c.generation, 3);
  assert.equal(c.uid, "u-1");
  assert.equal(c.forceRecreate, true);
  assert.equal(c.selector.selects({ name: "team-a", labels: {} }), true);
  assert.equal(c.selector.selects({ name: "team-x", labels: {} }), false);
  assert.equal(c.selector.selects({ name: "other", labels: {} }), false);
  assert.deepEqual(c.syncItems, [{
    index: 0,
    apiVersion: "v1",
    kind: "ConfigMap",
    name: "cm",
    template: CM,
    problem: undefined,
  }]);
  assert.deepEqual(c.deleteItems, [{ index: 0, apiVersion: "v1", kind: "Secret", name: "old", problem: undefined }]);
});

Deno.test("compileSyncConfig defaults forceRecreate to false and accepts only deleteItems", () => {
  const c = compiled(compileSyncConfig(config({
    namespaceSelector: { labelSelector: { matchLabels: { t: "1" } } },
    deleteItems: [{ apiVersion: "v1", kind: "Secret", name: "old" }],
  })));
  assert.equal(c.forceRecreate, false);
  assert.deepEqual(c.syncItems, []);
});

const PREFIX = "SyncConfig espejo/tenant-defaults: ";

const INVALID: [name: string, spec: Spec | undefined, field: string][] = [
  ["no spec", undefined, ".spec.namespaceSelector"],
  ["no namespaceSelector", { syncItems: [CM] }, ".spec.namespaceSelector"],
  ["an empty namespaceSelector", { namespaceSelector: {}, syncItems: [CM] }, ".spec.namespaceSelector"],
  [
    "an invalid matchNames pattern",
    { namespaceSelector: { matchNames: ["ok", "(bad"] }, syncItems: [CM] },
    ".spec.namespaceSelector.matchNames[1]",
  ],
  [
    "an invalid ignoreNames pattern",
    { namespaceSelector: { matchNames: [".*"], ignoreNames: ["[x"] }, syncItems: [CM] },
    ".spec.namespaceSelector.ignoreNames[0]",
  ],
  [
    "an invalid label operator",
    {
      namespaceSelector: { labelSelector: { matchExpressions: [{ key: "a", operator: "Is" }] } },
      syncItems: [CM],
    },
    ".spec.namespaceSelector.labelSelector.matchExpressions[0].operator",
  ],
  [
    "an invalid matchLabels value",
    { namespaceSelector: { labelSelector: { matchLabels: { a: "b c" } } }, syncItems: [CM] },
    '.spec.namespaceSelector.labelSelector.matchLabels["a"]',
  ],
  ["no items at all", { namespaceSelector: { matchNames: [".*"] } }, ".spec.syncItems and .spec.deleteItems"],
  [
    "empty item lists",
    { namespaceSelector: { matchNames: [".*"] }, syncItems: [], deleteItems: [] },
    ".spec.syncItems and .spec.deleteItems",
  ],
];

for (const [name, spec, field] of INVALID) {
  Deno.test(`compileSyncConfig rejects ${name} with a message naming ${field}`, () => {
    const message = problem(compileSyncConfig(config(spec)));
    assert.ok(message.startsWith(`${PREFIX}${field} `), message);
    assert.ok(!message.endsWith("."), `no trailing period: ${message}`);
  });
}

Deno.test("compileSyncConfig reports the SyncConfig key of an invalid spec", () => {
  const r = compileSyncConfig(config(undefined, { namespace: "ns", name: "n" }));
  assert.equal(r.ok, false);
  assert.equal(r.ok ? "" : r.key, "ns/n");
});

const ITEM_PROBLEMS: [name: string, item: Record<string, unknown>, missing: string][] = [
  ["no apiVersion", { kind: "ConfigMap", metadata: { name: "x" } }, "apiVersion"],
  ["no kind", { apiVersion: "v1", metadata: { name: "x" } }, "kind"],
  ["no metadata", { apiVersion: "v1", kind: "ConfigMap" }, "metadata.name"],
  ["an empty name", { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "" } }, "metadata.name"],
  ["a name that is not a string", { apiVersion: "v1", kind: "ConfigMap", metadata: { name: 7 } }, "metadata.name"],
  ["a kind that is not a string", { apiVersion: "v1", kind: ["x"], metadata: { name: "x" } }, "kind"],
  ["nothing", {}, "apiVersion, kind, metadata.name"],
];

for (const [name, item, missing] of ITEM_PROBLEMS) {
  Deno.test(`compileSyncConfig keeps the config valid for a syncItem with ${name} and marks the item`, () => {
    const c = compiled(compileSyncConfig(config({
      namespaceSelector: { matchNames: [".*"] },
      syncItems: [CM, item],
    })));
    assert.equal(c.syncItems[0].problem, undefined);
    assert.equal(c.syncItems[1].index, 1);
    assert.equal(c.syncItems[1].problem, `.spec.syncItems[1] has no ${missing}`);
  });
}

Deno.test("compileSyncConfig marks a syncItem that is not an object", () => {
  const c = compiled(compileSyncConfig(config({
    namespaceSelector: { matchNames: [".*"] },
    syncItems: ["nonsense" as unknown as Record<string, unknown>],
  })));
  assert.equal(c.syncItems[0].problem, ".spec.syncItems[0] has no apiVersion, kind, metadata.name");
});

const DELETE_PROBLEMS: [name: string, item: Record<string, string>, missing: string][] = [
  ["no apiVersion", { kind: "Secret", name: "x" }, "apiVersion"],
  ["no kind", { apiVersion: "v1", name: "x" }, "kind"],
  ["no name", { apiVersion: "v1", kind: "Secret" }, "name"],
  ["nothing", {}, "apiVersion, kind, name"],
];

for (const [name, item, missing] of DELETE_PROBLEMS) {
  Deno.test(`compileSyncConfig keeps the config valid for a deleteItem with ${name} and marks the item`, () => {
    const c = compiled(compileSyncConfig(config({
      namespaceSelector: { matchNames: [".*"] },
      deleteItems: [{ apiVersion: "v1", kind: "Secret", name: "ok" }, item],
    })));
    assert.equal(c.deleteItems[0].problem, undefined);
    assert.equal(c.deleteItems[1].problem, `.spec.deleteItems[1] has no ${missing}`);
  });
}

const SERVER_METADATA = {
  uid: "abc",
  resourceVersion: "42",
  generation: 5,
  creationTimestamp: "2024-01-01T00:00:00Z",
  deletionTimestamp: "2024-01-02T00:00:00Z",
  deletionGracePeriodSeconds: 30,
  managedFields: [{ manager: "kubectl" }],
  selfLink: "/api/v1/namespaces/x/configmaps/cm",
};

Deno.test("compileSyncConfig strips status and server metadata from item templates", () => {
  const item = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "cm", labels: { a: "b" }, annotations: { c: "d" }, ...SERVER_METADATA },
    data: { k: "v" },
    status: { phase: "Whatever" },
  };
  const c = compiled(compileSyncConfig(config({ namespaceSelector: { matchNames: [".*"] }, syncItems: [item] })));
  assert.deepEqual(c.syncItems[0].template, {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "cm", labels: { a: "b" }, annotations: { c: "d" } },
    data: { k: "v" },
  });
});

Deno.test("compileSyncConfig strips server fields from any item template and leaves the SyncConfig unchanged", () => {
  fc.assert(
    fc.property(
      fc.subarray(Object.keys(SERVER_METADATA)),
      fc.option(fc.jsonValue(), { nil: undefined }),
      fc.dictionary(fc.stringMatching(/^[a-z]{1,5}$/), fc.jsonValue(), { maxKeys: 3 }),
      (serverKeys, status, body) => {
        const metadata: Record<string, unknown> = { name: "cm", namespace: "keep-me" };
        for (const k of serverKeys) metadata[k] = SERVER_METADATA[k as keyof typeof SERVER_METADATA];
        const item: Record<string, unknown> = { ...body, apiVersion: "v1", kind: "ConfigMap", metadata };
        if (status !== undefined) item.status = status;
        const cfg = config({ namespaceSelector: { matchNames: [".*"] }, syncItems: [item] });
        const before = structuredClone(cfg);
        const c = compiled(compileSyncConfig(cfg));
        assert.deepEqual(cfg, before, "input mutated");
        const t = c.syncItems[0].template;
        assert.equal(t.status, undefined);
        for (const k of Object.keys(SERVER_METADATA)) assert.ok(!(k in t.metadata!), `${k} kept`);
        assert.equal(t.metadata?.name, "cm");
        assert.equal(t.metadata?.namespace, "keep-me");
        for (const [k, v] of Object.entries(body)) {
          if (!["apiVersion", "kind", "metadata", "status"].includes(k)) assert.deepEqual(t[k], v);
        }
      },
    ),
  );
});

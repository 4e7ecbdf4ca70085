import assert from "node:assert/strict";
import fc from "fast-check";
import {
  type CompileResult,
  compileSyncConfig,
  keyOf,
  MAX_ITEM_DEPTH,
  type SyncConfig,
} from "../../lib/model/syncconfig.ts";

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
  [
    "a label selector of 2,000 keys",
    {
      namespaceSelector: {
        labelSelector: {
          matchExpressions: Array.from({ length: 2000 }, (_, i) => ({ key: `k${i}`, operator: "DoesNotExist" })),
        },
      },
      syncItems: [CM],
    },
    ".spec.namespaceSelector.labelSelector",
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
  // Not the server's, but never written either: the Go espejo keeps the live object's.
  ownerReferences: [{ apiVersion: "v1", kind: "ConfigMap", name: "owner", uid: "u-owner" }],
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
        for (const k of Object.keys(SERVER_METADATA)) assert.ok(!Object.hasOwn(t.metadata!, k), `${k} kept`);
        assert.equal(t.metadata?.name, "cm");
        assert.equal(t.metadata?.namespace, "keep-me");
        for (const [k, v] of Object.entries(body)) {
          if (!["apiVersion", "kind", "metadata", "status"].includes(k)) assert.deepEqual(t[k], v);
        }
      },
    ),
  );
});

Deno.test("compileSyncConfig never copies an item's ownerReferences into its template", () => {
  const item = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "cm", ownerReferences: SERVER_METADATA.ownerReferences },
    data: { k: "v" },
  };
  const c = compiled(compileSyncConfig(config({ namespaceSelector: { matchNames: [".*"] }, syncItems: [item] })));
  assert.deepEqual(c.syncItems[0].template, {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "cm" },
    data: { k: "v" },
  });
  assert.equal(c.syncItems[0].problem, undefined);
  assert.ok(item.metadata.ownerReferences, "input mutated");
});

/** An object nested `depth` levels deep, counting itself: `{ a: { a: ... "leaf" } }`. */
function nested(depth: number): Record<string, unknown> {
  let value: unknown = "leaf";
  for (let i = 0; i < depth; i++) value = { a: value };
  return value as Record<string, unknown>;
}

for (const depth of [3000, 100_000]) {
  Deno.test(`compileSyncConfig marks only a syncItem nested ${depth} levels deep, without throwing`, () => {
    const deep = { apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "w" }, spec: nested(depth - 1) };
    const c = compiled(compileSyncConfig(config({ namespaceSelector: { matchNames: [".*"] }, syncItems: [CM, deep] })));
    assert.equal(c.syncItems[0].problem, undefined);
    assert.deepEqual(c.syncItems[0].template, CM);
    assert.equal(
      c.syncItems[1].problem,
      `.spec.syncItems[1] is nested ${depth} levels deep, more than the 100 allowed`,
    );
    // The template of a too-deep item is not a copy of it (copying it is what would throw).
    assert.deepEqual(c.syncItems[1].template, {
      apiVersion: "example.com/v1",
      kind: "Widget",
      metadata: { name: "w" },
    });
    assert.equal(c.syncItems[1].name, "w");
  });
}

Deno.test("compileSyncConfig accepts a syncItem nested exactly MAX_ITEM_DEPTH levels deep and refuses one more", () => {
  assert.equal(MAX_ITEM_DEPTH, 100);
  const item = (depth: number) => ({ ...CM, data: undefined, spec: nested(depth - 1) });
  const c = compiled(compileSyncConfig(config({
    namespaceSelector: { matchNames: [".*"] },
    syncItems: [item(MAX_ITEM_DEPTH), item(MAX_ITEM_DEPTH + 1)],
  })));
  assert.equal(c.syncItems[0].problem, undefined);
  assert.deepEqual(c.syncItems[0].template.spec, nested(MAX_ITEM_DEPTH - 1));
  assert.equal(c.syncItems[1].problem, ".spec.syncItems[1] is nested 101 levels deep, more than the 100 allowed");
});

Deno.test("compileSyncConfig counts arrays as levels too", () => {
  let value: unknown = 1;
  for (let i = 0; i < 200; i++) value = [value];
  const c = compiled(compileSyncConfig(config({
    namespaceSelector: { matchNames: [".*"] },
    syncItems: [{ apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "w" }, spec: { list: value } }],
  })));
  assert.equal(c.syncItems[0].problem, ".spec.syncItems[0] is nested 202 levels deep, more than the 100 allowed");
});

const STRING_MAP_PROBLEMS: [name: string, item: Record<string, unknown>, problem: string][] = [
  [
    "a Secret stringData value that is a number",
    { apiVersion: "v1", kind: "Secret", metadata: { name: "s" }, stringData: { user: "u", password: 12345 } },
    '.spec.syncItems[1].stringData["password"] is not a string',
  ],
  [
    "a Secret stringData value that is an object",
    { apiVersion: "v1", kind: "Secret", metadata: { name: "s" }, stringData: { token: { value: "t0p" } } },
    '.spec.syncItems[1].stringData["token"] is not a string',
  ],
  [
    "a Secret data value that is null",
    { apiVersion: "v1", kind: "Secret", metadata: { name: "s" }, data: { key: null } },
    '.spec.syncItems[1].data["key"] is not a string',
  ],
  [
    "a ConfigMap data value that is a boolean",
    { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" }, data: { "enabled": true } },
    '.spec.syncItems[1].data["enabled"] is not a string',
  ],
  [
    "a ConfigMap binaryData value that is a list",
    { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" }, binaryData: { blob: [1, 2] } },
    '.spec.syncItems[1].binaryData["blob"] is not a string',
  ],
  [
    "a Secret stringData that is a list",
    { apiVersion: "v1", kind: "Secret", metadata: { name: "s" }, stringData: ["s3cr3t"] },
    ".spec.syncItems[1].stringData is not an object of strings",
  ],
  [
    "a ConfigMap data that is a string",
    { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" }, data: "k=v" },
    ".spec.syncItems[1].data is not an object of strings",
  ],
];

for (const [name, item, want] of STRING_MAP_PROBLEMS) {
  Deno.test(`compileSyncConfig marks only the item with ${name}, naming the key but not the value`, () => {
    const c = compiled(compileSyncConfig(config({ namespaceSelector: { matchNames: [".*"] }, syncItems: [CM, item] })));
    assert.equal(c.syncItems[0].problem, undefined);
    assert.equal(c.syncItems[1].problem, want);
    for (const secret of ["12345", "t0p", "s3cr3t", "k=v"]) assert.ok(!want.includes(secret));
  });
}

const STRING_MAPS_FINE: [name: string, item: Record<string, unknown>][] = [
  ["a Secret with string data and stringData", {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "s" },
    data: { a: "YQ==" },
    stringData: { b: "b" },
  }],
  ["a Secret with null stringData", { apiVersion: "v1", kind: "Secret", metadata: { name: "s" }, stringData: null }],
  ["a ConfigMap without data", { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" } }],
  ["another group's Secret with a number", {
    apiVersion: "example.com/v1",
    kind: "Secret",
    metadata: { name: "s" },
    stringData: { n: 1 },
  }],
  ["a v1 kind without string maps", { apiVersion: "v1", kind: "Service", metadata: { name: "s" }, data: { n: 1 } }],
];

for (const [name, item] of STRING_MAPS_FINE) {
  Deno.test(`compileSyncConfig accepts ${name}`, () => {
    const c = compiled(compileSyncConfig(config({ namespaceSelector: { matchNames: [".*"] }, syncItems: [item] })));
    assert.equal(c.syncItems[0].problem, undefined);
  });
}

Deno.test("compileSyncConfig treats keys named like Object.prototype members as plain keys", () => {
  // JSON.parse makes "__proto__" an own key, as the API client does; an object literal would set the prototype.
  const item = JSON.parse(`{
    "apiVersion": "v1", "kind": "ConfigMap",
    "metadata": { "name": "cm", "__proto__": { "polluted": "yes" }, "constructor": "c" },
    "data": { "__proto__": "p", "constructor": "c", "toString": "t", "hasOwnProperty": "h" }
  }`);
  const c = compiled(compileSyncConfig(config({ namespaceSelector: { matchNames: [".*"] }, syncItems: [item] })));
  const t = c.syncItems[0].template;
  assert.equal(c.syncItems[0].problem, undefined);
  assert.equal(Object.getPrototypeOf(t.metadata), Object.prototype);
  assert.equal((t.metadata as Record<string, unknown>).polluted, undefined);
  assert.deepEqual(Object.keys(t.metadata!).sort(), ["__proto__", "constructor", "name"]);
  assert.deepEqual(Object.keys(t.data as object).sort(), ["__proto__", "constructor", "hasOwnProperty", "toString"]);
  assert.equal(({} as Record<string, unknown>).polluted, undefined);

  const bad = JSON.parse('{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"stringData":{"toString":7}}');
  const b = compiled(compileSyncConfig(config({ namespaceSelector: { matchNames: [".*"] }, syncItems: [bad] })));
  assert.equal(b.syncItems[0].problem, '.spec.syncItems[0].stringData["toString"] is not a string');

  const odd = JSON.parse('{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"constructor":{}}}');
  const o = compiled(compileSyncConfig(config({ namespaceSelector: { matchNames: [".*"] }, syncItems: [odd] })));
  assert.equal(o.syncItems[0].problem, '.spec.syncItems[0].data["constructor"] is not a string');
});

Deno.test("compileSyncConfig keeps a deleteItem with fields that are not strings valid and marks it", () => {
  const c = compiled(compileSyncConfig(config({
    namespaceSelector: { matchNames: [".*"] },
    deleteItems: [{ apiVersion: "v1", kind: 3, name: "x" }, null] as unknown as Spec["deleteItems"],
  })));
  assert.equal(c.deleteItems[0].problem, ".spec.deleteItems[0] has no kind");
  assert.equal(c.deleteItems[1].problem, ".spec.deleteItems[1] has no apiVersion, kind, name");
});

const BROKEN: [name: string, spec: unknown, part: string][] = [
  ["syncItems that are not a list", { namespaceSelector: { matchNames: [".*"] }, syncItems: "cm" }, ".spec.syncItems"],
  [
    "deleteItems that are not a list",
    { namespaceSelector: { matchNames: [".*"] }, deleteItems: "x" },
    ".spec.deleteItems",
  ],
];

for (const [name, spec, part] of BROKEN) {
  Deno.test(`compileSyncConfig reports ${name} instead of throwing`, () => {
    const message = problem(compileSyncConfig(config(spec as Spec)));
    assert.ok(message.startsWith(`${PREFIX}${part}`), message);
    assert.match(message, / cannot be compiled: TypeError: /);
  });
}

Deno.test("compileSyncConfig reports any exception with the part it was compiling", () => {
  const spec = { syncItems: [CM] };
  Object.defineProperty(spec, "namespaceSelector", {
    get() {
      throw new RangeError("Maximum call stack size exceeded");
    },
  });
  assert.equal(
    problem(compileSyncConfig(config(spec))),
    `${PREFIX}.spec.namespaceSelector cannot be compiled: RangeError: Maximum call stack size exceeded`,
  );
});

Deno.test("compileSyncConfig reports an invalid labelSelector shape as a selector problem", () => {
  const message = problem(compileSyncConfig(config({
    namespaceSelector: { labelSelector: { matchExpressions: "x" as unknown as [] } },
    syncItems: [CM],
  })));
  assert.equal(message, `${PREFIX}.spec.namespaceSelector.labelSelector.matchExpressions must be a list`);
});

Deno.test("compileSyncConfig never throws, whatever the spec", () => {
  fc.assert(
    fc.property(
      fc.record({
        namespaceSelector: fc.oneof(fc.constant({ matchNames: [".*"] }), fc.jsonValue()),
        syncItems: fc.oneof(fc.array(fc.jsonValue(), { maxLength: 3 }), fc.jsonValue()),
        deleteItems: fc.oneof(fc.array(fc.jsonValue(), { maxLength: 3 }), fc.jsonValue()),
        forceRecreate: fc.jsonValue(),
      }, { requiredKeys: [] }),
      (spec) => {
        const r = compileSyncConfig(config(spec as Spec));
        assert.equal(typeof r.ok, "boolean");
        if (!r.ok) assert.ok(r.message.startsWith(PREFIX), r.message);
      },
    ),
    { numRuns: 500 },
  );
});

Deno.test("compileSyncConfig keeps the last of two items naming the same object and fails the earlier one", () => {
  const config_ = compiled(compileSyncConfig(config({
    namespaceSelector: { matchNames: ["x"] },
    syncItems: [
      { apiVersion: "networking.k8s.io/v1beta1", kind: "NetworkPolicy", metadata: { name: "deny" } },
      { ...CM, metadata: { name: "cm-${PROJECT_NAME}" } },
      { apiVersion: "networking.k8s.io/v1", kind: "NetworkPolicy", metadata: { name: "deny" } },
      { ...CM, metadata: { name: "cm-${PROJECT_NAME}" }, data: { a: "2" } },
      { ...CM, metadata: { name: "other" } },
      { apiVersion: "example.com/v1", kind: "ConfigMap", metadata: { name: "other" } },
    ],
  })));
  assert.deepEqual(config_.syncItems.map((i) => i.problem), [
    ".spec.syncItems[0] (NetworkPolicy deny) names the same object as .spec.syncItems[2], which is synced instead " +
    "(both would be written on every pass)",
    ".spec.syncItems[1] (ConfigMap cm-${PROJECT_NAME}) names the same object as .spec.syncItems[3], which is " +
    "synced instead (both would be written on every pass)",
    undefined,
    undefined,
    undefined,
    undefined,
  ]);
});

Deno.test("compileSyncConfig does not let an item with a problem shadow a valid one", () => {
  const config_ = compiled(compileSyncConfig(config({
    namespaceSelector: { matchNames: ["x"] },
    syncItems: [CM, { ...CM, data: { a: 1 } }],
  })));
  assert.equal(config_.syncItems[0].problem, undefined);
  assert.match(config_.syncItems[1].problem ?? "", /data\["a"\] is not a string/);
});

Deno.test("compileSyncConfig: an item spelled apiVersion /v1 is compiled as v1, so every check by spelling sees one", () => {
  const r = compileSyncConfig({
    metadata: { namespace: "espejo", name: "slash" },
    spec: {
      namespaceSelector: { matchNames: ["a"] },
      syncItems: [{ apiVersion: "/v1", kind: "Secret", metadata: { name: "s" }, stringData: { k: 1 } }],
      deleteItems: [{ apiVersion: "/v1", kind: "Secret", name: "old" }],
    },
  } as unknown as SyncConfig);
  assert.ok(r.ok);
  const [item] = r.config.syncItems;
  assert.equal(item.apiVersion, "v1");
  assert.equal(item.template.apiVersion, "v1");
  assert.match(item.problem ?? "", /stringData/, "the string-map check of core Secrets applies");
  assert.equal(r.config.deleteItems[0].apiVersion, "v1");
});

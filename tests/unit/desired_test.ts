import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import fc from "fast-check";
import { desiredObject, desiredObjectNow, normalizeWriteOnlyFields, rendered } from "../../lib/sync/desired.ts";
import { hashOfNow } from "../../lib/kube/objects.ts";
import { type CompiledSyncConfig, compileSyncConfig, type SyncItemSpec } from "../../lib/model/syncconfig.ts";
import type { KubeObject } from "../../lib/kube/objects.ts";
import { HASH_ANNOTATION, MANAGED_LABEL, MANAGED_LABEL_VALUE, OWNER_ANNOTATION } from "../../lib/model/markers.ts";

Deno.test("the marker label and annotations are espejo's", () => {
  assert.equal(MANAGED_LABEL, "sync.appuio.ch/managed-by");
  assert.equal(MANAGED_LABEL_VALUE, "espejo");
  assert.equal(OWNER_ANNOTATION, "sync.appuio.ch/owner");
  assert.equal(HASH_ANNOTATION, "sync.appuio.ch/desired-hash");
});

/** Compiles a SyncConfig espejo/tenant with the given syncItems, as the controller does. */
function compile(items: Record<string, unknown>[]): CompiledSyncConfig {
  const r = compileSyncConfig({
    metadata: { namespace: "espejo", name: "tenant", generation: 1, uid: "u" },
    spec: { namespaceSelector: { matchNames: [".*"] }, syncItems: items },
  });
  assert.ok(r.ok, r.ok ? "" : r.message);
  return r.config;
}

async function desiredOf(item: Record<string, unknown>, namespace = "team-a") {
  const cfg = compile([item]);
  return await desiredObject(cfg, cfg.syncItems[0], namespace);
}

const base64 = (s: string) => Buffer.from(s, "utf8").toString("base64");

// ---------------------------------------------------------------------------------------------------------------
// normalizeWriteOnlyFields

Deno.test("normalizeWriteOnlyFields turns Secret stringData into base64 data", () => {
  const s: KubeObject = { apiVersion: "v1", kind: "Secret", stringData: { user: "admin", pw: "\u00e4\u20ac", e: "" } };
  normalizeWriteOnlyFields(s);
  assert.deepEqual(s, {
    apiVersion: "v1",
    kind: "Secret",
    data: { user: "YWRtaW4=", pw: "w6Tigqw=", e: "" }, // UTF-8 bytes c3 a4 e2 82 ac
  });
});

Deno.test("normalizeWriteOnlyFields merges stringData into data, stringData winning", () => {
  const s: KubeObject = {
    apiVersion: "v1",
    kind: "Secret",
    data: { keep: "a2VlcA==", both: "b2xk" },
    stringData: { both: "new" },
  };
  normalizeWriteOnlyFields(s);
  assert.deepEqual(s.data, { keep: "a2VlcA==", both: "bmV3" });
  assert.equal("stringData" in s, false);
});

const UNTOUCHED: [name: string, object: KubeObject][] = [
  ["a Secret without stringData", { apiVersion: "v1", kind: "Secret", data: { a: "YQ==" } }],
  ["a ConfigMap with a stringData field", { apiVersion: "v1", kind: "ConfigMap", stringData: { a: "b" } }],
  ["a Secret of another group", { apiVersion: "example.com/v1", kind: "Secret", stringData: { a: "b" } }],
];

for (const [name, object] of UNTOUCHED) {
  Deno.test(`normalizeWriteOnlyFields leaves ${name} alone`, () => {
    const copy = structuredClone(object);
    normalizeWriteOnlyFields(copy);
    assert.deepEqual(copy, object);
  });
}

Deno.test("normalizeWriteOnlyFields encodes any string as the server would (UTF-8, base64)", () => {
  fc.assert(
    fc.property(fc.dictionary(fc.stringMatching(/^[-._a-zA-Z0-9]{1,10}$/), fc.string({ unit: "grapheme" })), (sd) => {
      const s: KubeObject = { apiVersion: "v1", kind: "Secret", stringData: { ...sd } };
      normalizeWriteOnlyFields(s);
      assert.deepEqual(s.data, Object.fromEntries(Object.entries(sd).map(([k, v]) => [k, base64(v)])));
      assert.equal(s.stringData, undefined);
    }),
  );
});

// ---------------------------------------------------------------------------------------------------------------
// desiredObject

const ROLE = {
  apiVersion: "rbac.authorization.k8s.io/v1",
  kind: "RoleBinding",
  metadata: {
    name: "${PROJECT_NAME}-admins",
    namespace: "somewhere-else",
    labels: { team: "${PROJECT_NAME}", [MANAGED_LABEL]: "someone" },
    annotations: { note: "for ${PROJECT_NAME}" },
  },
  subjects: [{ kind: "Group", name: "${PROJECT_NAME}-admins" }],
  roleRef: { kind: "ClusterRole", name: "admin", apiGroup: "rbac.authorization.k8s.io" },
};

Deno.test("desiredObject renders the template for the namespace and marks it as ours", async () => {
  const { object, hash } = await desiredOf(ROLE, "team-a");
  assert.match(hash, /^[0-9a-f]{24}$/);
  assert.deepEqual(object, {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
    metadata: {
      name: "team-a-admins",
      namespace: "team-a",
      labels: { team: "team-a", [MANAGED_LABEL]: MANAGED_LABEL_VALUE },
      annotations: { note: "for team-a", [OWNER_ANNOTATION]: "espejo/tenant", [HASH_ANNOTATION]: hash },
    },
    subjects: [{ kind: "Group", name: "team-a-admins" }],
    roleRef: { kind: "ClusterRole", name: "admin", apiGroup: "rbac.authorization.k8s.io" },
  });
});

Deno.test("desiredObject adds labels and annotations to a template without metadata maps", async () => {
  const { object, hash } = await desiredOf({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cm" } });
  assert.deepEqual(object.metadata, {
    name: "cm",
    namespace: "team-a",
    labels: { [MANAGED_LABEL]: MANAGED_LABEL_VALUE },
    annotations: { [OWNER_ANNOTATION]: "espejo/tenant", [HASH_ANNOTATION]: hash },
  });
});

Deno.test("desiredObject normalizes Secret stringData before hashing", async () => {
  const withStringData = await desiredOf({
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "s" },
    stringData: { token: "${PROJECT_NAME}-secret" },
  });
  assert.equal(withStringData.object.stringData, undefined);
  assert.deepEqual(withStringData.object.data, { token: base64("team-a-secret") });
  // The same Secret written with data gives the same object, so the hash does not depend on the spelling.
  const withData = await desiredOf({
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "s" },
    data: { token: base64("team-a-secret") },
  });
  assert.equal(withStringData.hash, withData.hash);
  assert.deepEqual(withStringData.object, withData.object);
});

Deno.test("desiredObject leaves the compiled item template unchanged", async () => {
  const cfg = compile([ROLE]);
  const item: SyncItemSpec = cfg.syncItems[0];
  const before = structuredClone(item.template);
  await desiredObject(cfg, item, "team-a");
  await desiredObject(cfg, item, "team-b");
  assert.deepEqual(item.template, before);
});

Deno.test("desiredObject hash ignores key order in the template", async () => {
  const a = await desiredOf({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "cm" },
    data: { x: "1", y: "2" },
  });
  const b = await desiredOf({
    data: { y: "2", x: "1" },
    metadata: { name: "cm" },
    kind: "ConfigMap",
    apiVersion: "v1",
  });
  assert.equal(a.hash, b.hash);
});

Deno.test("desiredObject hash changes with the owning SyncConfig", async () => {
  const item = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cm" } };
  const a = compile([item]);
  const b = { ...a, key: "espejo/other" };
  const ha = (await desiredObject(a, a.syncItems[0], "ns")).hash;
  const hb = (await desiredObject(b, a.syncItems[0], "ns")).hash;
  assert.notEqual(ha, hb);
});

const data = fc.dictionary(fc.stringMatching(/^[a-z]{1,6}$/), fc.string({ maxLength: 10 }), { maxKeys: 4 });
const ns = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?$/);
const cmOf = (d: Record<string, string>) => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name: "cm" },
  data: d,
});

Deno.test("desiredObject gives the same object and hash for the same input", async () => {
  await fc.assert(
    fc.asyncProperty(data, ns, async (d, namespace) => {
      const a = await desiredOf(cmOf(d), namespace);
      const b = await desiredOf(structuredClone(cmOf(d)), namespace);
      assert.equal(a.hash, b.hash);
      assert.deepEqual(a.object, b.object);
      assert.equal(a.object.metadata?.annotations?.[HASH_ANNOTATION], a.hash);
    }),
  );
});

Deno.test("desiredObject gives different hashes for different namespaces or data", async () => {
  await fc.assert(
    fc.asyncProperty(data, data, ns, ns, async (d1, d2, ns1, ns2) => {
      fc.pre(ns1 !== ns2 || JSON.stringify(Object.entries(d1).sort()) !== JSON.stringify(Object.entries(d2).sort()));
      const a = await desiredOf(cmOf(d1), ns1);
      const b = await desiredOf(cmOf(d2), ns2);
      assert.notEqual(a.hash, b.hash);
    }),
  );
});

// ---------------------------------------------------------------------------------------------------------------
// The item's text (lib/sync/desired_text.ts) stands for rendering

/** JSON values whose strings hold `${PROJECT_NAME}` here and there, keys too (which are never rendered). */
const withPlaceholders = fc.letrec((tie) => ({
  text: fc.oneof(
    fc.string(),
    fc.constantFrom("${PROJECT_NAME}", "x-${PROJECT_NAME}-y", "${PROJECT_NAME}${PROJECT_NAME}", "0", "__proto__"),
  ),
  value: fc.oneof(
    { depthSize: "small" },
    tie("text"),
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(tie("text") as fc.Arbitrary<string>, tie("value"), { maxKeys: 4 }),
  ),
}));

Deno.test("desiredObject: from the item's text, the same object and hash as rendered, in any namespace", () => {
  fc.assert(
    fc.property(
      fc.dictionary(withPlaceholders.text as fc.Arbitrary<string>, withPlaceholders.value, { maxKeys: 5 }),
      fc.constantFrom("ConfigMap", "Secret"),
      fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?$/),
      (fields, kind, namespace) => {
        const { apiVersion: _a, kind: _k, metadata: _m, ...rest } = fields;
        const cfg = compile([{
          apiVersion: "v1",
          kind,
          metadata: { name: "x", labels: { a: "${PROJECT_NAME}" } },
          ...rest,
        }]);
        const item = cfg.syncItems[0];
        for (const ns of [namespace, "other", namespace]) {
          const slow = rendered(cfg, item, ns);
          const { object, hash } = desiredObjectNow(cfg, item, ns);
          assert.equal(hash, hashOfNow(slow));
          const { [HASH_ANNOTATION]: written, ...annotations } = object.metadata!.annotations!;
          assert.equal(written, hash);
          // Compared as JSON, all the desired object is ever turned into: -0 in an item is written 0 either way.
          const asJson = (v: unknown) => JSON.parse(JSON.stringify(v));
          assert.deepEqual(asJson({ ...object, metadata: { ...object.metadata, annotations } }), asJson(slow));
        }
      },
    ),
    { numRuns: 300 },
  );
});

Deno.test("desiredObject: where the item's text cannot stand for rendering, it is rendered", () => {
  const cases: [Record<string, unknown>, string][] = [
    [
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "x" }, data: { a: "ESPEJO_NAMESPACE_STAND_IN_5e1f" } },
      "team-a",
    ],
    [{ apiVersion: "v1", kind: "Secret", metadata: { name: "x" }, stringData: { a: "${PROJECT_NAME}" } }, "team-a"],
    [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "x" }, data: { a: "${PROJECT_NAME}" } }, "Team_A"],
  ];
  for (const [item, ns] of cases) {
    const cfg = compile([item]);
    const slow = rendered(cfg, cfg.syncItems[0], ns);
    const { object, hash } = desiredObjectNow(cfg, cfg.syncItems[0], ns);
    assert.equal(hash, hashOfNow(slow));
    delete object.metadata!.annotations![HASH_ANNOTATION];
    assert.deepEqual(object, slow);
  }
});

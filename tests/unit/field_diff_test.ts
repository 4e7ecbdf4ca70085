/** The fields `espejo plan` shows for an update (lib/model/field_diff.ts). */
import assert from "node:assert/strict";
import type { KubeObject } from "../../lib/kube/objects.ts";
import { fieldDiff, formatChange } from "../../lib/model/field_diff.ts";
import { CREATED_ANNOTATION, HASH_ANNOTATION } from "../../lib/model/markers.ts";

/** The resources espejo's resolver finds for a ConfigMap and a Secret item (lib/kube/discovery.ts). */
const CONFIGMAPS = { group: "", resource: "configmaps" };
const SECRETS = { group: "", resource: "secrets" };

const cm = (data: Record<string, string>, annotations: Record<string, string> = {}): KubeObject => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name: "a", namespace: "n", annotations },
  data,
});

Deno.test("fieldDiff: changed, added and removed leaves, one line each", () => {
  const lines = fieldDiff(cm({ a: "2", b: "new" }), cm({ a: "1", c: "old" }), CONFIGMAPS).map(formatChange);
  assert.deepEqual(lines, ['~ .data.a: "1" -> "2"', '+ .data.b: "new"', '- .data.c: "old"']);
});

Deno.test("fieldDiff: server-owned metadata and espejo's hash and creation markers are not changes", () => {
  const observed = cm({ a: "1" }, { [HASH_ANNOTATION]: "old", [CREATED_ANNOTATION]: "espejo/cfg" });
  observed.metadata!.resourceVersion = "7";
  observed.metadata!.uid = "u";
  assert.deepEqual(fieldDiff(cm({ a: "1" }, { [HASH_ANNOTATION]: "new" }), observed, CONFIGMAPS), []);
});

Deno.test("fieldDiff: a Secret's values are never shown, only that they differ, as kubectl diff masks them", () => {
  const secret = (data: Record<string, string>): KubeObject => ({ ...cm({}), kind: "Secret", data });
  const lines = fieldDiff(
    secret({ token: "czNjcjN0", added: "eA==" }),
    secret({ token: "b2xk", gone: "eQ==" }),
    SECRETS,
  )
    .map(formatChange);
  assert.deepEqual(lines, [
    "~ .data.token: *** (before) -> *** (after)",
    "+ .data.added: ***",
    "- .data.gone: ***",
  ]);
  for (const l of lines) assert.doesNotMatch(l, /czNjcjN0|b2xk|eA==|eQ==/);
});

const LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration";
const applied = JSON.stringify({ apiVersion: "v1", kind: "Secret", stringData: { password: "hunter2" } });

/** Secrets whose values sit in parts that are added or removed as a whole: each key is listed, no value. */
const WHOLE: [name: string, desired: KubeObject, observed: KubeObject, lines: string[]][] = [
  [
    "data the item does not set",
    { apiVersion: "v1", kind: "Secret", metadata: { name: "s" } },
    { apiVersion: "v1", kind: "Secret", metadata: { name: "s" }, data: { password: "aHVudGVyMg==", user: "YQ==" } },
    ["- .data.password: ***", "- .data.user: ***"],
  ],
  [
    "data the live object lacks",
    { apiVersion: "v1", kind: "Secret", metadata: { name: "s" }, data: { password: "aHVudGVyMg==" } },
    { apiVersion: "v1", kind: "Secret", metadata: { name: "s" } },
    ["+ .data.password: ***"],
  ],
  [
    "stringData (an item not normalized)",
    { apiVersion: "v1", kind: "Secret", metadata: { name: "s" }, stringData: { password: "hunter2" } },
    { apiVersion: "v1", kind: "Secret", metadata: { name: "s" } },
    ["+ .stringData.password: ***"],
  ],
  [
    "kubectl apply's annotation",
    { apiVersion: "v1", kind: "Secret", metadata: { name: "s", annotations: { a: "1" } } },
    { apiVersion: "v1", kind: "Secret", metadata: { name: "s", annotations: { a: "1", [LAST_APPLIED]: applied } } },
    [`- .metadata.annotations.${LAST_APPLIED}: ***`],
  ],
  [
    "every annotation, when the item sets none",
    { apiVersion: "v1", kind: "Secret", metadata: { name: "s" } },
    { apiVersion: "v1", kind: "Secret", metadata: { name: "s", annotations: { [LAST_APPLIED]: applied, b: "x" } } },
    [`- .metadata.annotations.${LAST_APPLIED}: ***`, "- .metadata.annotations.b: ***"],
  ],
  [
    "a changed annotation",
    { apiVersion: "v1", kind: "Secret", metadata: { name: "s", annotations: { [LAST_APPLIED]: "{}" } } },
    { apiVersion: "v1", kind: "Secret", metadata: { name: "s", annotations: { [LAST_APPLIED]: applied } } },
    [`~ .metadata.annotations.${LAST_APPLIED}: *** (before) -> *** (after)`],
  ],
  [
    "data that is not an object",
    { apiVersion: "v1", kind: "Secret", metadata: { name: "s" }, data: "hunter2" },
    { apiVersion: "v1", kind: "Secret", metadata: { name: "s" }, data: { password: "aHVudGVyMg==" } },
    ["~ .data: *** (before) -> *** (after)"],
  ],
  [
    "objects that name no kind, as lists return them",
    { metadata: { name: "s" } },
    { metadata: { name: "s" }, data: { password: "aHVudGVyMg==" } },
    ["- .data.password: ***"],
  ],
  [
    "objects whose apiVersion is spelled /v1, which the resolver admits as core v1",
    { apiVersion: "/v1", kind: "Secret", metadata: { name: "s" } },
    { apiVersion: "/v1", kind: "Secret", metadata: { name: "s", annotations: { [LAST_APPLIED]: applied } } },
    [`- .metadata.annotations.${LAST_APPLIED}: ***`],
  ],
  [
    "objects that claim to be another kind",
    { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "s" }, data: "hunter2" },
    { apiVersion: "example.com/v1", kind: "NotASecret", metadata: { name: "s" }, data: { password: "aHVudGVyMg==" } },
    ["~ .data: *** (before) -> *** (after)"],
  ],
];
for (const [name, desired, observed, lines] of WHOLE) {
  Deno.test(`fieldDiff: a Secret's ${name}: key by key, values masked`, () => {
    const got = fieldDiff(desired, observed, SECRETS).map(formatChange);
    assert.deepEqual(got, lines);
    assert.doesNotMatch(got.join("\n"), /hunter2|aHVudGVy/);
  });
}

Deno.test("fieldDiff: a Secret's type, labels and immutable are shown as for any object", () => {
  const s = (type: string, labels: Record<string, string>): KubeObject => ({
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "s", labels },
    type,
  });
  assert.deepEqual(
    fieldDiff({ ...s("Opaque", { a: "1" }), immutable: true }, s("kubernetes.io/tls", {}), SECRETS).map(formatChange),
    [
      '~ .type: "kubernetes.io/tls" -> "Opaque"',
      "+ .immutable: true",
      '+ .metadata.labels.a: "1"',
    ],
  );
});

Deno.test("fieldDiff: a ConfigMap's data and annotations are shown (only Secrets are masked)", () => {
  assert.deepEqual(
    fieldDiff(
      { ...cm({}, { x: "1" }), data: {} },
      { ...cm({ a: "1" }), metadata: { name: "a", namespace: "n" } },
      CONFIGMAPS,
    ).map(formatChange),
    ['- .data.a: "1"', '+ .metadata.annotations: {"x":"1"}'],
  );
});

Deno.test("fieldDiff: long values are cut", () => {
  const [change] = fieldDiff(cm({ a: "x".repeat(500) }), cm({ a: "y" }), CONFIGMAPS);
  assert.ok(change.to!.length <= 60 && change.to!.endsWith("..."));
});

Deno.test("fieldDiff: the resource decides, not the objects' apiVersion or kind; not resolved masks (fails closed)", () => {
  const secretLike = (data: Record<string, string>): KubeObject => ({ ...cm(data), kind: "Secret" });
  const d = secretLike({ password: "bmV3" });
  const o = secretLike({ password: "aHVudGVyMg==" });
  const masked = ["~ .data.password: *** (before) -> *** (after)"];
  assert.deepEqual(fieldDiff(d, o, SECRETS).map(formatChange), masked);
  assert.deepEqual(fieldDiff(d, o, undefined).map(formatChange), masked);
  assert.deepEqual(fieldDiff(cm({ a: "x" }), cm({ a: "y" }), undefined).map(formatChange), [
    "~ .data.a: *** (before) -> *** (after)",
  ]);
});

/** The fields `espejo plan` shows for an update (lib/model/field_diff.ts). */
import assert from "node:assert/strict";
import type { KubeObject } from "../../lib/kube/objects.ts";
import { CREATED_ANNOTATION, HASH_ANNOTATION } from "../../lib/model/drift.ts";
import { fieldDiff, formatChange } from "../../lib/model/field_diff.ts";

const cm = (data: Record<string, string>, annotations: Record<string, string> = {}): KubeObject => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name: "a", namespace: "n", annotations },
  data,
});

Deno.test("fieldDiff: changed, added and removed leaves, one line each", () => {
  const lines = fieldDiff(cm({ a: "2", b: "new" }), cm({ a: "1", c: "old" })).map(formatChange);
  assert.deepEqual(lines, ['~ .data.a: "1" -> "2"', '+ .data.b: "new"', '- .data.c: "old"']);
});

Deno.test("fieldDiff: server-owned metadata and espejo's hash and creation markers are not changes", () => {
  const observed = cm({ a: "1" }, { [HASH_ANNOTATION]: "old", [CREATED_ANNOTATION]: "espejo/cfg" });
  observed.metadata!.resourceVersion = "7";
  observed.metadata!.uid = "u";
  assert.deepEqual(fieldDiff(cm({ a: "1" }, { [HASH_ANNOTATION]: "new" }), observed), []);
});

Deno.test("fieldDiff: a Secret's values are never shown, only that they differ", () => {
  const secret = (data: Record<string, string>): KubeObject => ({ ...cm({}), kind: "Secret", data });
  const lines = fieldDiff(secret({ token: "czNjcjN0", added: "eA==" }), secret({ token: "b2xk", gone: "eQ==" }))
    .map(formatChange);
  assert.deepEqual(lines, [
    "~ .data.token: (a secret value) -> (a secret value)",
    "+ .data.added: (a secret value)",
    "- .data.gone: (a secret value)",
  ]);
  for (const l of lines) assert.doesNotMatch(l, /czNjcjN0|b2xk|eA==|eQ==/);
});

Deno.test("fieldDiff: long values are cut", () => {
  const [change] = fieldDiff(cm({ a: "x".repeat(500) }), cm({ a: "y" }));
  assert.ok(change.to!.length <= 60 && change.to!.endsWith("..."));
});

import assert from "node:assert/strict";
import fc from "fast-check";
import { driftOf, FIELD_MANAGER, foreignFields, HASH_ANNOTATION } from "../../lib/drift.ts";
import type { KubeObject, ManagedFieldsEntry } from "../../lib/objects.ts";
import { decodeManaged, driftOfCached, OWNER_ANNOTATION } from "../../lib/resource_caches.ts";

const HASH = "0123456789abcdef01234567";

function served(data: Record<string, string>, managedFields: ManagedFieldsEntry[], hash = HASH): KubeObject {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: "obj",
      namespace: "ns",
      resourceVersion: "42",
      uid: "5f0c6c2e-0000-4000-8000-000000000000",
      annotations: { [OWNER_ANNOTATION]: "espejo/cfg", [HASH_ANNOTATION]: hash },
      managedFields,
    },
    data,
  };
}

const entry = (manager: string, fieldsV1: Record<string, unknown>): ManagedFieldsEntry =>
  ({ manager, operation: "Update", fieldsType: "FieldsV1", fieldsV1 }) as ManagedFieldsEntry;

Deno.test("decodeManaged keeps the markers and the content, and drops managedFields", () => {
  const raw = served({ a: "1" }, [
    entry(FIELD_MANAGER, { "f:data": { "f:a": {} } }),
    entry("kubectl-edit", { "f:data": { "f:b": {} } }),
  ]);
  const cached = decodeManaged(raw);
  assert.equal(cached.resourceVersion, "42");
  assert.equal(cached.desiredHash, HASH);
  assert.equal(cached.owner, "espejo/cfg");
  assert.deepEqual(cached.foreign, [{ "f:data": { "f:b": {} } }]);
  const content = JSON.parse(cached.json!);
  assert.equal(content.metadata.managedFields, undefined);
  assert.deepEqual(content.data, { a: "1" });
  assert.equal(raw.metadata?.managedFields?.length, 2, "the input is not modified");
});

Deno.test("driftOfCached decides as driftOf does on the full object", () => {
  const data = fc.dictionary(fc.constantFrom("a", "b", "c"), fc.constantFrom("1", "2"));
  const managers = fc.array(
    fc.record({
      manager: fc.constantFrom(FIELD_MANAGER, "kubectl-edit", "helm"),
      keys: fc.subarray(["a", "b", "c"]),
    }),
    { maxLength: 3 },
  );
  fc.assert(fc.property(data, data, managers, fc.boolean(), (want, have, owners, sameHash) => {
    const desired: KubeObject = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "obj", namespace: "ns", annotations: { [OWNER_ANNOTATION]: "espejo/cfg" } },
      data: want,
    };
    const managedFields = owners.map((o) =>
      entry(o.manager, { "f:data": Object.fromEntries(o.keys.map((k) => [`f:${k}`, {}])) })
    );
    const raw = served(have, managedFields, sameHash ? HASH : "another");
    const { managedFields: _, ...metadata } = raw.metadata!;
    const full = { object: { ...raw, metadata }, foreign: foreignFields(managedFields) };
    assert.equal(driftOfCached(desired, HASH, decodeManaged(raw)), driftOf(desired, HASH, full));
  }));
});

Deno.test("driftOfCached keeps only the verdict once a version was found in sync", () => {
  const desired: KubeObject = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "obj", namespace: "ns", annotations: { [OWNER_ANNOTATION]: "espejo/cfg" } },
    data: { a: "1" },
  };
  const inSync = decodeManaged(served({ a: "1" }, [entry(FIELD_MANAGER, { "f:data": { "f:a": {} } })]));
  assert.equal(driftOfCached(desired, HASH, inSync), undefined);
  assert.equal(inSync.json, undefined, "the content is dropped");
  assert.equal(driftOfCached(desired, HASH, inSync), undefined, "the verdict stands for this version");
  assert.equal(driftOfCached(desired, "another", inSync), "desired state changed");

  const drifted = decodeManaged(served({}, [entry(FIELD_MANAGER, {})]));
  assert.equal(driftOfCached(desired, HASH, drifted), ".data.a was removed");
  assert.ok(drifted.json, "content is kept while the object differs");
  assert.equal(driftOfCached(desired, HASH, drifted), ".data.a was removed");
});

/**
 * Pins deploy/crds/sync.appuio.ch_syncconfigs.yaml to the interface of vshn/espejo v0.5.0 (controller-gen v0.15.0
 * output for api/v1alpha1/syncconfig_types.go): a weaker schema applied over espejo's would loosen validation on a
 * live cluster, a stricter one would reject SyncConfigs espejo accepts. Descriptions are ours and not compared; every
 * other keyword is, in the full expectation below and again in the named tests for the facts that matter most.
 */
import assert from "node:assert/strict";
import { parseAllDocuments } from "yaml";
import { invalidStatus, Reasons, syncedStatus } from "../../lib/model/status.ts";
import type { SyncConfig } from "../../lib/model/syncconfig_types.ts";

// deno-lint-ignore no-explicit-any
type Schema = any;

const crdText = await Deno.readTextFile(new URL("../../deploy/crds/sync.appuio.ch_syncconfigs.yaml", import.meta.url));
const docs = parseAllDocuments(crdText);
const crd: Schema = Array.isArray(docs) && docs.length === 1 ? docs[0].toJS() : undefined;
const version: Schema = crd?.spec?.versions?.[0];
const root: Schema = version?.schema?.openAPIV3Schema;
const spec: Schema = root?.properties?.spec;
const status: Schema = root?.properties?.status;
const selector: Schema = spec?.properties?.namespaceSelector?.properties?.labelSelector;
const condition: Schema = status?.properties?.conditions?.items;

/** `s` without its descriptions, at any depth (a property named `description` would be kept). */
function withoutDescriptions(s: Schema, inProperties = false): Schema {
  if (Array.isArray(s)) return s.map((x) => withoutDescriptions(x));
  if (!s || typeof s !== "object") return s;
  const out: Schema = {};
  for (const [k, v] of Object.entries(s)) {
    if (k === "description" && !inProperties) continue;
    out[k] = withoutDescriptions(v, k === "properties" && !inProperties);
  }
  return out;
}

const str = { type: "string" };
const strings = { type: "array", items: str };
const count = { type: "integer", format: "int64" };

/** The v1alpha1 openAPIV3Schema of espejo v0.5.0, descriptions left out. */
const EXPECTED_SCHEMA = {
  type: "object",
  properties: {
    apiVersion: str,
    kind: str,
    metadata: { type: "object" },
    spec: {
      type: "object",
      properties: {
        deleteItems: {
          type: "array",
          items: { type: "object", properties: { apiVersion: str, kind: str, name: str } },
        },
        forceRecreate: { type: "boolean" },
        namespaceSelector: {
          type: "object",
          properties: {
            ignoreNames: strings,
            labelSelector: {
              type: "object",
              "x-kubernetes-map-type": "atomic",
              properties: {
                matchExpressions: {
                  type: "array",
                  "x-kubernetes-list-type": "atomic",
                  items: {
                    type: "object",
                    required: ["key", "operator"],
                    properties: {
                      key: str,
                      operator: str,
                      values: { ...strings, "x-kubernetes-list-type": "atomic" },
                    },
                  },
                },
                matchLabels: { type: "object", additionalProperties: str },
              },
            },
            matchNames: strings,
          },
        },
        syncItems: {
          type: "array",
          items: {
            type: "object",
            "x-kubernetes-embedded-resource": true,
            "x-kubernetes-preserve-unknown-fields": true,
          },
        },
      },
    },
    status: {
      type: "object",
      required: ["deletedItemCount", "failedItemCount", "synchronizedItemCount"],
      properties: {
        conditions: {
          type: "array",
          items: {
            type: "object",
            required: ["lastTransitionTime", "message", "reason", "status", "type"],
            properties: {
              lastTransitionTime: { type: "string", format: "date-time" },
              message: { type: "string", maxLength: 32768 },
              observedGeneration: { type: "integer", format: "int64", minimum: 0 },
              reason: {
                type: "string",
                minLength: 1,
                maxLength: 1024,
                pattern: "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
              },
              status: { type: "string", enum: ["True", "False", "Unknown"] },
              type: {
                type: "string",
                maxLength: 316,
                pattern:
                  "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
              },
            },
          },
        },
        deletedItemCount: count,
        failedItemCount: count,
        synchronizedItemCount: count,
      },
    },
  },
};

Deno.test("the CRD file holds exactly one CustomResourceDefinition", () => {
  assert.ok(Array.isArray(docs) && docs.length === 1, "one YAML document");
  assert.deepEqual(docs[0].errors, []);
  assert.equal(crd.apiVersion, "apiextensions.k8s.io/v1");
  assert.equal(crd.kind, "CustomResourceDefinition");
  assert.equal(crd.metadata.name, "syncconfigs.sync.appuio.ch");
});

Deno.test("the CRD's group, names, scope and pruning are espejo's", () => {
  const { versions: _, ...rest } = crd.spec;
  assert.deepEqual(rest, {
    group: "sync.appuio.ch",
    names: { kind: "SyncConfig", listKind: "SyncConfigList", plural: "syncconfigs", singular: "syncconfig" },
    preserveUnknownFields: false,
    scope: "Namespaced",
  });
});

Deno.test("the CRD serves and stores only v1alpha1, with the status subresource and espejo's printer columns", () => {
  assert.equal(crd.spec.versions.length, 1);
  const { schema: _, ...rest } = version;
  assert.deepEqual(rest, {
    name: "v1alpha1",
    served: true,
    storage: true,
    subresources: { status: {} },
    additionalPrinterColumns: [
      { name: "Synced", type: "integer", jsonPath: ".status.synchronizedItemCount" },
      { name: "Deleted", type: "integer", jsonPath: ".status.deletedItemCount" },
      { name: "Failed", type: "integer", jsonPath: ".status.failedItemCount" },
      { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
    ],
  });
});

Deno.test("the openAPIV3Schema is espejo v0.5.0's in every keyword but the descriptions", () => {
  assert.deepEqual(withoutDescriptions(root), EXPECTED_SCHEMA);
});

Deno.test("the labelSelector is atomic, as metav1.LabelSelector is, and so are its lists", () => {
  assert.equal(selector["x-kubernetes-map-type"], "atomic");
  const expressions = selector.properties.matchExpressions;
  assert.equal(expressions["x-kubernetes-list-type"], "atomic");
  assert.equal(expressions.items.properties.values["x-kubernetes-list-type"], "atomic");
  assert.deepEqual(expressions.items.required, ["key", "operator"]);
});

Deno.test("syncItems are embedded resources whose fields are kept unpruned", () => {
  const items = spec.properties.syncItems.items;
  assert.equal(items.type, "object");
  assert.equal(items["x-kubernetes-embedded-resource"], true);
  assert.equal(items["x-kubernetes-preserve-unknown-fields"], true);
  assert.equal(items.properties, undefined, "no declared fields: a syncItem is any object");
});

Deno.test("status conditions have the full metav1.Condition schema", () => {
  assert.deepEqual(condition.required, ["lastTransitionTime", "message", "reason", "status", "type"]);
  const p = condition.properties;
  assert.deepEqual(Object.keys(p).sort(), [
    "lastTransitionTime",
    "message",
    "observedGeneration",
    "reason",
    "status",
    "type",
  ]);
  assert.equal(p.lastTransitionTime.format, "date-time");
  assert.equal(p.message.maxLength, 32768);
  assert.deepEqual([p.observedGeneration.type, p.observedGeneration.format, p.observedGeneration.minimum], [
    "integer",
    "int64",
    0,
  ]);
  assert.deepEqual([p.reason.minLength, p.reason.maxLength], [1, 1024]);
  assert.deepEqual(p.status.enum, ["True", "False", "Unknown"]);
  assert.equal(p.type.maxLength, 316);
});

Deno.test("the condition patterns accept and reject what metav1.Condition's do", () => {
  const reason = new RegExp(condition.properties.reason.pattern);
  for (const ok of ["A", "SynchronizationSucceeded", "Some_Reason", "a,b:c"]) assert.ok(reason.test(ok), ok);
  for (const bad of ["", "1Reason", "Reason:", "Reason,", "With space", "Dash-ed"]) assert.ok(!reason.test(bad), bad);
  const type = new RegExp(condition.properties.type.pattern);
  for (const ok of ["Ready", "foo.example.com/Ready", "a/B", "x-y_z.w"]) assert.ok(type.test(ok), ok);
  for (const bad of ["", "-Ready", "Ready.", "Foo.example.com/Ready", "/Ready", "a b"]) assert.ok(!type.test(bad), bad);
});

/** The violations of the condition schema by `c`. */
function conditionViolations(c: Record<string, unknown>): string[] {
  const out: string[] = [];
  for (const k of condition.required) if (!(k in c)) out.push(`${k} missing`);
  for (const [k, v] of Object.entries(c)) {
    const s = condition.properties[k];
    if (!s) out.push(`${k} is not a condition field`);
    else if (s.type === "string") {
      if (typeof v !== "string") out.push(`${k} is not a string`);
      else {
        if (s.maxLength !== undefined && v.length > s.maxLength) out.push(`${k} is too long`);
        if (s.minLength !== undefined && v.length < s.minLength) out.push(`${k} is too short`);
        if (s.pattern !== undefined && !new RegExp(s.pattern).test(v)) out.push(`${k} does not match ${s.pattern}`);
        if (s.enum !== undefined && !s.enum.includes(v)) out.push(`${k} is not one of ${s.enum}`);
        if (s.format === "date-time" && Number.isNaN(Date.parse(v))) out.push(`${k} is not a date-time`);
      }
    } else if (s.type === "integer" && !(Number.isInteger(v) && (v as number) >= (s.minimum ?? -Infinity))) {
      out.push(`${k} is not an integer >= ${s.minimum}`);
    }
  }
  return out;
}

Deno.test("the conditions lib/model/status.ts writes satisfy the CRD's condition schema", () => {
  for (const reason of Object.values(Reasons)) assert.deepEqual(conditionViolations({ ...base(), reason }), [], reason);
  const now = "2024-01-01T00:00:00Z";
  const statuses = [
    syncedStatus(undefined, { synced: 1, deleted: 0, failed: 0, errors: [] }, now),
    syncedStatus(undefined, { synced: 0, deleted: 0, failed: 2, errors: ["a failed", "b failed"] }, now),
    invalidStatus(undefined, "spec.namespaceSelector.matchNames[0]: invalid pattern", now),
  ];
  statuses.push(syncedStatus(statuses[2], { synced: 1, deleted: 1, failed: 1, errors: ["c failed"] }, now));
  statuses.push(syncedStatus(statuses[1], { synced: 3, deleted: 0, failed: 0, errors: [] }, now));
  for (const s of statuses) {
    assert.ok(s.conditions?.length);
    for (const c of s.conditions) assert.deepEqual(conditionViolations(c), [], JSON.stringify(c));
  }
});

function base(): Condition {
  return { type: "Ready", status: "True", reason: "R", message: "", lastTransitionTime: "2024-01-01T00:00:00Z" };
}

type Condition = NonNullable<NonNullable<SyncConfig["status"]>["conditions"]>[number];

Deno.test("the generated types require the condition fields the CRD requires", () => {
  // Compile-time checks: `deno test` type-checks this file, and an unused @ts-expect-error is an error.
  const full: Condition = { ...base(), observedGeneration: 4 };
  const { message: _m, ...noMessage } = full;
  const { reason: _r, ...noReason } = full;
  const { lastTransitionTime: _t, ...noTime } = full;
  // @ts-expect-error message is required
  const a: Condition = noMessage;
  // @ts-expect-error reason is required
  const b: Condition = noReason;
  // @ts-expect-error lastTransitionTime is required
  const c: Condition = noTime;
  // @ts-expect-error status is one of True, False and Unknown
  const d: Condition = { ...full, status: "Maybe" };
  assert.equal([a, b, c, d].length, 4);
  const e: Condition = { ...base() };
  assert.equal(e.observedGeneration, undefined, "observedGeneration is optional");
});

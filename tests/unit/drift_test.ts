import assert from "node:assert/strict";
import fc from "fast-check";
import {
  compareByValue,
  type Comparison,
  contentHash,
  extrasHash,
  extrasOf,
  MAX_PATH,
  serverOwned,
} from "../../lib/model/drift.ts";
import type { KubeObject } from "../../lib/kube/objects.ts";
import { CREATED_ANNOTATION, HASH_ANNOTATION } from "../../lib/model/markers.ts";

const HASH = "0123456789abcdef01234567";

/** A desired object as desiredObject (lib/sync/desired.ts) builds it (marker label, owner and hash annotations). */
function desiredOf(body: Record<string, unknown>, kind = "ConfigMap", apiVersion = "v1"): KubeObject {
  return {
    apiVersion,
    kind,
    metadata: {
      name: "obj",
      namespace: "ns",
      labels: { "sync.appuio.ch/managed-by": "espejo" },
      annotations: { "sync.appuio.ch/owner": "espejo/cfg", [HASH_ANNOTATION]: HASH },
    },
    ...body,
  };
}

type Mutable = KubeObject & { metadata: NonNullable<KubeObject["metadata"]> } & Record<string, unknown>;

/** What the server returns for `desired` (as a list item: no apiVersion/kind), then `change` applied. */
function observedOf(desired: KubeObject, change: (o: Mutable) => void = () => {}): KubeObject {
  const { apiVersion: _a, kind: _k, ...rest } = structuredClone(desired);
  const object = rest as Mutable;
  object.metadata.uid = "5f0c6c2e-0000-4000-8000-000000000000";
  object.metadata.resourceVersion = "12345";
  object.metadata.creationTimestamp = "2024-01-01T00:00:00Z";
  object.metadata.managedFields = [{ manager: "espejo", operation: "Update", fieldsV1: { "f:data": {} } }];
  change(object);
  return object;
}

const netpol = desiredOf(
  { spec: { podSelector: {}, policyTypes: ["Ingress"] } },
  "NetworkPolicy",
  "networking.k8s.io/v1",
);
const cm = desiredOf({ data: { a: "1", b: "2" } });
const service = desiredOf({ spec: { ports: [{ port: 80 }], selector: { app: "x" } } }, "Service");

const CASES: [name: string, desired: KubeObject, change: (o: Mutable) => void, want: Comparison][] = [
  ["the server's copy unchanged", cm, () => {}, { kind: "equal" }],
  ["a value changed", cm, (o) => (o.data = { a: "9", b: "2" }), { kind: "differs", path: ".data.a" }],
  ["a key removed", cm, (o) => (o.data = { a: "1" }), { kind: "differs", path: ".data.b" }],
  ["a key added", cm, (o) => (o.data = { a: "1", b: "2", c: "3" }), { kind: "extra", path: ".data.c" }],
  ["an empty value added", cm, (o) => (o.data = { a: "1", b: "2", c: "" }), { kind: "extra", path: ".data.c" }],
  ["managedFields stripped", cm, (o) => delete o.metadata.managedFields, { kind: "equal" }],
  [
    "managedFields claiming everything for another manager",
    cm,
    (o) => (o.metadata.managedFields = [{ manager: "kubectl", fieldsV1: { "f:data": { "f:a": {} } } }]),
    { kind: "equal" },
  ],
  ["ownerReferences set by someone", cm, (o) => (o.metadata.ownerReferences = [{ uid: "x" }]), { kind: "equal" }],
  ["a status", cm, (o) => (o.status = { phase: "x" }), { kind: "equal" }],
  [
    "the owner annotation changed",
    cm,
    (o) => (o.metadata.annotations!["sync.appuio.ch/owner"] = "kube-system/whatever"),
    { kind: "differs", path: ".metadata.annotations.sync.appuio.ch/owner" },
  ],
  [
    "an annotation added",
    cm,
    (o) => (o.metadata.annotations!.note = "x"),
    { kind: "extra", path: ".metadata.annotations.note" },
  ],
  [
    "the label removed",
    cm,
    (o) => (o.metadata.labels = {}),
    { kind: "differs", path: ".metadata.labels.sync.appuio.ch/managed-by" },
  ],
  ["an empty podSelector kept", netpol, () => {}, { kind: "equal" }],
  [
    "an empty podSelector filled in (under any field manager)",
    netpol,
    (o) => ((o.spec as Record<string, unknown>).podSelector = { matchLabels: { x: "y" } }),
    { kind: "extra", path: ".spec.podSelector.matchLabels" },
  ],
  [
    "a list grown",
    netpol,
    (o) => ((o.spec as Record<string, unknown>).policyTypes = ["Ingress", "Egress"]),
    { kind: "differs", path: ".spec.policyTypes" },
  ],
  [
    "a list element changed",
    netpol,
    (o) => ((o.spec as Record<string, unknown>).policyTypes = ["Egress"]),
    { kind: "differs", path: ".spec.policyTypes[0]" },
  ],
  [
    "defaults inside a list element",
    service,
    (o) => ((o.spec as Record<string, unknown>).ports = [{ port: 80, protocol: "TCP", targetPort: 80 }]),
    { kind: "extra", path: ".spec.ports[0].protocol" },
  ],
  [
    "a list element's value changed",
    service,
    (o) => ((o.spec as Record<string, unknown>).ports = [{ port: 81, protocol: "TCP" }]),
    { kind: "differs", path: ".spec.ports[0].port" },
  ],
];

for (const [name, desired, change, want] of CASES) {
  Deno.test(`compareByValue with ${name} is ${want.kind}`, () => {
    assert.deepEqual(compareByValue(desired, observedOf(desired, change)), want);
  });
}

// Zero values: Go's omitempty drops them from replies, so a desired zero value missing from the reply is no drift.
const ZEROES: [string, unknown][] = [
  ["empty string", ""],
  ["0", 0],
  ["false", false],
  ["null", null],
  ["empty list", []],
  ["empty map", {}],
  ["map of zero values", { a: "", b: [], c: { d: 0 } }],
];

for (const [name, zero] of ZEROES) {
  Deno.test(`compareByValue: a desired ${name} that is missing is a difference only the server can explain`, () => {
    // Go's omitempty drops it from replies; a tenant can drop it too (a false that becomes the default true).
    const desired = desiredOf({ spec: { keep: "x", zero } });
    const observed = observedOf(desired, (o) => delete (o.spec as Record<string, unknown>).zero);
    assert.deepEqual(compareByValue(desired, observed), { kind: "extra", path: ".spec.zero (omitted)" });
    assert.notEqual(extrasOf(desired, observed), extrasOf(desired, observedOf(desired)), "the omission is learnt");
  });
}

Deno.test("extrasOf names each addition and omission by its path, nested in maps and lists", () => {
  const desired = desiredOf({ spec: { a: { b: [{ c: "1" }, { d: "" }] }, gone: "" } });
  const observed = observedOf(desired, (o) => {
    const spec = o.spec as { a: { b: Record<string, unknown>[] }; gone?: string; policyTypes?: string[] };
    spec.a.b[0].added = { x: 1 };
    delete spec.a.b[1].d;
    delete spec.gone;
    spec.policyTypes = ["Ingress"];
  });
  assert.equal(
    extrasOf(desired, observed),
    '[["+",["spec","a","b","0","added"],{"x":1}],["-",["spec","a","b","1","d"],null],' +
      '["+",["spec","policyTypes"],["Ingress"]],["-",["spec","gone"],null]]',
  );
});

Deno.test("extrasHash: the same additions hash the same and others differently, whatever was hashed before", () => {
  const desired = desiredOf({ spec: { podSelector: {} } });
  const added = (value: unknown) => observedOf(desired, (o) => ((o.spec as Record<string, unknown>).added = value));
  const long = "x".repeat(5000);
  const first = extrasHash(desired, added("a"));
  const sequence = [added("a"), added("b"), added(long), added("a"), added(long), added("b"), added("a")];
  const hashes = sequence.map((o) => extrasHash(desired, o));
  assert.equal(hashes[0], first);
  assert.equal(hashes[3], first);
  assert.equal(hashes[6], first);
  assert.equal(hashes[1], hashes[5]);
  assert.equal(hashes[2], hashes[4]);
  assert.equal(new Set(hashes).size, 3);
});

Deno.test("compareByValue checks own properties only: a key named like an Object method is not found", () => {
  for (const key of ["constructor", "toString", "hasOwnProperty", "__proto__"]) {
    const desired = desiredOf({ data: JSON.parse(`{"${key}": "x", "a": "1"}`) });
    const observed = observedOf(desired, (o) => (o.data = { a: "1" }));
    assert.deepEqual(compareByValue(desired, observed), { kind: "differs", path: `.data.${key}` }, key);
  }
});

// ---------------------------------------------------------------------------------------------------------------
// properties

const json = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.string(),
    fc.integer(),
    fc.boolean(),
    fc.array(tie("value"), { maxLength: 3 }),
    fc.dictionary(fc.string({ minLength: 1, maxLength: 4 }), tie("value"), { maxKeys: 3 }),
  ),
})).value;

/** Paths to every non-zero scalar leaf of `v`, with a setter. */
function leaves(v: unknown, set: (x: unknown) => void, out: ((x: unknown) => void)[] = []) {
  if (Array.isArray(v)) v.forEach((el, i) => leaves(el, (x) => (v[i] = x), out));
  else if (v && typeof v === "object") {
    for (const [k, el] of Object.entries(v)) leaves(el, (x) => ((v as Record<string, unknown>)[k] = x), out);
  } else if (v !== "" && v !== 0 && v !== false && v !== null) out.push(set);
  return out;
}

Deno.test("compareByValue: the server's unchanged copy of any desired object is equal", () => {
  fc.assert(fc.property(json, (spec) => {
    const desired = desiredOf({ spec });
    assert.deepEqual(compareByValue(desired, observedOf(desired)), { kind: "equal" });
  }));
});

Deno.test("compareByValue: changing any value the desired object sets is never equal", () => {
  fc.assert(fc.property(json, fc.nat(), (spec, pick) => {
    const desired = desiredOf({ spec });
    const observed = observedOf(desired);
    const setters = leaves(observed.spec, (x) => (observed.spec = x));
    fc.pre(setters.length > 0);
    setters[pick % setters.length]({ changed: true });
    assert.notEqual(compareByValue(desired, observed).kind, "equal");
  }));
});

Deno.test("contentHash ignores what a write does not control and sees every other change", () => {
  const desired = desiredOf({ data: { a: "1" } });
  const base = contentHash(observedOf(desired));
  assert.equal(contentHash(desired), base, "apiVersion/kind and server metadata left out");
  assert.equal(
    contentHash(observedOf(desired, (o) => {
      o.metadata.resourceVersion = "99";
      o.metadata.managedFields = [];
      o.metadata.ownerReferences = [{ uid: "u" }];
      o.status = { x: 1 };
    })),
    base,
  );
  assert.notEqual(contentHash(observedOf(desired, (o) => (o.data = { a: "2" }))), base);
  assert.notEqual(contentHash(observedOf(desired, (o) => (o.metadata.annotations!.x = ""))), base);
  assert.notEqual(contentHash(observedOf(desired, (o) => (o.metadata.finalizers = ["x"]))), base);
});

Deno.test("serverOwned leaves the input unchanged", () => {
  const o = observedOf(cm);
  const copy = structuredClone(o);
  serverOwned(o);
  assert.deepEqual(o, copy);
});

Deno.test("drift: espejo's creation record is never a difference, and not part of the content hash", () => {
  const desired: KubeObject = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "a", annotations: { x: "1" } },
    data: { k: "v" },
  };
  const created = structuredClone(desired);
  created.metadata!.annotations![CREATED_ANNOTATION] = "espejo/cfg";
  assert.deepEqual(compareByValue(desired, created), { kind: "equal" });
  assert.equal(contentHash(created), contentHash(desired));
  const only = { ...structuredClone(desired), metadata: { name: "a", annotations: { [CREATED_ANNOTATION]: "c" } } };
  assert.deepEqual(compareByValue({ ...desired, metadata: { name: "a" } }, only), { kind: "equal" });
});

Deno.test("compareByValue: a tenant's key of any length is reported cut to MAX_PATH characters", () => {
  const desired: KubeObject = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a" }, data: { k: "v" } };
  const key = "k".repeat(500_000);
  const extra = compareByValue(desired, { ...desired, data: { k: "v", [key]: "x" } });
  assert.equal(extra.kind, "extra");
  assert.ok(extra.kind === "extra" && extra.path.length <= MAX_PATH + 3 && extra.path.startsWith(".data.kkk"));
  const differs = compareByValue({ ...desired, data: { [key]: "v" } }, desired);
  assert.ok(differs.kind === "differs" && differs.path.length <= MAX_PATH + 3);
});

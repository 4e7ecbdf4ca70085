import assert from "node:assert/strict";
import fc from "fast-check";
import { driftOf, FIELD_MANAGER, foreignFields, HASH_ANNOTATION, type ObservedState } from "../../lib/drift.ts";
import type { FieldsV1, KubeObject, ManagedFieldsEntry } from "../../lib/objects.ts";

const HASH = "0123456789abcdef01234567";

/** A desired object as Executor.desired builds it (marker label, owner and hash annotations). */
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

/** What the server returns for `desired`: a copy with server metadata, then `change` applied. */
function observedOf(
  desired: KubeObject,
  change: (o: KubeObject & { metadata: NonNullable<KubeObject["metadata"]> }) => void = () => {},
  entries: ManagedFieldsEntry[] = [],
): ObservedState {
  const object = structuredClone(desired) as KubeObject & { metadata: NonNullable<KubeObject["metadata"]> };
  object.metadata.uid = "5f0c6c2e-0000-4000-8000-000000000000";
  object.metadata.resourceVersion = "12345";
  object.metadata.creationTimestamp = "2024-01-01T00:00:00Z";
  change(object);
  return { object, foreign: foreignFields(entries) };
}

const kubectl = (fieldsV1: FieldsV1): ManagedFieldsEntry => ({
  manager: "kubectl-edit",
  operation: "Update",
  fieldsType: "FieldsV1",
  fieldsV1,
});

const ours = (fieldsV1: FieldsV1): ManagedFieldsEntry => ({
  manager: FIELD_MANAGER,
  operation: "Update",
  fieldsType: "FieldsV1",
  fieldsV1,
});

// ---------------------------------------------------------------------------------------------------------------
// foreignFields

Deno.test("foreignFields keeps only other managers' main-resource field sets", () => {
  const a = { "f:data": { "f:x": {} } };
  const b = { "f:metadata": { "f:labels": {} } };
  const entries: ManagedFieldsEntry[] = [
    ours({ "f:data": {} }),
    kubectl(a),
    { manager: "kube-controller-manager", operation: "Update", subresource: "status", fieldsV1: { "f:status": {} } },
    { manager: "no-fields", operation: "Update" },
    { manager: "helm", operation: "Apply", fieldsV1: b },
  ];
  assert.deepEqual(foreignFields(entries), [a, b]);
});

Deno.test("foreignFields of no managedFields is empty", () => {
  assert.deepEqual(foreignFields(undefined), []);
  assert.deepEqual(foreignFields([]), []);
});

// ---------------------------------------------------------------------------------------------------------------
// driftOf: table

const CM = desiredOf({ data: { a: "1", b: "2" } });

const DEPLOY = desiredOf(
  {
    spec: {
      replicas: 2,
      template: {
        spec: {
          containers: [{ name: "app", image: "img:1", args: ["--x"] }],
        },
      },
    },
  },
  "Deployment",
  "apps/v1",
);

type PodSpecHolder = { template: { spec: Record<string, unknown> }; [k: string]: unknown };
const containersOf = (o: KubeObject) => (o.spec as PodSpecHolder).template.spec.containers as Record<string, unknown>[];

/** Server defaults in a Deployment nobody owns. */
function withDefaults(o: KubeObject): void {
  const spec = o.spec as PodSpecHolder;
  spec.revisionHistoryLimit = 10;
  spec.progressDeadlineSeconds = 600;
  spec.template.spec.restartPolicy = "Always";
  const c = containersOf(o)[0];
  c.terminationMessagePath = "/dev/termination-log";
  c.imagePullPolicy = "IfNotPresent";
  o.status = { replicas: 2 };
}

const APP = `k:{"name":"app"}`;
const containerFields = (sub: FieldsV1): FieldsV1 => ({
  "f:spec": { "f:template": { "f:spec": { "f:containers": sub } } },
});

const CASES: [name: string, desired: KubeObject, observed: ObservedState, want: string | undefined][] = [
  ["an unchanged object", CM, observedOf(CM), undefined],
  [
    "a hash annotation from an older desired state",
    CM,
    observedOf(CM, (o) => o.metadata.annotations![HASH_ANNOTATION] = "ffffffffffffffffffffffff"),
    "desired state changed",
  ],
  [
    "a missing hash annotation",
    CM,
    observedOf(CM, (o) => delete o.metadata.annotations![HASH_ANNOTATION]),
    "desired state changed",
  ],
  ["a removed data key", CM, observedOf(CM, (o) => delete (o.data as Record<string, string>).b), ".data.b was removed"],
  ["a removed map", CM, observedOf(CM, (o) => delete o.data), ".data was removed"],
  [
    "a removed label",
    CM,
    observedOf(CM, (o) => delete o.metadata.labels!["sync.appuio.ch/managed-by"]),
    ".metadata.labels.sync.appuio.ch/managed-by was removed",
  ],
  [
    "a shortened list",
    desiredOf({ spec: { list: ["a", "b"] } }),
    observedOf(desiredOf({ spec: { list: ["a", "b"] } }), (o) => (o.spec as { list: string[] }).list.pop()),
    ".spec.list was removed",
  ],
  ["server defaults owned by nobody", DEPLOY, observedOf(DEPLOY, withDefaults), undefined],
  [
    "extra fields owned by us",
    CM,
    observedOf(CM, (o) => (o.data as Record<string, string>).old = "x", [ours({ "f:data": { "f:old": {} } })]),
    undefined,
  ],
  [
    "a foreign-owned field we do not set",
    CM,
    observedOf(CM, (o) => (o.data as Record<string, string>).c = "3", [kubectl({ "f:data": { "f:c": {} } })]),
    ".data.c was changed by another manager",
  ],
  [
    "a foreign-owned field with the value we want",
    CM,
    observedOf(CM, () => {}, [kubectl({ "f:data": { "f:a": {} } })]),
    undefined,
  ],
  [
    "a foreign-owned field with another value",
    CM,
    observedOf(CM, (o) => (o.data as Record<string, string>).a = "changed", [kubectl({ "f:data": { "f:a": {} } })]),
    ".data.a was changed by another manager",
  ],
  [
    "a foreign-owned annotation we do not set",
    CM,
    observedOf(
      CM,
      (o) => o.metadata.annotations!.note = "hi",
      [kubectl({ "f:metadata": { "f:annotations": { ".": {}, "f:note": {} } } })],
    ),
    ".metadata.annotations.note was changed by another manager",
  ],
  [
    "a foreign-owned map we do not set at all",
    CM,
    observedOf(CM, (o) => o.binaryData = { x: "eA==" }, [kubectl({ "f:binaryData": { ".": {}, "f:x": {} } })]),
    ".binaryData was changed by another manager",
  ],
  [
    "a status change by a controller (subresource)",
    DEPLOY,
    observedOf(DEPLOY, withDefaults, [{
      manager: "kube-controller-manager",
      operation: "Update",
      subresource: "status",
      fieldsV1: { "f:status": { "f:replicas": {} } },
    }]),
    undefined,
  ],
  [
    "a list element matched by k: with the values we want",
    DEPLOY,
    observedOf(
      DEPLOY,
      withDefaults,
      [kubectl(containerFields({ [APP]: { ".": {}, "f:name": {}, "f:image": {}, "f:args": {} } }))],
    ),
    undefined,
  ],
  [
    "a list element matched by k: with another value",
    DEPLOY,
    observedOf(DEPLOY, (o) => {
      withDefaults(o);
      containersOf(o)[0].image = "img:2";
    }, [kubectl(containerFields({ [APP]: { "f:image": {} } }))]),
    `.spec.template.spec.containers[{"name":"app"}].image was changed by another manager`,
  ],
  [
    "a list element matched by k: that we do not set",
    DEPLOY,
    observedOf(DEPLOY, (o) => {
      withDefaults(o);
      containersOf(o).push({ name: "sidecar", image: "s" });
    }, [kubectl(containerFields({ [`k:{"name":"sidecar"}`]: { ".": {}, "f:name": {}, "f:image": {} } }))]),
    `.spec.template.spec.containers[{"name":"sidecar"}] was changed by another manager`,
  ],
  [
    "a field of a k: element that we do not set",
    DEPLOY,
    observedOf(DEPLOY, (o) => {
      withDefaults(o);
      containersOf(o)[0].workingDir = "/w";
    }, [kubectl(containerFields({ [APP]: { "f:workingDir": {} } }))]),
    `.spec.template.spec.containers[{"name":"app"}].workingDir was changed by another manager`,
  ],
  [
    "a v: set entry we set too",
    desiredOf({ metadata: { ...CM.metadata, finalizers: ["example.com/keep"] } }),
    observedOf(
      desiredOf({ metadata: { ...CM.metadata, finalizers: ["example.com/keep"] } }),
      () => {},
      [kubectl({ "f:metadata": { "f:finalizers": { ".": {}, 'v:"example.com/keep"': {} } } })],
    ),
    undefined,
  ],
  [
    "a v: set entry we do not set",
    desiredOf({ metadata: { ...CM.metadata, finalizers: ["example.com/keep"] } }),
    observedOf(
      desiredOf({ metadata: { ...CM.metadata, finalizers: ["example.com/keep"] } }),
      (o) => o.metadata.finalizers = ["example.com/keep", "example.com/extra"],
      [kubectl({ "f:metadata": { "f:finalizers": { 'v:"example.com/extra"': {} } } })],
    ),
    `.metadata.finalizers["example.com/extra"] was changed by another manager`,
  ],
  [
    "an i: list entry with the value we want",
    desiredOf({ spec: { args: ["a", "b"] } }),
    observedOf(desiredOf({ spec: { args: ["a", "b"] } }), () => {}, [
      kubectl({ "f:spec": { "f:args": { "i:1": {} } } }),
    ]),
    undefined,
  ],
  [
    "an i: list entry with another value",
    desiredOf({ spec: { args: ["a", "b"] } }),
    observedOf(
      desiredOf({ spec: { args: ["a", "b"] } }),
      (o) => (o.spec as { args: string[] }).args[1] = "c",
      [kubectl({ "f:spec": { "f:args": { "i:1": {} } } })],
    ),
    ".spec.args[1] was changed by another manager",
  ],
  [
    "an unknown fieldsV1 encoding",
    CM,
    observedOf(CM, () => {}, [kubectl({ "f:data": { "x:whatever": {} } })]),
    undefined,
  ],
];

for (const [name, desired, observed, want] of CASES) {
  Deno.test(`driftOf with ${name} is ${want === undefined ? "no drift" : JSON.stringify(want)}`, () => {
    assert.equal(driftOf(desired, HASH, observed), want);
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
  Deno.test(`driftOf: a desired ${name} the server omitted is no drift`, () => {
    const desired = desiredOf({ spec: { keep: "x", zero } });
    const observed = observedOf(desired, (o) => delete (o.spec as Record<string, unknown>).zero);
    assert.equal(driftOf(desired, HASH, observed), undefined);
  });
}

// ---------------------------------------------------------------------------------------------------------------
// driftOf: properties

type Tree = { [k: string]: string | number | Tree };
const key = fc.stringMatching(/^[a-z]{1,4}$/);
/** Desired bodies whose leaves are all non-zero, so every leaf is something the server must keep. */
const tree: fc.Arbitrary<Tree> = fc.letrec((tie) => ({
  node: fc.dictionary(
    key,
    fc.oneof(
      { depthSize: "small" },
      fc.string({ minLength: 1, maxLength: 5 }),
      fc.integer({ min: 1, max: 100 }),
      tie("node"),
    ),
    { minKeys: 1, maxKeys: 4 },
  ),
})).node as fc.Arbitrary<Tree>;

function leaves(t: Tree, path: string[] = []): string[][] {
  return Object.entries(t).flatMap(([k, v]) =>
    typeof v === "object" ? [...leaves(v, [...path, k]), [...path, k]] : [[...path, k]]
  );
}

/** The fieldsV1 a manager that set exactly `t` would own. */
function fieldsOf(t: Tree): FieldsV1 {
  return Object.fromEntries(
    Object.entries(t).map(([k, v]) => [`f:${k}`, typeof v === "object" ? { ".": {}, ...fieldsOf(v) } : {}]),
  );
}

function at(o: Record<string, unknown>, path: string[]): Record<string, unknown> {
  return path.reduce((cur, k) => cur[k] as Record<string, unknown>, o);
}

Deno.test("driftOf: an untouched object plus defaults owned by nobody is never drift", () => {
  fc.assert(
    fc.property(tree, tree, (spec, defaults) => {
      const desired = desiredOf({ spec });
      // Defaults may only add keys, never replace what we set.
      const observed = observedOf(desired, (o) => {
        const merge = (into: Record<string, unknown>, extra: Tree) => {
          for (const [k, v] of Object.entries(extra)) {
            if (!(k in into)) into[k] = v;
            else if (typeof v === "object" && typeof into[k] === "object") merge(into[k] as Record<string, unknown>, v);
          }
        };
        merge(o.spec as Record<string, unknown>, defaults);
      });
      assert.equal(driftOf(desired, HASH, observed), undefined);
    }),
  );
});

Deno.test("driftOf: removing any field we set is drift naming that field", () => {
  fc.assert(
    fc.property(tree, fc.nat(), (spec, pick) => {
      const desired = desiredOf({ spec });
      const paths = leaves(spec);
      const path = paths[pick % paths.length];
      const observed = observedOf(
        desired,
        (o) => delete at(o.spec as Record<string, unknown>, path.slice(0, -1))[path.at(-1)!],
      );
      assert.equal(driftOf(desired, HASH, observed), `.spec.${path.join(".")} was removed`);
    }),
  );
});

Deno.test("driftOf: a foreign manager owning exactly what we set, unchanged, is no drift", () => {
  fc.assert(
    fc.property(tree, (spec) => {
      const desired = desiredOf({ spec });
      assert.equal(
        driftOf(desired, HASH, observedOf(desired, () => {}, [kubectl({ "f:spec": fieldsOf(spec) })])),
        undefined,
      );
    }),
  );
});

Deno.test("driftOf: a foreign manager changing any leaf we set is drift", () => {
  fc.assert(
    fc.property(tree, fc.nat(), (spec, pick) => {
      const desired = desiredOf({ spec });
      const paths = leaves(spec).filter((p) => typeof at(spec, p.slice(0, -1))[p.at(-1)!] !== "object");
      const path = paths[pick % paths.length];
      const observed = observedOf(desired, (o) => {
        const parent = at(o.spec as Record<string, unknown>, path.slice(0, -1));
        parent[path.at(-1)!] = `${parent[path.at(-1)!]}-changed`;
      }, [kubectl({ "f:spec": fieldsOf(spec) })]);
      assert.equal(driftOf(desired, HASH, observed), `.spec.${path.join(".")} was changed by another manager`);
    }),
  );
});

Deno.test("driftOf: a foreign manager adding a field we do not set is drift", () => {
  fc.assert(
    fc.property(tree, fc.string({ minLength: 1, maxLength: 5 }), (spec, value) => {
      const desired = desiredOf({ spec });
      const observed = observedOf(
        desired,
        (o) => (o.spec as Record<string, unknown>)["added-by-someone"] = value,
        [kubectl({ "f:spec": { ...fieldsOf(spec), "f:added-by-someone": {} } })],
      );
      assert.equal(driftOf(desired, HASH, observed), ".spec.added-by-someone was changed by another manager");
    }),
  );
});

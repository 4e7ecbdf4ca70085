/** `espejo plan`'s exit codes and summary, and that it never shows a Secret's values (lib/plan/render.ts). */
import assert from "node:assert/strict";
import fc from "fast-check";
import { ApiError } from "../../lib/kube/errors.ts";
import { encodeBase64, type KubeObject } from "../../lib/kube/objects.ts";
import { fieldDiff } from "../../lib/model/field_diff.ts";
import { rejected } from "../../lib/plan/dry_run.ts";
import type { ConfigPlan, PlanEntry, PlannedAction } from "../../lib/plan/plan.ts";
import { exitCodeOf, type PlanReport, renderJson, renderText, summaryOf } from "../../lib/plan/render.ts";
import { pieces, placeholders, secretValues } from "./secret_values.ts";

const entry = (action: PlannedAction): PlanEntry => ({
  action,
  apiVersion: "v1",
  kind: "ConfigMap",
  namespace: "team-a",
  name: `cm-${action}`,
  cfgKey: "espejo/cfg",
});
const report = (entries: PlanEntry[], invalid?: string): PlanReport => {
  const config: ConfigPlan = {
    syncConfig: "espejo/cfg",
    generation: 1,
    source: "cluster",
    invalid,
    pruning: false,
    deleting: false,
    selected: 1,
    entries,
  };
  return {
    configs: [config],
    unchanged: 3,
    context: [],
    syncConfigsFrom: "namespace cfg (WATCH_NAMESPACE)",
    comparison: { mode: "rules", why: "--server-dry-run=false" },
    controller: { identity: "sa", missing: [] },
  };
};

const cases: [string, PlanReport, number][] = [
  ["nothing would change", report([]), 0],
  ["a create", report([entry("create")]), 2],
  ["a prune", report([entry("prune")]), 2],
  ["an item that would fail, beside a change", report([entry("create"), entry("fail")]), 1],
  ["an Invalid SyncConfig", report([], "SyncConfig espejo/cfg: .spec...: bad"), 1],
];
for (const [name, r, code] of cases) {
  Deno.test(`plan exit code: ${name} -> ${code}`, () => assert.equal(exitCodeOf(r), code));
}

Deno.test("plan summary counts every action and the unchanged items, in text and JSON alike", () => {
  const r = report(
    ["create", "create", "adopt", "update", "delete", "prune", "fail"].map((a) => entry(a as PlannedAction)),
  );
  const s = summaryOf(r);
  assert.deepEqual(s, { create: 2, adopt: 1, update: 1, recreate: 0, delete: 1, prune: 1, fail: 1, unchanged: 3 });
  assert.match(
    renderText(r),
    /Plan: 2 to create, 1 to adopt, 1 to update, 0 to recreate, 1 to delete, 1 to prune, 1 failing; 3 unchanged\./,
  );
  assert.deepEqual(JSON.parse(renderJson(r)).summary, s);
});

const LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration";
const KEYS = ["password", "token", "tls.key"];

/** Where a Secret's values sit, on each side: `data`, `stringData` (an item not normalized), kubectl's annotation. */
const secretShape = fc.record({
  desiredData: fc.boolean(),
  desiredStringData: fc.boolean(),
  desiredApplied: fc.boolean(),
  desiredAnnotations: fc.boolean(),
  liveData: fc.boolean(),
  liveApplied: fc.boolean(),
  /** The live object's annotation holds data (base64) or, from a `stringData` manifest, plain values. */
  appliedStringData: fc.boolean(),
  /** What a rejected dry run said: a field error, or a webhook quoting the values in its own words. */
  quote: fc.constantFrom("field", "plain", "base64"),
});

type Shape = typeof secretShape extends fc.Arbitrary<infer T> ? T : never;

/** A Secret as an item wants it and as it is, with values `d[i]` and `o[i]` for key `KEYS[i]`. */
function secretPair(shape: Shape, d: string[], o: string[]) {
  const data = (vs: string[]) => Object.fromEntries(KEYS.map((k, i) => [k, encodeBase64(vs[i])]));
  const plain = (vs: string[]) => Object.fromEntries(KEYS.map((k, i) => [k, vs[i]]));
  const applied = (vs: string[], stringData: boolean) =>
    JSON.stringify({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "db", namespace: "team-a" },
      ...(stringData ? { stringData: plain(vs) } : { data: data(vs) }),
    });
  const annotations = (applies: boolean, vs: string[], stringData: boolean) => ({
    "sync.appuio.ch/owner": "espejo/cfg",
    ...(applies ? { [LAST_APPLIED]: applied(vs, stringData) } : {}),
  });
  const desired: KubeObject = {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name: "db",
      namespace: "team-a",
      ...(shape.desiredAnnotations || shape.desiredApplied
        ? { annotations: annotations(shape.desiredApplied, d, false) }
        : {}),
    },
    ...(shape.desiredData ? { data: data(d) } : {}),
    ...(shape.desiredStringData ? { stringData: plain(d) } : {}),
    type: "Opaque",
  };
  const live: KubeObject = {
    metadata: {
      name: "db",
      namespace: "team-a",
      uid: "u",
      resourceVersion: "7",
      annotations: annotations(shape.liveApplied, o, shape.appliedStringData),
    },
    ...(shape.liveData ? { data: data(o) } : {}),
    type: "Opaque",
  };
  // A webhook can quote only what it is sent: the desired object's values and the live object's.
  const carried = [
    ...(shape.desiredData || shape.desiredStringData || shape.desiredApplied ? [d[0]] : []),
    ...(shape.liveData || shape.liveApplied ? [o[0]] : []),
  ];
  const quoted = carried.map((v) => shape.quote === "plain" ? v : encodeBase64(v)).join(" replaces ");
  const said = shape.quote === "field"
    ? `Secret "db" is invalid: data[${KEYS[0]}]: Invalid value: ${JSON.stringify(d[0])}: bad`
    : `admission webhook "v.example.com" denied the request: ${KEYS[0]} ${quoted}`;
  return { desired, live, said };
}

/** The plan of one Secret to update and one whose dry run was refused, as text and as every string of the JSON. */
function rendered(shape: Shape, d: string[], o: string[]): string[] {
  const { desired, live, said } = secretPair(shape, d, o);
  const resource = { group: "", version: "v1", resource: "secrets", kind: "Secret", namespaced: true, verbs: [] };
  const base = { ...entry("update"), kind: "Secret", name: "db", resource, desired, live, uid: "u" };
  const update: PlanEntry = { ...base, reason: ".data.password differs", changes: fieldDiff(desired, live, resource) };
  const refused = rejected(base, new ApiError(422, "Invalid", said));
  const r = report([update, refused]);
  const strings: string[] = [];
  const collect = (v: unknown): void => {
    if (typeof v === "string") strings.push(v);
    else if (Array.isArray(v)) v.forEach(collect);
    else if (v && typeof v === "object") Object.entries(v).forEach(([k, x]) => (strings.push(k), collect(x)));
  };
  collect(JSON.parse(renderJson(r)));
  return [renderText(r), renderJson(r), strings.join("\n")];
}

Deno.test("plan text and JSON never show a Secret's value, its base64, or eight characters of either", () => {
  fc.assert(
    fc.property(secretShape, secretValues(KEYS), (shape, vs) => {
      const d = vs.slice(0, KEYS.length);
      const o = vs.slice(KEYS.length);
      // What is shown is the same whatever the values are (only which of them differ counts) ...
      const shown = rendered(shape, d, o);
      const without = rendered(shape, placeholders(KEYS, "desired"), placeholders(KEYS, "live"));
      assert.deepEqual(shown, without);
      // ... so a piece of a value that is shown is one the plan shows without any value (a key, a word, spaces).
      shown.forEach((out, i) => {
        for (const piece of pieces(vs).filter((p) => !without[i].includes(p))) {
          assert.ok(!out.includes(piece), `${JSON.stringify(piece)} shown in:\n${out}`);
        }
      });
    }),
    { numRuns: 300 },
  );
});

Deno.test("plan text lists each key of a Secret's removed data and last-applied annotation, masked", () => {
  const shape = {
    desiredData: false,
    desiredStringData: false,
    desiredApplied: false,
    desiredAnnotations: true,
    liveData: true,
    liveApplied: true,
    appliedStringData: true,
    quote: "plain" as const,
  };
  const [text] = rendered(shape, placeholders(KEYS, "d"), ["hunter2-a", "hunter2-b", "hunter2-c"]);
  assert.match(text, /- \.data\.password: \*\*\*\n/);
  assert.match(text, /- \.data\.tls\.key: \*\*\*\n/);
  assert.match(text, new RegExp(`- \\.metadata\\.annotations\\.${LAST_APPLIED.replaceAll(".", "\\.")}: \\*\\*\\*\n`));
  assert.doesNotMatch(text, /hunter2|aHVudGVy/);
});

Deno.test("plan's rights check names the namespace of an Events right and the opt-in a missing kind needs", () => {
  const r = report([entry("create")]);
  r.controller = {
    identity: "system:serviceaccount:espejo-system:espejo",
    missing: [
      { group: "", resource: "secrets", verb: "list" },
      { group: "", resource: "secrets", verb: "create" },
      { group: "", resource: "events", verb: "create", namespace: "tenants" },
      { group: "monitoring.coreos.com", resource: "podmonitors", verb: "list" },
    ],
  };
  const text = renderText(r);
  assert.match(
    text,
    /it lacks 4: list secrets, create secrets, create events in tenants, list podmonitors\.monitoring/,
  );
  assert.deepEqual(text.match(/^ {2}opt in: .*$/gm), ["  opt in: kubectl apply -k deploy/opt-in/secrets"]);
  assert.match(text, /^ {2}how to grant rights to espejo: docs\/install\.md#rbac$/m);
});

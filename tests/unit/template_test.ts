import assert from "node:assert/strict";
import fc from "fast-check";
import { PROJECT_NAME_PLACEHOLDER, renderTemplate } from "../../lib/model/template.ts";

const P = PROJECT_NAME_PLACEHOLDER;

Deno.test("PROJECT_NAME_PLACEHOLDER is espejo's ${PROJECT_NAME}", () => {
  assert.equal(P, "${PROJECT_NAME}");
});

const CASES: [name: string, input: unknown, want: unknown][] = [
  ["a bare placeholder", P, "team-a"],
  ["a placeholder inside text", `${P}-config`, "team-a-config"],
  ["every occurrence in a string", `${P}/${P}`, "team-a/team-a"],
  ["text without placeholder", "plain", "plain"],
  ["a near miss", "$PROJECT_NAME {PROJECT_NAME} ${project_name}", "$PROJECT_NAME {PROJECT_NAME} ${project_name}"],
  ["numbers, booleans and null", [1, true, false, null], [1, true, false, null]],
  ["array elements", [P, "x", [P]], ["team-a", "x", ["team-a"]]],
  [
    "values at any depth but never keys",
    {
      metadata: { name: `${P}-role`, labels: { [P]: P } },
      spec: { list: [{ deep: { deeper: [`ns=${P}`] } }] },
    },
    {
      metadata: { name: "team-a-role", labels: { [P]: "team-a" } },
      spec: { list: [{ deep: { deeper: ["ns=team-a"] } }] },
    },
  ],
];

for (const [name, input, want] of CASES) {
  Deno.test(`renderTemplate replaces the placeholder in ${name}`, () => {
    assert.deepEqual(renderTemplate(input, "team-a"), want);
  });
}

Deno.test("renderTemplate returns a deep copy and leaves its input unchanged", () => {
  const input = { metadata: { name: P, labels: { a: P } }, data: [P, { k: P }] };
  const before = structuredClone(input);
  const out = renderTemplate(input, "ns");
  assert.deepEqual(input, before);
  assert.notEqual(out, input);
  assert.notEqual(out.metadata, input.metadata);
  assert.notEqual(out.data, input.data);
  (out.metadata.labels as Record<string, string>).b = "added";
  (out.data[1] as Record<string, string>).k = "changed";
  assert.deepEqual(input, before);
});

// Strings that often contain the placeholder, alone, repeated, or next to near misses.
const str = fc.oneof(
  fc.string({ maxLength: 8 }),
  fc.constant(P),
  fc.tuple(fc.string({ maxLength: 4 }), fc.string({ maxLength: 4 })).map(([a, b]) => `${a}${P}${b}`),
  fc.array(fc.constantFrom(P, "$", "{", "}", "PROJECT_NAME", "x"), { maxLength: 6 }).map((xs) => xs.join("")),
);
// Keys include the placeholder too, to show they are left alone. "__proto__" is excluded because plain objects built by
// fast-check would give it a special meaning.
const key = fc.oneof(str, fc.constant(P)).filter((k) => k !== "__proto__");
const json = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    str,
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(key, tie("value"), { maxKeys: 4 }),
  ),
})).value;
// Namespace names: DNS labels cannot contain "$", "{", "}", "_" or capitals, so a rendered value cannot hold a
// placeholder any more.
const namespace = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?$/);

/** Walks `input` and `out` together; checks keys unchanged, strings rendered, everything else equal. */
function assertRendered(input: unknown, out: unknown, ns: string, path = "$"): void {
  if (typeof input === "string") {
    assert.equal(typeof out, "string", path);
    assert.ok(!(out as string).includes(P), `${path}: placeholder left in ${JSON.stringify(out)}`);
    assert.equal(out, input.split(P).join(ns), path);
  } else if (Array.isArray(input)) {
    assert.ok(Array.isArray(out), path);
    assert.equal(out.length, input.length, path);
    input.forEach((v, i) => assertRendered(v, out[i], ns, `${path}[${i}]`));
  } else if (input !== null && typeof input === "object") {
    assert.ok(out !== null && typeof out === "object" && !Array.isArray(out), path);
    assert.deepEqual(Object.keys(out), Object.keys(input), `${path}: keys changed`);
    for (const [k, v] of Object.entries(input)) {
      assertRendered(v, (out as Record<string, unknown>)[k], ns, `${path}.${k}`);
    }
  } else {
    assert.equal(out, input, path);
  }
}

Deno.test("renderTemplate keeps keys, renders every string value and leaves no placeholder in values", () => {
  fc.assert(
    fc.property(json, namespace, (input, ns) => {
      assertRendered(input, renderTemplate(input, ns), ns);
    }),
    { numRuns: 300 },
  );
});

Deno.test("renderTemplate keeps keys of fc.object values and does not mutate them", () => {
  fc.assert(
    fc.property(
      fc.object({ key, values: [str, fc.integer(), fc.boolean(), fc.constant(null)] }),
      namespace,
      (o, ns) => {
        const before = structuredClone(o);
        const out = renderTemplate(o, ns);
        assert.deepEqual(o, before);
        assertRendered(o, out, ns);
      },
    ),
  );
});

Deno.test("renderTemplate of fc.jsonValue without placeholders is an equal copy", () => {
  fc.assert(
    fc.property(fc.jsonValue(), namespace, (v, ns) => {
      fc.pre(!JSON.stringify(v).includes(P));
      assert.deepEqual(renderTemplate(v, ns), v);
    }),
  );
});

Deno.test("renderTemplate keeps a ConfigMap data key named __proto__ as data", () => {
  // ConfigMap keys may be any of [-._a-zA-Z0-9]+, so "__proto__" is a legal key that must survive as an own property.
  const input = JSON.parse(`{"data":{"__proto__":"${P}","a":"b"}}`);
  const out = renderTemplate(input, "ns");
  assert.deepEqual(Object.keys(out.data), ["__proto__", "a"]);
  assert.equal(JSON.stringify(out), `{"data":{"__proto__":"ns","a":"b"}}`);
});

Deno.test("renderTemplate keeps a key named __proto__ as a key, not a prototype", () => {
  const item = JSON.parse('{"data": {"__proto__": "${PROJECT_NAME}", "a": "b"}}');
  const out = renderTemplate(item, "team") as { data: Record<string, unknown> };
  assert.ok(Object.hasOwn(out.data, "__proto__"));
  assert.equal(Object.getOwnPropertyDescriptor(out.data, "__proto__")?.value, "team");
  assert.equal(Object.getPrototypeOf(out.data), Object.prototype);
  assert.equal(JSON.stringify(out), '{"data":{"__proto__":"team","a":"b"}}');
});

import assert from "node:assert/strict";
import fc from "fast-check";
import { canonicalJson } from "../../lib/kube/canonical_json.ts";
import { hashOfNow } from "../../lib/kube/objects.ts";

/** The first version, word for word: every hash espejo wrote was made from its text. */
function plainCanonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(plainCanonicalJson).join(",")}]`;
  if (typeof v === "object" && v !== null) {
    const o = v as Record<string, unknown>;
    return `{${
      Object.keys(o).sort().filter((k) => o[k] !== undefined).map((k) =>
        `${JSON.stringify(k)}:${plainCanonicalJson(o[k])}`
      ).join(",")
    }}`;
  }
  return JSON.stringify(v ?? null);
}

/** Strings a tenant can write: quotes, backslashes, control characters, lone and paired surrogates, U+2028. */
const anyString = fc.oneof(
  fc.string({ unit: "binary" }),
  fc.string({
    unit: fc.constantFrom('"', "\\", "\n", "\u0000", "\u001f", "\u007f", "\u2028", "\ud800", "\udc00", "a"),
  }),
);

/** Keys, array-index-like ones included: JS orders those first, by number, whatever order they were written in. */
const key = fc.oneof(
  anyString,
  fc.nat().map(String),
  fc.constantFrom("0", "9", "10", "01", "-1", "4294967294", "4294967295", "__proto__", "toJSON"),
);

const value = fc.letrec((tie) => ({
  any: fc.oneof(
    { depthSize: "small" },
    fc.constant(null),
    fc.constant(undefined),
    fc.boolean(),
    fc.double(),
    fc.integer(),
    anyString,
    fc.array(tie("any"), { maxLength: 5 }),
    fc.dictionary(key, tie("any"), { maxKeys: 6 }),
  ),
})).any;

Deno.test("canonicalJson writes the same text as the first version, for any JSON a tenant can write", () => {
  fc.assert(fc.property(value, (v) => assert.equal(canonicalJson(v), plainCanonicalJson(v))), { numRuns: 2000 });
});

Deno.test("canonicalJson sorts keys, leaves out undefined values, and writes what JSON cannot hold as null", () => {
  const cases: [unknown, string][] = [
    [{ b: 1, a: [true, null, undefined], c: undefined }, '{"a":[true,null,null],"b":1}'],
    [{ "é": "\u2028", '"': "\\", "\n": "\ud800" }, '{"\\n":"\\ud800","\\"":"\\\\","é":"\u2028"}'],
    [[NaN, Infinity, -0, 1e21], "[null,null,0,1e+21]"],
    [JSON.parse('{"b":1,"__proto__":{"y":1,"x":2},"10":2,"9":3}'), '{"10":2,"9":3,"__proto__":{"x":2,"y":1},"b":1}'],
    [JSON.parse('{"b":{"d":1,"c":2},"a":[{"f":1,"e":2}]}'), '{"a":[{"e":2,"f":1}],"b":{"c":2,"d":1}}'],
    [undefined, "null"],
    [[], "[]"],
    [{}, "{}"],
  ];
  for (const [v, text] of cases) assert.equal(canonicalJson(v), text);
});

/** hashOfNow of the object below, computed with the first version. */
const PINNED = "9f33db494b3194bef4b7a521";

Deno.test("the hash of an object is what every earlier version wrote into its hash annotation", () => {
  const object = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "policy", namespace: "team-a", labels: { "sync.appuio.ch/managed": "true" } },
    data: { "a.yaml": 'key: "value"\n', b: "ünïcödé" },
  };
  assert.equal(hashOfNow(object), PINNED);
});

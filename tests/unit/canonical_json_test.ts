import assert from "node:assert/strict";
import fc from "fast-check";
import { canonicalJson, jsonText } from "../../lib/kube/canonical_json.ts";
import { API_SERVER_MAX_DEPTH, MAX_WALK_DEPTH } from "../../lib/kube/json_depth.ts";
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

/** `inner` inside `levels` containers: objects under key `key`, or one-element arrays when `key` is undefined. */
function nestedIn(inner: unknown, levels: number, key?: string): unknown {
  let v = inner;
  for (let i = 0; i < levels; i++) v = key === undefined ? [v] : { [key]: v, b: i };
  return v;
}

/** The canonical text of {@link nestedIn}, written from the outside in. */
function nestedText(innerText: string, levels: number, key?: string): string {
  if (key === undefined) return "[".repeat(levels) + innerText + "]".repeat(levels);
  let head = "", tail = "";
  const k = JSON.stringify(key);
  for (let i = levels - 1; i >= 0; i--) {
    // Keys sorted: an array-index key ("0") before "b", any other after it only if it sorts after.
    if (k < '"b"') {
      head += `{${k}:`;
      tail = `,"b":${i}}` + tail;
    } else {
      head += `{"b":${i},${k}:`;
      tail = "}" + tail;
    }
  }
  return head + innerText + tail;
}

Deno.test("canonicalJson writes the first version's text for values nested past MAX_WALK_DEPTH", () => {
  const levels = fc.integer({ min: MAX_WALK_DEPTH - 2, max: MAX_WALK_DEPTH + 40 });
  const wrapper = fc.constantFrom(undefined, "a", "0", "z", "__proto__");
  fc.assert(
    fc.property(value, levels, wrapper, (v, n, k) => {
      const deep = nestedIn(v, n, k);
      assert.equal(canonicalJson(deep), plainCanonicalJson(deep));
    }),
    { numRuns: 300 },
  );
});

/** An object that the engine's JSON.stringify writes off its fast path, by recursion: more keys than it keeps fast. */
const manyKeys = () => Object.fromEntries(Array.from({ length: 1100 }, (_, i) => [`k${i}`, i]));

for (const depth of [5_000, 8_000, API_SERVER_MAX_DEPTH, 100_000]) {
  Deno.test(`canonicalJson writes a value nested ${depth} levels deep without throwing`, () => {
    for (const key of [undefined, "a", "0"]) {
      assert.ok(canonicalJson(nestedIn("leaf", depth, key)) === nestedText('"leaf"', depth, key));
    }
    const leaf = manyKeys();
    assert.ok(canonicalJson(nestedIn(leaf, depth, "a")) === nestedText(canonicalJson(leaf), depth, "a"));
    // As a tenant's object arrives: parsed from the server's text, managedFields and all.
    const parsed = JSON.parse(nestedText('"leaf"', depth, "a"));
    assert.ok(canonicalJson(parsed) === nestedText('"leaf"', depth, "a"));
  });

  Deno.test(`jsonText writes a value nested ${depth} levels deep as JSON that parses back to it`, () => {
    const deep = nestedIn(manyKeys(), depth, "0");
    const text = jsonText(deep);
    assert.ok(canonicalJson(JSON.parse(text)) === canonicalJson(deep));
  });
}

Deno.test("jsonText is the engine's JSON.stringify within MAX_WALK_DEPTH levels", () => {
  // Exactly MAX_WALK_DEPTH levels: the inner object and its array are two.
  const v = nestedIn({ z: 1, a: [1, undefined, "x"], u: undefined }, MAX_WALK_DEPTH - 2, "b2");
  assert.ok(jsonText(v) === JSON.stringify(v));
  fc.assert(fc.property(value, (x) => assert.equal(jsonText(x), JSON.stringify(x))), { numRuns: 500 });
});

Deno.test("canonicalJson throws a TypeError on a cyclic value nested past MAX_WALK_DEPTH, and does not loop", () => {
  const top: Record<string, unknown> = {};
  let v: Record<string, unknown> = top;
  for (let i = 0; i < MAX_WALK_DEPTH + 5; i++) v = v.a = {};
  v.a = top;
  assert.throws(() => canonicalJson(top), TypeError);
});

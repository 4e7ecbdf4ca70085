/** The streaming list splitter (lib/kube/json_items.ts) and the watch line splitter (lib/kube/json_lines.ts). */
import assert from "node:assert/strict";
import fc from "fast-check";
import { JsonItemSplitter } from "../../lib/kube/json_items.ts";
import { LineSplitter } from "../../lib/kube/json_lines.ts";

/** Splits `text` at `cuts` (positions, any order) and feeds the pieces: items (parsed) and the rest. */
function split(text: string, cuts: number[] = []): { items: unknown[]; rest: Record<string, unknown> } {
  const items: unknown[] = [];
  const splitter = new JsonItemSplitter((json) => items.push(JSON.parse(json)));
  const at = [...new Set(cuts.map((c) => Math.min(c, text.length)))].sort((a, b) => a - b);
  let from = 0;
  for (const c of [...at, text.length]) {
    splitter.push(text.slice(from, c));
    from = c;
  }
  return { items, rest: splitter.end() };
}

const expected = (text: string) => {
  const { items, ...rest } = JSON.parse(text);
  return { items: Array.isArray(items) ? items : [], rest };
};

const TABLE: [string, string][] = [
  ["an empty list", `{"kind":"List","metadata":{"resourceVersion":"5"},"items":[]}`],
  ["items before the metadata", `{"items":[{"a":1}],"metadata":{"continue":"x"}}`],
  ["no items at all", `{"kind":"Status","code":410}`],
  ["items null", `{"metadata":{},"items":null}`],
  ["whitespace everywhere", ` {\n "metadata" : { } ,\n "items" :\t[ {"a" : [ 1 , 2 ] } , { } ] \n} \n`],
  ["strings with braces, quotes and escapes", `{"items":[{"s":"}]{[\\"\\\\","t":"\\\\"},{"u":"\\u0022}"}]}`],
  ["an element that is a string, a number, a literal or an array", `{"items":["a]}",12.5e3,true,null,[[],{}],-0]}`],
  ["a key named items deeper down", `{"metadata":{"items":[1,2]},"items":[{"items":[3]}]}`],
  ["a value that says items", `{"kind":"items","metadata":{"x":["items"]},"items":[{"k":"items"}]}`],
  ["unicode", `{"metadata":{"n":"ü"},"items":[{"name":"日本","e":"😀"}]}`],
];

for (const [name, text] of TABLE) {
  Deno.test(`JsonItemSplitter: ${name}, whole and cut at every position`, () => {
    assert.deepEqual(split(text), expected(text));
    for (let c = 0; c <= text.length; c++) assert.deepEqual(split(text, [c]), expected(text), `cut at ${c}`);
    assert.deepEqual(split(text, [...text].map((_, i) => i)), expected(text), "one character a chunk");
  });
}

Deno.test("JsonItemSplitter hands on each item before the next has arrived", () => {
  const seen: string[] = [];
  const splitter = new JsonItemSplitter((json) => seen.push(json));
  splitter.push(`{"metadata":{},"items":[{"a":"1"},{"b":`);
  assert.deepEqual(seen, [`{"a":"1"}`]);
  splitter.push(`"2"}`);
  assert.deepEqual(seen, [`{"a":"1"}`, `{"b":"2"}`]);
  splitter.push(`]}`);
  assert.deepEqual(splitter.end(), { metadata: {} });
});

Deno.test("JsonItemSplitter refuses a list that ends early", () => {
  for (const text of [`{"items":[{"a":1}`, `{"items":[{"a":"x`, `{"metadata":{}`, `{"items":[1`]) {
    const splitter = new JsonItemSplitter(() => {});
    splitter.push(text);
    assert.throws(() => splitter.end(), SyntaxError, text);
  }
});

/** Strings with what the splitter must not be fooled by: quotes, backslashes, brackets. */
const tricky = fc.string({ unit: fc.constantFrom("a", '"', "\\", "{", "}", "[", "]", ",", ":", " ", "\n", "é") });
const json = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    tricky,
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.constantFrom(true, false, null),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(fc.oneof(tricky, fc.constant("items")), tie("value"), { maxKeys: 4 }),
  ),
})).value;

Deno.test("JsonItemSplitter yields what JSON.parse does, however the text is cut", () => {
  fc.assert(
    fc.property(
      fc.array(json, { maxLength: 6 }),
      fc.dictionary(fc.constantFrom("kind", "apiVersion", "metadata", "x"), json),
      fc.boolean(),
      fc.array(fc.nat(), { maxLength: 12 }),
      (items, others, itemsFirst, cuts) => {
        const list = itemsFirst ? { items, ...others } : { ...others, items };
        const text = JSON.stringify(list, null, cuts.length % 2 ? 1 : undefined);
        const positions = cuts.map((c) => (text.length ? c % (text.length + 1) : 0));
        assert.deepEqual(split(text, positions), expected(text));
      },
    ),
    { numRuns: 500 },
  );
});

Deno.test("LineSplitter yields the lines of a stream, however it is cut", () => {
  fc.assert(
    fc.property(
      fc.array(fc.string({ unit: fc.constantFrom("a", "{", " ", "\n", "é") })),
      fc.array(fc.nat()),
      (parts, cuts) => {
        const text = parts.join("\n");
        const at = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
        const splitter = new LineSplitter();
        const lines: string[] = [];
        let from = 0;
        for (const c of [...at, text.length]) {
          lines.push(...splitter.push(text.slice(from, c)));
          from = c;
        }
        lines.push(...splitter.push("\n"));
        assert.deepEqual(lines, text.split("\n").map((l) => l.trim()).filter(Boolean));
      },
    ),
  );
});

Deno.test("LineSplitter reads a line of a million characters arriving in a thousand chunks", () => {
  // Searching the whole buffer per chunk would look at 500 million characters; this reads each one once.
  const line = JSON.stringify({ type: "ADDED", object: { data: { a: "x".repeat(1_000_000) } } });
  const splitter = new LineSplitter();
  let got: string[] = [];
  for (let i = 0; i < line.length; i += 1000) got = got.concat(splitter.push(line.slice(i, i + 1000)));
  got = got.concat(splitter.push("\n"));
  assert.equal(got.length, 1);
  assert.equal(got[0], line);
});

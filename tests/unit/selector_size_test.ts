/** The bounds of one label selector (lib/model/selector_size.ts): distinct keys, characters of keys and values. */
import assert from "node:assert/strict";
import type { LabelSelector } from "../../lib/model/selector.ts";
import { MAX_SELECTOR_CHARACTERS, MAX_SELECTOR_KEYS, selectorSizeProblem } from "../../lib/model/selector_size.ts";

/** `n` requirements on distinct keys `k0`, `k1`... */
const exists = (n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => ({ key: `k${from + i}`, operator: "Exists" }));
/** A value of 63 characters (the longest a label value may be), distinct by `i`. */
const value63 = (i: number) => `v${i}-`.padEnd(63, "v");

const SELECTOR_SIZES: [name: string, selector: LabelSelector, problem: string | undefined][] = [
  ["MAX_SELECTOR_KEYS keys", { matchExpressions: exists(MAX_SELECTOR_KEYS) }, undefined],
  [
    "one key more",
    { matchExpressions: exists(MAX_SELECTOR_KEYS + 1) },
    "reads 65 distinct label keys, more than the 64 allowed",
  ],
  [
    "keys of matchLabels and matchExpressions together",
    { matchLabels: { k0: "a", extra: "b" }, matchExpressions: exists(MAX_SELECTOR_KEYS) },
    "reads 65 distinct label keys, more than the 64 allowed",
  ],
  [
    "a key read twice counts once",
    { matchLabels: { k0: "a" }, matchExpressions: [...exists(MAX_SELECTOR_KEYS), ...exists(1)] },
    undefined,
  ],
  ["the issue's 2,000 fresh keys", { matchExpressions: exists(2000) }, "reads 2000 distinct label keys"],
  [
    "MAX_SELECTOR_CHARACTERS characters of keys and values",
    {
      matchExpressions: [{
        key: "k",
        operator: "In",
        values: [
          ...Array.from({ length: 260 }, (_, i) => value63(i)),
          "x".repeat(MAX_SELECTOR_CHARACTERS - 1 - 260 * 63),
        ],
      }],
    },
    undefined,
  ],
  [
    "one character more",
    {
      matchExpressions: [{
        key: "k",
        operator: "In",
        values: [...Array.from({ length: 260 }, (_, i) => value63(i)), "x".repeat(MAX_SELECTOR_CHARACTERS - 260 * 63)],
      }],
    },
    "has 16385 characters of label keys and values, more than the 16384 allowed",
  ],
  [
    "64 valid labels of the longest keys and values in matchLabels",
    {
      matchLabels: Object.fromEntries(
        Array.from({ length: 64 }, (_, i) => [`${"a".repeat(63)}.${"b".repeat(63)}.example/${value63(i)}`, value63(i)]),
      ),
    },
    "has 16768 characters of label keys and values, more than the 16384 allowed",
  ],
  [
    "values beside keys of the wrong type (left to the checks after it)",
    { matchExpressions: [{ key: 7 as unknown as string, operator: "In", values: ["a"] }, "x" as never] },
    undefined,
  ],
];

for (const [name, selector, problem] of SELECTOR_SIZES) {
  Deno.test(`selectorSizeProblem: ${name}`, () => {
    assert.equal(MAX_SELECTOR_KEYS, 64);
    assert.equal(MAX_SELECTOR_CHARACTERS, 16384);
    if (problem) assert.ok(selectorSizeProblem(selector)?.startsWith(problem), selectorSizeProblem(selector));
    else assert.equal(selectorSizeProblem(selector), undefined);
  });
}

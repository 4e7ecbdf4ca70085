import assert from "node:assert/strict";
import fc from "fast-check";
import { RE2JS } from "re2js";
import { estimateProgramSize } from "../../lib/model/regexp_size.ts";

const HOSTILE = "\\pL{0,999}".repeat(100);

// Sizes by Go's regexp/syntax size rule (calcSize).
const SIZES: [pattern: string, size: number][] = [
  ["", 1],
  ["a", 1],
  ["abc", 3],
  ["a|b", 3],
  ["a|b|", 5], // an empty alternative counts 1
  ["(a)", 3],
  ["(?:a)", 1],
  ["(?P<n>a)", 3],
  ["(?<n>a)", 3],
  ["(?i)abc", 3], // flags alone are no group
  ["(?i:ab)", 2],
  ["a*", 3],
  ["a*?", 3],
  ["a+", 2],
  ["a?", 2],
  ["a{3}", 3],
  ["a{3}?", 3],
  ["a{2,5}", 8],
  ["a{2,}", 3],
  ["a{0,}", 3],
  ["a{0}", 1],
  ["ab{3}", 4], // a repeat applies to the last character only
  ["(ab){3}", 12],
  ["(?:a{2}){3}", 6],
  ["\\pL{0,63}", 126],
  ["\\p{Greek}{3}", 3],
  ["\\PL{3}", 3],
  ["\\x{41}{3}", 3], // the braces belong to the escape
  ["\\x41{3}", 3],
  ["\\d{4}", 4],
  ["\\{3}", 3], // an escaped brace starts no repeat: \{, 3, }
  ["a{,3}", 5], // not a repeat: literals
  ["a{01}", 5], // leading zero: literals
  ["a{1", 3],
  ["{3}", 1], // nothing to repeat (re2js refuses it)
  ["\\Qa{5}|(\\E{2}", 7], // \Q...\E is literal; {2} applies to its last character
  ["\\Qa*", 2], // \Q runs to the end
  ["[{5}]{2}", 2],
  ["[]a]{2}", 2],
  ["[^]a]{2}", 2],
  ["[[:alpha:]]{2}", 2],
  ["[a-\\]]{2}", 2],
  ["[\\pL-]{2}", 2],
  [".{0,1000}", 2000],
  ["tenant-[a-z]{1,20}-.*", 50],
  ["é😀{2}", 3], // code points, not UTF-16 units
  [HOSTILE, 199_800],
];

for (const [pattern, size] of SIZES) {
  Deno.test(`estimateProgramSize of ${JSON.stringify(pattern.slice(0, 30))} is ${size}`, () => {
    assert.deepEqual(estimateProgramSize(pattern), { size });
  });
}

const INVALID_REPEATS: [pattern: string, repeat: string][] = [
  ["a{1001}", "{1001}"],
  ["a{0,1001}", "{0,1001}"],
  ["a{5,3}", "{5,3}"],
  ["a{123456789}", "{123456789}"],
  ["(a{500}){500}", "{500}"],
  ["(a{2}){501}", "{501}"],
  ["((a{10}){10}){11}", "{11}"],
  ["(a{10,}){101}", "{101}"], // an unbounded repeat counts its minimum
  ["(a{1001}){0}", "{1001}"], // a count above 1000 is refused wherever it is
];

for (const [pattern, repeat] of INVALID_REPEATS) {
  Deno.test(`estimateProgramSize reports the invalid repeat ${repeat} in ${JSON.stringify(pattern)} as re2js does`, () => {
    assert.equal(estimateProgramSize(pattern).invalidRepeat, repeat);
    assert.throws(
      () => RE2JS.compile(pattern),
      new RegExp(`invalid repeat count: \`${repeat.replace(/[{}]/g, "\\$&")}\``),
    );
  });
}

for (const pattern of ["(a{10}){100}", "((a{10}){10}){10}", "(a{0}){1000}", "(a*){1000}", "(a{0,}){1000}", "a{1000}"]) {
  Deno.test(`estimateProgramSize accepts the repeats of ${JSON.stringify(pattern)} as Go does`, () => {
    assert.equal(estimateProgramSize(pattern).invalidRepeat, undefined);
    RE2JS.compile(pattern);
  });
}

Deno.test("estimateProgramSize saturates instead of overflowing", () => {
  const { size } = estimateProgramSize("((((a{1000}){1000}){1000}){1000}){1000}".repeat(10));
  assert.equal(size, 2 ** 40);
});

Deno.test("estimateProgramSize handles 500 nested groups without recursion", () => {
  assert.deepEqual(estimateProgramSize(`${"(".repeat(500)}a${")".repeat(500)}`), { size: 1001 });
  assert.deepEqual(estimateProgramSize("(".repeat(1000)), { size: 2001 }); // unclosed: re2js refuses it anyway
});

const ATOMS = [
  "a",
  "b",
  ".",
  "\\pL",
  "\\p{Greek}",
  "[a-z]",
  "[^]x]",
  "[[:alpha:]-]",
  "[a-\\x{7a}]",
  "\\d",
  "\\x{41}",
  "\\x41",
  "\\Qa{5}|(\\E",
  "^",
  "$",
  "\\b",
  "\\z",
  "{",
  "}",
  "{,3}",
  "\\{",
  "\\\\",
  "[{9}]",
  "😀",
  "(?i)",
  "(?s:.)",
  "-",
];
const OPS = [
  "",
  "",
  "",
  "*",
  "+",
  "?",
  "*?",
  "{2}",
  "{3,}",
  "{0,5}",
  "{1,4}?",
  "{0}",
  "{1}",
  "{10,20}",
  "{01}",
  "{2,1}",
];

const pattern = fc.letrec((tie) => ({
  atom: fc.oneof(
    { maxDepth: 3, depthIdentifier: "re" },
    fc.constantFrom(...ATOMS),
    fc.tuple(fc.constantFrom("(", "(?:", "(?i:", "(?P<g>"), tie("alternation")).map(([open, body]) =>
      `${open}${body})`
    ),
  ),
  piece: fc.tuple(tie("atom"), fc.constantFrom(...OPS)).map(([atom, op]) => `${atom}${op}`),
  concatenation: fc.array(tie("piece"), { maxLength: 4 }).map((pieces) => pieces.join("")),
  alternation: fc.array(tie("concatenation"), { minLength: 1, maxLength: 3 }).map((alts) => alts.join("|")),
})).alternation as fc.Arbitrary<string>;

Deno.test("estimateProgramSize is never below the program re2js compiles", () => {
  fc.assert(
    fc.property(pattern, (p) => {
      let real: number;
      try {
        real = RE2JS.compile(p).programSize();
      } catch {
        return; // re2js refuses it: any estimate will do
      }
      // programSize() also counts the fail and match instructions around every program.
      assert.ok(estimateProgramSize(p).size + 2 >= real, `${p}: estimate ${estimateProgramSize(p).size}, real ${real}`);
    }),
    { numRuns: 2000 },
  );
});

Deno.test("estimateProgramSize reports an invalid repeat exactly when re2js refuses one", () => {
  const count = fc.constantFrom(
    "{2}",
    "{7}",
    "{30}",
    "{0,5}",
    "{999}",
    "{1000}",
    "{1001}",
    "{0}",
    "{100,}",
    "{0,1000}",
  );
  const nested = fc.array(fc.tuple(fc.constantFrom("(", "(?:"), count), { minLength: 1, maxLength: 4 })
    .map((levels) => levels.reduce((inner, [open, c]) => `${open}${inner})${c}`, "a"));
  fc.assert(
    fc.property(nested, (p) => {
      const { size, invalidRepeat } = estimateProgramSize(p);
      fc.pre(invalidRepeat !== undefined || size < 20_000); // compiling a larger one would only be slow
      let error = "";
      try {
        RE2JS.compile(p);
      } catch (e) {
        error = (e as Error).message;
      }
      if (invalidRepeat === undefined) {
        assert.ok(!error.includes("invalid repeat count"), `${p}: ${error}`);
      } else {
        assert.ok(error !== "", `${p}: re2js accepts it, but ${invalidRepeat} was reported`);
      }
    }),
    { numRuns: 500 },
  );
});

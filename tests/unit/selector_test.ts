import assert from "node:assert/strict";
import fc from "fast-check";
import {
  compileLabelSelector,
  compileNamespaceSelector,
  compilePattern,
  labelKeyProblem,
  type LabelSelector,
  MAX_PATTERN_LENGTH,
  MAX_PATTERNS,
  MAX_PROGRAM_SIZE,
  MAX_SELECTOR_PROGRAM_SIZE,
  type NamespaceSelectorSpec,
  SelectorError,
} from "../../lib/model/selector.ts";

const BASE = ".spec.namespaceSelector";
const LS = `${BASE}.labelSelector`;

/** Asserts that `fn` throws a SelectorError for `field` whose message starts with the field and contains `part`. */
function assertSelectorError(fn: () => unknown, field: string, part: string): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof SelectorError, `expected a SelectorError, got ${e}`);
    assert.equal(e.field, field);
    assert.ok(e.message.startsWith(`${field} `), `message should start with the field: ${e.message}`);
    assert.ok(e.message.includes(part), `message should contain ${JSON.stringify(part)}: ${e.message}`);
    return true;
  });
}

/** Escapes RE2 metacharacters so the pattern matches `s` literally. */
const quote = (s: string): string => s.replace(/[\\^$.|?*+()[\]{}]/g, "\\$&");

// ---------------------------------------------------------------------------------------------------------------
// labelKeyProblem

const VALID_KEYS = [
  "a",
  "A",
  "env",
  "a.b-c_d",
  "a..b",
  "app.kubernetes.io/name",
  "example.com/Name",
  "a/b",
  "x".repeat(63),
  `${"a".repeat(63)}.${"a".repeat(63)}.${"a".repeat(63)}.${"a".repeat(61)}/name`, // prefix of exactly 253
];

for (const key of VALID_KEYS) {
  Deno.test(`labelKeyProblem accepts ${JSON.stringify(key.length > 40 ? `${key.slice(0, 20)}…` : key)}`, () => {
    assert.equal(labelKeyProblem(key), undefined);
  });
}

const INVALID_KEYS: [key: string, part: string][] = [
  ["", "is not a valid label key"],
  ["-a", "is not a valid label key"],
  ["a-", "is not a valid label key"],
  ["_a", "is not a valid label key"],
  ["a b", "is not a valid label key"],
  ["a:b", "is not a valid label key"],
  ["x".repeat(64), "is not a valid label key"],
  ["a/", "is not a valid label key"],
  ["/a", "invalid prefix"],
  ["Example.com/a", "invalid prefix"],
  ["a_b.com/x", "invalid prefix"],
  ["-a.com/x", "invalid prefix"],
  ["a..com/x", "invalid prefix"],
  ["a/b/c", "invalid prefix"],
  [`${"a".repeat(63)}.${"a".repeat(63)}.${"a".repeat(63)}.${"a".repeat(62)}/name`, "invalid prefix"], // 254
];

for (const [key, part] of INVALID_KEYS) {
  Deno.test(`labelKeyProblem rejects ${JSON.stringify(key.length > 40 ? `${key.slice(0, 20)}…` : key)}`, () => {
    const problem = labelKeyProblem(key);
    assert.ok(problem, "expected a problem");
    assert.ok(problem.includes(part), problem);
  });
}

// ---------------------------------------------------------------------------------------------------------------
// compileLabelSelector: matching

const MATCHES: [name: string, selector: LabelSelector, labels: Record<string, string>, want: boolean][] = [
  ["empty selector matches no labels", {}, {}, true],
  ["empty selector matches any labels", {}, { env: "prod" }, true],
  ["matchLabels equal value", { matchLabels: { env: "prod" } }, { env: "prod", x: "y" }, true],
  ["matchLabels other value", { matchLabels: { env: "prod" } }, { env: "dev" }, false],
  ["matchLabels missing key", { matchLabels: { env: "prod" } }, {}, false],
  ["matchLabels empty value present", { matchLabels: { env: "" } }, { env: "" }, true],
  ["matchLabels empty value absent", { matchLabels: { env: "" } }, {}, false],
  ["matchLabels are ANDed (both)", { matchLabels: { a: "1", b: "2" } }, { a: "1", b: "2" }, true],
  ["matchLabels are ANDed (one)", { matchLabels: { a: "1", b: "2" } }, { a: "1" }, false],
  ["prefixed key", { matchLabels: { "app.kubernetes.io/name": "x" } }, { "app.kubernetes.io/name": "x" }, true],
  ...inOut("In", ["prod", "staging"], [
    [{ env: "prod" }, true],
    [{ env: "staging" }, true],
    [{ env: "dev" }, false],
    [{}, false],
    [{ other: "prod" }, false],
  ]),
  ...inOut("NotIn", ["prod", "staging"], [
    [{ env: "prod" }, false],
    [{ env: "staging" }, false],
    [{ env: "dev" }, true],
    [{}, true], // Kubernetes: NotIn matches when the key is absent
  ]),
  ...inOut("Exists", undefined, [
    [{ env: "" }, true],
    [{ env: "x" }, true],
    [{}, false],
    [{ envx: "x" }, false],
  ]),
  ...inOut("DoesNotExist", undefined, [
    [{}, true],
    [{ envx: "x" }, true],
    [{ env: "" }, false],
    [{ env: "x" }, false],
  ]),
  ...inOut("Exists", [], [[{ env: "x" }, true]]), // explicitly empty values are fine
  [
    "matchLabels and matchExpressions are ANDed",
    { matchLabels: { team: "a" }, matchExpressions: [{ key: "env", operator: "In", values: ["prod"] }] },
    { team: "a", env: "dev" },
    false,
  ],
  [
    "matchLabels and matchExpressions both hold",
    {
      matchLabels: { team: "a" },
      matchExpressions: [{ key: "env", operator: "In", values: ["prod"] }, { key: "old", operator: "DoesNotExist" }],
    },
    { team: "a", env: "prod" },
    true,
  ],
];

function inOut(
  operator: string,
  values: string[] | undefined,
  rows: [Record<string, string>, boolean][],
): [string, LabelSelector, Record<string, string>, boolean][] {
  return rows.map(([labels, want]) => [
    `env ${operator} ${JSON.stringify(values ?? null)} on ${JSON.stringify(labels)}`,
    { matchExpressions: [{ key: "env", operator, ...(values ? { values } : {}) }] },
    labels,
    want,
  ]);
}

for (const [name, selector, labels, want] of MATCHES) {
  Deno.test(`compileLabelSelector: ${name} is ${want}`, () => {
    assert.equal(compileLabelSelector(selector, LS)(labels), want);
  });
}

Deno.test("compileLabelSelector In/NotIn/Exists/DoesNotExist agree with their set definitions", () => {
  const word = fc.constantFrom("a", "b", "c");
  fc.assert(
    fc.property(
      fc.dictionary(fc.constantFrom("k", "j"), word),
      fc.uniqueArray(word, { minLength: 1 }),
      (labels, values) => {
        const sel = (operator: string, vs?: string[]) =>
          compileLabelSelector({ matchExpressions: [{ key: "k", operator, values: vs }] }, LS)(labels);
        const has = Object.hasOwn(labels, "k");
        assert.equal(sel("In", values), has && values.includes(labels.k));
        assert.equal(sel("NotIn", values), !(has && values.includes(labels.k)));
        assert.equal(sel("Exists"), has);
        assert.equal(sel("DoesNotExist"), !has);
      },
    ),
  );
});

Deno.test({
  name: "compileLabelSelector Exists does not see Object.prototype members as labels",
  fn() {
    for (const key of ["constructor", "toString", "valueOf", "hasOwnProperty"]) {
      const exists = compileLabelSelector({ matchExpressions: [{ key, operator: "Exists" }] }, LS);
      const absent = compileLabelSelector({ matchExpressions: [{ key, operator: "DoesNotExist" }] }, LS);
      assert.equal(exists({}), false, `${key} Exists on {}`);
      assert.equal(absent({}), true, `${key} DoesNotExist on {}`);
    }
  },
});

Deno.test("compileLabelSelector matchLabels and In do not see Object.prototype members as labels", () => {
  for (const key of ["constructor", "toString", "valueOf", "hasOwnProperty"]) {
    const equal = compileLabelSelector({ matchLabels: { [key]: "x" } }, LS);
    const isIn = compileLabelSelector({ matchExpressions: [{ key, operator: "In", values: ["x"] }] }, LS);
    const notIn = compileLabelSelector({ matchExpressions: [{ key, operator: "NotIn", values: ["x"] }] }, LS);
    assert.equal(equal({}), false, `${key} matchLabels on {}`);
    assert.equal(equal({ [key]: "x" }), true, `${key} matchLabels on its own label`);
    assert.equal(isIn({}), false, `${key} In on {}`);
    assert.equal(notIn({}), true, `${key} NotIn on {}`);
  }
});

// ---------------------------------------------------------------------------------------------------------------
// compileLabelSelector: validation

const INVALID_SELECTORS: [name: string, selector: LabelSelector, field: string, part: string][] = [
  ["matchLabels bad key", { matchLabels: { "-bad": "x" } }, `${LS}.matchLabels["-bad"]`, "not a valid label key"],
  [
    "matchLabels bad prefix",
    { matchLabels: { "Bad.com/x": "x" } },
    `${LS}.matchLabels["Bad.com/x"]`,
    "invalid prefix",
  ],
  [
    "matchLabels value with space",
    { matchLabels: { env: "a b" } },
    `${LS}.matchLabels["env"]`,
    "not a valid label value",
  ],
  [
    "matchLabels value of 64 characters",
    { matchLabels: { env: "v".repeat(64) } },
    `${LS}.matchLabels["env"]`,
    "not a valid label value",
  ],
  [
    "matchLabels value ending in a dash",
    { matchLabels: { env: "prod-" } },
    `${LS}.matchLabels["env"]`,
    "not a valid label value",
  ],
  [
    "matchLabels value not a string",
    { matchLabels: { env: 3 as unknown as string } },
    `${LS}.matchLabels["env"]`,
    "must be a string",
  ],
  [
    "matchLabels not an object",
    { matchLabels: "a=b" as unknown as Record<string, string> },
    `${LS}.matchLabels`,
    "must be an object of strings",
  ],
  [
    "matchExpressions not a list",
    { matchExpressions: { key: "a" } as unknown as [] },
    `${LS}.matchExpressions`,
    "must be a list",
  ],
  [
    "a matchExpression that is not an object",
    { matchExpressions: [null as unknown as { key: string; operator: string }] },
    `${LS}.matchExpressions[0]`,
    "must be an object",
  ],
  [
    "a matchExpression key that is not a string",
    { matchExpressions: [{ key: 5 as unknown as string, operator: "Exists" }] },
    `${LS}.matchExpressions[0].key`,
    "must be a string",
  ],
  [
    "matchExpression values that are not strings",
    { matchExpressions: [{ key: "a", operator: "In", values: ["x", 1 as unknown as string] }] },
    `${LS}.matchExpressions[0].values`,
    "must be a list of strings",
  ],
  [
    "matchExpression values that are not a list",
    { matchExpressions: [{ key: "a", operator: "In", values: "xy" as unknown as string[] }] },
    `${LS}.matchExpressions[0].values`,
    "must be a list of strings",
  ],
  [
    "matchExpressions empty key",
    { matchExpressions: [{ key: "ok", operator: "Exists" }, { key: "", operator: "Exists" }] },
    `${LS}.matchExpressions[1].key`,
    "not a valid label key",
  ],
  [
    "matchExpressions missing key",
    { matchExpressions: [{ operator: "Exists" } as unknown as { key: string; operator: string }] },
    `${LS}.matchExpressions[0].key`,
    "not a valid label key",
  ],
  [
    "matchExpressions bad prefix",
    { matchExpressions: [{ key: "UPPER.io/x", operator: "Exists" }] },
    `${LS}.matchExpressions[0].key`,
    "invalid prefix",
  ],
  ...["in", "notin", "Equals", "exists", "", "!="].map((operator): [string, LabelSelector, string, string] => [
    `operator ${JSON.stringify(operator)}`,
    { matchExpressions: [{ key: "env", operator, values: ["x"] }] },
    `${LS}.matchExpressions[0].operator`,
    `"${operator}" is not a valid operator`,
  ]),
  [
    "In without values",
    { matchExpressions: [{ key: "env", operator: "In" }] },
    `${LS}.matchExpressions[0].values`,
    "must be non-empty for operator In",
  ],
  [
    "NotIn with empty values",
    { matchExpressions: [{ key: "env", operator: "NotIn", values: [] }] },
    `${LS}.matchExpressions[0].values`,
    "must be non-empty for operator NotIn",
  ],
  [
    "In with an invalid value",
    { matchExpressions: [{ key: "env", operator: "In", values: ["ok", "not ok"] }] },
    `${LS}.matchExpressions[0].values`,
    `"not ok" is not a valid label value`,
  ],
  [
    "Exists with values",
    { matchExpressions: [{ key: "env", operator: "Exists", values: ["x"] }] },
    `${LS}.matchExpressions[0].values`,
    "must be empty for operator Exists",
  ],
  [
    "DoesNotExist with values",
    { matchExpressions: [{ key: "env", operator: "DoesNotExist", values: ["x"] }] },
    `${LS}.matchExpressions[0].values`,
    "must be empty for operator DoesNotExist",
  ],
];

for (const [name, selector, field, part] of INVALID_SELECTORS) {
  Deno.test(`compileLabelSelector rejects ${name} naming ${field}`, () => {
    assertSelectorError(() => compileLabelSelector(selector, LS), field, part);
  });
}

// ---------------------------------------------------------------------------------------------------------------
// compilePattern

const PATTERN_MATCHES: [pattern: string, name: string, want: boolean][] = [
  ["a|b", "a", true],
  ["a|b", "b", true],
  ["a|b", "ax", false],
  ["a|b", "xb", false],
  ["a|b", "ab", false],
  ["foo", "foo", true],
  ["foo", "foobar", false],
  ["foo", "xfoo", false],
  ["team-.*", "team-a", true],
  ["team-.*", "my-team-a", false],
  [".*", "", true],
  [".*", "anything", true],
  ["[a-z]+", "abc", true],
  ["[a-z]+", "abc1", false],
  ["(?i)abc", "ABC", true],
  ["a.c", "a.c", true],
  ["a.c", "abc", true],
  ["a\\.c", "abc", false],
  ["^foo$", "foo", true], // explicit anchors are harmless
  ["kube-.*|default", "kube-system", true],
  ["kube-.*|default", "default-x", false],
];

for (const [pattern, name, want] of PATTERN_MATCHES) {
  Deno.test(`compilePattern ${JSON.stringify(pattern)} anchored as a whole on ${JSON.stringify(name)} is ${want}`, () => {
    assert.equal(compilePattern(pattern, "f")(name), want);
  });
}

Deno.test("compilePattern of an alternation matches exactly its alternatives", () => {
  const name = fc.stringMatching(/^[a-z0-9.-]{0,6}$/);
  fc.assert(
    fc.property(name, name, name, (a, b, x) => {
      const m = compilePattern(`${quote(a)}|${quote(b)}`, "f");
      assert.equal(m(x), x === a || x === b);
      assert.equal(m(`${a}x`), `${a}x` === b);
    }),
  );
});

const BAD_PATTERNS: [pattern: string, part: string][] = [
  ["(", "missing closing )"],
  ["a)", "unexpected )"],
  ["[a-", "missing closing ]"],
  ["*", "missing argument to repetition operator"],
  ["(?=a)", "invalid or unsupported Perl syntax"], // no lookahead in RE2
  ["(?<!a)b", "invalid named capture"], // no lookbehind: RE2 reads (?< as a named group
  ["a\\1", "invalid escape sequence"], // no backreferences
  ["a{1001}", "invalid repeat count"],
];

for (const [pattern, part] of BAD_PATTERNS) {
  Deno.test(`compilePattern rejects RE2 syntax error ${JSON.stringify(pattern)} naming the field`, () => {
    const field = `${BASE}.matchNames[2]`;
    assertSelectorError(() => compilePattern(pattern, field), field, `is not a valid regular expression: ${part}`);
    try {
      compilePattern(pattern, field);
    } catch (e) {
      const message = (e as Error).message;
      assert.ok(!message.includes("error parsing regexp"), message);
      assert.ok(!message.includes("^(?:"), `message should quote the user's pattern, not the anchored one: ${message}`);
    }
  });
}

Deno.test({
  name: "compilePattern accepts a valid RE2 \\Q literal that runs to the end of the pattern",
  fn() {
    const m = compilePattern("\\Qa.b", "f");
    assert.equal(m("a.b"), true);
    assert.equal(m("axb"), false);
  },
});

Deno.test("compilePattern accepts a pattern of exactly MAX_PATTERN_LENGTH characters", () => {
  assert.equal(MAX_PATTERN_LENGTH, 1024);
  const m = compilePattern("a".repeat(MAX_PATTERN_LENGTH), "f");
  assert.equal(m("a".repeat(MAX_PATTERN_LENGTH)), true);
  assert.equal(m("a".repeat(MAX_PATTERN_LENGTH - 1)), false);
});

Deno.test("compilePattern rejects a pattern longer than MAX_PATTERN_LENGTH naming its length", () => {
  const field = `${BASE}.ignoreNames[0]`;
  assertSelectorError(
    () => compilePattern("a".repeat(MAX_PATTERN_LENGTH + 1), field),
    field,
    `is ${MAX_PATTERN_LENGTH + 1} characters long, more than the ${MAX_PATTERN_LENGTH} allowed`,
  );
});

// The cost of a pattern is bounded before it is compiled: this one, 1,000 characters, took 1.3 s and 314 MiB of
// resident memory to compile.
const HOSTILE = "\\pL{0,999}".repeat(100);

Deno.test("compilePattern refuses a pattern that would compile to too many instructions without compiling it", () => {
  assert.equal(HOSTILE.length, 1000);
  const field = `${BASE}.matchNames[0]`;
  assert.throws(
    () => compilePattern(HOSTILE, field),
    (e: unknown) => {
      assert.ok(e instanceof SelectorError);
      assert.equal(
        e.message,
        `${field} is not a valid regular expression: expression too large: it would compile to 199800 instructions, ` +
          "more than the 5000 allowed",
      );
      return true;
    },
  );
});

Deno.test("compileNamespaceSelector refuses the expensive pattern naming its field", () => {
  assertSelectorError(
    () => compileNamespaceSelector({ matchNames: ["ok"], ignoreNames: ["kube-.*", HOSTILE] }),
    `${BASE}.ignoreNames[1]`,
    "is not a valid regular expression: expression too large: it would compile to 199800 instructions",
  );
});

const REPEATS_GO_REFUSES: [pattern: string, repeat: string][] = [
  ["a{1001}", "{1001}"], // re2js refuses it while parsing: 1,001 instructions are within the limit
  ["(a{500}){500}", "{500}"], // refused here: 251,000 instructions
  ["((a{10}){10}){11}", "{11}"],
  ["(?:\\pL{0,999}){999}", "{999}"],
  ["x{99999999}", "{99999999}"],
];

for (const [pattern, repeat] of REPEATS_GO_REFUSES) {
  Deno.test(`compilePattern refuses ${JSON.stringify(pattern)} with Go's invalid repeat count ${repeat}`, () => {
    const field = `${BASE}.matchNames[1]`;
    assert.throws(() => compilePattern(pattern, field), (e: unknown) => {
      assert.ok(e instanceof SelectorError);
      assert.equal(e.message, `${field} is not a valid regular expression: invalid repeat count: \`${repeat}\``);
      return true;
    });
  });
}

const REASONABLE: [pattern: string, name: string, want: boolean][] = [
  ["tenant-[a-z]{1,20}-.*", "tenant-acme-prod", true],
  ["tenant-[a-z]{1,20}-.*", "tenant--prod", false],
  ["\\pL{0,63}", "ünïcödé", true],
  ["\\pL{0,63}", "a".repeat(64), false],
  [Array.from({ length: 200 }, (_, i) => `t${i}`).join("|"), "t199", true],
  [Array.from({ length: 200 }, (_, i) => `t${i}`).join("|"), "t200", false],
  ["[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*", "a.b-c.d", true],
  ["(?i)(team|tenant)-[a-z]+-(dev|prod)[0-9]{0,3}", "Team-a-PROD12", true],
  [".{0,1000}", "anything", true],
  ["a{1000}".repeat(5), "a".repeat(5000), true], // exactly MAX_PROGRAM_SIZE
];

for (const [pattern, name, want] of REASONABLE) {
  Deno.test(`compilePattern accepts the reasonable ${JSON.stringify(pattern.slice(0, 40))} (${name.slice(0, 20)}: ${want})`, () => {
    assert.equal(compilePattern(pattern, "f")(name), want);
  });
}

Deno.test("compilePattern refuses one instruction more than MAX_PROGRAM_SIZE", () => {
  assert.equal(MAX_PROGRAM_SIZE, 5000);
  assertSelectorError(
    () => compilePattern(`${"a{1000}".repeat(5)}b`, "f"),
    "f",
    "expression too large: it would compile to 5001 instructions, more than the 5000 allowed",
  );
});

Deno.test("compileNamespaceSelector refuses the pattern that takes both lists past MAX_SELECTOR_PROGRAM_SIZE", () => {
  assert.equal(MAX_SELECTOR_PROGRAM_SIZE, 50_000);
  const big = "a{1000}".repeat(5); // 5,000 instructions
  assert.ok(compileNamespaceSelector({ matchNames: Array(6).fill(big), ignoreNames: Array(4).fill(big) }));
  assertSelectorError(
    () => compileNamespaceSelector({ matchNames: Array(6).fill(big), ignoreNames: Array(5).fill(big) }),
    `${BASE}.ignoreNames[4]`,
    "is one pattern too many: with it the patterns would compile to 55000 instructions together, more than the " +
      "50000 allowed",
  );
});

Deno.test("compileNamespaceSelector refuses a list of more than MAX_PATTERNS patterns", () => {
  assert.equal(MAX_PATTERNS, 1000);
  const names = Array.from({ length: MAX_PATTERNS }, (_, i) => `ns-${i}`);
  assert.equal(compileNamespaceSelector({ matchNames: names }).selects({ name: "ns-999", labels: {} }), true);
  for (const list of ["matchNames", "ignoreNames"] as const) {
    assertSelectorError(
      () => compileNamespaceSelector({ matchNames: ["x"], [list]: [...names, "one-more"] }),
      `${BASE}.${list}`,
      "has 1001 patterns, more than the 1000 allowed: select many namespaces by label",
    );
  }
});

Deno.test("compileNamespaceSelector refuses a label selector of more keys than selector_size.ts allows, naming it", () => {
  const keys = Array.from({ length: 65 }, (_, i) => ({ key: `k${i}`, operator: "Exists" }));
  assertSelectorError(
    () => compileNamespaceSelector({ labelSelector: { matchExpressions: keys } }),
    LS,
    "reads 65 distinct label keys, more than the 64 allowed",
  );
});

Deno.test("compileLabelSelector checks the bounds before the keys: an oversized selector of invalid keys names the bound", () => {
  const keys = Array.from({ length: 100 }, (_, i) => ({ key: `not valid ${i}`, operator: "Exists" }));
  assertSelectorError(
    () => compileLabelSelector({ matchExpressions: keys }, LS),
    LS,
    "reads 100 distinct label keys, more than the 64 allowed",
  );
});

Deno.test("compileNamespaceSelector refuses matchNames that is not a list", () => {
  assertSelectorError(
    () => compileNamespaceSelector({ matchNames: "team-.*" as unknown as string[] }),
    `${BASE}.matchNames`,
    "must be a list of strings",
  );
});

Deno.test("compilePattern rejects a pattern that is not a string", () => {
  assertSelectorError(() => compilePattern(42 as unknown as string, "f"), "f", "must be a string");
});

// ---------------------------------------------------------------------------------------------------------------
// compileNamespaceSelector

const NOTHING_SELECTED: [name: string, spec: NamespaceSelectorSpec | undefined][] = [
  ["undefined", undefined],
  ["empty", {}],
  ["empty matchNames", { matchNames: [] }],
  ["only ignoreNames", { ignoreNames: ["kube-.*"] }],
  ["empty matchNames and ignoreNames", { matchNames: [], ignoreNames: [".*"] }],
];

for (const [name, spec] of NOTHING_SELECTED) {
  Deno.test(`compileNamespaceSelector throws for a selector with neither labelSelector nor matchNames (${name})`, () => {
    assertSelectorError(() => compileNamespaceSelector(spec), BASE, "needs matchNames or labelSelector");
  });
}

Deno.test("compileNamespaceSelector names the index of an invalid matchNames pattern", () => {
  assertSelectorError(
    () => compileNamespaceSelector({ matchNames: ["ok", "also-ok", "missing-(paren"] }),
    `${BASE}.matchNames[2]`,
    "is not a valid regular expression: missing closing )",
  );
});

Deno.test("compileNamespaceSelector names the index of an invalid ignoreNames pattern", () => {
  assertSelectorError(
    () => compileNamespaceSelector({ matchNames: [".*"], ignoreNames: ["[x"] }),
    `${BASE}.ignoreNames[0]`,
    "is not a valid regular expression",
  );
});

Deno.test("compileNamespaceSelector names the labelSelector field of an invalid requirement", () => {
  assertSelectorError(
    () => compileNamespaceSelector({ labelSelector: { matchExpressions: [{ key: "a", operator: "Has" }] } }),
    `${LS}.matchExpressions[0].operator`,
    "is not a valid operator",
  );
});

const SELECTS: [
  name: string,
  spec: NamespaceSelectorSpec,
  ns: string,
  labels: Record<string, string>,
  want: boolean,
][] = [
  ["matchNames literal", { matchNames: ["a"] }, "a", {}, true],
  ["matchNames literal other name", { matchNames: ["a"] }, "ab", {}, false],
  ["matchNames any of several", { matchNames: ["x", "b.*"] }, "bee", {}, true],
  ["labelSelector only, match", { labelSelector: { matchLabels: { t: "1" } } }, "n", { t: "1" }, true],
  ["labelSelector only, no match", { labelSelector: { matchLabels: { t: "1" } } }, "n", {}, false],
  ["empty labelSelector selects all", { labelSelector: {} }, "n", {}, true],
  [
    "matchNames includes an unlabelled namespace",
    { labelSelector: { matchLabels: { t: "1" } }, matchNames: ["legacy"] },
    "legacy",
    {},
    true,
  ],
  [
    "labels include a namespace matchNames misses",
    { labelSelector: { matchLabels: { t: "1" } }, matchNames: ["legacy"] },
    "new",
    { t: "1" },
    true,
  ],
  ["ignoreNames beats matchNames", { matchNames: [".*"], ignoreNames: ["kube-.*"] }, "kube-system", {}, false],
  ["ignoreNames is anchored too", { matchNames: [".*"], ignoreNames: ["kube"] }, "kube-system", {}, true],
  [
    "ignoreNames beats labelSelector",
    { labelSelector: { matchLabels: { t: "1" } }, ignoreNames: ["n"] },
    "n",
    { t: "1" },
    false,
  ],
];

for (const [name, spec, ns, labels, want] of SELECTS) {
  Deno.test(`compileNamespaceSelector: ${name} is ${want}`, () => {
    assert.equal(compileNamespaceSelector(spec).selects({ name: ns, labels }), want);
  });
}

const nsName = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?$/);
const labelMap = fc.dictionary(fc.constantFrom("team", "env", "tier"), fc.constantFrom("a", "b", ""));

Deno.test("compileNamespaceSelector: a matching ignoreNames pattern always wins", () => {
  fc.assert(
    fc.property(
      nsName,
      labelMap,
      fc.array(nsName, { maxLength: 3 }),
      fc.constantFrom<(n: string) => string>((n) => quote(n), () => ".*", (n) => `${quote(n[0])}.*`, (n) => `x|${n}`),
      fc.integer({ min: 0, max: 3 }),
      fc.option(labelMap, { nil: undefined }),
      (name, labels, otherIgnores, ignoreOf, at, matchLabels) => {
        const ignoreNames = [...otherIgnores];
        ignoreNames.splice(Math.min(at, ignoreNames.length), 0, ignoreOf(name));
        const spec: NamespaceSelectorSpec = {
          // Everything else would select the namespace.
          matchNames: [".*", quote(name)],
          labelSelector: matchLabels ? { matchLabels } : undefined,
          ignoreNames,
        };
        assert.equal(compileNamespaceSelector(spec).selects({ name, labels }), false);
      },
    ),
  );
});

Deno.test("compileNamespaceSelector selects (labels match or a name matches) and no name is ignored", () => {
  fc.assert(
    fc.property(
      nsName,
      labelMap,
      fc.array(nsName, { maxLength: 3 }),
      fc.array(nsName, { maxLength: 3 }),
      fc.option(labelMap, { nil: undefined }),
      (name, labels, matchNames, ignoreNames, matchLabels) => {
        fc.pre(matchNames.length > 0 || matchLabels !== undefined);
        const spec: NamespaceSelectorSpec = {
          matchNames: matchNames.map(quote),
          ignoreNames: ignoreNames.map(quote),
          labelSelector: matchLabels ? { matchLabels } : undefined,
        };
        const labelsMatch = matchLabels !== undefined &&
          Object.entries(matchLabels).every(([k, v]) => Object.hasOwn(labels, k) && labels[k] === v);
        const want = !ignoreNames.includes(name) && (labelsMatch || matchNames.includes(name));
        assert.equal(compileNamespaceSelector(spec).selects({ name, labels }), want);
      },
    ),
  );
});

import assert from "node:assert/strict";
import fc from "fast-check";
import { formatDuration, parseGoDuration } from "../../lib/app/duration.ts";

const MS = 1;
const S = 1000 * MS;
const M = 60 * S;
const H = 60 * M;

/** -0 and 0 are the same duration; assert.equal (Object.is) would tell them apart. */
const parse = (text: string): number => parseGoDuration(text) + 0;

// Expected values are worked out from Go's time.ParseDuration semantics, not copied from a run.
const VALID: [input: string, ms: number][] = [
  ["0", 0],
  ["+0", 0],
  ["-0", 0],
  ["0s", 0],
  ["-0s", 0],
  ["5s", 5 * S],
  ["30s", 30 * S],
  ["1478s", 1478 * S],
  ["-5s", -5 * S],
  ["+5s", 5 * S],
  ["10s", 10 * S],
  ["300ms", 300],
  ["1m30s", 90 * S],
  ["1h2m3s4ms", H + 2 * M + 3 * S + 4],
  ["2h45m", 2 * H + 45 * M],
  ["1.5h", 90 * M],
  ["0.5m", 30 * S],
  ["0.25h", 15 * M],
  ["10.5s", 10_500],
  ["2.5s", 2500],
  ["1.s", S], // Go accepts a trailing dot
  [".5s", 500], // and a leading one
  ["1.5ms", 1.5],
  ["1ns", 1e-6],
  ["1000000ns", 1],
  ["1us", 0.001],
  ["1000us", 1],
  ["1500us", 1.5],
  ["1\u00b5s", 0.001], // U+00B5 MICRO SIGN
  ["1\u03bcs", 0.001], // U+03BC GREEK SMALL LETTER MU
  ["1s1s", 2 * S], // Go does not reject repeated units
  ["1h0m0s", H], // what formatDuration (and Go) prints
  ["-1m30s", -90 * S], // the sign applies to the whole duration
];

for (const [input, want] of VALID) {
  Deno.test(`parseGoDuration parses ${JSON.stringify(input)} as ${want}ms`, () => {
    assert.equal(parse(input), want);
  });
}

const INVALID: [input: string, why: string][] = [
  ["", "empty"],
  ["-", "sign only"],
  ["+", "sign only"],
  ["s", "unit without number"],
  ["1", "missing unit"],
  ["10", "missing unit"],
  ["00", "only the literal 0 may omit the unit"],
  ["0.0", "missing unit"],
  ["1.5", "missing unit"],
  [".s", "no digits"],
  ["-.s", "no digits"],
  [".", "no digits"],
  ["1d", "days are not a Go unit"],
  ["1w", "weeks are not a Go unit"],
  ["1S", "units are case-sensitive"],
  ["1H", "units are case-sensitive"],
  ["1Ms", "units are case-sensitive"],
  ["1 s", "space between number and unit"],
  ["1s 2s", "space between parts"],
  ["1e3s", "no exponent"],
  ["0x10s", "no hex"],
  ["1h-1m", "sign only at the start"],
  ["--1s", "double sign"],
  ["+-1s", "double sign"],
  ["1hh", "unit twice"],
  ["s1", "unit first"],
  ["1.2.3s", "two dots"],
  ["Infinity", "not a number"],
  ["NaNs", "not a number"],
  ["\u0661s", "non-ASCII digit"],
];

for (const [input, why] of INVALID) {
  Deno.test(`parseGoDuration rejects ${JSON.stringify(input)} (${why}) naming the input`, () => {
    assert.throws(() => parseGoDuration(input), (e: unknown) => {
      assert.ok(e instanceof Error);
      assert.ok(e.message.includes(JSON.stringify(input)), `message should quote the input: ${e.message}`);
      return true;
    });
  });
}

// Deviations from Go's time.ParseDuration (suspected bugs, see the report). Each is ignored so the suite passes; remove
// `ignore` once lib/duration.ts is fixed.
Deno.test({
  name: "parseGoDuration rejects surrounding whitespace like Go",
  fn() {
    for (const input of [" 10s", "10s ", "10s\n", "\t1m"]) {
      assert.throws(() => parseGoDuration(input), Error, JSON.stringify(input));
    }
  },
});

Deno.test({
  name: "parseGoDuration rejects durations beyond Go's int64 nanoseconds like Go",
  fn() {
    assert.equal(parse("2562047h"), 2562047 * H);
    assert.throws(() => parseGoDuration("10000000h"), Error);
    assert.throws(() => parseGoDuration("9223372036854775808ns"), Error);
  },
});

Deno.test({
  name: "parseGoDuration is exact for decimal fractions Go represents exactly",
  fn() {
    assert.equal(parse("1.001s"), 1001);
    assert.equal(parse("1.1h"), 66 * M);
  },
});

Deno.test("parseGoDuration sums integer components of every unit exactly", () => {
  const n = fc.nat({ max: 10_000 });
  fc.assert(
    fc.property(n, n, n, n, (h, m, s, ms) => {
      assert.equal(parse(`${h}h${m}m${s}s${ms}ms`), h * H + m * M + s * S + ms);
    }),
  );
});

Deno.test("parseGoDuration negates the whole duration for a leading minus", () => {
  const n = fc.integer({ min: 1, max: 100_000 });
  const unit = fc.constantFrom("ns", "us", "ms", "s", "m", "h");
  fc.assert(
    fc.property(n, unit, n, unit, (a, ua, b, ub) => {
      const text = `${a}${ua}${b}${ub}`;
      assert.equal(parseGoDuration(`-${text}`), -parseGoDuration(text));
      assert.equal(parseGoDuration(`+${text}`), parseGoDuration(text));
    }),
  );
});

const FORMATS: [ms: number, text: string][] = [
  [500, "500ms"],
  [1000, "1s"],
  [1500, "1.5s"],
  [10_000, "10s"],
  [61_000, "1m1s"],
  [90_000, "1m30s"],
  [H, "1h0m0s"],
  [H + 1000, "1h0m1s"],
];

for (const [ms, text] of FORMATS) {
  Deno.test(`formatDuration prints ${ms}ms as ${text} like Go`, () => {
    assert.equal(formatDuration(ms), text);
  });
}

Deno.test("formatDuration output of whole seconds parses back to the same duration", () => {
  fc.assert(
    fc.property(fc.nat({ max: 10_000_000 }), (seconds) => {
      assert.equal(parse(formatDuration(seconds * S)), seconds * S);
    }),
  );
});

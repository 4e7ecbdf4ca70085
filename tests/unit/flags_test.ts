import assert from "node:assert/strict";
import fc from "fast-check";
import { type FlagSpec, parseBool, parseFlags } from "../../lib/app/flags.ts";

const SPECS: FlagSpec[] = [
  { name: "enable-leader-election", help: "" },
  { name: "verbose", short: "v", help: "" },
  { name: "help", short: "h", help: "" },
  { name: "kubeconfig", placeholder: "path", help: "" },
  { name: "output", short: "o", placeholder: "format", help: "" },
];

/** Each positional word, with the bare boolean flag it followed as written (or "" for none). */
const positionals = (args: string[]) =>
  parseFlags(SPECS, args).positional.map((p) => [p.word, p.afterBoolean?.shown ?? ""]);

const POSITIONAL: [args: string[], want: string[][]][] = [
  // pflag's rule: a boolean flag never takes the next word; the word is positional, and we note what it followed.
  [["--enable-leader-election", "true"], [["true", "--enable-leader-election"]]],
  [["--enable-leader-election", "false", "--verbose"], [["false", "--enable-leader-election"]]],
  [["-v", "1"], [["1", "-v"]]],
  [["-hv", "t"], [["t", "-hv"]]], // grouped shorthands: the last letter's flag
  // With `=` the flag has its value: a word after it follows nothing.
  [["--enable-leader-election=true", "true"], [["true", ""]]],
  [["-v=false", "x"], [["x", ""]]],
  // Only the word right after: the second follows a word, not the flag.
  [["--verbose", "true", "true"], [["true", "--verbose"], ["true", ""]]],
  // A value flag's value is not positional, even a boolean spelling; the word after the value follows nothing.
  [["--kubeconfig", "true", "false"], [["false", ""]]],
  [["-o", "json", "plan"], [["plan", ""]]],
  [["-ojson", "plan"], [["plan", ""]]],
  // Interspersed, as pflag reads them.
  [["plan", "--verbose", "-o", "text"], [["plan", ""]]],
  [["--kubeconfig", "x", "plan", "--verbose"], [["plan", ""]]],
  // `--` ends the flags: what follows is positional and follows no flag.
  [["--verbose", "--", "true"], [["true", ""]]],
  [["--", "--verbose", "true"], [["--verbose", ""], ["true", ""]]],
  [["-v", "-"], [["-", "-v"]]],
];

for (const [args, want] of POSITIONAL) {
  Deno.test(`parseFlags leaves ${JSON.stringify(want)} positional in ${JSON.stringify(args)}`, () => {
    assert.deepEqual(positionals(args), want);
  });
}

Deno.test("parseFlags sets a bare boolean flag true whatever word follows it, as pflag does", () => {
  for (const word of ["true", "false", "0", "yes", "plan"]) {
    const { values } = parseFlags(SPECS, ["--enable-leader-election", word]);
    assert.equal(values.get("enable-leader-election"), true, word);
  }
});

Deno.test("parseFlags: the word after a bare boolean flag is positional for any word that is not a flag", () => {
  fc.assert(fc.property(fc.string().filter((w) => !w.startsWith("-") || w === "-"), (word) => {
    const { values, positional } = parseFlags(SPECS, ["-v", word]);
    assert.equal(values.get("verbose"), true);
    assert.deepEqual(positional.map((p) => [p.word, p.afterBoolean?.spec.name]), [[word, "verbose"]]);
  }));
});

Deno.test("parseBool reads strconv.ParseBool's spellings and nothing else", () => {
  for (const w of ["1", "t", "T", "TRUE", "true", "True"]) assert.equal(parseBool(w), true, w);
  for (const w of ["0", "f", "F", "FALSE", "false", "False"]) assert.equal(parseBool(w), false, w);
  for (const w of ["", "yes", "no", "on", "off", "tRUE", "2", " true"]) assert.equal(parseBool(w), undefined, w);
});

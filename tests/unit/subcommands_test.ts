import assert from "node:assert/strict";
import fc from "fast-check";
import { subcommandOf } from "../../lib/app/config.ts";
import { FlagError, type FlagSpec, type Positional } from "../../lib/app/flags.ts";
import { findSubcommand, strayWords, unknownCommand } from "../../lib/app/subcommands.ts";

// The controller's own flags decide, as the root command's do for cobra's Command.Find.
const FIND: [args: string[], want: string[] | undefined][] = [
  [["plan"], []],
  [["plan", "-f", "a.yaml"], ["-f", "a.yaml"]],
  // Flags before the subcommand, either spelling, are handed to it in their place.
  [["--kubeconfig", "x", "plan", "-f", "a.yaml"], ["--kubeconfig", "x", "-f", "a.yaml"]],
  [["--kubeconfig=x", "plan", "-f", "a.yaml"], ["--kubeconfig=x", "-f", "a.yaml"]],
  [["--kubeconfig", "x", "plan", "--kubeconfig", "y"], ["--kubeconfig", "x", "--kubeconfig", "y"]],
  // A value flag's value is never the subcommand, whatever it reads.
  [["--kubeconfig", "plan"], undefined],
  [["--kubeconfig", "plan", "plan"], ["--kubeconfig", "plan"]],
  // A boolean flag of the controller does not take the next word.
  [["--prune-default", "plan"], ["--prune-default"]],
  [["-v", "plan"], ["-v"]],
  [["-vh", "plan"], ["-vh"]],
  // A flag the controller does not know takes a value, as cobra assumes (plan's own -f, -n, --watch-namespace).
  [["-f", "a.yaml", "plan"], ["-f", "a.yaml"]],
  [["-n", "team", "plan", "-f", "a.yaml"], ["-n", "team", "-f", "a.yaml"]],
  [["--watch-namespace", "espejo", "plan"], ["--watch-namespace", "espejo"]],
  [["--server-dry-run", "plan"], undefined], // cobra's rule too: a subcommand's own boolean goes after it
  // Only the first word that is not a flag can be the subcommand.
  [["plna"], undefined],
  [["extra", "plan"], undefined],
  [["plan", "plan"], ["plan"]],
  // The Go espejo's `--flag true`: the boolean spelling is the flag's ignored value, not a word before the subcommand.
  [["--enable-leader-election", "true", "plan"], ["--enable-leader-election", "true"]],
  [["--enable-leader-election", "yes", "plan"], undefined],
  [["--enable-leader-election=true", "true", "plan"], undefined],
  // `--` ends the search: what follows is positional.
  [["--", "plan"], undefined],
  // ... unless it is a flag's value: cobra's stripFlags takes the word after an unknown `-f` as its value, `--` too.
  [["-f", "--", "plan"], ["-f", "--"]],
  [["-", "plan"], ["-"]],
  [["", "plan"], [""]],
  [[], undefined],
];

for (const [args, want] of FIND) {
  Deno.test(`findSubcommand in ${JSON.stringify(args)}: ${want ? `plan ${JSON.stringify(want)}` : "none"}`, () => {
    const found = subcommandOf(args);
    assert.deepEqual(found && found.args, want);
    if (found) assert.equal(found.name, "plan");
  });
}

Deno.test("findSubcommand hands the subcommand every word but its own, in order, never after a -- that ends the flags", () => {
  const word = fc.oneof(
    fc.constantFrom("-v", "--kubeconfig", "--kubeconfig=x", "-f", "true", "x", "--", "plan", "-vh", "--nope"),
    fc.string(),
  );
  fc.assert(fc.property(fc.array(word, { maxLength: 8 }), (args) => {
    const found = findSubcommand(SPECS, args);
    if (!found) return;
    assert.equal(found.args.length, args.length - 1);
    const at = args.findIndex((w, i) =>
      w === "plan" && [...args.slice(0, i), ...args.slice(i + 1)].join("\0") === found.args.join("\0")
    );
    assert.ok(at >= 0, JSON.stringify(args));
    // Never after a `--` that ends the flags. One before the subcommand is a flag's value, as in cobra's stripFlags:
    // the word before it is a flag that takes one (not boolean, no `=`, not grouped shorthands).
    const boolean = new Set(["-v", "--verbose", "-h", "--help"]);
    const takesValue = (w: string | undefined) =>
      w !== undefined && w.startsWith("-") && w !== "--" && !w.includes("=") && !boolean.has(w) &&
      (w.startsWith("--") || w.length === 2);
    args.slice(0, at).forEach((w, j) => {
      if (w === "--") assert.ok(takesValue(args[j - 1]), `"--" at ${j} ends the flags: ${JSON.stringify(args)}`);
    });
  }));
});

const SPECS: FlagSpec[] = [
  { name: "kubeconfig", placeholder: "path", help: "" },
  { name: "verbose", short: "v", help: "" },
  { name: "help", short: "h", help: "" },
];

const LEADER: FlagSpec = { name: "enable-leader-election", help: "" };
const PRUNE: FlagSpec = { name: "prune-default", help: "" };
const GO = new Set(["enable-leader-election", "verbose"]);
const after = (shown: string, spec: FlagSpec, word: string): Positional => ({ word, afterBoolean: { shown, spec } });

const WARNED: [positional: Positional[], warnings: string[]][] = [
  [[], []],
  [[after("--enable-leader-election", LEADER, "true")], [
    'ignoring positional argument "true" after --enable-leader-election; write --enable-leader-election=true',
  ]],
  [[after("--prune-default", PRUNE, "1")], [
    'ignoring positional argument "1" after --prune-default; write --prune-default=1',
  ]],
  // The Go espejo ran with the flag on: so does espejo, and says so.
  [[after("--enable-leader-election", LEADER, "false")], [
    'ignoring positional argument "false" after --enable-leader-election: a boolean flag takes no separate value, so ' +
    "--enable-leader-election is on, as the Go espejo read this line; write --enable-leader-election=false to turn " +
    "it off",
  ]],
  [[after("-v", { name: "verbose", short: "v", help: "" }, "F")], [
    'ignoring positional argument "F" after -v: a boolean flag takes no separate value, so --verbose is on, as the ' +
    "Go espejo read this line; write --verbose=F to turn it off",
  ]],
];

for (const [positional, warnings] of WARNED) {
  Deno.test(`strayWords accepts ${JSON.stringify(positional.map((p) => p.word))} with a warning naming it`, () => {
    assert.deepEqual(strayWords(positional, GO), warnings);
  });
}

const REFUSED: [positional: Positional[], message: RegExp][] = [
  [[{ word: "plna" }], /^unknown command "plna" for "espejo"\n\nDid you mean this\?\n\tplan\nRun 'espejo --help'/],
  [[{ word: "true" }], /^unknown command "true" for "espejo"\nRun 'espejo --help' for usage\.$/], // after no flag
  // After a boolean, a word pflag would never take as its value: refused, with how the flag takes one.
  [
    [after("--enable-leader-election", LEADER, "yes")],
    /^unknown command "yes" for "espejo"\n--enable-leader-election is a boolean flag: it takes a value only after "="/,
  ],
  // A suggestion, where there is one, says more than the flag's rule.
  [[after("-v", { name: "verbose", short: "v", help: "" }, "pln")], /Did you mean this\?\n\tplan\nRun 'espejo/],
  // espejo's own boolean, where the word asks for the opposite of what the flag does.
  [
    [after("--prune-default", PRUNE, "false")],
    /^"false" after --prune-default is not its value: .*--prune-default=false; as written, --prune-default would be/,
  ],
  // The first refused word decides, after any accepted one.
  [[after("--enable-leader-election", LEADER, "true"), { word: "extra" }], /^unknown command "extra"/],
];

for (const [positional, message] of REFUSED) {
  Deno.test(`strayWords refuses ${JSON.stringify(positional.map((p) => p.word))} with exit code 1`, () => {
    assert.throws(() => strayWords(positional, GO), (e: unknown) => {
      assert.ok(e instanceof FlagError, `expected a FlagError, got ${e}`);
      assert.equal(e.exitCode, 1);
      assert.match(e.message, message);
      return true;
    });
  });
}

Deno.test("unknownCommand suggests plan within two edits or as a prefix, and nothing else", () => {
  for (const word of ["plan", "pla", "p", "plna", "PLAN", "palnn"]) assert.match(unknownCommand(word), /\tplan\n/);
  for (const word of ["true", "deploy", "xyz"]) assert.doesNotMatch(unknownCommand(word), /Did you mean/);
});

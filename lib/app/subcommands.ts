/**
 * The words of espejo's command line that are not flags: which one names a subcommand (found as cobra finds it, so
 * flags may stand on either side), which ones are a boolean flag's value that the Go espejo ignored (a warning), and
 * what espejo says of any other (cobra's wording, with its suggestion).
 */
import { FlagError, type FlagSpec, isBoolean, parseBool, type Positional } from "./flags.ts";

/** The subcommands espejo has besides running the controller (main.ts dispatches them before flags are read). */
export const SUBCOMMANDS = ["plan"] as const;
export type Subcommand = (typeof SUBCOMMANDS)[number];

/**
 * The first word of a command line that is neither a flag nor a flag's value, as cobra's Command.Find picks the
 * subcommand (stripFlags): `--name` without `=` and a two-letter `-x` take the next word as their value unless `specs`
 * (the controller's flags) say they are boolean; a flag that `specs` does not know is taken to have one (cobra's rule:
 * the subcommand may know it, as plan knows `-f`); `--` ends the search. One addition for the Go espejo's command
 * lines: a strconv.ParseBool spelling right after a bare boolean flag is that flag's ignored value
 * ({@link strayWords}), not a command. `afterBoolean`: the bare boolean flag right before the word, as written.
 */
export function firstCommandWord(
  specs: readonly FlagSpec[],
  args: readonly string[],
): { word: string; index: number; afterBoolean?: string } | undefined {
  const byName = new Map(specs.map((s) => [s.name, s]));
  const byShort = new Map(specs.filter((s) => s.short).map((s) => [s.short!, s]));
  let bareBoolean: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const word = args[i];
    const afterBoolean = bareBoolean;
    bareBoolean = undefined;
    if (word === "--") return undefined;
    if (word.startsWith("-")) {
      if (word.includes("=")) continue;
      const spec = word.startsWith("--") ? byName.get(word.slice(2)) : word.length === 2 ? byShort.get(word[1]) : null;
      if (spec === null) continue; // grouped shorthands (-vh): cobra looks no further, and espejo's are all boolean
      if (spec && isBoolean(spec)) bareBoolean = word;
      else i++; // the flag's value
      continue;
    }
    if (word === "" || (afterBoolean && parseBool(word) !== undefined)) continue;
    return afterBoolean ? { word, index: i, afterBoolean } : { word, index: i };
  }
  return undefined;
}

/**
 * The subcommand a command line names ({@link firstCommandWord}), and its arguments: every word but the subcommand's
 * own, flags before it included (`espejo --kubeconfig x plan -f a.yaml` runs plan with `--kubeconfig x -f a.yaml`), as
 * cobra hands a subcommand the line it found it in. Flags of the controller's that the subcommand does not know are
 * refused by the subcommand, as cobra's subcommand refuses its parent's local flags.
 */
export function findSubcommand(
  specs: readonly FlagSpec[],
  args: readonly string[],
): { name: Subcommand; args: string[] } | undefined {
  const first = firstCommandWord(specs, args);
  const name = SUBCOMMANDS.find((c) => c === first?.word);
  return name && first && { name, args: [...args.slice(0, first.index), ...args.slice(first.index + 1)] };
}

/**
 * What the controller makes of the words pflag left positional (the first command word was judged before, see
 * {@link firstCommandWord}): the warnings to log, or a {@link FlagError} for the first word it refuses.
 *
 * The Go espejo (pflag, positional arguments never read) ignored every such word and ran. espejo ignores, with a
 * warning, only the one kind of word a Deployment carries by mistake: a strconv.ParseBool spelling right after a bare
 * boolean flag (`--enable-leader-election true`), where pflag took the flag alone as true and the word as positional.
 * Its effect is the Go espejo's: the flag is on, whatever the word says; after one of `goEspejoFlags` even a false
 * spelling (the Go espejo's Deployments ran that way), after one of espejo's own flags a false spelling is refused,
 * since it asks for the opposite of what the flag does and no Go espejo command line carries it. Any other word is
 * refused as cobra refuses it (`unknown command`, with its suggestion): a mistyped `espejo plna` must not start a
 * controller that writes.
 */
export function strayWords(positional: readonly Positional[], goEspejoFlags: ReadonlySet<string>): string[] {
  const warnings: string[] = [];
  for (const { word, afterBoolean } of positional) {
    const value = parseBool(word);
    if (!afterBoolean || value === undefined) throw new FlagError(unknownCommand(word, afterBoolean?.shown));
    const { shown, spec } = afterBoolean;
    if (value) {
      warnings.push(`ignoring positional argument "${word}" after ${shown}; write --${spec.name}=${word}`);
    } else if (goEspejoFlags.has(spec.name)) {
      warnings.push(
        `ignoring positional argument "${word}" after ${shown}: a boolean flag takes no separate value, so ` +
          `--${spec.name} is on, as the Go espejo read this line; write --${spec.name}=${word} to turn it off`,
      );
    } else {
      throw new FlagError(
        `"${word}" after ${shown} is not its value: a boolean flag takes one only as --${spec.name}=${word}; as ` +
          `written, --${spec.name} would be on`,
      );
    }
  }
  return warnings;
}

/**
 * The message for a word that is neither a flag nor a subcommand, worded as cobra words it (`unknown command "plna"
 * for "espejo"`), with its suggestion of a subcommand within two edits, or else, for a word right after a bare boolean
 * flag (`--enable-leader-election yes`), how that flag takes a value.
 */
export function unknownCommand(word: string, afterBoolean?: string): string {
  const near = SUBCOMMANDS.filter((c) => editDistance(word.toLowerCase(), c) <= 2 || c.startsWith(word.toLowerCase()));
  const suggestion = near.length ? `\n\nDid you mean this?\n${near.map((c) => `\t${c}`).join("\n")}` : "";
  const hint = afterBoolean && !near.length
    ? `\n${afterBoolean} is a boolean flag: it takes a value only after "=" (${afterBoolean}=true or =false)`
    : "";
  return `unknown command ${JSON.stringify(word)} for "espejo"${suggestion}${hint}\nRun 'espejo --help' for usage.`;
}

/** Levenshtein distance, as cobra measures its suggestions. */
function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(row[j] + 1, next[j - 1] + 1, row[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    row = next;
  }
  return row[b.length];
}

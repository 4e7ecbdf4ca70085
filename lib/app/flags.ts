/**
 * Command-line flags as Go's pflag reads them, for the flags the Go espejo's Deployment passes: `--name value`,
 * `--name=value`, booleans as `--name` or `--name=<any strconv.ParseBool spelling>`, one-letter shorthands (`-v`),
 * the last occurrence wins, positional arguments interspersed with flags and left to the program, `--` ends the
 * flags. A boolean flag never takes the next word: `--enable-leader-election true` is the flag and a positional `true`
 * (pflag's rule), and each positional argument says which bare boolean flag it followed, for the caller's policy
 * (lib/app/subcommands.ts). A table of {@link FlagSpec} drives parsing and the help text. Pure: no output, no exit (see
 * config.ts).
 *
 * Written here rather than taken from a library: the one in use before (commander) knew none of pflag's boolean
 * spellings and cost the controller about 2 MiB of memory for the dozen flags it reads once.
 */

/** A bad command line; the message says which flag and why, in pflag's words. */
export class FlagError extends Error {
  /** The process exits with this code, as the Go espejo does when its flag set refuses the command line. */
  readonly exitCode = 1;
}

export interface FlagSpec {
  /** Without the dashes: `reconcile-interval`. */
  name: string;
  /** One letter: `v` for `-v`. */
  short?: string;
  /** The value's name in the help text (`duration`); absent for booleans. */
  placeholder?: string;
  help: string;
  /** What the help shows as the default, if anything. */
  defaultText?: string;
}

/** A word that is neither a flag nor a flag's value. */
export interface Positional {
  word: string;
  /**
   * The boolean flag given without `=` right before this word, as written (`--enable-leader-election`, `-v`), and its
   * spec: someone who wrote `--flag true` meant a value that pflag does not take. Absent after `--` and elsewhere.
   */
  afterBoolean?: { shown: string; spec: FlagSpec };
}

export interface ParsedFlags {
  /** The last value given for each flag, by name: a string, or a boolean for a boolean flag. */
  values: Map<string, string | boolean>;
  positional: Positional[];
}

const TRUE_SPELLINGS = new Set(["1", "t", "T", "TRUE", "true", "True"]);
const FALSE_SPELLINGS = new Set(["0", "f", "F", "FALSE", "false", "False"]);

/** A word as Go's strconv.ParseBool reads it (what pflag takes after `--flag=`), or undefined if it is none. */
export function parseBool(word: string): boolean | undefined {
  return TRUE_SPELLINGS.has(word) ? true : FALSE_SPELLINGS.has(word) ? false : undefined;
}

/** A flag that never takes the next word as its value (pflag: it has a NoOptDefVal). */
export function isBoolean(spec: FlagSpec): boolean {
  return spec.placeholder === undefined;
}

/** `--help`/`-h` and `--version` are the caller's to look for in `values` (add them to the table). */
export function parseFlags(specs: readonly FlagSpec[], args: readonly string[]): ParsedFlags {
  const byName = new Map(specs.map((s) => [s.name, s]));
  const byShort = new Map(specs.filter((s) => s.short).map((s) => [s.short!, s]));
  const values = new Map<string, string | boolean>();
  const positional: Positional[] = [];
  let bareBoolean: Positional["afterBoolean"]; // the boolean flag just read without a value, if the last word was one
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const after = bareBoolean;
    bareBoolean = undefined;
    if (arg === "--") {
      positional.push(...args.slice(i + 1).map((word) => ({ word })));
      break;
    }
    if (!arg.startsWith("-") || arg === "-") {
      positional.push(after ? { word: arg, afterBoolean: after } : { word: arg });
      continue;
    }
    const next = () => (i + 1 < args.length ? args[++i] : undefined); // pflag takes the next word, dash or not
    if (arg.startsWith("--")) {
      const body = arg.slice(2);
      if (body.startsWith("-") || body.startsWith("=")) throw new FlagError(`bad flag syntax: ${arg}`);
      const eq = body.indexOf("=");
      const name = eq < 0 ? body : body.slice(0, eq);
      const spec = byName.get(name);
      if (!spec) throw new FlagError(`unknown flag: --${name}`);
      set(values, spec, eq < 0 ? undefined : body.slice(eq + 1), next, `--${name}`);
      if (eq < 0 && isBoolean(spec)) bareBoolean = { shown: arg, spec };
      continue;
    }
    // Shorthands, grouped as pflag allows: `-vh`; `-v=false`; a value flag takes the rest of the word or the next.
    const letters = arg.slice(1);
    for (let j = 0; j < letters.length; j++) {
      const spec = byShort.get(letters[j]);
      if (!spec) throw new FlagError(`unknown shorthand flag: '${letters[j]}' in ${arg}`);
      const shown = `'${letters[j]}' in ${arg}`;
      if (letters[j + 1] === "=") {
        set(values, spec, letters.slice(j + 2), next, shown);
        break;
      }
      if (spec.placeholder !== undefined && j + 1 < letters.length) {
        set(values, spec, letters.slice(j + 1), next, shown);
        break;
      }
      set(values, spec, undefined, next, shown);
      if (j === letters.length - 1 && isBoolean(spec)) bareBoolean = { shown: arg, spec };
    }
  }
  return { values, positional };
}

/** Records one occurrence of a flag: `inline` is the text after `=` (or after a shorthand letter), if any. */
function set(
  values: Map<string, string | boolean>,
  spec: FlagSpec,
  inline: string | undefined,
  next: () => string | undefined,
  shown: string,
): void {
  if (isBoolean(spec)) {
    const value = inline === undefined ? true : parseBool(inline);
    if (value === undefined) {
      throw new FlagError(`invalid argument "${inline}" for "--${spec.name}" flag: not a boolean (true or false)`);
    }
    values.set(spec.name, value);
    return;
  }
  const value = inline ?? next();
  if (value === undefined) throw new FlagError(`flag needs an argument: ${shown}`);
  values.set(spec.name, value);
}

/** The error for a value a flag's own parser refused, in pflag's form. */
export function invalidValue(spec: FlagSpec, value: string, reason: string): FlagError {
  return new FlagError(`invalid argument "${value}" for "--${spec.name}" flag: ${reason}`);
}

/** The help text: a usage line, the description, and one entry per flag. */
export function usage(program: string, description: string, specs: readonly FlagSpec[]): string {
  const heads = specs.map((s) =>
    `${s.short ? `-${s.short}, ` : "    "}--${s.name}${s.placeholder ? ` <${s.placeholder}>` : ""}`
  );
  const width = Math.max(...heads.map((h) => h.length)) + 2;
  const lines = specs.map((s, i) =>
    `  ${heads[i].padEnd(width)}${s.help}${s.defaultText === undefined ? "" : ` (default: ${s.defaultText})`}`
  );
  return `Usage: ${program} [flags]\n\n${description}\n\nFlags:\n${lines.join("\n")}\n`;
}

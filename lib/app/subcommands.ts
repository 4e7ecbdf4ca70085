/** espejo's subcommands, and what it says of a word that is none (cobra's wording, with its suggestion). */

/** The subcommands espejo has besides running the controller (main.ts dispatches them before flags are read). */
export const SUBCOMMANDS = ["plan"] as const;

/**
 * The message for a word that is neither a flag nor a subcommand, worded as cobra words it (`unknown command "plna"
 * for "espejo"`), with its suggestion of a subcommand within two edits. The Go espejo ignores such words and runs;
 * espejo refuses them, because a mistyped `espejo plna` would otherwise start a controller that writes.
 */
export function unknownCommand(word: string): string {
  const near = SUBCOMMANDS.filter((c) => editDistance(word.toLowerCase(), c) <= 2 || c.startsWith(word.toLowerCase()));
  const suggestion = near.length ? `\n\nDid you mean this?\n${near.map((c) => `\t${c}`).join("\n")}` : "";
  return `unknown command ${JSON.stringify(word)} for "espejo"${suggestion}\nRun 'espejo --help' for usage.`;
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

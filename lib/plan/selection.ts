/**
 * Which SyncConfigs `espejo plan` plans, as `kubectl diff -f` shows only what its files touch: with `-f`, those of
 * the files; with `--all` too, or without `-f`, every SyncConfig read. The others are still read, as context: what
 * a planned SyncConfig contradicts or may not adopt depends on them (the controller decides with all of them), but
 * their own drift or errors are not this plan's, so they neither show nor count in the exit code.
 */

/** What the command line asks to plan. */
export interface PlanScope {
  /** `-f` was given (even if its files hold no SyncConfig: then nothing is planned). */
  files: boolean;
  /** `--all`: every SyncConfig read is planned, those of `-f` as edits of the cluster's. */
  all: boolean;
}

/** The SyncConfigs planned and those read as context only, each in the order given. */
export function selectPlanned<T extends { fromFile: boolean }>(
  read: readonly T[],
  scope: PlanScope,
): { planned: T[]; context: T[] } {
  const everything = !scope.files || scope.all;
  const planned: T[] = [];
  const context: T[] = [];
  for (const entry of read) (everything || entry.fromFile ? planned : context).push(entry);
  return { planned, context };
}

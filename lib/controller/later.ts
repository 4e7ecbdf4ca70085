/**
 * A timer that never keeps the process from ending, and can be cancelled: how the controller's parts that come back
 * later by themselves (returning memory, sweeping trimmed namespaces) schedule it. Tests hand in their own.
 */

/** Runs `fn` after `ms` unless cancelled; the returned function cancels. */
export type Later = (fn: () => void, ms: number) => () => void;

export const unrefLater: Later = (fn, ms) => {
  const timer = setTimeout(fn, ms);
  Deno.unrefTimer(timer); // a pending one never keeps the process from ending
  return () => clearTimeout(timer);
};

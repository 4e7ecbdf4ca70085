/**
 * The order of resourceVersions, for a store that must not take an older copy of an object for a newer one. They are
 * integers in every API server that exists, but opaque by contract: ordered only when both parse as such.
 */

/** Negative when `a` is older than `b`; undefined unless both are integers. */
function compareVersions(a: string, b: string): number | undefined {
  if (!/^\d+$/.test(a) || !/^\d+$/.test(b)) return undefined;
  const d = BigInt(a) - BigInt(b);
  return d < 0n ? -1 : d > 0n ? 1 : 0;
}

/** Whether `rv` is older than `than` (false when they cannot be ordered). */
export const isOlder = (rv: string, than: string) => (compareVersions(rv, than) ?? 0) < 0;
/** Whether `rv` is at least `than` (false when they cannot be ordered). */
export const isAtLeast = (rv: string, than: string) => (compareVersions(rv, than) ?? -1) >= 0;

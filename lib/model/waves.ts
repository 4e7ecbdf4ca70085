/**
 * The order in which the items of one SyncConfig are written. Items go out concurrently (one round trip for a whole
 * namespace), except where the API server needs one before the other: a RoleBinding (or Role-referencing binding)
 * can only be created once the Role it binds exists, unless the writer holds `bind`, which espejo deliberately
 * does not. Such an item waits for the wave after the item it refers to.
 */
import type { SyncItemSpec } from "./syncconfig.ts";

/** By a compiled SyncConfig's items (which live as long as its compile): their waves, the same in every namespace. */
const wavesOf = new WeakMap<readonly SyncItemSpec[], readonly (readonly number[])[]>();

/** Indexes of `items`, grouped into waves; every wave is written after the previous one finished. */
export function writeWaves(items: readonly SyncItemSpec[]): readonly (readonly number[])[] {
  let waves = wavesOf.get(items);
  if (!waves) wavesOf.set(items, waves = wavesFor(items));
  return waves;
}

function wavesFor(items: readonly SyncItemSpec[]): number[][] {
  const wave = new Array<number>(items.length).fill(0);
  items.forEach((item, i) => {
    const ref = roleRefOf(item);
    if (!ref) return;
    for (let j = 0; j < i; j++) {
      const other = items[j];
      if (other.kind === ref.kind && other.name === ref.name && isRbac(other.apiVersion)) {
        wave[i] = Math.max(wave[i], wave[j] + 1);
      }
    }
  });
  const waves: number[][] = [];
  wave.forEach((w, i) => (waves[w] ??= []).push(i));
  return waves.filter((w) => w !== undefined);
}

function isRbac(apiVersion: string): boolean {
  return apiVersion.startsWith("rbac.authorization.k8s.io/");
}

function roleRefOf(item: SyncItemSpec): { kind: string; name: string } | undefined {
  if (item.kind !== "RoleBinding" || !isRbac(item.apiVersion)) return undefined;
  const roleRef = (item.template as { roleRef?: { kind?: unknown; name?: unknown } }).roleRef;
  return typeof roleRef?.kind === "string" && typeof roleRef.name === "string"
    ? { kind: roleRef.kind, name: roleRef.name }
    : undefined;
}

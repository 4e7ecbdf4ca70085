/**
 * An item's desired object in any namespace from one text per item: the canonical JSON of its desired object (what
 * its hash is of) rendered once with a stand-in for the namespace, cut where the stand-in is. `${PROJECT_NAME}` is
 * replaced in string values only, never in keys (lib/model/template.ts), so the keys' order does not depend on the
 * namespace, and a namespace's name needs no JSON escaping: the text for a namespace is the pieces joined by its
 * name. Rendering, ordering the keys and writing the text run in the interpreter, about a third of the CPU a
 * restart spends on each arriving object (every one is judged against its desired object) and on each item of each
 * unit after it; joining, hashing and parsing are the engine's.
 *
 * Where that cannot hold, the pieces are not made and the desired object is rendered as before: a template that holds
 * the stand-in, a Secret's `stringData` (written as base64 `data`, lib/sync/desired.ts), a namespace name that is not
 * a plain DNS name.
 */
import { canonicalJson } from "../kube/canonical_json.ts";
import type { CompiledSyncConfig, SyncItemSpec } from "../model/syncconfig.ts";

/** Cannot be a namespace's name (upper case, underscores) nor, checked, anything else in the item. */
const STAND_IN = "ESPEJO_NAMESPACE_STAND_IN_5e1f";

/** A namespace's name as the API server allows it (RFC 1123 label): nothing in it is escaped in JSON. */
const PLAIN_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** By item of a compiled SyncConfig (which lives as long as its compile): its pieces, or null where they cannot be. */
const piecesByItem = new WeakMap<SyncItemSpec, { cfgKey: string; pieces: string[] | null }>();

/**
 * The canonical text of the item's desired object in `namespace` (its hash annotation not yet set), or undefined
 * where the pieces cannot stand for it. `render` makes the desired object in a namespace the slow way.
 */
export function desiredText(
  cfg: CompiledSyncConfig,
  item: SyncItemSpec,
  namespace: string,
  render: (namespace: string) => unknown,
): string | undefined {
  if (!PLAIN_NAME.test(namespace)) return undefined;
  let known = piecesByItem.get(item);
  if (known?.cfgKey !== cfg.key) {
    known = { cfgKey: cfg.key, pieces: piecesOf(cfg, item, render) };
    piecesByItem.set(item, known);
  }
  return known.pieces?.join(namespace);
}

function piecesOf(
  cfg: CompiledSyncConfig,
  item: SyncItemSpec,
  render: (namespace: string) => unknown,
): string[] | null {
  const template = item.template as Record<string, unknown>;
  if (cfg.key.includes(STAND_IN) || JSON.stringify(template).includes(STAND_IN)) return null;
  if (template.kind === "Secret" && template.stringData !== undefined) return null;
  return canonicalJson(render(STAND_IN)).split(STAND_IN);
}

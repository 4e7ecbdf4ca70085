/**
 * The fields a write of the desired object would change on the observed one, for people (`espejo plan`): each
 * changed, added or removed leaf with its old and new value, compactly. Values of a Secret's `data` are never shown,
 * only that they differ. Both objects are reduced to what a write controls first (lib/model/drift.ts), without the
 * desired-hash marker.
 */
import { deepEqual, isObject, type KubeObject, withoutAnnotation } from "../kube/objects.ts";
import { HASH_ANNOTATION, serverOwned } from "./drift.ts";

export interface FieldChange {
  op: "~" | "+" | "-";
  path: string;
  from?: string;
  to?: string;
}

const MAX_VALUE = 60;
const SECRET_VALUE = "(a secret value)";

function show(v: unknown): string {
  const text = JSON.stringify(v) ?? "null";
  return text.length <= MAX_VALUE ? text : `${text.slice(0, MAX_VALUE - 3)}...`;
}

export function fieldDiff(desired: KubeObject, observed: KubeObject): FieldChange[] {
  const secret = desired.apiVersion === "v1" && desired.kind === "Secret";
  const value = (path: string, v: unknown) => secret && /^\.(data|stringData)\./.test(path) ? SECRET_VALUE : show(v);
  const out: FieldChange[] = [];
  const walk = (d: unknown, o: unknown, path: string): void => {
    if (isObject(d) && isObject(o)) {
      for (const k of Object.keys(d)) {
        const p = `${path}.${k}`;
        if (!Object.hasOwn(o, k)) out.push({ op: "+", path: p, to: value(p, d[k]) });
        else walk(d[k], o[k], p);
      }
      for (const k of Object.keys(o)) {
        const p = `${path}.${k}`;
        if (!Object.hasOwn(d, k)) out.push({ op: "-", path: p, from: value(p, o[k]) });
      }
      return;
    }
    if (!deepEqual(d, o)) out.push({ op: "~", path: path || ".", from: value(path, o), to: value(path, d) });
  };
  walk(withoutHash(serverOwned(desired)), withoutHash(serverOwned(observed)), "");
  return out;
}

/** The desired-hash marker changes with every edit of the item: it says nothing a reader needs. */
function withoutHash(o: KubeObject): KubeObject {
  return { ...o, metadata: withoutAnnotation(o.metadata, HASH_ANNOTATION) };
}

/** One line per change: `~ .data.a: "1" -> "2"`, `+ .data.b: "x"`, `- .spec.extra: true`. */
export function formatChange(c: FieldChange): string {
  if (c.op === "~") return `~ ${c.path}: ${c.from} -> ${c.to}`;
  return c.op === "+" ? `+ ${c.path}: ${c.to}` : `- ${c.path}: ${c.from}`;
}

/**
 * The fields a write of the desired object would change on the observed one, for people (`espejo plan`): each
 * changed, added or removed leaf with its old and new value, compactly. Both objects are reduced to what a write
 * controls first (lib/model/drift.ts), without the desired-hash marker.
 *
 * A Secret's values are never shown (lib/model/redact.ts, {@link SECRET_MASK}): only which key of `data`,
 * `stringData` or the annotations is added, removed or changed. A secret part added or removed as a whole (`.data`
 * that the item does not set, every annotation) is listed key by key, so that no value hides in an object shown at
 * once.
 */
import { jsonText } from "../kube/canonical_json.ts";
import { deepEqual, isObject, type KubeObject, withoutAnnotation } from "../kube/objects.ts";
import { serverOwned } from "./drift.ts";
import {
  holdsSecret,
  isSecretPath,
  isSecretResource,
  type ResourceIdentity,
  SECRET_MASK,
  SECRET_MASK_AFTER,
  SECRET_MASK_BEFORE,
} from "./redact.ts";
import { HASH_ANNOTATION } from "./markers.ts";

export interface FieldChange {
  op: "~" | "+" | "-";
  path: string;
  from?: string;
  to?: string;
}

const MAX_VALUE = 60;

function show(v: unknown): string {
  const text = jsonText(v) ?? "null"; // an observed value, nested as deep as a tenant likes
  return text.length <= MAX_VALUE ? text : `${text.slice(0, MAX_VALUE - 3)}...`;
}

const pathText = (path: readonly string[]) => path.map((k) => `.${k}`).join("") || ".";

/**
 * The changes from `observed` to `desired`, objects of `resource` (the resource espejo's resolver found for the item,
 * where `observed` was read): its values are masked if it is a Secret by {@link isSecretResource}, whatever either
 * object's `apiVersion` and `kind` say, and when it is not known (`undefined`).
 */
export function fieldDiff(
  desired: KubeObject,
  observed: KubeObject,
  resource: ResourceIdentity | undefined,
): FieldChange[] {
  const secret = isSecretResource(resource);
  const out: FieldChange[] = [];
  const whole = (op: "+" | "-", path: string[], v: unknown): void => {
    if (secret && holdsSecret(path) && isObject(v) && Object.keys(v).length > 0) {
      for (const k of Object.keys(v)) whole(op, [...path, k], v[k]);
      return;
    }
    const text = secret && isSecretPath(path) ? SECRET_MASK : show(v);
    out.push(op === "+" ? { op, path: pathText(path), to: text } : { op, path: pathText(path), from: text });
  };
  const walk = (d: unknown, o: unknown, path: string[]): void => {
    if (isObject(d) && isObject(o)) {
      for (const k of Object.keys(d)) {
        if (!Object.hasOwn(o, k)) whole("+", [...path, k], d[k]);
        else walk(d[k], o[k], [...path, k]);
      }
      for (const k of Object.keys(o)) if (!Object.hasOwn(d, k)) whole("-", [...path, k], o[k]);
      return;
    }
    if (deepEqual(d, o)) return;
    const masked = secret && holdsSecret(path);
    const from = masked ? SECRET_MASK_BEFORE : show(o);
    const to = masked ? SECRET_MASK_AFTER : show(d);
    out.push({ op: "~", path: pathText(path), from, to });
  };
  walk(withoutHash(serverOwned(desired)), withoutHash(serverOwned(observed)), []);
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

/**
 * Removes the values of objects from API server error texts before they are shown to others, and a Secret's values
 * from what `espejo plan` shows ({@link SECRET_MASK}).
 *
 * Why: a rejected write comes back with a message such as
 * `Secret "db" is invalid: data[pass word]: Invalid value: "pass word": a valid config key must consist of ...`, and
 * Kubernetes' field validation (`k8s.io/apimachinery/pkg/util/validation/field`, `Error.ErrorBody`) quotes the bad
 * value: a Go `%q` string, a `%v` number or bool, JSON (`{"a":"b"}`, `["x"]`, `null`) or, in older API servers, Go's
 * `%#v` (`map[string]interface {}{"a":"b"}`, `[]interface {}{"x"}`). Those messages end up in SyncConfig status
 * conditions and Events, which anyone who can read SyncConfigs can read, while the value may come from a Secret.
 * The field path, the object's kind and name and the explanation after the value stay: they say what to fix.
 */
import type { ResourceInfo } from "../kube/discovery.ts";
import { encodeBase64, isObject, type KubeObject } from "../kube/objects.ts";

/** What a value is replaced with. */
export const REDACTED = "[redacted]";

/**
 * The types of `field.Error` whose text carries the bad value (`ErrorType.String()`), then strings that quote a value
 * only when a `"` follows: strconv (`parsing "abc": invalid syntax`), time (`time: invalid duration "1x"`,
 * `unknown unit "x" in duration "1x"`) and encoding/json (`trying to unmarshal "abc" into int`). `Too many` and
 * `Too few` carry only a count; `Required value`, `Forbidden`, `Too long` and `Internal error` carry no value.
 */
const MARKERS =
  /(?<![A-Za-z])(?:(Invalid value|Unsupported value|Duplicate value|Not found|Too short): |(?:parsing|invalid duration|in duration|trying to unmarshal) (?="))/g;

/** json-iterator's decode errors (API servers before 1.23) quote the request body around the error position. */
const BODY_CONTEXT = " byte of ...|";
const BODY_CONTEXT_END = "|...";

/**
 * `message` with every value quoted by a Kubernetes field error replaced by {@link REDACTED}.
 *
 * A value is what follows `Invalid value: `, `Unsupported value: `, `Duplicate value: `, `Not found: ` or
 * `Too short: `: a quoted string (Go `%q` or JSON escaping; a backslash escapes the next character), or anything up to
 * the next `: ` or `, ` outside brackets and quotes, or up to a bracket that closes an enclosing one (the end of an
 * aggregate `[a, b]`). Quoted strings after `parsing `, `invalid duration `, `in duration ` and
 * `trying to unmarshal `, and the body excerpts of json-iterator (`error found in #10 byte of ...|{"a":...|...`), are
 * replaced too. Everything else is kept as it is, including the server's list after `supported values: ` and field
 * names in `unknown field "spec.foo"`.
 *
 * Errs towards removing too much: a quote or bracket that is never closed takes the rest of the message with it.
 * Texts that are not Kubernetes field errors (an admission webhook's own message, say) may still contain values; this
 * only knows the formats above. Applying it twice gives the same result as applying it once.
 */
export function redactValues(message: string): string {
  message = redactBodyContext(message);
  let out = "";
  let kept = 0; // message[kept..] is not yet copied to out
  const markers = new RegExp(MARKERS.source, "g");
  for (let m = markers.exec(message); m !== null; m = markers.exec(message)) {
    const start = m.index + m[0].length;
    const end = m[1] === undefined ? quotedEnd(message, start) : valueEnd(message, start);
    if (end > start) {
      out += message.slice(kept, start) + REDACTED;
      kept = end;
    }
    markers.lastIndex = Math.max(end, start);
  }
  return out + message.slice(kept);
}

/** The index after the value that starts at `i`: see {@link redactValues}. */
function valueEnd(s: string, i: number): number {
  let depth = 0;
  let j = i;
  while (j < s.length) {
    const c = s[j];
    if (c === '"') {
      j = quotedEnd(s, j);
      continue;
    }
    if (c === "{" || c === "[" || c === "(") depth++;
    else if (c === "}" || c === "]" || c === ")") {
      if (depth === 0) break;
      depth--;
    } else if (depth === 0 && (c === ":" || c === ",") && s[j + 1] === " ") break;
    j++;
  }
  return j;
}

/** The index after the quoted string that starts at `i` (the end of `s` if it is not closed); `i` if none starts. */
function quotedEnd(s: string, i: number): number {
  if (s[i] !== '"') return i;
  for (let j = i + 1; j < s.length; j++) {
    if (s[j] === "\\") j++;
    else if (s[j] === '"') return j + 1;
  }
  return s.length;
}

/** Replaces each json-iterator body excerpt, from its first `...|` to the last `|...` of the message. */
function redactBodyContext(s: string): string {
  const at = s.indexOf(BODY_CONTEXT);
  if (at < 0) return s;
  const start = at + BODY_CONTEXT.length;
  const last = s.lastIndexOf(BODY_CONTEXT_END);
  const end = last >= start ? last : s.length;
  return s.slice(0, start) + REDACTED + (last >= start ? "" : BODY_CONTEXT_END) + s.slice(end);
}

/**
 * A Secret's values in what people read (`espejo plan`), masked as `kubectl diff` masks them: `***` for a value that
 * is added, removed or unchanged, `*** (before)` and `*** (after)` for one that changed. Keys are shown; values never.
 *
 * Decided by what the object is ({@link isSecretResource}), whatever its item calls its fields or spells its
 * apiVersion, and for a Secret every value below `data` and `stringData` and of every annotation is secret:
 * `kubectl apply` copies the whole object, data and all (base64 or, from `stringData`, plain), into
 * `kubectl.kubernetes.io/last-applied-configuration`, other tools (kapp, Helm plugins) do the same under their own
 * keys, and a tenant may write anything into an annotation. Labels, `type`, `immutable` and the rest are shown as for
 * any object.
 */
export const SECRET_MASK = "***";
export const SECRET_MASK_BEFORE = "*** (before)";
export const SECRET_MASK_AFTER = "*** (after)";

/** What an object is, as espejo's resolver (lib/kube/discovery.ts) maps its apiVersion and kind: group and resource. */
export type ResourceIdentity = Pick<ResourceInfo, "group" | "resource">;

/**
 * Whether objects of `r` are core Secrets (group "", resource `secrets`), whose values are never shown. The one test
 * of "is a Secret" for what people read: it takes the resource espejo's resolver found for an item, the one its
 * objects are listed and written at, so that an apiVersion the resolver admits for the core group (`v1`, `/v1`) is
 * a Secret however it is spelled, and the server's objects are judged by where they were read, not by a `kind` or
 * `apiVersion` that lists leave out. `undefined` (nothing resolved) counts as a Secret: masking fails closed.
 */
export function isSecretResource(r: ResourceIdentity | undefined): boolean {
  return r === undefined || (r.group === "" && r.resource === "secrets");
}

/** Whether a Secret's value at `path` (field names from the object's root) is secret: see {@link SECRET_MASK}. */
export function isSecretPath(path: readonly string[]): boolean {
  if (path[0] === "data" || path[0] === "stringData") return true;
  return path[0] === "metadata" && path[1] === "annotations";
}

/** Whether a value at `path` of a Secret holds a secret one below it (the root, `.metadata`), or is one. */
export function holdsSecret(path: readonly string[]): boolean {
  return path.length === 0 || (path.length === 1 && path[0] === "metadata") || isSecretPath(path);
}

/**
 * Shorter values are not scrubbed from texts by {@link scrubSecretValues}: a few characters also occur in the words
 * around them, and hiding every "ab" would leave no message to read.
 */
const MIN_SCRUBBED = 4;

/**
 * `message` without the values of `sides` (the desired and the live object of one write) when they are Secrets
 * (`resource`, the one the write goes to, by {@link isSecretResource}; not resolved counts as a Secret), unchanged
 * otherwise: {@link redactValues} first, then every occurrence of one of their values replaced by
 * {@link REDACTED} — of `data`, as stored (base64) and decoded; of `stringData`, plain and in base64; of each
 * annotation, whole, and the `data` and `stringData` values of one that is a JSON object, as
 * `last-applied-configuration` is. For the messages of refused writes of Secrets, where an admission webhook's or
 * policy's own words (`messageExpression`) may quote what it refused. Values under 4 characters stay; a value the
 * server transformed (re-encoded, cut) before quoting it is beyond this.
 */
export function scrubSecretValues(
  message: string,
  sides: readonly (KubeObject | undefined)[],
  resource: ResourceIdentity | undefined,
): string {
  if (!isSecretResource(resource)) return message;
  const values = new Set<string>();
  const add = (v: unknown, encoded: boolean) => {
    if (typeof v !== "string") return;
    values.add(v);
    if (encoded) {
      const text = decodeBase64Text(v);
      if (text !== undefined) values.add(text);
    } else values.add(encodeBase64(v));
  };
  const addObject = (o: unknown) => {
    if (!isObject(o)) return;
    for (const v of Object.values(isObject(o.data) ? o.data : {})) add(v, true);
    for (const v of Object.values(isObject(o.stringData) ? o.stringData : {})) add(v, false);
  };
  for (const s of sides) {
    if (!s) continue;
    addObject(s);
    for (const v of Object.values(s.metadata?.annotations ?? {})) {
      add(v, false);
      addObject(parseJson(v));
    }
  }
  let out = redactValues(message);
  // Longest first, so that a value inside another does not leave the rest of the longer one behind.
  for (const v of [...values].filter((v) => v.length >= MIN_SCRUBBED).sort((a, b) => b.length - a.length)) {
    out = out.replaceAll(v, REDACTED);
  }
  return out;
}

function decodeBase64Text(v: string): string | undefined {
  try {
    const bytes = Uint8Array.from(atob(v), (c) => c.charCodeAt(0));
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

function parseJson(v: string): unknown {
  try {
    return JSON.parse(v);
  } catch {
    return undefined;
  }
}

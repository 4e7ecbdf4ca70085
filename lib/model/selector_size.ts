/**
 * The bounds of one label selector: how many distinct label keys it reads and how many characters of keys and values
 * it holds. Its keys are held while its SyncConfig is (label_keys.ts), and each key that no selector read before makes
 * the namespaces whose labels were trimmed to the keys read stale, to be read again (lib/controller/trimmed_labels.ts).
 * In delegated mode a team writes its own selector: the bounds keep what one SyncConfig costs there small and fixed.
 * Kubernetes sets no bound on a label selector but its object's size (about 1.5 MiB), nor does the Go espejo: a
 * selector of 2,000 keys would pass both. Checked before anything else of the selector, so that the work done for one
 * that is refused stays linear in its size.
 */

/** Most distinct label keys one label selector reads: selectors read a handful (a team, a tier, an environment). */
export const MAX_SELECTOR_KEYS = 64;

/**
 * Most characters of label keys and values one label selector holds (matchLabels' keys and values, matchExpressions'
 * keys and values): an `In` of 200 team names takes about 4,000.
 */
export const MAX_SELECTOR_CHARACTERS = 16 * 1024;

/**
 * Why the label selector is too large (the message after the field's name), or undefined. Parts of the wrong type are
 * not counted: the checks after this one refuse them.
 */
export function selectorSizeProblem(sel: { matchLabels?: unknown; matchExpressions?: unknown }): string | undefined {
  const keys = new Set<string>();
  let characters = 0;
  const count = (key: unknown, values: unknown) => {
    if (typeof key === "string") {
      keys.add(key);
      characters += key.length;
    }
    for (const v of Array.isArray(values) ? values : [values]) if (typeof v === "string") characters += v.length;
  };
  if (typeof sel.matchLabels === "object" && sel.matchLabels !== null) {
    for (const [key, value] of Object.entries(sel.matchLabels)) count(key, value);
  }
  for (const req of Array.isArray(sel.matchExpressions) ? sel.matchExpressions : []) {
    if (typeof req === "object" && req !== null) count(req.key, req.values);
  }
  if (keys.size > MAX_SELECTOR_KEYS) {
    return `reads ${keys.size} distinct label keys, more than the ${MAX_SELECTOR_KEYS} allowed`;
  }
  if (characters > MAX_SELECTOR_CHARACTERS) {
    return `has ${characters} characters of label keys and values, more than the ${MAX_SELECTOR_CHARACTERS} allowed`;
  }
  return undefined;
}

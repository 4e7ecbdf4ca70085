/**
 * `${PROJECT_NAME}` substitution: replaced by the target namespace's name in every string value of an item, at any
 * depth, never in keys (as espejo does).
 */
import { setOwnKey } from "../kube/own_key.ts";

export const PROJECT_NAME_PLACEHOLDER = "${PROJECT_NAME}";

/**
 * Returns a deep copy of `value` with the placeholder replaced in every string value. A loop, not `map` and
 * `Object.fromEntries`: every sync renders each of its items, and a cache judging objects as they arrive renders one
 * per object, 100,000 after a restart.
 */
export function renderTemplate<T>(value: T, projectName: string): T {
  if (typeof value === "string") {
    return (value.includes(PROJECT_NAME_PLACEHOLDER)
      ? value.replaceAll(PROJECT_NAME_PLACEHOLDER, projectName)
      : value) as T;
  }
  if (Array.isArray(value)) {
    const copy: unknown[] = [];
    for (const v of value) copy.push(renderTemplate(v, projectName));
    return copy as T;
  }
  if (value && typeof value === "object") {
    const copy: Record<string, unknown> = {};
    for (const k of Object.keys(value)) {
      setOwnKey(copy, k, renderTemplate((value as Record<string, unknown>)[k], projectName));
    }
    return copy as T;
  }
  return value;
}

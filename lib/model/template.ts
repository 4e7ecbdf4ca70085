/**
 * `${PROJECT_NAME}` substitution: replaced by the target namespace's name in every string value of an item, at any
 * depth, never in keys (as espejo does).
 */
export const PROJECT_NAME_PLACEHOLDER = "${PROJECT_NAME}";

/** Returns a deep copy of `value` with the placeholder replaced in every string value. */
export function renderTemplate<T>(value: T, projectName: string): T {
  if (typeof value === "string") return value.replaceAll(PROJECT_NAME_PLACEHOLDER, projectName) as T;
  if (Array.isArray(value)) return value.map((v) => renderTemplate(v, projectName)) as T;
  if (value && typeof value === "object") {
    // fromEntries defines own properties: a key "__proto__" (valid JSON) stays a key instead of a prototype.
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, renderTemplate(v, projectName)])) as T;
  }
  return value;
}

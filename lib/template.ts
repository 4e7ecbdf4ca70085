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
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = renderTemplate(v, projectName);
    return out as T;
  }
  return value;
}

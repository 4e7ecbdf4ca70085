/**
 * Sets `key` on a plain object as its own property. A key "__proto__" (valid JSON, and a tenant can write it) must
 * stay a key: assigning it would set the object's prototype instead.
 */
export function setOwnKey(o: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__") {
    Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
  } else o[key] = value;
}

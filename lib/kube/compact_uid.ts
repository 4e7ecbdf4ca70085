/**
 * A Kubernetes uid (a UUID: 36 characters) in 19 characters, for packed store entries (lib/kube/store.ts): 17 bytes
 * less for each of 120,000 cached objects. The 128 bits go 7 to a character, each in U+0080..U+00FF, so the text
 * stays one byte a character and never holds a separator (newline, U+001E, U+001F) nor looks like a plain uid. Only
 * the canonical form (lowercase hex) is compacted, so that it reads back exactly; any other uid stays as it is.
 */

const CANONICAL = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const HEX = "0123456789abcdef";
/** Where the dashes go back: after these many hex digits. */
const DASHES = new Set([8, 12, 16, 20]);

export function compactUid(uid: string): string {
  if (!CANONICAL.test(uid)) return uid;
  const out: number[] = [];
  let acc = 0;
  let bits = 0;
  for (let i = 0; i < uid.length; i++) {
    const c = uid.charCodeAt(i);
    if (c === 45) continue; // "-"
    acc = (acc << 4) | (c <= 57 ? c - 48 : c - 87);
    bits += 4;
    if (bits >= 7) {
      bits -= 7;
      out.push(0x80 | (acc >> bits));
      acc &= (1 << bits) - 1;
    }
  }
  out.push(0x80 | (acc << (7 - bits))); // 128 = 18 * 7 + 2: the last two bits, padded
  return String.fromCharCode(...out);
}

export function fullUid(stored: string): string {
  if (stored.length !== 19 || stored.charCodeAt(0) < 0x80) return stored;
  let hex = "";
  let digits = 0;
  let acc = 0;
  let bits = 0;
  for (let i = 0; i < stored.length; i++) {
    acc = (acc << 7) | (stored.charCodeAt(i) & 0x7f);
    bits += 7;
    while (bits >= 4 && digits < 32) {
      bits -= 4;
      if (DASHES.has(digits)) hex += "-";
      hex += HEX[acc >> bits];
      acc &= (1 << bits) - 1;
      digits++;
    }
  }
  return hex;
}

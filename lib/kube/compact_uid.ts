/**
 * A Kubernetes uid (a UUID: 36 characters) in 19 characters, for packed store entries (lib/kube/store.ts): 17 bytes
 * less for each of 120,000 cached objects. The 128 bits go 7 to a character, each in U+0080..U+00FF, so the text
 * stays one byte a character and never holds a separator (newline, U+001E, U+001F) nor looks like a plain uid. Only
 * the canonical form (lowercase hex) is compacted, so that it reads back exactly; any other uid stays as it is.
 */

const CANONICAL = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

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

/** Each byte's two hex digits. */
const BYTE_HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, "0"));

/**
 * The uid {@link compactUid} made `stored` from; any other string as it is. A byte at a time from a table: every read
 * of a cached object's uid decodes one (a restart's units read 100,000), and without a JIT each operation counts.
 */
export function fullUid(stored: string): string {
  if (stored.length !== 19 || stored.charCodeAt(0) < 0x80) return stored;
  let hex = "";
  let bytes = 0;
  let acc = 0;
  let bits = 0;
  for (let i = 0; i < 19; i++) {
    acc = (acc << 7) | (stored.charCodeAt(i) & 0x7f);
    bits += 7;
    if (bits >= 8) {
      bits -= 8;
      if (bytes === 4 || bytes === 6 || bytes === 8 || bytes === 10) hex += "-";
      hex += BYTE_HEX[acc >> bits];
      acc &= (1 << bits) - 1;
      if (++bytes === 16) break;
    }
  }
  return hex;
}

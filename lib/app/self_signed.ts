/**
 * A self-signed serving certificate made in memory, for `--metrics-secure` without `--metrics-cert-path`, as
 * controller-runtime's metrics server makes one when given no certificate. The image has no openssl, so the
 * certificate is encoded here: an ECDSA P-256 key from WebCrypto, and the few DER structures of an X.509 v3
 * certificate (RFC 5280) that a TLS server needs. Scrapers of such an endpoint skip verification (or pin it);
 * a certificate they can verify comes from `--metrics-cert-path` (e.g. cert-manager).
 */

export interface ServingCert {
  /** PEM certificate. */
  cert: string;
  /** PEM PKCS #8 private key. */
  key: string;
}

/** A certificate for `names` (DNS names or IPv4 addresses), valid from an hour ago for a year. */
export async function selfSignedCert(
  names: string[] = ["localhost", "127.0.0.1"],
  now = new Date(),
): Promise<ServingCert> {
  const keys = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign", "verify"]);
  const spki = new Uint8Array(await crypto.subtle.exportKey("spki", keys.publicKey));
  const pkcs8 = new Uint8Array(await crypto.subtle.exportKey("pkcs8", keys.privateKey));
  const name = seq(set(seq(oid(OID.commonName), utf8("espejo-metrics"))));
  const serial = crypto.getRandomValues(new Uint8Array(16));
  serial[0] &= 0x7f; // a positive INTEGER
  const sans = names.map((n) => IPV4.test(n) ? tagged(0x87, ipv4(n)) : tagged(0x82, ascii(n)));
  const extensions = seq(
    seq(oid(OID.subjectAltName), octets(seq(...sans))),
    seq(oid(OID.keyUsage), tlv(0x01, [0xff]), octets(tlv(0x03, [0x07, 0x80]))), // critical; digitalSignature
    seq(oid(OID.extKeyUsage), octets(seq(oid(OID.serverAuth)))),
  );
  const hour = 3600_000;
  const tbs = seq(
    tagged(0xa0, integer(new Uint8Array([2]))), // v3
    integer(serial),
    seq(oid(OID.ecdsaWithSha256)),
    name,
    seq(utcTime(new Date(now.getTime() - hour)), utcTime(new Date(now.getTime() + 365 * 24 * hour))),
    name,
    spki,
    tagged(0xa3, extensions),
  );
  const p1363 = new Uint8Array(
    await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, keys.privateKey, tbs as Uint8Array<ArrayBuffer>),
  );
  const signature = seq(integer(p1363.subarray(0, 32)), integer(p1363.subarray(32)));
  const cert = seq(tbs, seq(oid(OID.ecdsaWithSha256)), tlv(0x03, [0, ...signature]));
  return { cert: pem("CERTIFICATE", cert), key: pem("PRIVATE KEY", pkcs8) };
}

const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;

const OID = {
  commonName: "2.5.4.3",
  subjectAltName: "2.5.29.17",
  keyUsage: "2.5.29.15",
  extKeyUsage: "2.5.29.37",
  serverAuth: "1.3.6.1.5.5.7.3.1",
  ecdsaWithSha256: "1.2.840.10045.4.3.2",
};

/** One DER tag-length-value. */
function tlv(tag: number, content: ArrayLike<number>): Uint8Array {
  const n = content.length;
  const length = n < 0x80
    ? [n]
    : n < 0x100
    ? [0x81, n]
    : n < 0x10000
    ? [0x82, n >> 8, n & 0xff]
    : [0x83, n >> 16, (n >> 8) & 0xff, n & 0xff];
  const out = new Uint8Array(1 + length.length + n);
  out[0] = tag;
  out.set(length, 1);
  out.set(content, 1 + length.length);
  return out;
}

const concat = (parts: Uint8Array[]) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) (out.set(p, at), at += p.length);
  return out;
};
const seq = (...parts: Uint8Array[]) => tlv(0x30, concat(parts));
const set = (...parts: Uint8Array[]) => tlv(0x31, concat(parts));
const tagged = (tag: number, content: Uint8Array) => tlv(tag, content);
const octets = (content: Uint8Array) => tlv(0x04, content);
const ascii = (s: string) => new TextEncoder().encode(s);
const utf8 = (s: string) => tlv(0x0c, ascii(s));
const ipv4 = (s: string) => new Uint8Array(s.split(".").map(Number));

/** A DER INTEGER of unsigned big-endian bytes: leading zeros dropped, one added where the top bit is set. */
function integer(bytes: Uint8Array): Uint8Array {
  let i = 0;
  while (i < bytes.length - 1 && bytes[i] === 0) i++;
  const trimmed = bytes.subarray(i);
  return tlv(0x02, trimmed[0] & 0x80 ? [0, ...trimmed] : trimmed);
}

function oid(dotted: string): Uint8Array {
  const [a, b, ...rest] = dotted.split(".").map(Number);
  const body = [40 * a + b];
  for (const n of rest) {
    const groups = [n & 0x7f];
    for (let v = n >>> 7; v > 0; v >>>= 7) groups.unshift((v & 0x7f) | 0x80);
    body.push(...groups);
  }
  return tlv(0x06, body);
}

/** UTCTime (YYMMDDHHMMSSZ), which RFC 5280 asks for dates before 2050. */
function utcTime(d: Date): Uint8Array {
  const two = (n: number) => String(n).padStart(2, "0");
  const text = `${two(d.getUTCFullYear() % 100)}${two(d.getUTCMonth() + 1)}${two(d.getUTCDate())}` +
    `${two(d.getUTCHours())}${two(d.getUTCMinutes())}${two(d.getUTCSeconds())}Z`;
  return tlv(0x17, ascii(text));
}

function pem(label: string, der: Uint8Array): string {
  let binary = "";
  for (const byte of der) binary += String.fromCharCode(byte);
  const lines = btoa(binary).match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join("\n")}\n-----END ${label}-----\n`;
}

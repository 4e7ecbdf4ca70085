/**
 * IP addresses, CIDRs and host:port as Go's net package parses and compares them, for `NO_PROXY` matching
 * (`proxy_env.ts`): client-go's proxy decision must be reproduced to the byte, and the URL parser's notion of a host
 * (which lowercases, rewrites numeric forms and accepts what Go refuses) is not Go's.
 */

/** Go's `net.SplitHostPort`: undefined where Go returns an error (no port, too many colons, stray brackets). */
export function splitHostPort(hostPort: string): [string, string] | undefined {
  const i = hostPort.lastIndexOf(":");
  if (i < 0) return undefined;
  let host: string;
  let from = 0;
  let to = 0;
  if (hostPort.startsWith("[")) {
    const end = hostPort.indexOf("]");
    if (end < 0 || end + 1 !== i) return undefined;
    host = hostPort.slice(1, end);
    from = 1;
    to = end + 1;
  } else {
    host = hostPort.slice(0, i);
    if (host.includes(":")) return undefined;
  }
  if (hostPort.slice(from).includes("[") || hostPort.slice(to).includes("]")) return undefined;
  return [host, hostPort.slice(i + 1)];
}

/**
 * An IP as Go compares it: 4 bytes for IPv4 and IPv4-mapped IPv6, 16 bytes otherwise (so `::ffff:1.2.3.4` equals
 * `1.2.3.4`, as with Go's `IP.Equal`). Strict like `net.ParseIP` (no leading zeros in IPv4 fields, no zone);
 * `sloppy` allows leading zeros, as k8s.io/utils `ParseIPSloppy`.
 */
export function parseIP(s: string, sloppy = false): Uint8Array | undefined {
  const bytes = s.includes(":") ? parseIPv6(s, sloppy) : parseIPv4(s, sloppy);
  if (bytes?.length === 16 && bytes.subarray(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff) {
    return bytes.slice(12);
  }
  return bytes;
}

function parseIPv4(s: string, sloppy: boolean): Uint8Array | undefined {
  const fields = s.split(".");
  if (fields.length !== 4) return undefined;
  const out = new Uint8Array(4);
  for (const [i, f] of fields.entries()) {
    if (!(sloppy ? /^\d+$/ : /^\d{1,3}$/).test(f) || (!sloppy && f.length > 1 && f[0] === "0")) return undefined;
    const n = Number(f);
    if (n > 255) return undefined;
    out[i] = n;
  }
  return out;
}

function parseIPv6(s: string, sloppy: boolean): Uint8Array | undefined {
  const out = new Uint8Array(16);
  let ellipsis = -1;
  let i = 0;
  let pos = 0;
  if (s.startsWith("::")) {
    ellipsis = 0;
    i = 2;
  }
  while (i < s.length && pos < 16) {
    let j = i;
    while (j < s.length && j - i < 5 && /[0-9a-f]/i.test(s[j])) j++;
    if (j === i || j - i > 4) return undefined;
    if (s[j] === ".") {
      if (ellipsis < 0 && pos !== 12) return undefined;
      if (pos > 12) return undefined;
      const v4 = parseIPv4(s.slice(i), sloppy);
      if (!v4) return undefined;
      out.set(v4, pos);
      pos += 4;
      i = s.length;
      break;
    }
    const v = parseInt(s.slice(i, j), 16);
    out[pos++] = v >> 8;
    out[pos++] = v & 0xff;
    i = j;
    if (i === s.length) break;
    if (s[i] !== ":" || i + 1 === s.length) return undefined;
    i++;
    if (s[i] === ":") {
      if (ellipsis >= 0) return undefined;
      ellipsis = pos;
      i++;
    }
  }
  if (i !== s.length) return undefined;
  if (pos < 16) {
    if (ellipsis < 0) return undefined;
    const n = 16 - pos;
    out.copyWithin(ellipsis + n, ellipsis, pos);
    out.fill(0, ellipsis, ellipsis + n);
  } else if (ellipsis >= 0) {
    return undefined; // "::" must stand for at least one group
  }
  return out;
}

export const sameIP = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i]);
export const isLoopback = (ip: Uint8Array) =>
  ip.length === 4 ? ip[0] === 127 : sameIP(ip, new Uint8Array([...new Array(15).fill(0), 1]));

/** Go's `net.ParseCIDR` and `IPNet.Contains`: an IPv4 network holds IPv4 (and IPv4-mapped) addresses only. */
export function parseCIDR(s: string, sloppy = false): { contains(ip: Uint8Array): boolean } | undefined {
  const slash = s.indexOf("/");
  if (slash < 0) return undefined;
  const addr = s.slice(0, slash);
  const bits = s.slice(slash + 1);
  const v6 = addr.includes(":");
  const raw = v6 ? parseIPv6(addr, sloppy) : parseIPv4(addr, sloppy);
  const max = v6 ? 128 : 32;
  if (!raw || !/^\d+$/.test(bits) || Number(bits) > max) return undefined;
  let prefix = Number(bits);
  let net = mask(raw, prefix);
  const mapped = net.length === 16 && net.subarray(0, 10).every((b) => b === 0) && net[10] === 0xff &&
    net[11] === 0xff;
  if (mapped) {
    net = net.slice(12);
    prefix -= 96;
  }
  return { contains: (ip) => ip.length === net.length && sameIP(mask(ip, prefix), net) };
}

function mask(ip: Uint8Array, prefix: number): Uint8Array {
  return ip.map((b, i) => {
    const keep = Math.max(0, Math.min(8, prefix - i * 8));
    return b & (0xff << (8 - keep)) & 0xff;
  });
}

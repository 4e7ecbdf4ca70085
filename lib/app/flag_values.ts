/** The values of espejo's flags, read as the Go espejo's are: listen addresses, Go durations and counts. */
import { parseGoDuration } from "./duration.ts";

export interface ListenAddr {
  hostname: string;
  port: number;
}

/** `:8080`, `127.0.0.1:8080`, `[::1]:8080`; `0` disables the server (as in controller-runtime). */
export function parseListenAddr(text: string): ListenAddr | undefined {
  if (text === "0") return undefined;
  const m = /^(\[[^\]]+\]|[^:]*):(\d{1,5})$/.exec(text);
  const port = m ? Number(m[2]) : NaN;
  if (!m || port > 65535) {
    throw new Error(`"${text}" is not an address: use host:port, :port, or 0 to disable`);
  }
  const host = m[1].replace(/^\[|\]$/g, "");
  // No host: every address, IPv6 and IPv4 (Go listens dual-stack on ":port"); see lib/http_server.ts.
  return { hostname: host || "::", port };
}

/** A Go duration in milliseconds; zero is refused unless `zeroAllowed`, negative always. */
export function goDuration(text: string, zeroAllowed = false): number {
  const ms = parseGoDuration(text);
  if (ms < 0 || (ms === 0 && !zeroAllowed)) {
    throw new Error(`"${text}" must ${zeroAllowed ? "not be negative" : "be positive"}`);
  }
  return ms;
}

/** A finite number above 0. */
export function positiveNumber(text: string): number {
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`"${text}" is not a positive number`);
  return n;
}

/** A whole number of at least 1. */
export function wholeAtLeastOne(text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new Error(`"${text}" is not a whole number of at least 1`);
  return n;
}

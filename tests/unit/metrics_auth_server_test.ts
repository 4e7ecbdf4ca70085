/**
 * The metrics server's own bounds with `--metrics-secure` (lib/app/http_server.ts), on a loopback port with a fake
 * check: oversized Authorization headers, Retry-After, and a check aborted when its client leaves.
 */
import assert from "node:assert/strict";
import { serveMetrics } from "../../lib/app/http_server.ts";
import { MAX_AUTHORIZATION_BYTES, type Verdict } from "../../lib/app/metrics_auth.ts";
import { selfSignedCert, type ServingCert } from "../../lib/app/self_signed.ts";
import { Metrics } from "../../lib/metrics/metrics.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

/** A check that waits until `release` (or its signal), recording the signals it was given. */
class HeldCheck {
  readonly signals: AbortSignal[] = [];
  readonly #waiting: ((v: Verdict) => void)[] = [];
  verdict: Verdict = { ok: true, user: "scraper" };
  hold = true;

  check = (_authorization: string | null, _path: string, signal?: AbortSignal): Promise<Verdict> => {
    this.signals.push(signal!);
    if (!this.hold) return Promise.resolve(this.verdict);
    return new Promise((resolve) => this.#waiting.push(resolve));
  };

  releaseAll(): void {
    for (const r of this.#waiting.splice(0)) r(this.verdict);
  }
}

/** Sends one raw HTTP/1.1 GET over TLS and returns the status line and headers (or undefined if cut off). */
async function get(
  port: number,
  cert: ServingCert,
  headers: Record<string, string>,
  opts: { closeAfterSend?: boolean } = {},
): Promise<{ status: number; head: string } | undefined> {
  const conn = await Deno.connectTls({ hostname: "127.0.0.1", port, caCerts: [cert.cert] });
  try {
    const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("");
    await conn.write(new TextEncoder().encode(`GET /metrics HTTP/1.1\r\nhost: x\r\nconnection: close\r\n${lines}\r\n`));
    if (opts.closeAfterSend) return undefined;
    let text = "";
    const buf = new Uint8Array(16384);
    while (!text.includes("\r\n\r\n")) {
      const n = await conn.read(buf);
      if (n === null) break;
      text += new TextDecoder().decode(buf.subarray(0, n));
    }
    return { status: Number(text.split(" ")[1]), head: text.split("\r\n\r\n")[0] };
  } finally {
    conn.close();
  }
}

async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.fail(`timed out waiting for ${what}`);
}

async function withServer(fn: (port: number, cert: ServingCert, auth: HeldCheck) => Promise<void>): Promise<void> {
  const cert = await selfSignedCert();
  const auth = new HeldCheck();
  const stop = new AbortController();
  const server = serveMetrics({ hostname: "127.0.0.1", port: 0 }, new Metrics(true), stop.signal, { tls: cert, auth });
  try {
    await fn((server.addr as Deno.NetAddr).port, cert, auth);
  } finally {
    auth.releaseAll();
    stop.abort();
    await server.finished;
  }
}

Deno.test(
  "serveMetrics answers an Authorization header over 8 KiB with 431, unreviewed; 4 KB is checked",
  opts,
  () =>
    withServer(async (port, cert, auth) => {
      auth.hold = false;
      const long = await get(port, cert, { authorization: `Bearer ${"x".repeat(MAX_AUTHORIZATION_BYTES)}` });
      assert.equal(long?.status, 431);
      assert.equal(auth.signals.length, 0);
      const fine = await get(port, cert, { authorization: `Bearer ${"x".repeat(4096)}` });
      assert.equal(fine?.status, 200);
      assert.equal(auth.signals.length, 1);
    }),
);

Deno.test("serveMetrics passes a refusal's Retry-After on", opts, () =>
  withServer(async (port, cert, auth) => {
    auth.hold = false;
    auth.verdict = { ok: false, status: 429, reason: "Too Many Requests", retryAfterSeconds: 1 };
    const r = await get(port, cert, { authorization: "Bearer t" });
    assert.equal(r?.status, 429);
    assert.match(r!.head, /^retry-after: 1$/mi);
  }));

Deno.test("serveMetrics aborts a check when its client goes away", opts, () =>
  withServer(async (port, cert, auth) => {
    await get(port, cert, { authorization: "Bearer t" }, { closeAfterSend: true });
    await until(() => auth.signals.length === 1, "the check");
    await until(() => auth.signals[0].aborted, "the check's signal to abort");
  }));

/**
 * Scrapes of `--metrics-secure`'s /metrics for the integration tests (tests/integration/metrics_secure_test.ts,
 * tests/integration/metrics_known_scraper_test.ts): deploy/'s metrics roles, one scrape on a connection of its own, and
 * a connection kept alive across scrapes, as Prometheus keeps its own and as a flood's clients keep theirs.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { repoRoot } from "./build.ts";
import { isAlreadyExists } from "../lib/kube/errors.ts";
import type { HttpKubeClient } from "../lib/kube/client.ts";

/** What a scrape was answered: the status, or "timeout" when there was no reply in time, or "error". */
export interface ScrapeResult {
  status: number | "timeout" | "error";
  retryAfter?: number;
}

/** deploy/'s two ClusterRoles: the reviews espejo makes, and the right a scraper needs. */
export async function installMetricsRoles(admin: HttpKubeClient): Promise<void> {
  const roles = parseAllDocuments(await Deno.readTextFile(join(repoRoot, "deploy/rbac/metrics_auth_role.yaml")))
    .map((d) => d.toJSON()).filter((o) => o?.kind === "ClusterRole");
  assert.deepEqual(roles.map((r) => r.metadata.name), ["espejo-metrics-auth", "espejo-metrics-reader"]);
  for (const role of roles) {
    await admin.request({ method: "POST", path: "/apis/rbac.authorization.k8s.io/v1/clusterroles", body: role })
      .catch((e) => {
        if (!isAlreadyExists(e)) throw e;
      });
  }
}

/** A random 4 KB bearer token, as a flood sends one. */
export function randomToken(): string {
  return btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(3072))));
}

const request = (token: string, close: boolean) =>
  new TextEncoder().encode(
    `GET /metrics HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: ${close ? "close" : "keep-alive"}\r\n` +
      `authorization: Bearer ${token}\r\n\r\n`,
  );

/**
 * One GET /metrics on a TLS connection of its own, as a flood sends it: the status, or "timeout" when there was no
 * reply within `giveUpMs` (the connection is then closed), or "error".
 */
export async function rawScrape(port: number, ca: string, token: string, giveUpMs: number): Promise<ScrapeResult> {
  let conn: Deno.TlsConn | undefined;
  const timer = setTimeout(() => conn?.close(), giveUpMs);
  let timedOut = false;
  const deadline = setTimeout(() => timedOut = true, giveUpMs);
  try {
    conn = await Deno.connectTls({ hostname: "127.0.0.1", port, caCerts: [ca] });
    if (timedOut) return { status: "timeout" };
    await conn.write(request(token, true));
    let text = "";
    const buf = new Uint8Array(4096);
    while (!text.includes("\r\n\r\n")) {
      const n = await conn.read(buf);
      if (n === null) break;
      text += new TextDecoder().decode(buf.subarray(0, n));
    }
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]);
    if (!status) return { status: timedOut ? "timeout" : "error" };
    const retryAfter = /^retry-after: (\d+)/mi.exec(text)?.[1];
    return { status, retryAfter: retryAfter ? Number(retryAfter) : undefined };
  } catch {
    return { status: timedOut ? "timeout" : "error" };
  } finally {
    clearTimeout(timer);
    clearTimeout(deadline);
    try {
      conn?.close();
    } catch { /* closed by the timer */ }
  }
}

/**
 * GET /metrics again and again on one TLS connection (HTTP/1.1 keep-alive), each reply read whole before the next
 * request. A connection closed by the server, or given up after `giveUpMs`, is opened again for the next scrape.
 */
export class KeepAliveScraper {
  #conn?: Deno.TlsConn;
  #pending = new Uint8Array(0);

  constructor(readonly port: number, readonly ca: string) {}

  async scrape(token: string, giveUpMs: number): Promise<ScrapeResult> {
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      this.close();
    }, giveUpMs);
    try {
      this.#conn ??= await Deno.connectTls({ hostname: "127.0.0.1", port: this.port, caCerts: [this.ca] });
      await this.#conn.write(request(token, false));
      const head = await this.#readHead();
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]);
      if (!status) throw new Error("no status line");
      const length = /^content-length: (\d+)/mi.exec(head)?.[1];
      if (length !== undefined) await this.#readBody(Number(length));
      else if (/^transfer-encoding: chunked/mi.test(head)) await this.#readChunked();
      else this.close(); // a body that ends with the connection: read no further on it
      if (/^connection: close/mi.test(head)) this.close();
      const retryAfter = /^retry-after: (\d+)/mi.exec(head)?.[1];
      return { status, retryAfter: retryAfter ? Number(retryAfter) : undefined };
    } catch {
      this.close();
      return { status: timedOut ? "timeout" : "error" };
    } finally {
      clearTimeout(timer);
    }
  }

  close(): void {
    try {
      this.#conn?.close();
    } catch { /* closed already */ }
    this.#conn = undefined;
    this.#pending = new Uint8Array(0);
  }

  async #more(): Promise<void> {
    const buf = new Uint8Array(65536);
    const n = await this.#conn!.read(buf);
    if (n === null) throw new Error("closed by the server");
    const joined = new Uint8Array(this.#pending.length + n);
    joined.set(this.#pending);
    joined.set(buf.subarray(0, n), this.#pending.length);
    this.#pending = joined;
  }

  /** Bytes up to the first `marker`, which is consumed too. */
  async #readUntil(marker: string): Promise<string> {
    for (;;) {
      const text = new TextDecoder("latin1").decode(this.#pending);
      const at = text.indexOf(marker);
      if (at >= 0) {
        this.#pending = this.#pending.subarray(at + marker.length);
        return text.slice(0, at);
      }
      await this.#more();
    }
  }

  #readHead(): Promise<string> {
    return this.#readUntil("\r\n\r\n");
  }

  async #readBody(length: number): Promise<void> {
    while (this.#pending.length < length) await this.#more();
    this.#pending = this.#pending.subarray(length);
  }

  async #readChunked(): Promise<void> {
    for (;;) {
      const size = parseInt(await this.#readUntil("\r\n"), 16);
      await this.#readBody(size + 2); // the chunk and its CRLF
      if (size === 0) return;
    }
  }
}

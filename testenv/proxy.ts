/**
 * A small forward proxy for tests of the client's proxy support: HTTP CONNECT and SOCKS5 (no authentication) on one
 * port, over plain TCP or TLS, recording every tunnel it opens so a test can tell that requests went through it.
 * `resolve` maps the host a client asks for to the address dialled, so a test can name the API server by a host no
 * resolver knows (`kubernetes`, which its certificate names) and still reach 127.0.0.1.
 *
 * Also a plain TCP forwarder listening on another loopback address (127.0.0.2 by default), to reach a server by an
 * address its certificate does not name.
 */

export interface ProxyTunnel {
  protocol: "connect" | "socks5";
  /** `host:port` as the client asked for it. */
  target: string;
  /** The CONNECT request's Proxy-Authorization header, if any. */
  authorization?: string;
}

export interface TestProxy {
  /** `http://127.0.0.1:<port>`, or `https://` when started with `tls`. */
  url: string;
  port: number;
  tunnels: ProxyTunnel[];
  close(): Promise<void>;
}

export interface TestProxyOptions {
  resolve?: (host: string) => string;
  /** PEM certificate and key: the proxy speaks TLS (an `https://` proxy). */
  tls?: { cert: string; key: string };
}

export function startProxy(opts: TestProxyOptions = {}): TestProxy {
  const listener = opts.tls
    ? Deno.listenTls({ hostname: "127.0.0.1", port: 0, cert: opts.tls.cert, key: opts.tls.key })
    : Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  const tunnels: ProxyTunnel[] = [];
  const open = new Set<Deno.Conn>();
  const resolve = opts.resolve ?? ((host: string) => host);
  const serving = (async () => {
    for await (const conn of listener) {
      open.add(conn);
      serve(conn, resolve, tunnels, open).catch(() => close(conn)).finally(() => open.delete(conn));
    }
  })().catch(() => {});
  return {
    url: `${opts.tls ? "https" : "http"}://127.0.0.1:${port}`,
    port,
    tunnels,
    async close() {
      listener.close();
      for (const conn of open) close(conn);
      await serving;
    },
  };
}

/** A TCP forwarder: connections to `listen`:<port> are piped to `to`. */
export function startForwarder(
  to: { hostname: string; port: number },
  listen = "127.0.0.2",
): { hostname: string; port: number; close(): Promise<void> } {
  const listener = Deno.listen({ hostname: listen, port: 0 });
  const open = new Set<Deno.Conn>();
  const serving = (async () => {
    for await (const conn of listener) {
      open.add(conn);
      Deno.connect(to).then((upstream) => {
        open.add(upstream);
        pipe(conn, upstream);
      }, () => close(conn));
    }
  })().catch(() => {});
  return {
    hostname: listen,
    port: (listener.addr as Deno.NetAddr).port,
    async close() {
      listener.close();
      for (const conn of open) close(conn);
      await serving;
    },
  };
}

async function serve(
  conn: Deno.Conn,
  resolve: (host: string) => string,
  tunnels: ProxyTunnel[],
  open: Set<Deno.Conn>,
): Promise<void> {
  const input = new Input(conn);
  await input.need(1);
  let tunnel: ProxyTunnel;
  let upstream: Deno.Conn;
  if (input.buffer[0] === 5) {
    // SOCKS5: greeting, then CONNECT.
    await input.need(2);
    const methods = input.buffer[1];
    await input.need(2 + methods);
    const offered = input.take(2 + methods).subarray(2);
    if (!offered.includes(0)) {
      await conn.write(new Uint8Array([5, 0xff]));
      return close(conn);
    }
    await conn.write(new Uint8Array([5, 0]));
    await input.need(5);
    const type = input.buffer[3];
    const length = type === 1 ? 4 : type === 4 ? 16 : 1 + input.buffer[4];
    await input.need(4 + length + 2);
    const request = input.take(4 + length + 2);
    const address = request.subarray(4, 4 + length);
    const host = type === 1
      ? address.join(".")
      : type === 4
      ? Array.from({ length: 8 }, (_, i) => ((address[2 * i] << 8) | address[2 * i + 1]).toString(16)).join(":")
      : new TextDecoder().decode(address.subarray(1));
    const port = (request[4 + length] << 8) | request[4 + length + 1];
    tunnel = { protocol: "socks5", target: `${host.includes(":") ? `[${host}]` : host}:${port}` };
    try {
      upstream = await Deno.connect({ hostname: resolve(host), port });
    } catch {
      await conn.write(new Uint8Array([5, 5, 0, 1, 0, 0, 0, 0, 0, 0]));
      return close(conn);
    }
    tunnels.push(tunnel);
    await conn.write(new Uint8Array([5, 0, 0, 1, 0, 0, 0, 0, 0, 0]));
  } else {
    // HTTP CONNECT.
    let end: number;
    while ((end = new TextDecoder().decode(input.buffer).indexOf("\r\n\r\n")) < 0) await input.more();
    const head = new TextDecoder().decode(input.take(end + 4)).split("\r\n");
    const [method, target] = head[0].split(" ");
    const authorization = head.find((h) => /^proxy-authorization:/i.test(h))?.replace(/^[^:]*:\s*/, "");
    const m = /^\[?([^\]]*?)\]?:(\d+)$/.exec(target ?? "");
    if (method !== "CONNECT" || !m) {
      await conn.write(new TextEncoder().encode("HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n"));
      return close(conn);
    }
    tunnel = { protocol: "connect", target, ...(authorization ? { authorization } : {}) };
    try {
      upstream = await Deno.connect({ hostname: resolve(m[1]), port: Number(m[2]) });
    } catch {
      await conn.write(new TextEncoder().encode("HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n"));
      return close(conn);
    }
    tunnels.push(tunnel);
    await conn.write(new TextEncoder().encode("HTTP/1.1 200 Connection established\r\n\r\n"));
  }
  open.add(upstream);
  if (input.buffer.length) await upstream.write(input.take(input.buffer.length));
  await pipe(conn, upstream);
}

/** Copies bytes both ways until either side closes, then closes both. */
async function pipe(a: Deno.Conn, b: Deno.Conn): Promise<void> {
  await Promise.race([
    a.readable.pipeTo(b.writable, { preventClose: true }).catch(() => {}),
    b.readable.pipeTo(a.writable, { preventClose: true }).catch(() => {}),
  ]);
  close(a);
  close(b);
}

function close(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch { /* already closed */ }
}

/** Buffered reads off a connection, for the proxy handshakes. */
class Input {
  buffer = new Uint8Array(0);
  constructor(private readonly conn: Deno.Conn) {}

  async more(): Promise<void> {
    const chunk = new Uint8Array(16384);
    const n = await this.conn.read(chunk);
    if (n === null) throw new Error("The client closed the connection during the handshake");
    const next = new Uint8Array(this.buffer.length + n);
    next.set(this.buffer);
    next.set(chunk.subarray(0, n), this.buffer.length);
    this.buffer = next;
  }

  /** Resolves once at least `n` bytes are buffered. */
  async need(n: number): Promise<void> {
    while (this.buffer.length < n) await this.more();
  }

  take(n: number): Uint8Array {
    const out = this.buffer.slice(0, n);
    this.buffer = this.buffer.slice(n);
    return out;
  }
}

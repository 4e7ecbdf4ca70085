/**
 * The second transport, for the TLS settings Deno's fetch cannot take per client (`insecure-skip-tls-verify`,
 * `tls-server-name`). `HttpKubeClient` picks it only for an https server with one of them set, so every other client
 * stays on fetch, with its connection pool and HTTP/2. Proxies are dialled in `proxy_tunnel.ts`.
 */
import type { IncomingMessage } from "node:http";
import type { Agent } from "node:https";
import type { ConnectionOptions } from "node:tls";
import { bare, tunnel } from "./proxy_tunnel.ts";
import type { SendInit, Transport, TransportOptions } from "./transport.ts";

/**
 * node:https, for what fetch cannot do per client: `rejectUnauthorized: false` (insecure-skip-tls-verify) and
 * `servername` (tls-server-name: SNI and the name verified in the certificate; the Host header stays the URL's).
 * Kept-alive HTTP/1.1 connections; through a proxy, the tunnel is dialled here (CONNECT or SOCKS5), then TLS to the
 * API server runs inside it. The node modules are loaded only by a client that needs them.
 */
export class NodeTransport implements Transport {
  readonly #agent: Promise<Agent>;

  constructor(opts: TransportOptions) {
    this.#agent = nodeAgent(opts);
    this.#agent.catch(() => {}); // reported by send()
  }

  async send(url: URL, init: SendInit): Promise<Response> {
    const [{ request }, { Readable }, agent] = await Promise.all([
      import("node:https"),
      import("node:stream"),
      this.#agent,
    ]);
    const signal = init.signal;
    signal?.throwIfAborted();
    return await new Promise<Response>((resolve, reject) => {
      const req = request({
        host: bare(url.hostname),
        port: url.port || 443,
        path: url.pathname + url.search,
        method: init.method,
        headers: { ...init.headers, host: url.host },
        agent,
      });
      let res: IncomingMessage | undefined;
      const abort = () => {
        const reason = signal!.reason;
        req.destroy(reason);
        res?.destroy(reason);
        reject(reason);
      };
      const done = () => signal?.removeEventListener("abort", abort);
      signal?.addEventListener("abort", abort, { once: true });
      // `on`, not `once`: an 'error' event without a listener would be thrown.
      req.on("error", (e) => {
        done();
        reject(e);
      });
      req.once("response", (r: IncomingMessage) => {
        res = r;
        r.once("close", done);
        r.on("error", () => {}); // reported through the body stream
        const headers = new Headers();
        for (let i = 0; i + 1 < r.rawHeaders.length; i += 2) headers.append(r.rawHeaders[i], r.rawHeaders[i + 1]);
        const status = r.statusCode ?? 0;
        const bodyless = status === 204 || status === 304;
        if (bodyless) r.resume();
        const body = bodyless ? null : Readable.toWeb(r) as ReadableStream<Uint8Array>;
        resolve(new Response(body, { status, headers }));
      });
      req.end(init.body);
    });
  }

  close(): void {
    this.#agent.then((a) => a.destroy(), () => {});
  }
}

async function nodeAgent(opts: TransportOptions): Promise<Agent> {
  const [https, tls] = await Promise.all([import("node:https"), import("node:tls")]);
  // Without a CA of its own, node:https would read the system's roots, which needs `--allow-sys` beyond the shipped
  // permissions; a client that verifies nothing needs no roots, so it gets an empty list instead.
  const ca = opts.caCerts ?? (opts.insecureSkipTlsVerify ? [] : undefined);
  const secure = {
    ca,
    ...(opts.cert && opts.key ? { cert: opts.cert, key: opts.key } : {}),
    rejectUnauthorized: !opts.insecureSkipTlsVerify,
    ...(opts.tlsServerName ? { servername: opts.tlsServerName } : {}),
  };
  if (!opts.proxy) return new https.Agent({ keepAlive: true, ...secure });
  const proxy = new URL(opts.proxy);
  const proxyTls = { ca, rejectUnauthorized: !opts.insecureSkipTlsVerify };
  type CreateConnection = Agent["createConnection"];
  class ProxiedAgent extends https.Agent {
    override createConnection(...[options, callback]: Parameters<CreateConnection>): ReturnType<CreateConnection> {
      tunnel(proxy, String(options.host), Number(options.port), proxyTls).then(
        (socket) => callback?.(null, tls.connect({ ...options, socket } as ConnectionOptions)),
        (e) => callback?.(e, undefined as never),
      );
      // No socket now: the agent waits for the callback (node's documented asynchronous createConnection).
      return undefined as never;
    }
  }
  return new ProxiedAgent({ keepAlive: true, ...secure });
}

/**
 * The one narrow interface between the controller and the Kubernetes API (see {@link KubeClient}), and its HTTP
 * implementation. Everything else depends on the interface, never on a client library.
 *
 * Requests go through Deno's fetch, except when the kubeconfig asks for what fetch cannot do per client: skipping
 * certificate verification (`insecure-skip-tls-verify`) or verifying another name than the URL's host
 * (`tls-server-name`). Those clients use node:https (HTTP/1.1 over node:tls, which takes `rejectUnauthorized` and
 * `servername`), with proxies dialled here. Both paths need only `--allow-net` (and `--allow-env`, which fetch's
 * path uses to keep Deno's own proxy variables out, see {@link withoutProxyEnvironment}).
 */
import type { IncomingMessage } from "node:http";
import type { Agent } from "node:https";
import type { Socket } from "node:net";
import type { ConnectionOptions } from "node:tls";
import { apiErrorFrom } from "./errors.ts";
import { TokenBucket } from "./rate_limiter.ts";
import { encodeBase64 } from "../objects.ts";

export type Verb = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

export interface KubeRequest {
  method: Verb;
  /** Absolute API path, e.g. `/api/v1/namespaces/a/configmaps/b`. */
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  /** Content type of the body; JSON unless a patch says otherwise. */
  contentType?: string;
  accept?: string;
  signal?: AbortSignal;
  /** Give up after this long (default {@link DEFAULT_TIMEOUT_MS}); a hung connection must not hang a sync. */
  timeoutMs?: number;
}

/** One event of a watch stream, decoded. `object` is a Status for ERROR events. */
export interface WatchEvent {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  object: Record<string, unknown>;
}

/** What the controller needs from an API server: requests and watch streams. */
export interface KubeClient {
  /** Sends one request; resolves with the decoded JSON body, rejects with an `ApiError` on a non-2xx reply. */
  request<T = unknown>(req: KubeRequest): Promise<T>;
  /** Opens a watch and yields its events until the server closes the stream or `signal` aborts. */
  watch(path: string, query: KubeRequest["query"], signal: AbortSignal, accept?: string): AsyncIterable<WatchEvent>;
}

/** Told about every reply, for metrics. `code` is 0 for a network error. */
export type ResponseObserver = (r: { method: Verb; path: string; watch: boolean; code: number }) => void;

export interface HttpClientOptions {
  server: string;
  /** PEM CA certificates trusted in addition to the system's. */
  caCerts?: string[];
  /** PEM client certificate and key, for certificate authentication. */
  cert?: string;
  key?: string;
  /**
   * Do not verify the API server's certificate at all (kubeconfig `insecure-skip-tls-verify`): anyone on the path
   * can pose as the server. Not together with `caCerts` (client-go refuses that too).
   */
  insecureSkipTlsVerify?: boolean;
  /** The name sent as SNI and verified in the server's certificate instead of the URL's host (`tls-server-name`). */
  tlsServerName?: string;
  /**
   * Every request goes through this proxy: `http://`, `https://` or `socks5://`, credentials as userinfo. Https
   * servers are reached through an http(s) proxy with CONNECT. Undefined: direct. The proxy environment variables
   * are never read here; `loadClientOptions` resolves them as client-go does.
   */
  proxy?: string;
  /** Returns the Authorization header for each request (tokens rotate, so it is asked each time). */
  authorization?: () => string | undefined | Promise<string | undefined>;
  qps?: number;
  burst?: number;
  userAgent?: string;
  onResponse?: ResponseObserver;
}

export const MAX_THROTTLE_RETRIES = 3;
export const DEFAULT_TIMEOUT_MS = 60_000;

/** {@link KubeClient} over HTTPS with client-side rate limiting (watches are not rate limited, as in client-go). */
export class HttpKubeClient implements KubeClient {
  readonly #transport: Transport;
  readonly #limiter: TokenBucket;
  readonly #base: string;

  constructor(private readonly opts: HttpClientOptions) {
    this.#base = opts.server.replace(/\/+$/, "");
    const custom = opts.insecureSkipTlsVerify || opts.tlsServerName;
    this.#transport = custom && new URL(this.#base).protocol === "https:"
      ? new NodeTransport(opts)
      : fetchTransport(opts);
    this.#limiter = new TokenBucket(opts.qps ?? 0, opts.burst ?? 1);
  }

  close(): void {
    this.#transport.close();
  }

  /**
   * Sends one request. A 429, or a 5xx that carries `Retry-After`, means the server did not process it: it is sent
   * again after the advised delay (at most {@link MAX_THROTTLE_RETRIES} times, each wait capped at 10 s), as
   * client-go does. Other failures are the caller's to classify.
   */
  async request<T = unknown>(req: KubeRequest): Promise<T> {
    for (let attempt = 0;; attempt++) {
      await this.#limiter.take(req.signal);
      // A timer cleared when the reply is in, not AbortSignal.timeout(): that signal lives until its timer fires,
      // and a burst of thousands of writes would keep thousands of them (and their listeners) for a minute.
      const timeout = new AbortController();
      const ms = req.timeoutMs ?? DEFAULT_TIMEOUT_MS;
      const timer = setTimeout(() => timeout.abort(new DOMException(`no reply within ${ms} ms`, "TimeoutError")), ms);
      const signal = req.signal ? AbortSignal.any([req.signal, timeout.signal]) : timeout.signal;
      let res: Response;
      let text: string;
      try {
        res = await this.#fetch(req.method, req.path, req.query, {
          body: req.body === undefined ? undefined : JSON.stringify(req.body),
          contentType: req.contentType ?? "application/json",
          accept: req.accept ?? "application/json",
          signal,
          watch: false,
        });
        text = await res.text();
      } finally {
        clearTimeout(timer);
      }
      if (res.ok) return (text ? JSON.parse(text) : undefined) as T;
      const error = apiErrorFrom(res.status, text, res.headers.get("retry-after"));
      const throttled = res.status === 429 || (res.status >= 500 && error.retryAfterSeconds !== undefined);
      if (!throttled || attempt >= MAX_THROTTLE_RETRIES) throw error;
      const waitMs = Math.min(10_000, (error.retryAfterSeconds ?? 1) * 1000);
      await new Promise((r) => setTimeout(r, waitMs));
      req.signal?.throwIfAborted();
    }
  }

  async *watch(
    path: string,
    query: KubeRequest["query"],
    signal: AbortSignal,
    accept = "application/json",
  ): AsyncIterable<WatchEvent> {
    const res = await this.#fetch("GET", path, { ...query, watch: true }, { accept, signal, watch: true });
    if (!res.ok) throw apiErrorFrom(res.status, await res.text(), res.headers.get("retry-after"));
    if (!res.body) return;
    let buffered = "";
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffered += value;
        let newline: number;
        while ((newline = buffered.indexOf("\n")) >= 0) {
          const line = buffered.slice(0, newline).trim();
          buffered = buffered.slice(newline + 1);
          if (line) yield JSON.parse(line) as WatchEvent;
        }
      }
    } finally {
      await reader.cancel().catch(() => {});
    }
  }

  async #fetch(
    method: Verb,
    path: string,
    query: KubeRequest["query"],
    o: { body?: string; contentType?: string; accept: string; signal?: AbortSignal; watch: boolean },
  ): Promise<Response> {
    const url = new URL(this.#base + path);
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { accept: o.accept, "user-agent": this.opts.userAgent ?? "espejo" };
    if (o.body !== undefined) headers["content-type"] = o.contentType ?? "application/json";
    const auth = await this.opts.authorization?.();
    if (auth) headers.authorization = auth;
    try {
      const res = await this.#transport.send(url, { method, headers, body: o.body, signal: o.signal });
      this.opts.onResponse?.({ method, path, watch: o.watch, code: res.status });
      return res;
    } catch (e) {
      this.opts.onResponse?.({ method, path, watch: o.watch, code: 0 });
      throw e;
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// transports

interface SendInit {
  method: Verb;
  headers: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
}

/**
 * Sends one request and resolves when the reply's head is in; the body streams. When `signal` aborts, the request
 * (or the body being read) fails with `signal.reason`, as fetch does.
 */
interface Transport {
  send(url: URL, init: SendInit): Promise<Response>;
  close(): void;
}

/** Deno's fetch with a client of its own (connection pool, HTTP/2 when the server offers it). */
function fetchTransport(opts: HttpClientOptions): Transport {
  const http = withoutProxyEnvironment(() =>
    Deno.createHttpClient({
      caCerts: opts.caCerts,
      ...(opts.cert && opts.key ? { cert: opts.cert, key: opts.key } : {}),
      ...(opts.proxy ? { proxy: denoProxy(opts.proxy) } : {}),
    })
  );
  return {
    send: (url, init) => fetch(url, { ...init, client: http }),
    close: () => http.close(),
  };
}

function denoProxy(proxy: string): Deno.Proxy {
  const u = new URL(proxy);
  const basicAuth = proxyCredentials(u);
  return { url: `${u.protocol}//${u.host}`, ...(basicAuth ? { basicAuth } : {}) };
}

function proxyCredentials(u: URL): { username: string; password: string } | undefined {
  if (!u.username && !u.password) return undefined;
  return { username: decodeURIComponent(u.username), password: decodeURIComponent(u.password) };
}

const DENO_PROXY_VARIABLES = [
  "ALL_PROXY",
  "all_proxy",
  "HTTPS_PROXY",
  "https_proxy",
  "HTTP_PROXY",
  "http_proxy",
  "NO_PROXY",
  "no_proxy",
];

/**
 * Runs `make` with the proxy variables removed from the environment, and puts them back before returning.
 *
 * Deno's HTTP client reads them when it is created, by rules of its own that differ from client-go's: it proxies
 * localhost and loopback addresses, lets `NO_PROXY` override an explicit proxy, and reads `ALL_PROXY`. The proxy is
 * decided once by client-go's rules (`loadClientOptions`) and passed explicitly, so the client must not see them.
 * The change lasts only for the synchronous `Deno.createHttpClient` call: no JavaScript runs in between. Without
 * permission to read the environment, `make` runs as it is (and Deno's rules apply).
 */
export function withoutProxyEnvironment<T>(make: () => T): T {
  let saved: [string, string][];
  try {
    saved = DENO_PROXY_VARIABLES.flatMap((name): [string, string][] => {
      const value = Deno.env.get(name);
      return value === undefined ? [] : [[name, value]];
    });
  } catch {
    return make();
  }
  if (!saved.length) return make();
  for (const [name] of saved) Deno.env.delete(name);
  try {
    return make();
  } finally {
    for (const [name, value] of saved) Deno.env.set(name, value);
  }
}

/** A proxy that has not finished its handshake in this time is given up (the request's own timeout is longer). */
const PROXY_HANDSHAKE_TIMEOUT_MS = 30_000;

/**
 * node:https, for what fetch cannot do per client: `rejectUnauthorized: false` (insecure-skip-tls-verify) and
 * `servername` (tls-server-name: SNI and the name verified in the certificate; the Host header stays the URL's).
 * Kept-alive HTTP/1.1 connections; through a proxy, the tunnel is dialled here (CONNECT or SOCKS5), then TLS to the
 * API server runs inside it. The node modules are loaded only by a client that needs them.
 */
class NodeTransport implements Transport {
  readonly #agent: Promise<Agent>;

  constructor(opts: HttpClientOptions) {
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

async function nodeAgent(opts: HttpClientOptions): Promise<Agent> {
  const [https, tls] = await Promise.all([import("node:https"), import("node:tls")]);
  const secure = {
    ca: opts.caCerts,
    ...(opts.cert && opts.key ? { cert: opts.cert, key: opts.key } : {}),
    rejectUnauthorized: !opts.insecureSkipTlsVerify,
    ...(opts.tlsServerName ? { servername: opts.tlsServerName } : {}),
  };
  if (!opts.proxy) return new https.Agent({ keepAlive: true, ...secure });
  const proxy = new URL(opts.proxy);
  const proxyTls = { ca: opts.caCerts, rejectUnauthorized: !opts.insecureSkipTlsVerify };
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

const bare = (hostname: string) => hostname.replace(/^\[(.*)\]$/, "$1");

/**
 * A connection to `host:port` through `proxy`: HTTP CONNECT over TCP (`http://`) or TLS (`https://`), or SOCKS5
 * (`socks5://`, the name resolved by the proxy, as Go's SOCKS dialer does). Credentials come from the URL's userinfo.
 * An https proxy's certificate is verified for the proxy's own name against the cluster's CA and the system's roots,
 * or not at all with insecure-skip-tls-verify (Go's transport uses the cluster's TLS settings for the proxy too).
 */
async function tunnel(
  proxy: URL,
  host: string,
  port: number,
  proxyTls: { ca?: string[]; rejectUnauthorized: boolean },
): Promise<Socket> {
  const [net, tls] = await Promise.all([import("node:net"), import("node:tls")]);
  const proxyHost = bare(proxy.hostname);
  const secure = proxy.protocol === "https:";
  const proxyPort = Number(proxy.port || (secure ? 443 : proxy.protocol === "socks5:" ? 1080 : 80));
  const socket: Socket = secure
    ? tls.connect({
      host: proxyHost,
      port: proxyPort,
      ...proxyTls,
      ...(net.isIP(proxyHost) ? {} : { servername: proxyHost }),
    })
    : net.connect({ host: proxyHost, port: proxyPort });
  socket.setTimeout(PROXY_HANDSHAKE_TIMEOUT_MS, () => {
    socket.destroy(
      new Error(`Proxy ${proxy.host} did not complete the handshake within ${PROXY_HANDSHAKE_TIMEOUT_MS} ms`),
    );
  });
  const reader = new SocketReader(socket, `proxy ${proxy.host}`);
  try {
    await reader.connected(secure ? "secureConnect" : "connect");
    const auth = proxyCredentials(proxy);
    if (proxy.protocol === "socks5:") await socks5Connect(socket, reader, host, port, auth);
    else await httpConnect(socket, reader, host, port, auth, proxy.host);
    reader.release();
    socket.setTimeout(0);
    socket.on("error", () => {}); // the TLS socket on top reports failures to the request
    return socket;
  } catch (e) {
    socket.destroy();
    throw e;
  }
}

async function httpConnect(
  socket: Socket,
  reader: SocketReader,
  host: string,
  port: number,
  auth: { username: string; password: string } | undefined,
  proxyName: string,
): Promise<void> {
  const target = host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
  let head = `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n`;
  if (auth) head += `Proxy-Authorization: Basic ${encodeBase64(`${auth.username}:${auth.password}`)}\r\n`;
  socket.write(`${head}\r\n`);
  const reply = await reader.read((b) => {
    const end = indexOfHeadEnd(b);
    if (end < 0 && b.length > 65536) throw new Error(`Proxy ${proxyName} sent a reply head over 64 KiB`);
    return end;
  });
  const status = new TextDecoder().decode(reply).split("\r\n")[0];
  // As Go's transport: only 200 opens the tunnel.
  if (!/^HTTP\/1\.[01] 200( |$)/.test(status)) {
    throw new Error(`Proxy ${proxyName} refused CONNECT ${target}: ${status}`);
  }
}

function indexOfHeadEnd(b: Uint8Array): number {
  for (let i = 3; i < b.length; i++) {
    if (b[i] === 10 && b[i - 1] === 13 && b[i - 2] === 10 && b[i - 3] === 13) return i + 1;
  }
  return -1;
}

const SOCKS_REPLIES: Record<number, string> = {
  1: "general SOCKS server failure",
  2: "connection not allowed by ruleset",
  3: "network unreachable",
  4: "host unreachable",
  5: "connection refused",
  6: "TTL expired",
  7: "command not supported",
  8: "address type not supported",
};

/** RFC 1928 CONNECT, with RFC 1929 user name and password when the URL has them. */
async function socks5Connect(
  socket: Socket,
  reader: SocketReader,
  host: string,
  port: number,
  auth: { username: string; password: string } | undefined,
): Promise<void> {
  const enc = new TextEncoder();
  socket.write(new Uint8Array(auth ? [5, 2, 0, 2] : [5, 1, 0]));
  const [, method] = await reader.read((b) => (b.length >= 2 ? 2 : -1));
  if (method === 2 && auth) {
    const user = enc.encode(auth.username);
    const pass = enc.encode(auth.password);
    if (user.length > 255 || pass.length > 255) throw new Error("SOCKS5 user name or password longer than 255 bytes");
    socket.write(new Uint8Array([1, user.length, ...user, pass.length, ...pass]));
    const [, ok] = await reader.read((b) => (b.length >= 2 ? 2 : -1));
    if (ok !== 0) throw new Error("SOCKS5 proxy refused the user name and password");
  } else if (method !== 0) {
    throw new Error("SOCKS5 proxy accepts none of the offered authentication methods");
  }
  let address: number[];
  if (/^\d+\.\d+\.\d+\.\d+$/.test(host)) address = [1, ...host.split(".").map(Number)];
  else if (host.includes(":")) address = [4, ...ipv6Bytes(host)];
  else {
    const name = enc.encode(host);
    if (name.length > 255) throw new Error(`SOCKS5 cannot carry a host name over 255 bytes: ${host}`);
    address = [3, name.length, ...name];
  }
  socket.write(new Uint8Array([5, 1, 0, ...address, port >> 8, port & 0xff]));
  const reply = await reader.read((b) => {
    if (b.length < 5) return -1;
    const length = b[3] === 1 ? 4 : b[3] === 4 ? 16 : b[3] === 3 ? 1 + b[4] : -1;
    if (length < 0) throw new Error(`SOCKS5 proxy replied with an unknown address type ${b[3]}`);
    return b.length >= 4 + length + 2 ? 4 + length + 2 : -1;
  });
  if (reply[1] !== 0) {
    throw new Error(
      `SOCKS5 proxy could not connect to ${host}:${port}: ${SOCKS_REPLIES[reply[1]] ?? `reply ${reply[1]}`}`,
    );
  }
}

/** The 16 bytes of a valid IPv6 address (checked by the URL parser), an embedded IPv4 part included. */
function ipv6Bytes(host: string): number[] {
  let s = host;
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(s);
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number);
    s = `${s.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = s.includes("::") ? s.split("::") : [s, undefined];
  const first = head ? head.split(":") : [];
  const last = tail ? tail.split(":") : [];
  const groups = tail === undefined ? first : [...first, ...Array(8 - first.length - last.length).fill("0"), ...last];
  return groups.flatMap((g) => [parseInt(g, 16) >> 8, parseInt(g, 16) & 0xff]);
}

/** Reads a proxy's handshake replies off a node socket, then hands the socket over with nothing consumed past them. */
class SocketReader {
  #buffer = new Uint8Array(0);
  #failure?: Error;
  #wake?: () => void;

  constructor(readonly socket: Socket, readonly peer: string) {
    socket.on("data", this.#onData);
    socket.on("error", this.#onError);
    socket.on("end", this.#onEnd);
  }

  #onData = (chunk: Uint8Array) => {
    const next = new Uint8Array(this.#buffer.length + chunk.length);
    next.set(this.#buffer);
    next.set(chunk, this.#buffer.length);
    this.#buffer = next;
    this.#wake?.();
  };
  #onError = (e: Error) => {
    this.#failure ??= e;
    this.#wake?.();
  };
  #onEnd = () => this.#onError(new Error(`The ${this.peer} closed the connection during the handshake`));

  /** Waits for the socket's connect event (or its failure). */
  async connected(event: "connect" | "secureConnect"): Promise<void> {
    let up = false;
    const onUp = () => {
      up = true;
      this.#wake?.();
    };
    this.socket.once(event, onUp);
    try {
      while (!up) {
        if (this.#failure) throw this.#failure;
        await new Promise<void>((resolve) => (this.#wake = resolve));
        this.#wake = undefined;
      }
    } finally {
      this.socket.off(event, onUp);
    }
  }

  /** Waits until `complete` returns the length of a whole message at the start of the buffer, and takes it. */
  async read(complete: (buffered: Uint8Array) => number): Promise<Uint8Array> {
    for (;;) {
      const n = complete(this.#buffer);
      if (n >= 0) {
        const message = this.#buffer.slice(0, n);
        this.#buffer = this.#buffer.slice(n);
        return message;
      }
      if (this.#failure) throw this.#failure;
      await new Promise<void>((resolve) => (this.#wake = resolve));
      this.#wake = undefined;
    }
  }

  /** Stops reading; bytes that arrived after the last message are put back for the next reader. */
  release(): void {
    this.socket.pause();
    this.socket.off("data", this.#onData);
    this.socket.off("error", this.#onError);
    this.socket.off("end", this.#onEnd);
    if (this.#buffer.length) this.socket.unshift(this.#buffer);
  }
}

/**
 * The one narrow interface between the controller and the Kubernetes API (see {@link KubeClient}), and its HTTP
 * implementation. Everything else depends on the interface, never on a client library.
 *
 * Requests go through Deno's fetch (`transport_fetch.ts`), except when the kubeconfig asks for what fetch cannot do
 * per client: skipping certificate verification (`insecure-skip-tls-verify`) or verifying another name than the
 * URL's host (`tls-server-name`). Those clients use node:https (`transport_node.ts`). Both paths need only
 * `--allow-net` (and `--allow-env`, which fetch's path uses to keep Deno's own proxy variables out).
 */
import { textPieces } from "./body_text.ts";
import { asConnectionError } from "./connection_error.ts";
import { apiErrorFrom } from "./errors.ts";
import { JsonItemSplitter } from "./json_items.ts";
import { LineSplitter } from "./json_lines.ts";
import { flowOf, TokenBucket } from "./rate_limiter.ts";
import type { Transport, TransportOptions } from "./transport.ts";
import { fetchTransport } from "./transport_fetch.ts";
import { NodeTransport } from "./transport_node.ts";

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
  /**
   * Goes before other requests waiting for the rate limiter (status and Event writes; see TokenBucket). The others
   * take turns by the namespace of their path.
   */
  urgent?: boolean;
  /** Give up after this long (default {@link DEFAULT_TIMEOUT_MS}); a hung connection must not hang a sync. */
  timeoutMs?: number;
  /** Sent as this user (the API server's impersonation): it authorizes and admits the request as them. */
  as?: Impersonation;
}

/**
 * A user to act as: `Impersonate-User` and one `Impersonate-Extra-<key>` header per extra. Without groups, the API
 * server gives a ServiceAccount's username its groups (`system:serviceaccounts`, `system:serviceaccounts:<ns>`).
 */
export interface Impersonation {
  user: string;
  extra: Readonly<Record<string, string>>;
}

/** The headers of a request sent as `as`; an extra's key is percent-encoded in the header name (`/` is not allowed). */
export function impersonationHeaders(as: Impersonation): Record<string, string> {
  const headers: Record<string, string> = { "impersonate-user": as.user };
  for (const [key, value] of Object.entries(as.extra)) headers[`impersonate-extra-${encodeURIComponent(key)}`] = value;
  return headers;
}

/** What a caller of a generated client function (lib/kube/api/) may add to the request it makes. */
export type CallOptions = Omit<KubeRequest, "method" | "path" | "body">;

export type PatchType = "application/merge-patch+json" | "application/json-patch+json";

/** One event of a watch stream, decoded. `object` is a Status for ERROR events. */
export interface WatchEvent {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  object: Record<string, unknown>;
}

/** A list reply without its items: `metadata` carries `resourceVersion` and `continue`. */
export interface ListRest {
  metadata?: { resourceVersion?: string; continue?: string };
  [field: string]: unknown;
}

/** What the controller needs from an API server: requests and watch streams. */
export interface KubeClient {
  /** Sends one request; resolves with the decoded JSON body, rejects with an `ApiError` on a non-2xx reply. */
  request<T = unknown>(req: KubeRequest): Promise<T>;
  /**
   * Sends a GET of a collection (one page) and hands each element of its `items` to `onItem`, decoded, as soon as
   * it has arrived whole; resolves with the rest of the list. Holds one item at a time, never the page. Optional:
   * a client without it is read with {@link KubeClient.request} (see `listPage` in list.ts), which holds the page.
   */
  listPage?(req: KubeRequest, onItem: (item: unknown) => void): Promise<ListRest>;
  /** Opens a watch and yields its events until the server closes the stream or `signal` aborts. */
  watch(path: string, query: KubeRequest["query"], signal: AbortSignal, accept?: string): AsyncIterable<WatchEvent>;
}

/** Told about every reply, for metrics. `code` is 0 for a network error; `as`: the request was sent as that user. */
export type ResponseObserver = (
  r: { method: Verb; path: string; watch: boolean; code: number; as?: Impersonation },
) => void;

/** The server, its TLS and proxy ({@link TransportOptions}), and what this client adds: auth, limits, metrics. */
export interface HttpClientOptions extends TransportOptions {
  server: string;
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

  /** Sends one request (see {@link #exchange} for throttling and timeouts). */
  request<T = unknown>(req: KubeRequest): Promise<T> {
    return this.#exchange(req, async (res) => {
      const text = await res.text();
      return (text ? JSON.parse(text) : undefined) as T;
    });
  }

  listPage(req: KubeRequest, onItem: (item: unknown) => void): Promise<ListRest> {
    return this.#exchange(req, async (res) => {
      const splitter = new JsonItemSplitter((json) => onItem(JSON.parse(json)));
      if (!res.body) return {};
      for await (const text of textPieces(res.body)) splitter.push(text);
      return splitter.end() as ListRest;
    });
  }

  /**
   * Sends one request and reads a 2xx reply with `read`, within the request's timeout. A 429, or a 5xx that carries
   * `Retry-After`, means the server did not process it: it is sent again after the advised delay (at most
   * {@link MAX_THROTTLE_RETRIES} times, each wait capped at 10 s), as client-go does. Other failures are the
   * caller's to classify.
   */
  async #exchange<T>(req: KubeRequest, read: (res: Response) => Promise<T>): Promise<T> {
    for (let attempt = 0;; attempt++) {
      await this.#limiter.take(req.signal, req.urgent, flowOf(req.path));
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
          as: req.as,
        });
        if (res.ok) return await read(res);
        text = await res.text();
      } finally {
        clearTimeout(timer);
      }
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
    const lines = new LineSplitter();
    // An unfinished last line is an event cut off: the watch resumes before it. Leaving the loop early (the caller
    // stops) cancels the body.
    for await (const text of textPieces(res.body)) {
      for (const line of lines.push(text)) yield JSON.parse(line) as WatchEvent;
    }
  }

  async #fetch(
    method: Verb,
    path: string,
    query: KubeRequest["query"],
    o: {
      body?: string;
      contentType?: string;
      accept: string;
      signal?: AbortSignal;
      watch: boolean;
      as?: Impersonation;
    },
  ): Promise<Response> {
    const url = new URL(this.#base + path);
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { accept: o.accept, "user-agent": this.opts.userAgent ?? "espejo" };
    if (o.body !== undefined) headers["content-type"] = o.contentType ?? "application/json";
    const auth = await this.opts.authorization?.();
    if (auth) headers.authorization = auth;
    if (o.as) Object.assign(headers, impersonationHeaders(o.as));
    try {
      const res = await this.#transport.send(url, { method, headers, body: o.body, signal: o.signal, watch: o.watch });
      this.opts.onResponse?.({ method, path, watch: o.watch, code: res.status, as: o.as });
      return res;
    } catch (e) {
      this.opts.onResponse?.({ method, path, watch: o.watch, code: 0, as: o.as });
      // "fetch failed" says nothing: name the server and the cause as kubectl would (an abort stays an abort).
      throw asConnectionError(url, e);
    }
  }
}

/**
 * What `HttpKubeClient` needs of a transport: send one request, resolve with the reply's head, stream the body. Kept
 * apart from the client so that the two transports (Deno's fetch in `transport_fetch.ts`, node:https in
 * `transport_node.ts`) depend on this small contract and the TLS and proxy options, never on the client or the API.
 */

/** How to reach the API server: TLS and proxy, as a kubeconfig cluster entry and its user give them. */
export interface TransportOptions {
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
}

export interface SendInit {
  method: string;
  headers: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
  /** A watch: a stream that lasts minutes and, after a restart, brings every object at once. */
  watch?: boolean;
}

/**
 * Sends one request and resolves when the reply's head is in; the body streams. When `signal` aborts, the request
 * (or the body being read) fails with `signal.reason`, as fetch does.
 */
export interface Transport {
  send(url: URL, init: SendInit): Promise<Response>;
  close(): void;
}

/** The user name and password in a proxy URL's userinfo, percent-decoded; undefined when it has none. */
export function proxyCredentials(u: URL): { username: string; password: string } | undefined {
  if (!u.username && !u.password) return undefined;
  return { username: decodeURIComponent(u.username), password: decodeURIComponent(u.password) };
}

/**
 * The default transport: Deno's fetch, through an HTTP client of each API client's own (its CA, client certificate
 * and proxy). Deno would read the proxy variables when that client is created, by rules that are not client-go's,
 * so they are hidden from it ({@link withoutProxyEnvironment}) and the proxy `loadClientOptions` decided is passed
 * explicitly. Needs `--allow-net`, and `--allow-env` to hide the variables.
 */
import { proxyCredentials, type Transport, type TransportOptions } from "./transport.ts";

/** Deno's fetch with a client of its own (connection pool, HTTP/2 when the server offers it). */
export function fetchTransport(opts: TransportOptions): Transport {
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

/**
 * The default transport: Deno's fetch, through an HTTP client of each API client's own (its CA, client certificate
 * and proxy). Deno would read the proxy variables when that client is created, by rules that are not client-go's,
 * so they are hidden from it ({@link withoutProxyEnvironment}) and the proxy `loadClientOptions` decided is passed
 * explicitly. Needs `--allow-net`, and `--allow-env` to hide the variables.
 */
import { proxyCredentials, type Transport, type TransportOptions } from "./transport.ts";

/**
 * Deno's fetch with clients of its own: requests over one connection (HTTP/2 when the server offers it), each watch
 * over an HTTP/1.1 connection. Over HTTP/2 the client reads a stream ahead of the controller, as far as the
 * connection's flow-control window lets the server send (megabytes), into memory of the process; over HTTP/1.1 what
 * the controller has not read yet waits in the socket. After a restart every WatchList streams its kind's objects at
 * once: measured at 122,424 objects inside the limits, 62.5 to 64.3 MiB anonymous at the peak over four restarts,
 * against 64.1 to 65.5 over HTTP/2, in about the same time (170 to 192 s against 168 to 175). The cost is a
 * connection per watch (one per kind the controller reads).
 */
export function fetchTransport(opts: TransportOptions): Transport {
  const client = (http2: boolean) =>
    withoutProxyEnvironment(() =>
      Deno.createHttpClient({
        caCerts: opts.caCerts,
        http2,
        ...(opts.cert && opts.key ? { cert: opts.cert, key: opts.key } : {}),
        ...(opts.proxy ? { proxy: denoProxy(opts.proxy) } : {}),
      })
    );
  const requests = client(true);
  const watches = client(false);
  return {
    send: (url, { watch, ...init }) => fetch(url, { ...init, client: watch ? watches : requests }),
    close: () => {
      requests.close();
      watches.close();
    },
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

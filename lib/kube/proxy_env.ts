/**
 * Which proxy a client uses when the kubeconfig names none, decided from the environment once, by client-go's rules
 * (Go's `http.ProxyFromEnvironment` and client-go's `NO_PROXY` CIDR wrapper), so that espejo reaches the API server
 * by the same path as the Go espejo and kubectl. The transports never read the proxy variables themselves.
 */
import { isLoopback, parseCIDR, parseIP, sameIP, splitHostPort } from "./go_net.ts";

/** Environment variables by name, as `Deno.env.toObject()` returns them. */
export type Env = Record<string, string | undefined>;

/**
 * The proxy that client-go would use for `server` when the kubeconfig sets no `proxy-url`: Go's
 * `http.ProxyFromEnvironment` (golang.org/x/net/http/httpproxy), wrapped as client-go wraps it
 * (`utilnet.NewProxierWithNoProxyCIDR`). Returns the proxy URL, or undefined to connect directly.
 *
 * - `HTTPS_PROXY` (else `https_proxy`) for an https server, `HTTP_PROXY` (else `http_proxy`) for an http one; an
 *   uppercase name set to the empty string counts as unset. `ALL_PROXY` is not read (Go does not read it).
 * - A value without a scheme is an http proxy (`proxy:3128` means `http://proxy:3128`); a value Go cannot parse is
 *   ignored, as Go ignores it. Schemes: http, https, socks5 (and socks5h, the same to Go); any other scheme is
 *   refused here with a message, where Go would fail each request.
 * - Never proxied: the host `localhost` and loopback IPs (127.0.0.0/8, ::1), whatever `NO_PROXY` says.
 * - `NO_PROXY` (else `no_proxy`): comma-separated; `*` alone bypasses everything; `1.2.3.4` or `[::1]` with an
 *   optional `:port`; CIDRs `10.0.0.0/8`, `fd00::/8`; `example.com` matches that name and its subdomains,
 *   `.example.com` and `*.example.com` only subdomains, each with an optional `:port` (compared with the server's
 *   port, 443 when the URL has none). Names are compared case-insensitively; a name entry never matches an IP.
 * - In a CGI environment (`REQUEST_METHOD` set) `HTTP_PROXY` is refused for http servers, as Go refuses it.
 */
export function proxyFromEnvironment(server: string, env: Env): string | undefined {
  const any = (...names: string[]) => names.map((n) => env[n]).find((v) => v) ?? "";
  let target: URL;
  try {
    target = new URL(server);
  } catch {
    throw new Error(`Server ${server} is not a valid URL`);
  }
  const scheme = target.protocol.slice(0, -1);
  const variable = scheme === "https" ? "HTTPS_PROXY" : scheme === "http" ? "HTTP_PROXY" : undefined;
  if (!variable) return undefined;
  const value = any(variable, variable.toLowerCase());
  const noProxy = any("NO_PROXY", "no_proxy");
  const { host, port } = goHostPort(server, target);
  // client-go's wrapper: untrimmed NO_PROXY entries that parse as CIDRs (leading zeros allowed) bypass first.
  const ip = parseIP(host, true);
  if (ip && noProxy.split(",").some((rule) => parseCIDR(rule, true)?.contains(ip))) return undefined;
  const proxy = value ? parseEnvironmentProxy(value, variable) : undefined;
  if (!proxy) return undefined;
  if (scheme === "http" && env.REQUEST_METHOD) {
    throw new Error("refusing to use HTTP_PROXY value in CGI environment; see golang.org/s/cgihttpproxy");
  }
  return useProxy(host, port, noProxy) ? proxy : undefined;
}

/** Go's `httpproxy.parseProxy`: a value without scheme or host is tried again as `http://` + value. */
function parseEnvironmentProxy(value: string, variable: string): string | undefined {
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(value)?.[1]?.toLowerCase();
  let candidate = scheme ? value : `http://${value}`;
  try {
    if (!new URL(candidate).hostname) return undefined;
  } catch {
    return undefined; // Go ignores a value it cannot parse
  }
  if (scheme === "socks5h") candidate = `socks5${candidate.slice("socks5h".length)}`;
  return parseProxyUrl(candidate, variable, ["http", "https", "socks5"]);
}

/**
 * The host and port Go's `canonicalAddr` sees: the host as written in the URL (brackets removed, case kept; URL
 * parsing would lowercase it and rewrite numeric forms), non-ASCII names in punycode, the scheme's default port.
 */
function goHostPort(server: string, parsed: URL): { host: string; port: string } {
  const authority = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i.exec(server)?.[1] ?? "";
  let hostPort = authority.slice(authority.lastIndexOf("@") + 1);
  let port = "";
  const colon = hostPort.lastIndexOf(":");
  if (colon >= 0 && /^:\d*$/.test(hostPort.slice(colon))) {
    port = hostPort.slice(colon + 1);
    hostPort = hostPort.slice(0, colon);
  }
  let host = hostPort.startsWith("[") && hostPort.endsWith("]") ? hostPort.slice(1, -1) : hostPort;
  try {
    host = decodeURIComponent(host);
  } catch { /* keep as written */ }
  // deno-lint-ignore no-control-regex -- "only ASCII", as Go's isASCII
  if (!/^[\x00-\x7f]*$/.test(host)) host = parsed.hostname;
  return { host, port: port || (parsed.protocol === "https:" ? "443" : "80") };
}

/** Go's `httpproxy.config.useProxy` with the `NO_PROXY` matchers of `config.init`. */
function useProxy(host: string, port: string, noProxy: string): boolean {
  if (host === "localhost") return false;
  const ip = parseIP(host.includes(":") ? host.replace(/%.*$/, "") : host);
  if (ip && isLoopback(ip)) return false;
  const name = host.trim().toLowerCase();
  for (const rule of noProxy.split(",")) {
    const p = rule.trim().toLowerCase();
    if (!p) continue;
    if (p === "*") return false;
    const cidr = parseCIDR(p);
    if (cidr) {
      if (ip && cidr.contains(ip)) return false;
      continue;
    }
    let entryHost = p;
    let entryPort = "";
    const split = splitHostPort(p);
    if (split) {
      [entryHost, entryPort] = split;
      if (!entryHost) continue;
      if (entryHost.startsWith("[") && entryHost.endsWith("]")) entryHost = entryHost.slice(1, -1);
    }
    const entryIP = parseIP(entryHost);
    if (entryIP) {
      if (ip && sameIP(entryIP, ip) && (!entryPort || entryPort === port)) return false;
      continue;
    }
    if (!entryHost || ip) continue;
    if (entryHost.startsWith("*.")) entryHost = entryHost.slice(1);
    const matchHost = !entryHost.startsWith(".");
    if (matchHost) entryHost = `.${entryHost}`;
    entryHost = toASCII(entryHost);
    if (
      (name.endsWith(entryHost) || (matchHost && name === entryHost.slice(1))) && (!entryPort || entryPort === port)
    ) {
      return false;
    }
  }
  return true;
}

function toASCII(name: string): string {
  // deno-lint-ignore no-control-regex -- "only ASCII", as Go's isASCII
  if (/^[\x00-\x7f]*$/.test(name)) return name;
  try {
    return new URL(`http://${name}`).hostname;
  } catch {
    return name;
  }
}

/** Parses a proxy URL; a scheme outside `schemes` is refused with a message that names it. */
export function parseProxyUrl(value: string, what: string, schemes: string[]): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(`${what} ${redactUserinfo(value)} is not a valid URL`);
  }
  const scheme = url.protocol.slice(0, -1);
  if (!schemes.includes(scheme)) {
    throw new Error(
      `${what} ${redactUserinfo(value)}: scheme "${scheme}" is not supported (only ${schemes.join(", ")})`,
    );
  }
  if (!url.hostname) throw new Error(`${what} ${redactUserinfo(value)} names no host`);
  return url.href;
}

/** A proxy URL for messages: its password replaced. */
function redactUserinfo(value: string): string {
  return value.replace(/^([a-z][a-z0-9+.-]*:\/\/[^/@:]*):[^/@]*@/i, "$1:***@");
}

/**
 * Turns a kubeconfig (or the in-cluster service account) into {@link HttpClientOptions}.
 *
 * The common cases are read here: server and CA, bearer token, token file, client certificate, basic auth, merged
 * `KUBECONFIG` lists, the in-cluster service account, and the cluster's `insecure-skip-tls-verify`,
 * `tls-server-name` and `proxy-url`. Exec plugins and auth providers are left to client-node, which is imported only
 * then: importing it costs about 65 MiB of resident memory, two thirds of the controller's budget.
 *
 * The proxy is decided here, once, as client-go decides it: the cluster's `proxy-url` for every request, otherwise
 * `HTTPS_PROXY`/`HTTP_PROXY` unless `NO_PROXY` names the server, by the rules of Go's `http.ProxyFromEnvironment`
 * ({@link proxyFromEnvironment}). The client never reads the proxy variables itself.
 *
 * Order, as in the Go espejo (controller-runtime): `--kubeconfig`, `$KUBECONFIG`, the in-cluster service account,
 * `~/.kube/config`.
 */
import { dirname, isAbsolute, join } from "node:path";
import { getLogger } from "@logtape/logtape";
import type { HttpClientOptions } from "./client.ts";
import { encodeBase64 } from "../objects.ts";

export const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";
/** Tokens are rotated on disk (bound service account tokens, about hourly); re-read at most once a minute. */
const TOKEN_REREAD_MS = 60_000;

type Credentials = Omit<HttpClientOptions, "qps" | "burst" | "userAgent" | "onResponse">;

type Env = Record<string, string | undefined>;

export interface LoadEnvironment {
  env: Env;
  serviceAccountDir: string;
  /** Told about a configuration that works but is unsafe (default: a warning in the log). */
  warn?: (message: string) => void;
}

const log = getLogger(["espejo", "kubeconfig"]);

const defaultEnvironment = (): LoadEnvironment => ({
  env: Deno.env.toObject(),
  serviceAccountDir: SERVICE_ACCOUNT_DIR,
});

export async function loadClientOptions(
  kubeconfigPath?: string,
  where: LoadEnvironment = defaultEnvironment(),
): Promise<Credentials> {
  if (kubeconfigPath) return await fromKubeconfig([kubeconfigPath], where);
  const list = (where.env.KUBECONFIG ?? "").split(":").filter(Boolean);
  if (list.length) {
    const present = list.filter(exists);
    if (!present.length) throw new Error(`KUBECONFIG names no file that exists: ${list.join(", ")}`);
    return await fromKubeconfig(present, where);
  }
  if (where.env.KUBERNETES_SERVICE_HOST && exists(join(where.serviceAccountDir, "token"))) {
    return inCluster(where);
  }
  const home = where.env.HOME && join(where.env.HOME, ".kube", "config");
  if (home && exists(home)) return await fromKubeconfig([home], where);
  throw new Error(
    "No Kubernetes cluster configured: pass --kubeconfig, set KUBECONFIG, run in a pod, or create ~/.kube/config",
  );
}

function inCluster({ env, serviceAccountDir }: LoadEnvironment): Credentials {
  const host = env.KUBERNETES_SERVICE_HOST!;
  const port = env.KUBERNETES_SERVICE_PORT || "443";
  const ca = join(serviceAccountDir, "ca.crt");
  const server = `https://${host.includes(":") ? `[${host}]` : host}:${port}`;
  return {
    server,
    caCerts: exists(ca) ? [Deno.readTextFileSync(ca)] : undefined,
    authorization: bearerFromFile(join(serviceAccountDir, "token")),
    proxy: proxyFromEnvironment(server, env),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// kubeconfig files

interface Named<T> {
  name: string;
  value: T;
  /** Directory of the file that defined the entry: relative paths in it are relative to that file. */
  dir: string;
}

interface ClusterEntry {
  server?: string;
  "certificate-authority"?: string;
  "certificate-authority-data"?: string;
  "insecure-skip-tls-verify"?: boolean;
  "tls-server-name"?: string;
  "proxy-url"?: string;
}

interface UserEntry {
  token?: string;
  tokenFile?: string;
  "client-certificate"?: string;
  "client-certificate-data"?: string;
  "client-key"?: string;
  "client-key-data"?: string;
  username?: string;
  password?: string;
  exec?: unknown;
  "auth-provider"?: unknown;
}

interface ContextEntry {
  cluster?: string;
  user?: string;
}

/** Merges like kubectl: the first file to define a name, or the current context, wins. */
async function fromKubeconfig(paths: string[], environment: LoadEnvironment): Promise<Credentials> {
  const clusters = new Map<string, Named<ClusterEntry>>();
  const users = new Map<string, Named<UserEntry>>();
  const contexts = new Map<string, Named<ContextEntry>>();
  let current = "";
  // Loaded here, not at the top: in a pod (the service account) the YAML parser is never needed.
  const { parse } = await import("yaml");
  for (const path of paths) {
    let doc: Record<string, unknown>;
    try {
      doc = (parse(Deno.readTextFileSync(path)) ?? {}) as Record<string, unknown>;
    } catch (e) {
      throw new Error(`kubeconfig ${path}: ${e instanceof Error ? e.message.split("\n")[0] : e}`);
    }
    const dir = dirname(path);
    current ||= String(doc["current-context"] ?? "");
    collect(doc.clusters, "cluster", dir, clusters);
    collect(doc.users, "user", dir, users);
    collect(doc.contexts, "context", dir, contexts);
  }
  const where = `kubeconfig ${paths.join(":")}`;
  if (!current) throw new Error(`${where}: no current-context is set`);
  const context = contexts.get(current)?.value;
  if (!context) throw new Error(`${where}: context "${current}" is not defined`);
  const cluster = clusters.get(context.cluster ?? "");
  if (!cluster?.value.server) throw new Error(`${where}: cluster "${context.cluster}" is not defined or has no server`);
  const user = users.get(context.user ?? "");
  if (context.user && !user) throw new Error(`${where}: user "${context.user}" is not defined`);
  const transport = clusterTransport(cluster, where, environment);
  if (user?.value.exec || user?.value["auth-provider"]) {
    return { ...await viaClientNode(contexts.get(current)!, cluster, user), ...transport };
  }
  const u = user?.value ?? {};
  const c = cluster.value;
  const ca = pem(c["certificate-authority-data"], c["certificate-authority"], cluster.dir);
  return {
    ...transport,
    server: c.server!,
    caCerts: ca ? [ca] : undefined,
    cert: pem(u["client-certificate-data"], u["client-certificate"], user?.dir ?? ""),
    key: pem(u["client-key-data"], u["client-key"], user?.dir ?? ""),
    // As in client-go, a tokenFile (read again and again) takes precedence over an inline token.
    authorization: u.tokenFile
      ? bearerFromFile(resolvePath(u.tokenFile, user!.dir))
      : u.token
      ? () => `Bearer ${u.token}`
      : u.username
      ? () => `Basic ${encodeBase64(`${u.username}:${u.password ?? ""}`)}`
      : undefined,
  };
}

function collect<T>(list: unknown, field: string, dir: string, into: Map<string, Named<T>>): void {
  if (!Array.isArray(list)) return;
  for (const item of list as Record<string, unknown>[]) {
    const name = String(item?.name ?? "");
    if (name && !into.has(name)) into.set(name, { name, value: (item[field] ?? {}) as T, dir });
  }
}

/** Inline base64 data wins over a file, as in client-go. */
function pem(data: string | undefined, file: string | undefined, dir: string): string | undefined {
  if (data) return new TextDecoder().decode(Uint8Array.from(atob(data), (ch) => ch.charCodeAt(0)));
  if (file) return Deno.readTextFileSync(resolvePath(file, dir));
  return undefined;
}

function resolvePath(path: string, dir: string): string {
  return isAbsolute(path) ? path : join(dir, path);
}

function bearerFromFile(path: string): () => string {
  let token = Deno.readTextFileSync(path).trim();
  let readAt = Date.now();
  return () => {
    if (Date.now() - readAt > TOKEN_REREAD_MS) {
      readAt = Date.now();
      // A failed read keeps the last token: the file is replaced atomically, but be safe.
      try {
        token = Deno.readTextFileSync(path).trim();
      } catch { /* keep the previous token */ }
    }
    return `Bearer ${token}`;
  };
}

function exists(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// exec plugins and auth providers

/**
 * client-node runs the plugin or provider and caches its credential until it expires. It is given the merged
 * entries as one document, with file paths made absolute (they were relative to the file that named them).
 */
async function viaClientNode(
  context: Named<ContextEntry>,
  cluster: Named<ClusterEntry>,
  user: Named<UserEntry>,
): Promise<Credentials> {
  const { KubeConfig } = await import("@kubernetes/client-node");
  const absolute = <T extends object>(entry: Named<T>, fields: string[]): T => {
    const out: Record<string, unknown> = { ...entry.value as Record<string, unknown> };
    for (const f of fields) if (typeof out[f] === "string") out[f] = resolvePath(out[f] as string, entry.dir);
    return out as T;
  };
  const kc = new KubeConfig();
  kc.loadFromString(JSON.stringify({
    apiVersion: "v1",
    kind: "Config",
    "current-context": context.name,
    contexts: [{ name: context.name, context: context.value }],
    clusters: [{ name: cluster.name, cluster: absolute(cluster, ["certificate-authority"]) }],
    users: [{ name: user.name, user: absolute(user, ["client-certificate", "client-key", "tokenFile"]) }],
  }));
  const resolve = async () => {
    const o: { ca?: Uint8Array; cert?: Uint8Array; key?: Uint8Array; headers?: Record<string, string> } = {};
    await kc.applyToHTTPSOptions(o as never);
    return o;
  };
  const first = await resolve();
  const str = (
    b: unknown,
  ) => (b === undefined ? undefined : typeof b === "string" ? b : new TextDecoder().decode(b as Uint8Array));
  let auth = first.headers?.Authorization ?? first.headers?.authorization;
  let refreshedAt = Date.now();
  return {
    server: cluster.value.server!,
    caCerts: first.ca ? [str(first.ca)!] : undefined,
    cert: str(first.cert),
    key: str(first.key),
    authorization: async () => {
      // client-node re-runs the plugin only when its credential expired; asking once a minute is cheap.
      if (Date.now() - refreshedAt > TOKEN_REREAD_MS) {
        refreshedAt = Date.now();
        const next = await resolve();
        auth = next.headers?.Authorization ?? next.headers?.authorization;
      }
      return auth;
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// TLS and proxy of a cluster entry

type Transport = Pick<Credentials, "insecureSkipTlsVerify" | "tlsServerName" | "proxy">;

/**
 * `insecure-skip-tls-verify`, `tls-server-name` and `proxy-url` as client-go reads them. Insecure together with a CA
 * is refused with client-go's own message (it refuses to build that transport); insecure alone is accepted with a
 * warning. Without `proxy-url` the proxy comes from the environment ({@link proxyFromEnvironment}).
 */
function clusterTransport(cluster: Named<ClusterEntry>, where: string, environment: LoadEnvironment): Transport {
  const c = cluster.value;
  const name = `${where}: cluster "${cluster.name}"`;
  if (!URL.canParse(c.server!)) throw new Error(`${name}: server ${c.server} is not a URL (such as https://host:6443)`);
  const insecure = c["insecure-skip-tls-verify"] === true;
  if (insecure && (c["certificate-authority"] || c["certificate-authority-data"])) {
    throw new Error(
      `${name}: specifying a root certificates file with the insecure flag is not allowed (as in client-go): ` +
        "remove certificate-authority(-data) or insecure-skip-tls-verify",
    );
  }
  if (insecure) {
    const warn = environment.warn ?? ((message: string) => log.warn`${message}`);
    warn(
      `Cluster "${cluster.name}" in ${where} sets insecure-skip-tls-verify: espejo does not verify the API server's ` +
        "certificate, so anyone on the network path can pose as the API server and receive espejo's credentials",
    );
  }
  const serverName = c["tls-server-name"];
  if (serverName !== undefined && typeof serverName !== "string") {
    throw new Error(`${name}: tls-server-name is not a string`);
  }
  const proxyUrl = c["proxy-url"];
  let proxy: string | undefined;
  if (proxyUrl) {
    proxy = parseProxyUrl(String(proxyUrl), `${name}: proxy-url`, ["http", "https", "socks5"]);
  } else {
    proxy = proxyFromEnvironment(c.server!, environment.env);
  }
  return {
    ...(insecure ? { insecureSkipTlsVerify: true } : {}),
    ...(serverName ? { tlsServerName: serverName } : {}),
    ...(proxy ? { proxy } : {}),
  };
}

/** Parses a proxy URL; a scheme outside `schemes` is refused with a message that names it. */
function parseProxyUrl(value: string, what: string, schemes: string[]): string {
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

// ---------------------------------------------------------------------------------------------------------------
// Proxies from the environment, by Go's rules

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

/** Go's `net.SplitHostPort`: undefined where Go returns an error (no port, too many colons, stray brackets). */
function splitHostPort(hostPort: string): [string, string] | undefined {
  const i = hostPort.lastIndexOf(":");
  if (i < 0) return undefined;
  let host: string;
  let from = 0;
  let to = 0;
  if (hostPort.startsWith("[")) {
    const end = hostPort.indexOf("]");
    if (end < 0 || end + 1 !== i) return undefined;
    host = hostPort.slice(1, end);
    from = 1;
    to = end + 1;
  } else {
    host = hostPort.slice(0, i);
    if (host.includes(":")) return undefined;
  }
  if (hostPort.slice(from).includes("[") || hostPort.slice(to).includes("]")) return undefined;
  return [host, hostPort.slice(i + 1)];
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

/**
 * An IP as Go compares it: 4 bytes for IPv4 and IPv4-mapped IPv6, 16 bytes otherwise (so `::ffff:1.2.3.4` equals
 * `1.2.3.4`, as with Go's `IP.Equal`). Strict like `net.ParseIP` (no leading zeros in IPv4 fields, no zone);
 * `sloppy` allows leading zeros, as k8s.io/utils `ParseIPSloppy`.
 */
function parseIP(s: string, sloppy = false): Uint8Array | undefined {
  const bytes = s.includes(":") ? parseIPv6(s, sloppy) : parseIPv4(s, sloppy);
  if (bytes?.length === 16 && bytes.subarray(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff) {
    return bytes.slice(12);
  }
  return bytes;
}

function parseIPv4(s: string, sloppy: boolean): Uint8Array | undefined {
  const fields = s.split(".");
  if (fields.length !== 4) return undefined;
  const out = new Uint8Array(4);
  for (const [i, f] of fields.entries()) {
    if (!(sloppy ? /^\d+$/ : /^\d{1,3}$/).test(f) || (!sloppy && f.length > 1 && f[0] === "0")) return undefined;
    const n = Number(f);
    if (n > 255) return undefined;
    out[i] = n;
  }
  return out;
}

function parseIPv6(s: string, sloppy: boolean): Uint8Array | undefined {
  const out = new Uint8Array(16);
  let ellipsis = -1;
  let i = 0;
  let pos = 0;
  if (s.startsWith("::")) {
    ellipsis = 0;
    i = 2;
  }
  while (i < s.length && pos < 16) {
    let j = i;
    while (j < s.length && j - i < 5 && /[0-9a-f]/i.test(s[j])) j++;
    if (j === i || j - i > 4) return undefined;
    if (s[j] === ".") {
      if (ellipsis < 0 && pos !== 12) return undefined;
      if (pos > 12) return undefined;
      const v4 = parseIPv4(s.slice(i), sloppy);
      if (!v4) return undefined;
      out.set(v4, pos);
      pos += 4;
      i = s.length;
      break;
    }
    const v = parseInt(s.slice(i, j), 16);
    out[pos++] = v >> 8;
    out[pos++] = v & 0xff;
    i = j;
    if (i === s.length) break;
    if (s[i] !== ":" || i + 1 === s.length) return undefined;
    i++;
    if (s[i] === ":") {
      if (ellipsis >= 0) return undefined;
      ellipsis = pos;
      i++;
    }
  }
  if (i !== s.length) return undefined;
  if (pos < 16) {
    if (ellipsis < 0) return undefined;
    const n = 16 - pos;
    out.copyWithin(ellipsis + n, ellipsis, pos);
    out.fill(0, ellipsis, ellipsis + n);
  } else if (ellipsis >= 0) {
    return undefined; // "::" must stand for at least one group
  }
  return out;
}

const sameIP = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i]);
const isLoopback = (ip: Uint8Array) =>
  ip.length === 4 ? ip[0] === 127 : sameIP(ip, new Uint8Array([...new Array(15).fill(0), 1]));

/** Go's `net.ParseCIDR` and `IPNet.Contains`: an IPv4 network holds IPv4 (and IPv4-mapped) addresses only. */
function parseCIDR(s: string, sloppy = false): { contains(ip: Uint8Array): boolean } | undefined {
  const slash = s.indexOf("/");
  if (slash < 0) return undefined;
  const addr = s.slice(0, slash);
  const bits = s.slice(slash + 1);
  const v6 = addr.includes(":");
  const raw = v6 ? parseIPv6(addr, sloppy) : parseIPv4(addr, sloppy);
  const max = v6 ? 128 : 32;
  if (!raw || !/^\d+$/.test(bits) || Number(bits) > max) return undefined;
  let prefix = Number(bits);
  let net = mask(raw, prefix);
  const mapped = net.length === 16 && net.subarray(0, 10).every((b) => b === 0) && net[10] === 0xff &&
    net[11] === 0xff;
  if (mapped) {
    net = net.slice(12);
    prefix -= 96;
  }
  return { contains: (ip) => ip.length === net.length && sameIP(mask(ip, prefix), net) };
}

function mask(ip: Uint8Array, prefix: number): Uint8Array {
  return ip.map((b, i) => {
    const keep = Math.max(0, Math.min(8, prefix - i * 8));
    return b & (0xff << (8 - keep)) & 0xff;
  });
}

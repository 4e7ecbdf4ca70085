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
 * (`cluster_transport.ts`, `proxy_env.ts`). The client never reads the proxy variables itself.
 *
 * Order, as in the Go espejo (controller-runtime): `--kubeconfig`, `$KUBECONFIG`, the in-cluster service account,
 * `~/.kube/config`.
 */
import { dirname, isAbsolute, join } from "node:path";
import { getLogger } from "@logtape/logtape";
import type { HttpClientOptions } from "./client.ts";
import { type ClusterEntry, clusterTransport } from "./cluster_transport.ts";
import { type Env, proxyFromEnvironment } from "./proxy_env.ts";
import { encodeBase64 } from "./objects.ts";

export const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";
/** Tokens are rotated on disk (bound service account tokens, about hourly); re-read at most once a minute. */
const TOKEN_REREAD_MS = 60_000;

type Credentials = Omit<HttpClientOptions, "qps" | "burst" | "userAgent" | "onResponse">;

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
  const warn = environment.warn ?? ((message: string) => log.warn`${message}`);
  const transport = clusterTransport(cluster, where, environment.env, warn);
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

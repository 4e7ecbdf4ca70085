/**
 * How a kubeconfig cluster entry is reached: its TLS settings and proxy, checked as client-go checks them before it
 * builds a transport. Apart from the loading (`kubeconfig.ts`) because it is the one place where the file's fields
 * become {@link TransportOptions}, and where a setting that weakens security is refused or warned about.
 */
import { type Env, parseProxyUrl, proxyFromEnvironment } from "./proxy_env.ts";
import type { TransportOptions } from "./transport.ts";

/** A kubeconfig `clusters[].cluster`, the fields espejo reads. */
export interface ClusterEntry {
  server?: string;
  "certificate-authority"?: string;
  "certificate-authority-data"?: string;
  "insecure-skip-tls-verify"?: boolean;
  "tls-server-name"?: string;
  "proxy-url"?: string;
}

/**
 * `insecure-skip-tls-verify`, `tls-server-name` and `proxy-url` as client-go reads them. Insecure together with a CA
 * is refused with client-go's own message (it refuses to build that transport); insecure alone is accepted with a
 * warning. Without `proxy-url` the proxy comes from the environment ({@link proxyFromEnvironment}).
 */
export function clusterTransport(
  cluster: { name: string; value: ClusterEntry },
  where: string,
  env: Env,
  warn: (message: string) => void,
): Pick<TransportOptions, "insecureSkipTlsVerify" | "tlsServerName" | "proxy"> {
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
    proxy = proxyFromEnvironment(c.server!, env);
  }
  return {
    ...(insecure ? { insecureSkipTlsVerify: true } : {}),
    ...(serverName ? { tlsServerName: serverName } : {}),
    ...(proxy ? { proxy } : {}),
  };
}

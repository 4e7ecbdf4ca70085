/**
 * Turns a kubeconfig (or the in-cluster service account) into {@link HttpClientOptions}. Loading, merging
 * KUBECONFIG and resolving credentials is client-node's job; this module only adapts its result to our client.
 */
import { Buffer } from "node:buffer";
import { KubeConfig } from "@kubernetes/client-node";
import type { HttpClientOptions } from "./client.ts";

/**
 * Loads, in client-node's order: the `--kubeconfig` path, `$KUBECONFIG`, `~/.kube/config`, then the in-cluster
 * service account. Throws with a message naming what was tried when none yields a cluster.
 */
export async function loadClientOptions(kubeconfigPath?: string): Promise<HttpClientOptions> {
  const kc = new KubeConfig();
  if (kubeconfigPath) kc.loadFromFile(kubeconfigPath);
  else kc.loadFromDefault();
  const cluster = kc.getCurrentCluster();
  // With nothing to load, client-node falls back to an unauthenticated http://localhost:8080, which never works.
  const fallback = cluster?.name === "cluster" && cluster.server === "http://localhost:8080" && !kubeconfigPath;
  if (!cluster || fallback) {
    throw new Error(
      "No Kubernetes cluster configured: pass --kubeconfig, set KUBECONFIG, run in a pod, or create ~/.kube/config",
    );
  }
  // client-node resolves files, inline data, tokens, token files and exec plugins into these options.
  const resolve = async () => {
    const o: { ca?: Buffer; cert?: Buffer; key?: Buffer; headers?: Record<string, string> } = {};
    await kc.applyToHTTPSOptions(o as never);
    return o;
  };
  const first = await resolve();
  const str = (b: unknown) => (b === undefined ? undefined : Buffer.isBuffer(b) ? b.toString("utf8") : String(b));
  let auth = first.headers?.Authorization ?? first.headers?.authorization;
  let refreshedAt = Date.now();
  return {
    server: cluster.server,
    caCerts: first.ca ? [str(first.ca)!] : undefined,
    cert: str(first.cert),
    key: str(first.key),
    // Service account tokens are rotated on disk; re-resolve once a minute rather than per request.
    authorization: async () => {
      if (Date.now() - refreshedAt > 60_000) {
        refreshedAt = Date.now();
        const next = await resolve();
        auth = next.headers?.Authorization ?? next.headers?.authorization;
      }
      return auth;
    },
  };
}

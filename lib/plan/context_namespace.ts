/**
 * The namespace kubectl gives an object without one: the kubeconfig's current context's `namespace`, found in the
 * same files and order the client reads (`--kubeconfig`, `$KUBECONFIG`, in a pod the service account's namespace,
 * `~/.kube/config`); the caller falls back to `default`.
 */
import { join } from "node:path";
import { parse } from "yaml";
import { SERVICE_ACCOUNT_DIR } from "../kube/kubeconfig.ts";
import { isObject } from "../kube/objects.ts";

/** The current context's namespace in parsed kubeconfig documents, merged as kubectl merges them (first wins). */
export function namespaceOfContext(docs: unknown[]): string | undefined {
  let current = "";
  for (const d of docs) if (isObject(d) && !current) current = String(d["current-context"] ?? "");
  if (!current) return undefined;
  for (const d of docs) {
    const contexts = isObject(d) && Array.isArray(d.contexts) ? d.contexts : [];
    const entry = contexts.find((c) => isObject(c) && c.name === current);
    if (!isObject(entry)) continue;
    const ns = isObject(entry.context) ? entry.context.namespace : undefined;
    return typeof ns === "string" && ns ? ns : undefined;
  }
  return undefined;
}

export function contextNamespace(
  kubeconfig: string | undefined,
  env: Record<string, string | undefined>,
  serviceAccountDir = SERVICE_ACCOUNT_DIR,
): string | undefined {
  const read = (path: string): unknown => {
    try {
      return parse(Deno.readTextFileSync(path));
    } catch {
      return undefined; // a file the client cannot read either: the client's error is the one to show
    }
  };
  if (kubeconfig) return namespaceOfContext([read(kubeconfig)]);
  const list = (env.KUBECONFIG ?? "").split(":").filter(Boolean);
  if (list.length) return namespaceOfContext(list.map(read));
  if (env.KUBERNETES_SERVICE_HOST) {
    try {
      const ns = Deno.readTextFileSync(join(serviceAccountDir, "namespace")).trim();
      if (ns) return ns;
    } catch { /* not in a pod after all */ }
  }
  return env.HOME ? namespaceOfContext([read(join(env.HOME, ".kube", "config"))]) : undefined;
}

/** Applies YAML manifests (one or many documents) with server-side apply, resolving kinds through discovery. */
import { parseAllDocuments } from "yaml";
import type { KubeClient } from "../lib/kube/client.ts";
import { Discovery, objectPath } from "../lib/kube/discovery.ts";
import type { KubeObject } from "../lib/kube/objects.ts";

export async function applyYaml(client: KubeClient, text: string, namespace?: string): Promise<KubeObject[]> {
  const discovery = new Discovery(client, 0);
  const out: KubeObject[] = [];
  for (const doc of parseAllDocuments(text)) {
    const obj = doc.toJSON() as KubeObject | null;
    if (!obj?.kind) continue;
    out.push(await applyObject(client, obj, namespace, discovery));
  }
  return out;
}

export async function applyObject(
  client: KubeClient,
  obj: KubeObject,
  namespace?: string,
  discovery = new Discovery(client, 0),
): Promise<KubeObject> {
  const r = await discovery.resolve(obj.apiVersion!, obj.kind!);
  const ns = r.namespaced ? (obj.metadata?.namespace ?? namespace ?? "default") : "";
  const body = { ...obj, metadata: { ...obj.metadata, ...(ns ? { namespace: ns } : {}) } };
  return await client.request<KubeObject>({
    method: "PATCH",
    path: objectPath(r, ns, obj.metadata!.name!),
    query: { fieldManager: "testenv", force: true },
    contentType: "application/apply-patch+yaml",
    body,
  });
}

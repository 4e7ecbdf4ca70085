/** One complete list of a collection, page by page (500 objects a request), for one-shot readers such as `espejo plan`. */
import type { KubeClient } from "./client.ts";
import type { KubeObject } from "./objects.ts";

const PAGE = 500;

export async function listAll(client: KubeClient, path: string, labelSelector?: string): Promise<KubeObject[]> {
  const items: KubeObject[] = [];
  let token: string | undefined;
  do {
    const page = await client.request<{ metadata?: { continue?: string }; items?: KubeObject[] }>({
      method: "GET",
      path,
      query: { limit: PAGE, continue: token, labelSelector },
    });
    items.push(...(page.items ?? []));
    token = page.metadata?.continue || undefined;
  } while (token);
  return items;
}

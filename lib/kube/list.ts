/**
 * Lists read page by page, each page item by item ({@link KubeClient.listPage}): what is held is what the caller
 * keeps of each item, never a page's text or its parsed whole.
 */
import type { KubeClient, KubeRequest, ListRest } from "./client.ts";
import type { KubeObject } from "./objects.ts";

/** Objects a page for one-shot readers such as `espejo plan`, which keep every object anyway. */
const PAGE = 500;

/** One page of a list, each item handed to `onItem` as it arrives (held whole by clients without `listPage`). */
export async function listPage(
  client: KubeClient,
  req: KubeRequest,
  onItem: (item: KubeObject) => void,
): Promise<ListRest> {
  if (client.listPage) return await client.listPage(req, (item) => onItem(item as KubeObject));
  const page = await client.request<ListRest & { items?: KubeObject[] }>(req);
  const { items, ...rest } = page ?? {};
  for (const item of items ?? []) onItem(item);
  return rest;
}

/**
 * Every page of a collection, each item to `onItem`; resolves with the list's resourceVersion (that of the last
 * page, which all pages share).
 */
export async function listEach(
  client: KubeClient,
  req: Omit<KubeRequest, "method">,
  pageSize: number,
  onItem: (item: KubeObject) => void,
): Promise<string> {
  let token: string | undefined;
  let rv = "";
  do {
    const rest = await listPage(
      client,
      { ...req, method: "GET", query: { ...req.query, limit: pageSize, continue: token } },
      onItem,
    );
    token = rest.metadata?.continue || undefined;
    rv = rest.metadata?.resourceVersion ?? rv;
  } while (token);
  return rv;
}

/** One complete list of a collection. */
export async function listAll(client: KubeClient, path: string, labelSelector?: string): Promise<KubeObject[]> {
  const items: KubeObject[] = [];
  await listEach(client, { path, query: { labelSelector } }, PAGE, (item) => items.push(item));
  return items;
}

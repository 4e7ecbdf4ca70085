/**
 * The requests a player makes, as a tenant or namespace admin would make them with kubectl. A refusal the player
 * may meet in an honest game (422 on an immutable field, 409 while an object is still terminating, 404 for an
 * object espejo has not written back yet) is an outcome of the move, returned as words; a refusal the player's
 * rights should not meet (403, 5xx) is a bug of the game and throws.
 */
import { ApiError } from "../../lib/kube/errors.ts";
import { jsonText } from "../../lib/kube/canonical_json.ts";
import type { KubeObject } from "../../lib/kube/objects.ts";
import type { TestCluster } from "../../testenv/shared.ts";
import type { Actor } from "./world.ts";

/** What a request did: the object it returned, or the refusal in words. */
export type ItemCounts = { ok: true; object?: KubeObject } | { ok: false; refusal: string };

const EXPECTED_REFUSALS = new Set([404, 409, 422]);

async function attempt(p: Promise<KubeObject | undefined>): Promise<ItemCounts> {
  try {
    return { ok: true, object: await p };
  } catch (e) {
    if (e instanceof ApiError && EXPECTED_REFUSALS.has(e.code)) {
      return { ok: false, refusal: `${e.code} ${e.reason}: ${e.message.slice(0, 160)}` };
    }
    throw new Error(`the player's request was refused, so the move was never made: ${e}`);
  }
}

export function get(actor: Actor, path: string): Promise<KubeObject | undefined> {
  return actor.client.request<KubeObject>({ method: "GET", path }).catch((e) => {
    if (e instanceof ApiError && e.code === 404) return undefined;
    throw e;
  });
}

export function mergePatch(actor: Actor, path: string, body: unknown): Promise<ItemCounts> {
  return attempt(
    actor.client.request<KubeObject>({ method: "PATCH", path, contentType: "application/merge-patch+json", body }),
  );
}

export function create(actor: Actor, collection: string, body: KubeObject): Promise<ItemCounts> {
  return attempt(actor.client.request<KubeObject>({ method: "POST", path: collection, body }));
}

export function remove(actor: Actor, path: string): Promise<ItemCounts> {
  return attempt(actor.client.request<KubeObject>({ method: "DELETE", path }));
}

/**
 * `body` sent as JSON written by jsonText (lib/kube/canonical_json.ts), for a body nested thousands of levels deep:
 * the HttpKubeClient writes with JSON.stringify, which may recurse past the stack at that depth. The reply is read
 * with JSON.parse (no recursion); refusals as {@link attempt} takes them.
 */
export async function sendDeep(
  cluster: TestCluster,
  actor: Actor,
  method: "POST" | "PUT",
  path: string,
  body: unknown,
): Promise<ItemCounts> {
  const http = Deno.createHttpClient({ caCerts: [cluster.caPem] });
  try {
    const res = await fetch(cluster.server + path, {
      method,
      client: http,
      body: jsonText(body),
      headers: { "content-type": "application/json", authorization: `Bearer ${actor.identity.token}` },
    });
    const text = await res.text();
    if (res.ok) return { ok: true, object: JSON.parse(text) as KubeObject };
    let status: { reason?: string; message?: string } = {};
    try {
      status = JSON.parse(text);
    } catch { /* not a Status: the text is the message */ }
    return attempt(Promise.reject(
      new ApiError(res.status, status.reason ?? "Unknown", status.message ?? text.slice(0, 300)),
    ));
  } finally {
    http.close();
  }
}

/** `outcome` in a few words for the move list. */
export function said(outcome: ItemCounts): string {
  return outcome.ok ? "done" : `refused (${outcome.refusal})`;
}

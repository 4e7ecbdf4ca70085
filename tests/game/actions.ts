/**
 * The requests a player makes, as a tenant or namespace admin would make them with kubectl. A refusal the player
 * may meet in an honest game (422 on an immutable field, 409 while an object is still terminating, 404 for an
 * object espejo has not written back yet) is an outcome of the move, returned as words; a refusal the player's
 * rights should not meet (403, 5xx) is a bug of the game and throws.
 */
import { ApiError } from "../../lib/kube/errors.ts";
import type { KubeObject } from "../../lib/kube/objects.ts";
import type { Actor } from "./world.ts";

/** What a request did: the object it returned, or the refusal in words. */
export type Outcome = { ok: true; object?: KubeObject } | { ok: false; refusal: string };

const EXPECTED_REFUSALS = new Set([404, 409, 422]);

async function attempt(p: Promise<KubeObject | undefined>): Promise<Outcome> {
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

export function mergePatch(actor: Actor, path: string, body: unknown): Promise<Outcome> {
  return attempt(
    actor.client.request<KubeObject>({ method: "PATCH", path, contentType: "application/merge-patch+json", body }),
  );
}

export function create(actor: Actor, collection: string, body: KubeObject): Promise<Outcome> {
  return attempt(actor.client.request<KubeObject>({ method: "POST", path: collection, body }));
}

export function remove(actor: Actor, path: string): Promise<Outcome> {
  return attempt(actor.client.request<KubeObject>({ method: "DELETE", path }));
}

/** `outcome` in a few words for the move list. */
export function said(outcome: Outcome): string {
  return outcome.ok ? "done" : `refused (${outcome.refusal})`;
}

/**
 * How `espejo plan` tells a write that changes something from one the server would make a no-op, as `kubectl diff`
 * does: by a server-side dry run where the identity running it may (the write verbs, asked with one
 * SelfSubjectAccessReview per resource, verb and namespace the plan would write), otherwise by espejo's rules
 * (./server_defaults.ts). The report says which, and why; or that there was no write to compare.
 */
import type { KubeClient } from "../kube/client.ts";
import { reasonOf } from "../sync/failures.ts";
import type { PlanEntry } from "./plan.ts";

/** `none`: no write to compare, every object already is what its item asks (by value, as the controller sees it). */
export type Comparison = { mode: "server-dry-run" | "rules" | "none"; why: string };

const VERB: Partial<Record<PlanEntry["action"], string>> = {
  create: "create",
  adopt: "update",
  update: "update",
  delete: "delete",
  prune: "delete",
};

/** The writes a dry run of `entries` sends, one per resource, verb and namespace. */
export function writesOf(entries: PlanEntry[]): { group: string; resource: string; verb: string; namespace: string }[] {
  const out = new Map<string, { group: string; resource: string; verb: string; namespace: string }>();
  for (const e of entries) {
    const verb = VERB[e.action];
    if (!verb || !e.resource) continue;
    const w = { group: e.resource.group, resource: e.resource.resource, verb, namespace: e.namespace };
    out.set(`${w.group}/${w.resource}/${w.verb}/${w.namespace}`, w);
  }
  return [...out.values()];
}

/**
 * Whether the identity running the plan may dry-run `entries`: undefined if so, else the first write it may not
 * make, in words. A review that cannot be asked counts as a refusal, with the server's reason.
 */
export async function dryRunRefusal(
  client: KubeClient,
  entries: PlanEntry[],
  user: string,
): Promise<string | undefined> {
  for (const w of writesOf(entries)) {
    let allowed: boolean | undefined;
    try {
      const review = await client.request<{ status?: { allowed?: boolean } }>({
        method: "POST",
        path: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        body: {
          apiVersion: "authorization.k8s.io/v1",
          kind: "SelfSubjectAccessReview",
          spec: { resourceAttributes: { group: w.group, resource: w.resource, verb: w.verb, namespace: w.namespace } },
        },
      });
      allowed = review.status?.allowed === true;
    } catch (e) {
      return `could not ask whether ${user} may dry-run: ${reasonOf(e)}`;
    }
    if (!allowed) {
      const resource = w.group ? `${w.resource}.${w.group}` : w.resource;
      return `${user} may not ${w.verb} ${resource} in namespace ${w.namespace}`;
    }
  }
  return undefined;
}

/**
 * The user the client authenticates as, from a SelfSubjectReview (authentication.k8s.io/v1, Kubernetes 1.28+), or
 * `the current user` if the server does not say.
 */
export async function currentUser(client: KubeClient): Promise<string> {
  try {
    const review = await client.request<{ status?: { userInfo?: { username?: string } } }>({
      method: "POST",
      path: "/apis/authentication.k8s.io/v1/selfsubjectreviews",
      body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" },
    });
    return review.status?.userInfo?.username || "the current user";
  } catch {
    return "the current user";
  }
}

/** The entries as espejo's rules see them: updates the rules find a no-op leave the plan. */
export function byRules(entries: PlanEntry[]): { entries: PlanEntry[]; noops: number } {
  const kept = entries.filter((e) => !e.noopByRules);
  return { entries: kept, noops: entries.length - kept.length };
}

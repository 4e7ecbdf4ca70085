/**
 * Access reviews (not stored): whether the API server's authorizers allow a user a request, by a SubjectAccessReview
 * for the user its `spec` names. The metrics scrape check, `espejo plan --check-rights` and the rights of a team's
 * SyncConfig (lib/sync/rights.ts) ask them.
 */
import type { KubeClient } from "./client.ts";

export interface AccessVerdict {
  allowed: boolean;
  /** The authorizer's reason, when it gave one. */
  reason?: string;
}

/** A request as RBAC sees it: `namespace` and `name` left out ask about every namespace or every name. */
export interface ResourceAttributes {
  verb: string;
  group: string;
  resource: string;
  namespace?: string;
  name?: string;
}

export async function reviewAccess(
  client: KubeClient,
  spec: Record<string, unknown>,
  options: { signal?: AbortSignal; timeoutMs?: number } = {},
): Promise<AccessVerdict> {
  const review = await client.request<{ status?: { allowed?: boolean; reason?: string } }>({
    method: "POST",
    path: "/apis/authorization.k8s.io/v1/subjectaccessreviews",
    body: { apiVersion: "authorization.k8s.io/v1", kind: "SubjectAccessReview", spec },
    ...options,
  });
  return { allowed: review.status?.allowed === true, reason: review.status?.reason };
}

/**
 * Whether `user` may make the request `attributes` describe, asked by espejo (a SubjectAccessReview: the asker needs
 * `create` on subjectaccessreviews, not the right to impersonate). A ServiceAccount is reviewed with the groups the
 * API server gives it, whether it comes with a token or impersonated (`system:serviceaccounts`,
 * `system:serviceaccounts:<namespace>`, `system:authenticated`), and `extra` as its requests carry it. The resource is
 * split at its first `/`: the rest is the subresource (`syncconfigs/status`).
 */
export async function reviewUserAccess(
  client: KubeClient,
  user: string,
  attributes: ResourceAttributes,
  extra?: Readonly<Record<string, string>>,
): Promise<AccessVerdict> {
  const sa = /^system:serviceaccount:([^:]+):/.exec(user);
  const groups = ["system:authenticated", ...(sa ? ["system:serviceaccounts", `system:serviceaccounts:${sa[1]}`] : [])];
  const slash = attributes.resource.indexOf("/");
  const resourceAttributes = {
    ...attributes,
    resource: slash < 0 ? attributes.resource : attributes.resource.slice(0, slash),
    subresource: slash < 0 ? undefined : attributes.resource.slice(slash + 1),
  };
  const extras = extra && Object.fromEntries(Object.entries(extra).map(([k, v]) => [k, [v]]));
  return await reviewAccess(client, { user, groups, ...(extras ? { extra: extras } : {}), resourceAttributes });
}

/**
 * The API server's own words for a refusal of `attributes` to `user` (k8s.io/apiserver's `forbiddenMessage`), so that
 * a review's denial reads as the 403 of the request would, and the hints that read such a message apply.
 */
export function forbiddenMessage(user: string, a: ResourceAttributes): string {
  const object = a.name ? `${a.resource} ${JSON.stringify(a.name)}` : a.resource;
  const scope = a.namespace ? `in the namespace ${JSON.stringify(a.namespace)}` : "at the cluster scope";
  return `${object} is forbidden: User ${JSON.stringify(user)} cannot ${a.verb} resource ${
    JSON.stringify(a.resource)
  } ` +
    `in API group ${JSON.stringify(a.group)} ${scope}`;
}

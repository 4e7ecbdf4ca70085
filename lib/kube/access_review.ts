/**
 * One SubjectAccessReview (not stored): whether the API server's authorizers allow the user that `spec` names the
 * request it describes (`resourceAttributes` or `nonResourceAttributes`). The metrics scrape check and `espejo plan
 * --check-rights` both ask it.
 */
import type { KubeClient } from "./client.ts";

export interface AccessVerdict {
  allowed: boolean;
  /** The authorizer's reason, when it gave one. */
  reason?: string;
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

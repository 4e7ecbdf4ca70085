/**
 * The two reviews that check a metrics scrape (lib/app/metrics_auth.ts): a TokenReview of its bearer token and a
 * SubjectAccessReview of `get` on the path for the user it names, each ended by the check's signal or after
 * {@link CHECK_TIMEOUT_MS}.
 */
import { reviewAccess } from "../kube/access_review.ts";
import type { KubeClient } from "../kube/client.ts";
import { CHECK_TIMEOUT_MS } from "./shared_check.ts";

export interface UserInfo {
  username: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

interface TokenReviewStatus {
  authenticated?: boolean;
  user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
  error?: string;
}

/** A token's authentication: the user, or why not. */
export type Authentication = { user: UserInfo } | { refused: string };
export type Authorization = { allowed: true } | { allowed: false; reason?: string };

/** The TokenReview of a scrape's bearer token: the user it names, or why not. */
export async function tokenReview(client: KubeClient, token: string, signal: AbortSignal): Promise<Authentication> {
  const review = await client.request<{ status?: TokenReviewStatus }>({
    method: "POST",
    path: "/apis/authentication.k8s.io/v1/tokenreviews",
    body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec: { token } },
    signal,
    timeoutMs: CHECK_TIMEOUT_MS,
  });
  const user = review.status?.user;
  if (!review.status?.authenticated || !user?.username) {
    return { refused: `Unauthorized: ${review.status?.error || "the token is not valid"}` };
  }
  return { user: { username: user.username, uid: user.uid, groups: user.groups, extra: user.extra } };
}

/** The SubjectAccessReview of `get` on the non-resource URL `path` for `user`. */
export async function accessReview(
  client: KubeClient,
  user: UserInfo,
  path: string,
  signal: AbortSignal,
): Promise<Authorization> {
  const spec = {
    user: user.username,
    uid: user.uid,
    groups: user.groups,
    extra: user.extra,
    nonResourceAttributes: { path, verb: "get" },
  };
  const access = await reviewAccess(client, spec, { signal, timeoutMs: CHECK_TIMEOUT_MS });
  return access.allowed ? { allowed: true } : { allowed: false, reason: access.reason };
}

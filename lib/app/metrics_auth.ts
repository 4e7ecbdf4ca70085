/**
 * Authentication and authorization of metrics scrapes for `--metrics-secure`, as controller-runtime's
 * `filters.WithAuthenticationAndAuthorization` does them: the bearer token is checked with a TokenReview, and the
 * user it names must be allowed `get` on the non-resource URL (`/metrics`) by a SubjectAccessReview. So a scraper
 * needs a ServiceAccount token and a ClusterRole with `nonResourceURLs: ["/metrics"], verbs: ["get"]`
 * (deploy/rbac/metrics_reader_role.yaml), and espejo needs `create` on both reviews
 * (deploy/rbac/metrics_auth_role.yaml).
 *
 * Verdicts are cached by token for a while, as the delegating authenticator and authorizer cache theirs, so that
 * a scrape every 15 s costs the API server two reviews a minute per scraper at most, not two per scrape; a flood
 * of unknown tokens costs at most {@link MAX_CACHED} entries of memory.
 */
import type { KubeClient } from "../kube/client.ts";
import { ApiError } from "../kube/errors.ts";

/** How long a verdict stands: controller-runtime's defaults (authenticated 2 min; authorized 5 min, denied 30 s). */
const ALLOWED_MS = 2 * 60_000;
const DENIED_MS = 30_000;
const MAX_CACHED = 1000;

export type Verdict =
  | { ok: true; user: string }
  | { ok: false; status: 401 | 403 | 500; reason: string };

interface TokenReviewStatus {
  authenticated?: boolean;
  user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
  error?: string;
}

export class MetricsAuth {
  readonly #cache = new Map<string, { verdict: Verdict; until: number }>();

  constructor(private readonly client: KubeClient, private readonly now: () => number = Date.now) {}

  /** The verdict on a request for `path` with this Authorization header. */
  async check(authorization: string | null, path: string): Promise<Verdict> {
    const token = /^Bearer\s+(\S+)$/i.exec(authorization ?? "")?.[1];
    if (!token) return { ok: false, status: 401, reason: "Unauthorized: a bearer token is needed" };
    const key = `${await digest(token)} ${path}`;
    const cached = this.#cache.get(key);
    if (cached && cached.until > this.now()) return cached.verdict;
    const verdict = await this.#review(token, path);
    if (verdict.ok || verdict.status !== 500) {
      if (this.#cache.size >= MAX_CACHED) this.#cache.delete(this.#cache.keys().next().value!);
      this.#cache.set(key, { verdict, until: this.now() + (verdict.ok ? ALLOWED_MS : DENIED_MS) });
    }
    return verdict;
  }

  async #review(token: string, path: string): Promise<Verdict> {
    try {
      const review = await this.client.request<{ status?: TokenReviewStatus }>({
        method: "POST",
        path: "/apis/authentication.k8s.io/v1/tokenreviews",
        body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec: { token } },
        urgent: true,
      });
      const user = review.status?.user;
      if (!review.status?.authenticated || !user?.username) {
        return { ok: false, status: 401, reason: `Unauthorized: ${review.status?.error || "the token is not valid"}` };
      }
      const access = await this.client.request<{ status?: { allowed?: boolean; reason?: string } }>({
        method: "POST",
        path: "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        body: {
          apiVersion: "authorization.k8s.io/v1",
          kind: "SubjectAccessReview",
          spec: {
            user: user.username,
            uid: user.uid,
            groups: user.groups,
            extra: user.extra,
            nonResourceAttributes: { path, verb: "get" },
          },
        },
        urgent: true,
      });
      if (!access.status?.allowed) {
        return {
          ok: false,
          status: 403,
          reason: `Forbidden: user "${user.username}" cannot get path "${path}"` +
            (access.status?.reason ? `: ${access.status.reason}` : ""),
        };
      }
      return { ok: true, user: user.username };
    } catch (e) {
      // espejo itself may not review (its ClusterRole lacks the rights) or cannot reach the API server: say so.
      const why = e instanceof ApiError ? `${e.code} ${e.reason}: ${e.message}` : (e as Error).message;
      return { ok: false, status: 500, reason: `Internal Server Error: cannot review the request: ${why}` };
    }
  }
}

async function digest(token: string): Promise<string> {
  const hash = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token)));
  return btoa(String.fromCharCode(...hash));
}

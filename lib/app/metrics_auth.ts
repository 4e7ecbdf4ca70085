/**
 * Authentication and authorization of metrics scrapes for `--metrics-secure`, as controller-runtime's
 * `filters.WithAuthenticationAndAuthorization` does them: the bearer token is checked with a TokenReview, and the
 * user it names must be allowed `get` on the non-resource URL (`/metrics`) by a SubjectAccessReview. So a scraper
 * needs a ServiceAccount token and a ClusterRole with `nonResourceURLs: ["/metrics"], verbs: ["get"]`
 * (`espejo-metrics-reader`), and espejo needs `create` on both reviews
 * (deploy/rbac/metrics_auth_role.yaml).
 *
 * Whoever reaches the port chooses the tokens, so what checking them costs is bounded whatever they send:
 * - Verdicts are cached as the delegating authenticator and authorizer that controller-runtime configures cache
 *   theirs: a token's authentication, valid or not, for 1 minute (`CacheTTL`, errors not cached), keyed by an HMAC
 *   with a key made at start (as apiserver's token cache); an authorization for 5 minutes when allowed, 30 seconds when
 *   denied (`AllowCacheTTL`, `DenyCacheTTL`). Each cache holds at most {@link MAX_CACHED} entries, least recently used
 *   out first. An entry is made only by a review, and reviews are paced (below), so under any flood fewer entries are
 *   alive than the bound: a flood never pushes a scraper's verdict out.
 * - Reviews go through a budget of their own (lib/app/review_budget.ts): {@link BUDGET}'s reviews a second, checks in
 *   flight and checks waiting; past it a scrape is refused at once with 429 and `Retry-After`, and nothing about its
 *   token is cached (nothing was learned). The reviews are sent by a client of their own, never through the sync
 *   client's rate limiter.
 * - Concurrent scrapes with one token share one check; a check whose clients all went away is aborted, and none takes
 *   longer than {@link CHECK_TIMEOUT_MS} (controller-runtime's `TokenAccessReviewTimeout`), waiting included. At most
 *   {@link MAX_WAITING_SCRAPES} scrapes of each lane (below) wait for verdicts at once; more are answered 503 at once.
 * - A token longer than {@link MAX_AUTHORIZATION_BYTES} is refused without a review.
 *
 * A scraper gets every scrape, whatever strangers send: a scrape's lane is decided before any bound is applied, and
 * strangers cannot enter the known lane, so they can fill only their own places. The known lane holds a token allowed
 * within {@link KNOWN_MS} (a scraper whose cached verdict expired), and a token never seen that the cluster signed for a
 * user allowed within {@link KNOWN_MS} (the scraper's ServiceAccount token rotated; lib/app/issuer_keys.ts tells it
 * from a forgery without a review). Its checks go before strangers' in the budget and take the place of the newest
 * stranger's when the line is full, and its scrapes have waiting places of their own. Every other token is a
 * stranger's: a flood of them is answered 429 or 503 at once, as before, and costs no more than it did.
 */
import { getLogger } from "@logtape/logtape";
import type { KubeClient } from "../kube/client.ts";
import { ApiError } from "../kube/errors.ts";
import { OverBudget, RETRY_AFTER_SECONDS, ReviewBudget, type ReviewBudgetOptions } from "./review_budget.ts";
import { TtlCache } from "../kube/ttl_cache.ts";
import { accessReview, type Authentication, type Authorization, tokenReview, type UserInfo } from "./scrape_reviews.ts";
import { inForce, IssuerKeys, readJwt } from "./issuer_keys.ts";
import { CHECK_TIMEOUT_MS, Flight, GONE, type Verdict } from "./shared_check.ts";

const log = getLogger(["espejo", "metrics"]);

/** controller-runtime's `CacheTTL`: a token's authentication, valid or not, stands this long. */
export const AUTHENTICATION_MS = 60_000;
/** controller-runtime's `AllowCacheTTL` and `DenyCacheTTL`. */
export const ALLOWED_MS = 5 * 60_000;
export const DENIED_MS = 30_000;
/** Entries per cache. Reviews make entries at most {@link BUDGET}.qps a second: 300 a minute, well below. */
export const MAX_CACHED = 1024;
/** A token allowed within this long, or a new token the cluster signed for a user allowed within it, is known. */
export const KNOWN_MS = 15 * 60_000;
/** Known tokens and known users remembered, each (a scraper has one or two tokens alive). */
const MAX_KNOWN = 256;
/** Longer Authorization headers are refused unreviewed (a ServiceAccount token is 1-2 KB; 4 KB is fine). */
export const MAX_AUTHORIZATION_BYTES = 8192;
/**
 * The reviews' own budget: 5 a second (a scraper costs one a minute), 4 checks in flight and 8 waiting (a check makes
 * at most two reviews, so a waiting check has its verdict within about 5 s).
 */
export const BUDGET: Omit<ReviewBudgetOptions, "now"> = { qps: 5, burst: 10, maxInFlight: 4, maxWaiting: 8 };
/**
 * Scrapes waiting for a verdict at once, in each lane: strangers' scrapes fill only their own places. Checks of
 * distinct tokens are bounded by the budget; this bounds scrapes that share a check (one token sent again and again
 * while its review is under way), and scrapes between their arrival and the budget's answer, each holding a connection.
 */
export const MAX_WAITING_SCRAPES = 64;
/** Whose token a scrape carries, as far as can be told before its review: its place in every line depends on it. */
type Lane = "known" | "stranger";
/** Refusals are logged at most this often. */
const LOG_EVERY_MS = 60_000;

export { CHECK_TIMEOUT_MS, type Verdict };

export interface MetricsAuthOptions {
  /** Wall-clock milliseconds, for the caches. */
  now?: () => number;
  /** Monotonic milliseconds, for the budget's bucket. */
  monotonic?: () => number;
  budget?: Omit<ReviewBudgetOptions, "now">;
}

const NEVER = new AbortController().signal;

export class MetricsAuth {
  readonly #authentications: TtlCache<Authentication>;
  readonly #authorizations: TtlCache<Authorization>;
  /** Digests of tokens allowed lately: they go first when their verdict must be renewed. */
  readonly #known: TtlCache<true>;
  /** Users allowed lately: a new token the cluster signed for one of them goes first too. */
  readonly #knownUsers: TtlCache<true>;
  readonly #issuer: IssuerKeys;
  readonly #flights = new Map<string, Flight>();
  readonly #budget: ReviewBudget;
  readonly #key: Promise<CryptoKey>;
  readonly #now: () => number;
  readonly #waitingScrapes: Record<Lane, number> = { known: 0, stranger: 0 };
  #refusedSinceLog = 0;
  #lastLog = -Infinity;

  /** `client` sends the reviews: give it one of its own, so that they never wait for (or delay) the syncs. */
  constructor(private readonly client: KubeClient, opts: MetricsAuthOptions = {}) {
    this.#now = opts.now ?? Date.now;
    this.#authentications = new TtlCache(MAX_CACHED, this.#now);
    this.#authorizations = new TtlCache(MAX_CACHED, this.#now);
    this.#known = new TtlCache(MAX_KNOWN, this.#now);
    this.#knownUsers = new TtlCache(MAX_KNOWN, this.#now);
    this.#issuer = new IssuerKeys(client, opts.monotonic);
    this.#budget = new ReviewBudget({ ...(opts.budget ?? BUDGET), now: opts.monotonic });
    this.#key = crypto.subtle.generateKey({ name: "HMAC", hash: "SHA-256" }, false, ["sign"]) as Promise<CryptoKey>;
  }

  /** Scrapes refused because the budget was spent, since the start. */
  get refused(): number {
    return this.#budget.refused;
  }

  /** Now: checks holding a slot of the budget, checks waiting for one, scrapes waiting for a verdict (both lanes). */
  get pending(): { inFlight: number; waiting: number; scrapes: number } {
    const scrapes = this.#waitingScrapes.known + this.#waitingScrapes.stranger;
    return { inFlight: this.#budget.inFlight, waiting: this.#budget.waiting, scrapes };
  }

  /**
   * The verdict on a request for `path` with this Authorization header. `signal` is the request's: when every client
   * waiting for a check has gone away, the check is aborted (its review, or its place in the budget's line).
   */
  async check(authorization: string | null, path: string, signal: AbortSignal = NEVER): Promise<Verdict> {
    if ((authorization?.length ?? 0) > MAX_AUTHORIZATION_BYTES) {
      return {
        ok: false,
        status: 401,
        reason: `Unauthorized: the token is longer than ${MAX_AUTHORIZATION_BYTES} bytes`,
      };
    }
    const token = /^Bearer\s+(\S+)$/i.exec(authorization ?? "")?.[1];
    if (!token) return { ok: false, status: 401, reason: "Unauthorized: a bearer token is needed" };
    const digest = await this.#digest(token);
    const verdict = this.#fromCaches(digest, path) ??
      await this.#flight(token, digest, path, await this.#laneOf(token, digest), signal);
    if (verdict.ok) {
      this.#known.set(digest, true, KNOWN_MS);
      this.#knownUsers.set(verdict.user, true, KNOWN_MS);
    } else if (verdict.status === 429) this.#noteRefusal();
    return verdict;
  }

  /**
   * "known" for a token allowed lately, or a JWT in force that the cluster signed for a user allowed lately; else
   * "stranger". A stranger's token costs a parse here, and a signature check only when it names a known user.
   */
  async #laneOf(token: string, digest: string): Promise<Lane> {
    if (this.#known.get(digest)) return "known";
    const jwt = readJwt(token);
    if (!jwt || !this.#knownUsers.get(jwt.sub) || !inForce(jwt, this.#now() / 1000)) return "stranger";
    return await this.#issuer.signed(jwt) ? "known" : "stranger";
  }

  /** The verdict the caches hold, if they hold one. */
  #fromCaches(digest: string, path: string): Verdict | undefined {
    const authn = this.#authentications.get(digest);
    if (!authn) return undefined;
    if ("refused" in authn) return { ok: false, status: 401, reason: authn.refused };
    const authz = this.#authorizations.get(accessKey(authn.user, path));
    return authz && verdictOf(authn.user, path, authz);
  }

  /**
   * Joins the check under way for this token and path, or starts one; at most {@link MAX_WAITING_SCRAPES} scrapes of
   * `lane` wait at once (a scrape answered from the caches never waits).
   */
  async #flight(token: string, digest: string, path: string, lane: Lane, signal: AbortSignal): Promise<Verdict> {
    if (this.#waitingScrapes[lane] >= MAX_WAITING_SCRAPES) return TOO_MANY_WAITING;
    this.#waitingScrapes[lane]++;
    try {
      return await this.#join(token, digest, path, lane === "known", signal);
    } finally {
      this.#waitingScrapes[lane]--;
    }
  }

  #join(token: string, digest: string, path: string, known: boolean, signal: AbortSignal): Promise<Verdict> {
    const key = `${digest} ${path}`;
    let flight = this.#flights.get(key);
    if (!flight) {
      if (signal.aborted) return Promise.resolve(GONE);
      const started = new Flight((s) => this.#review(token, digest, path, known, s));
      this.#flights.set(key, started);
      started.result.finally(() => this.#flights.delete(key));
      flight = started;
    }
    return flight.join(signal);
  }

  /** Reviews what the caches lack, under the budget. Never rejects: every failure is a verdict. */
  async #review(token: string, digest: string, path: string, known: boolean, signal: AbortSignal): Promise<Verdict> {
    try {
      return await this.#budget.run(known, signal, async (pace) => {
        let authn = this.#authentications.get(digest);
        if (!authn) {
          await pace();
          authn = await tokenReview(this.client, token, signal);
          this.#authentications.set(digest, authn, AUTHENTICATION_MS);
        }
        if ("refused" in authn) return { ok: false, status: 401, reason: authn.refused };
        const key = accessKey(authn.user, path);
        let authz = this.#authorizations.get(key);
        if (!authz) {
          await pace();
          authz = await accessReview(this.client, authn.user, path, signal);
          this.#authorizations.set(key, authz, authz.allowed ? ALLOWED_MS : DENIED_MS);
        }
        return verdictOf(authn.user, path, authz);
      });
    } catch (e) {
      if (e instanceof OverBudget) {
        return {
          ok: false,
          status: 429,
          reason: "Too Many Requests: too many token reviews are waiting; try again later",
          retryAfterSeconds: e.retryAfterSeconds,
        };
      }
      if (signal.aborted) {
        const why = signal.reason instanceof DOMException && signal.reason.name === "TimeoutError"
          ? `no verdict within ${CHECK_TIMEOUT_MS / 1000}s`
          : "the client went away";
        return {
          ok: false,
          status: 503,
          reason: `Service Unavailable: ${why}`,
          retryAfterSeconds: RETRY_AFTER_SECONDS,
        };
      }
      // espejo itself may not review (its ClusterRole lacks the rights) or cannot reach the API server: say so.
      const why = e instanceof ApiError ? `${e.code} ${e.reason}: ${e.message}` : (e as Error).message;
      return { ok: false, status: 500, reason: `Internal Server Error: cannot review the request: ${why}` };
    }
  }

  async #digest(token: string): Promise<string> {
    const mac = await crypto.subtle.sign("HMAC", await this.#key, new TextEncoder().encode(token));
    return btoa(String.fromCharCode(...new Uint8Array(mac)));
  }

  #noteRefusal(): void {
    this.#refusedSinceLog++;
    const now = this.#now();
    if (now - this.#lastLog < LOG_EVERY_MS) return;
    log.warn(
      "Metrics scrapes refused with 429: {count} since the last report; the token reviews' budget ({qps} a second, " +
        "{inFlight} at once, {waiting} waiting) was spent, perhaps by someone sending unknown tokens to the metrics port",
      {
        count: this.#refusedSinceLog,
        qps: this.#budget.opts.qps,
        inFlight: this.#budget.opts.maxInFlight,
        waiting: this.#budget.opts.maxWaiting,
      },
    );
    this.#refusedSinceLog = 0;
    this.#lastLog = now;
  }
}

function verdictOf(user: UserInfo, path: string, authz: Authorization): Verdict {
  if (authz.allowed) return { ok: true, user: user.username };
  return {
    ok: false,
    status: 403,
    reason: `Forbidden: user "${user.username}" cannot get path "${path}"` + (authz.reason ? `: ${authz.reason}` : ""),
  };
}

/** The authorizer's cache key: everything the SubjectAccessReview is asked about. */
function accessKey(user: UserInfo, path: string): string {
  return JSON.stringify([user.username, user.uid ?? "", user.groups ?? [], user.extra ?? {}, path]);
}

const TOO_MANY_WAITING: Verdict = {
  ok: false,
  status: 503,
  reason: "Service Unavailable: too many scrapes are waiting for a verdict; try again later",
  retryAfterSeconds: RETRY_AFTER_SECONDS,
};

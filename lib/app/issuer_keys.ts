/**
 * Whether a token never reviewed was issued by the cluster, told before any review: `--metrics-secure`
 * (lib/app/metrics_auth.ts) lets a new token of a scraper already allowed (its ServiceAccount token rotated, as the
 * kubelet renews projected tokens) go ahead of strangers' tokens, so that a flood of random tokens cannot keep it
 * waiting until the flood ends.
 *
 * Nothing a token says about itself can be believed: a stranger chooses every byte, and a JWT's claims name whoever
 * its sender likes. What a stranger cannot make is the API server's signature. ServiceAccount tokens are JWTs signed
 * with the API server's service-account key, whose public halves it publishes at {@link JWKS_PATH} (ServiceAccount
 * issuer discovery, which every ServiceAccount may read by default). So a token that one of those keys verifies, in
 * force, names its subject truly. It is still reviewed (it may have been revoked with its pod or Secret): the
 * signature chooses only the lane it waits in.
 *
 * What a stranger's token costs here: {@link readJwt} turns away one that is not a JWT without cryptography, and the
 * caller checks the subject before {@link IssuerKeys.signed}, so only a token naming a scraper costs a signature check
 * (tens of microseconds, as the HMAC that every token costs). The keys are fetched when first needed and again when a
 * token names a key not among them, at most once a minute whatever is sent. Tokens of other issuers (OIDC, webhooks)
 * are never vouched for.
 */
import { getLogger } from "@logtape/logtape";
import type { KubeClient } from "../kube/client.ts";
import { ApiError } from "../kube/errors.ts";
import { CHECK_TIMEOUT_MS } from "./shared_check.ts";

const log = getLogger(["espejo", "metrics"]);

/** Where the API server publishes the public keys of its ServiceAccount tokens (a JSON Web Key Set). */
export const JWKS_PATH = "/openid/v1/jwks";
/** The keys are fetched again at most this often, however many tokens name a key not among them. */
export const REFETCH_MS = 60_000;
/** Clock skew allowed on `exp` and `nbf`: go-jose's default leeway, which the API server's own check uses. */
export const LEEWAY_S = 60;
/** The algorithms the API server signs ServiceAccount tokens with (an RSA or a P-256 key). */
const ALGORITHMS = {
  RS256: { importAs: { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" }, verifyAs: { name: "RSASSA-PKCS1-v1_5" } },
  ES256: { importAs: { name: "ECDSA", namedCurve: "P-256" }, verifyAs: { name: "ECDSA", hash: "SHA-256" } },
} as const;
type Alg = keyof typeof ALGORITHMS;

/** A JWT read, not verified: nothing in it is true until {@link IssuerKeys.signed} says the cluster signed it. */
export interface UnverifiedJwt {
  alg: Alg;
  kid?: string;
  sub: string;
  /** Seconds since the epoch; a Secret's legacy token has no `exp`. */
  exp?: number;
  nbf?: number;
  /** `header.payload`, the bytes the signature signs. */
  signed: Uint8Array<ArrayBuffer>;
  signature: Uint8Array<ArrayBuffer>;
}

/** The JWT `token` is, read without verifying it; undefined when it is not one this file can verify. Pure. */
export function readJwt(token: string): UnverifiedJwt | undefined {
  const parts = token.split(".");
  if (parts.length !== 3) return undefined;
  const header = jsonOf(parts[0]);
  const payload = jsonOf(parts[1]);
  const signature = bytesOf(parts[2]);
  if (!header || !payload || !signature?.length) return undefined;
  const { alg, kid } = header;
  const { sub, exp, nbf } = payload;
  if (alg !== "RS256" && alg !== "ES256") return undefined;
  if (typeof sub !== "string" || (kid !== undefined && typeof kid !== "string")) return undefined;
  if ((exp !== undefined && typeof exp !== "number") || (nbf !== undefined && typeof nbf !== "number")) {
    return undefined;
  }
  return { alg, kid, sub, exp, nbf, signed: new TextEncoder().encode(`${parts[0]}.${parts[1]}`), signature };
}

/** Whether `jwt` is in force at `nowS` (seconds since the epoch), {@link LEEWAY_S} either way. Pure. */
export function inForce(jwt: UnverifiedJwt, nowS: number): boolean {
  return (jwt.exp === undefined || nowS < jwt.exp + LEEWAY_S) && (jwt.nbf === undefined || jwt.nbf - LEEWAY_S <= nowS);
}

interface Key {
  kid?: string;
  alg: Alg;
  key: CryptoKey;
}

/** The API server's ServiceAccount keys, fetched with `client` (the reviews' own) when needed. */
export class IssuerKeys {
  #keys: Key[] = [];
  #fetchedAt = -Infinity;
  #fetching?: Promise<void>;

  /** `monotonic`: milliseconds, for the spacing of fetches. */
  constructor(
    private readonly client: KubeClient,
    private readonly monotonic: () => number = () => performance.now(),
  ) {}

  /**
   * Whether one of the API server's keys made `jwt`'s signature. Waits for the keys when none fits `jwt` and a fetch
   * is allowed (or under way). Never rejects: keys that cannot be had vouch for nothing.
   */
  async signed(jwt: UnverifiedJwt): Promise<boolean> {
    if (!this.#fitting(jwt).length) await this.#refresh();
    for (const k of this.#fitting(jwt)) {
      const algorithm = ALGORITHMS[k.alg].verifyAs;
      if (await crypto.subtle.verify(algorithm, k.key, jwt.signature, jwt.signed).catch(() => false)) return true;
    }
    return false;
  }

  /** The keys that may have signed `jwt`: the one its `kid` names, or, without one, every key of its algorithm. */
  #fitting(jwt: UnverifiedJwt): Key[] {
    return this.#keys.filter((k) => k.alg === jwt.alg && (jwt.kid === undefined || k.kid === jwt.kid));
  }

  #refresh(): Promise<void> {
    if (this.#fetching) return this.#fetching;
    if (this.monotonic() - this.#fetchedAt < REFETCH_MS) return Promise.resolve();
    this.#fetchedAt = this.monotonic();
    this.#fetching = this.#fetch().finally(() => this.#fetching = undefined);
    return this.#fetching;
  }

  async #fetch(): Promise<void> {
    try {
      const set = await this.client.request<{ keys?: unknown }>({
        method: "GET",
        path: JWKS_PATH,
        accept: "application/jwk-set+json, application/json",
        timeoutMs: CHECK_TIMEOUT_MS,
      });
      const keys = Array.isArray(set?.keys) ? set.keys : [];
      this.#keys = (await Promise.all(keys.map(importKey))).filter((k) => k !== undefined);
    } catch (e) {
      const why = e instanceof ApiError ? `${e.code} ${e.reason}: ${e.message}` : (e as Error).message;
      log.warn(
        "Cannot read the API server's ServiceAccount keys ({path}): {why}; during a flood of unknown tokens, a " +
          "scraper's new token waits with them",
        { path: JWKS_PATH, why },
      );
    }
  }
}

/** One JSON Web Key of the set, imported for verifying; undefined for a key of another kind. */
async function importKey(jwk: unknown): Promise<Key | undefined> {
  if (!jwk || typeof jwk !== "object") return undefined;
  const { kty, crv, n, e, x, y, kid, alg: declared } = jwk as Record<string, unknown>;
  const alg: Alg | undefined = kty === "RSA" ? "RS256" : kty === "EC" && crv === "P-256" ? "ES256" : undefined;
  if (!alg || (declared !== undefined && declared !== alg)) return undefined;
  const material = alg === "RS256" ? { kty, n, e } : { kty, crv, x, y };
  try {
    const key = await crypto.subtle.importKey("jwk", material as JsonWebKey, ALGORITHMS[alg].importAs, false, [
      "verify",
    ]);
    return { kid: typeof kid === "string" ? kid : undefined, alg, key };
  } catch {
    return undefined;
  }
}

function bytesOf(base64url: string): Uint8Array<ArrayBuffer> | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(base64url)) return undefined;
  try {
    return Uint8Array.from(atob(base64url.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
  } catch {
    return undefined;
  }
}

function jsonOf(base64url: string): Record<string, unknown> | undefined {
  const bytes = bytesOf(base64url);
  if (!bytes) return undefined;
  try {
    const value = JSON.parse(new TextDecoder().decode(bytes));
    return value && typeof value === "object" && !Array.isArray(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

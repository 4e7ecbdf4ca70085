/**
 * A fake API server for the tests of `--metrics-secure` (lib/app/metrics_auth.ts): it answers TokenReviews,
 * SubjectAccessReviews and the ServiceAccount issuer's keys (`/openid/v1/jwks`), and can hold or fail reviews. With a
 * signer of its own, so that a test can make ServiceAccount tokens the way the API server does (a JWT it signs), and
 * forge them the way a stranger can (the same claims, another key).
 */
import assert from "node:assert/strict";
import type { KubeClient, KubeRequest } from "../../lib/kube/client.ts";
import { ApiError } from "../../lib/kube/errors.ts";
import type { Clock } from "./fake_clock.ts";

/**
 * An API server that knows the tokens in `users` and allows the users in `allowed`; `hold` makes reviews wait until
 * released (or aborted); `fail` makes them fail. `jwks` is what it publishes at /openid/v1/jwks (403 when unset).
 */
export class FakeReviews implements KubeClient {
  readonly sent: { kind: string; token?: string; user?: string; signal?: AbortSignal }[] = [];
  readonly held: { release: () => void; signal?: AbortSignal; token?: string }[] = [];
  hold = false;
  fail?: ApiError;
  jwks?: { keys: (JsonWebKey & { kid?: string })[] };
  keyFetches = 0;

  constructor(readonly users: Record<string, string>, readonly allowed: Set<string>) {}

  reviews(kind: "TokenReview" | "SubjectAccessReview"): number {
    return this.sent.filter((r) => r.kind === kind).length;
  }

  async request<T>(req: KubeRequest): Promise<T> {
    if (req.method === "GET" && req.path === "/openid/v1/jwks") {
      this.keyFetches++;
      if (!this.jwks) throw new ApiError(403, "Forbidden", 'cannot get path "/openid/v1/jwks"');
      return structuredClone(this.jwks) as T;
    }
    const body = req.body as { kind: string; spec: { token?: string; user?: string } };
    this.sent.push({ kind: body.kind, token: body.spec.token, user: body.spec.user, signal: req.signal });
    if (this.hold) {
      await new Promise<void>((resolve, reject) => {
        this.held.push({ release: resolve, signal: req.signal, token: body.spec.token });
        req.signal?.addEventListener("abort", () => reject(req.signal!.reason), { once: true });
      });
    }
    if (this.fail) throw this.fail;
    if (body.kind === "TokenReview") {
      const username = this.users[body.spec.token!];
      return { status: username ? { authenticated: true, user: { username, groups: ["g"] } } : {} } as T;
    }
    const allowed = this.allowed.has(body.spec.user!);
    return { status: { allowed, ...(allowed ? {} : { reason: "no RBAC rule" }) } } as T;
  }

  listPage(): never {
    throw new Error("not used");
  }

  watch(): never {
    throw new Error("not used");
  }
}

export const bearer = (token: string) => `Bearer ${token}`;
export const scraper = () => new FakeReviews({ good: "scraper", other: "nobody" }, new Set(["scraper"]));

/** The real setTimeout, taken before any test fakes it. */
const realSetTimeout = globalThis.setTimeout;

/** Waits `ms` real milliseconds, the fake time standing still. */
export const realSleep = (ms: number) => new Promise<void>((r) => realSetTimeout(r, ms));

/**
 * Waits until `cond` holds. A token's digest is computed off the main thread, so a check reaches the fake API server
 * after some real time, not a fixed number of microtasks or turns of the event loop. With `clock`, each wait moves the
 * fake time 100 ms (timers run); without, it waits a real millisecond and the fake time stands still.
 */
export async function until(cond: () => boolean, what: string, clock?: Clock): Promise<void> {
  for (let i = 0; i < 5000; i++) {
    if (cond()) return;
    await (clock ? clock.tickAsync(100) : realSleep(1));
  }
  assert.fail(`timed out waiting for ${what}`);
}

const base64url = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
const jsonPart = (value: unknown) => base64url(new TextEncoder().encode(JSON.stringify(value)));

/** An RS256 key pair, as the API server's service-account key, and its public half as the API server publishes it. */
export async function serviceAccountKey(
  kid: string,
): Promise<{ privateKey: CryptoKey; jwk: JsonWebKey & { kid: string } }> {
  const pair = await crypto.subtle.generateKey(
    { name: "RSASSA-PKCS1-v1_5", modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" },
    true,
    ["sign", "verify"],
  );
  const { kty, n, e } = await crypto.subtle.exportKey("jwk", pair.publicKey);
  return { privateKey: pair.privateKey, jwk: { use: "sig", kty, kid, alg: "RS256", n, e } };
}

/** A ServiceAccount token as the API server issues one: a JWT signed by `key`, for `expiresInS` from `nowS`. */
export async function serviceAccountToken(
  key: CryptoKey,
  kid: string,
  sub: string,
  nowS: number,
  expiresInS = 3600,
): Promise<string> {
  const signed = `${jsonPart({ alg: "RS256", kid })}.${
    jsonPart({ iss: "https://kubernetes.default.svc", sub, iat: nowS, nbf: nowS, exp: nowS + expiresInS })
  }`;
  const signature = await crypto.subtle.sign("RSASSA-PKCS1-v1_5", key, new TextEncoder().encode(signed));
  return `${signed}.${base64url(new Uint8Array(signature))}`;
}

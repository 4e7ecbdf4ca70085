/**
 * IssuerKeys and readJwt (lib/app/issuer_keys.ts): what a token says is read without belief, only the API server's
 * published keys vouch for it, and whatever strangers send, the keys are fetched at most once a minute.
 */
import assert from "node:assert/strict";
import { inForce, IssuerKeys, LEEWAY_S, readJwt, REFETCH_MS } from "../../lib/app/issuer_keys.ts";
import { FakeReviews, serviceAccountKey, serviceAccountToken } from "./fake_reviews.ts";

const part = (v: unknown) => btoa(JSON.stringify(v)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
const sig = "c2lnbmF0dXJl";

Deno.test("readJwt reads a JWT it can verify, and turns away anything else without cryptography", () => {
  const ok = readJwt(`${part({ alg: "RS256", kid: "k" })}.${part({ sub: "u", exp: 2, nbf: 1 })}.${sig}`);
  assert.deepEqual([ok?.alg, ok?.kid, ok?.sub, ok?.exp, ok?.nbf], ["RS256", "k", "u", 2, 1]);
  assert.equal(readJwt(`${part({ alg: "ES256" })}.${part({ sub: "u" })}.${sig}`)?.alg, "ES256");
  const refused: [string, string][] = [
    ["random bytes", crypto.randomUUID().repeat(20)],
    ["two parts", `${part({ alg: "RS256" })}.${part({ sub: "u" })}`],
    ["four parts", `${part({ alg: "RS256" })}.${part({ sub: "u" })}.${sig}.${sig}`],
    ["alg none", `${part({ alg: "none" })}.${part({ sub: "u" })}.${sig}`],
    ["alg HS256 (a shared secret anyone could claim)", `${part({ alg: "HS256" })}.${part({ sub: "u" })}.${sig}`],
    ["no subject", `${part({ alg: "RS256" })}.${part({ iss: "x" })}.${sig}`],
    ["a subject not a string", `${part({ alg: "RS256" })}.${part({ sub: 7 })}.${sig}`],
    ["exp not a number", `${part({ alg: "RS256" })}.${part({ sub: "u", exp: "soon" })}.${sig}`],
    ["a kid not a string", `${part({ alg: "RS256", kid: 1 })}.${part({ sub: "u" })}.${sig}`],
    ["an empty signature", `${part({ alg: "RS256" })}.${part({ sub: "u" })}.`],
    ["a header not JSON", `bm90IGpzb24.${part({ sub: "u" })}.${sig}`],
    ["a payload that is an array", `${part({ alg: "RS256" })}.${part(["u"])}.${sig}`],
    ["not base64url", `${part({ alg: "RS256" })}.${part({ sub: "u" })}.a+b/c=`],
  ];
  for (const [what, token] of refused) assert.equal(readJwt(token), undefined, what);
});

Deno.test("inForce allows a minute of clock skew either way, and a legacy token without exp", () => {
  const jwt = readJwt(`${part({ alg: "RS256" })}.${part({ sub: "u", nbf: 1000, exp: 2000 })}.${sig}`)!;
  const table: [number, boolean][] = [
    [1000 - LEEWAY_S - 1, false],
    [1000 - LEEWAY_S, true],
    [1500, true],
    [2000 + LEEWAY_S - 1, true],
    [2000 + LEEWAY_S, false],
  ];
  for (const [now, want] of table) assert.equal(inForce(jwt, now), want, `at ${now}`);
  assert.ok(inForce(readJwt(`${part({ alg: "RS256" })}.${part({ sub: "u" })}.${sig}`)!, 1e10));
});

Deno.test("IssuerKeys vouches for the API server's signature only, RSA and P-256 alike", async () => {
  const rsa = await serviceAccountKey("rsa");
  const impostor = await serviceAccountKey("rsa");
  const ec = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign", "verify"]);
  const { kty, crv, x, y } = await crypto.subtle.exportKey("jwk", ec.publicKey);
  const api = new FakeReviews({}, new Set());
  api.jwks = {
    keys: [rsa.jwk, { kty, crv, x, y, kid: "ec", alg: "ES256", use: "sig" }, { kty: "oct", k: "c2VjcmV0" }],
  };
  const keys = new IssuerKeys(api);
  const now = Math.floor(Date.now() / 1000);
  const good = readJwt(await serviceAccountToken(rsa.privateKey, "rsa", "u", now))!;
  assert.equal(await keys.signed(good), true);
  assert.equal(await keys.signed(readJwt(await serviceAccountToken(impostor.privateKey, "rsa", "u", now))!), false);
  // A signature moved onto other claims does not verify.
  const moved = readJwt(await serviceAccountToken(rsa.privateKey, "rsa", "v", now))!;
  assert.equal(await keys.signed({ ...moved, signature: good.signature }), false);

  const signed = `${part({ alg: "ES256", kid: "ec" })}.${part({ sub: "u" })}`;
  const raw = await crypto.subtle.sign(
    { name: "ECDSA", hash: "SHA-256" },
    ec.privateKey,
    new TextEncoder().encode(signed),
  );
  const es = btoa(String.fromCharCode(...new Uint8Array(raw))).replace(/\+/g, "-").replace(/\//g, "_").replace(
    /=+$/,
    "",
  );
  assert.equal(await keys.signed(readJwt(`${signed}.${es}`)!), true, "ES256");
  assert.equal(api.keyFetches, 1);
});

Deno.test("IssuerKeys fetches the keys at most once a minute, whatever key ids tokens name", async () => {
  let now = 0;
  const rsa = await serviceAccountKey("k1");
  const api = new FakeReviews({}, new Set());
  api.jwks = { keys: [rsa.jwk] };
  const keys = new IssuerKeys(api, () => now);
  const token = (kid: string) => serviceAccountToken(rsa.privateKey, kid, "u", 0).then((t) => readJwt(t)!);
  // Concurrent first callers share one fetch.
  assert.deepEqual(await Promise.all([keys.signed(await token("k1")), keys.signed(await token("k1"))]), [true, true]);
  for (let i = 0; i < 100; i++) assert.equal(await keys.signed(await token(`unknown-${i}`)), false);
  assert.equal(api.keyFetches, 1, "unknown key ids within the minute");
  // The server's key rotated: a token under the new key is vouched for after the minute.
  const next = await serviceAccountKey("k2");
  api.jwks = { keys: [rsa.jwk, next.jwk] };
  const rotated = readJwt(await serviceAccountToken(next.privateKey, "k2", "u", 0))!;
  assert.equal(await keys.signed(rotated), false, "not fetched again yet");
  now += REFETCH_MS;
  assert.equal(await keys.signed(rotated), true);
  assert.equal(api.keyFetches, 2);
});

Deno.test("IssuerKeys vouches for nothing when the keys cannot be read, and tries again after a minute", async () => {
  let now = 0;
  const rsa = await serviceAccountKey("k1");
  const api = new FakeReviews({}, new Set()); // no jwks: 403
  const keys = new IssuerKeys(api, () => now);
  const jwt = readJwt(await serviceAccountToken(rsa.privateKey, "k1", "u", 0))!;
  assert.equal(await keys.signed(jwt), false);
  assert.equal(await keys.signed(jwt), false);
  assert.equal(api.keyFetches, 1);
  api.jwks = { keys: [rsa.jwk] };
  now += REFETCH_MS;
  assert.equal(await keys.signed(jwt), true);
});

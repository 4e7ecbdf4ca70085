/**
 * MetricsAuth (lib/app/metrics_auth.ts) against a fake API server: controller-runtime's cache lifetimes, what is not
 * cached, shared and abandoned checks, and a flood of unknown tokens that costs a bounded number of reviews.
 */
import assert from "node:assert/strict";
import {
  ALLOWED_MS,
  AUTHENTICATION_MS,
  BUDGET,
  CHECK_TIMEOUT_MS,
  DENIED_MS,
  MAX_AUTHORIZATION_BYTES,
  MAX_WAITING_SCRAPES,
  MetricsAuth,
  type Verdict,
} from "../../lib/app/metrics_auth.ts";
import { ApiError } from "../../lib/kube/errors.ts";
import { TtlCache } from "../../lib/kube/ttl_cache.ts";
import { withClock } from "./fake_clock.ts";
import { bearer, scraper, until } from "./fake_reviews.ts";

Deno.test(
  "MetricsAuth caches as controller-runtime: authentication 1 min, allowed 5 min, denied 30 s",
  withClock(async (clock) => {
    const api = scraper();
    const auth = new MetricsAuth(api);
    assert.deepEqual(await auth.check(bearer("good"), "/metrics"), { ok: true, user: "scraper" });
    assert.deepEqual([api.reviews("TokenReview"), api.reviews("SubjectAccessReview")], [1, 1]);
    await clock.tickAsync(AUTHENTICATION_MS - 1);
    assert.ok((await auth.check(bearer("good"), "/metrics")).ok);
    assert.deepEqual([api.reviews("TokenReview"), api.reviews("SubjectAccessReview")], [1, 1], "all from the caches");
    await clock.tickAsync(1);
    assert.ok((await auth.check(bearer("good"), "/metrics")).ok);
    assert.deepEqual([api.reviews("TokenReview"), api.reviews("SubjectAccessReview")], [2, 1], "authorization cached");
    await clock.tickAsync(ALLOWED_MS - AUTHENTICATION_MS);
    assert.ok((await auth.check(bearer("good"), "/metrics")).ok);
    assert.deepEqual([api.reviews("TokenReview"), api.reviews("SubjectAccessReview")], [3, 2]);

    const denied = await auth.check(bearer("other"), "/metrics");
    assert.deepEqual(denied, {
      ok: false,
      status: 403,
      reason: 'Forbidden: user "nobody" cannot get path "/metrics": no RBAC rule',
    });
    await clock.tickAsync(DENIED_MS - 1);
    assert.deepEqual(await auth.check(bearer("other"), "/metrics"), denied);
    assert.equal(api.reviews("SubjectAccessReview"), 3);
    await clock.tickAsync(1);
    await auth.check(bearer("other"), "/metrics");
    assert.equal(api.reviews("SubjectAccessReview"), 4, "a denial stands 30 s");

    // An unknown token is refused for a minute without another review.
    const unknown = await auth.check(bearer("forged"), "/metrics");
    assert.equal(unknown.ok ? 200 : unknown.status, 401);
    await clock.tickAsync(AUTHENTICATION_MS - 1);
    await auth.check(bearer("forged"), "/metrics");
    assert.equal(api.sent.filter((r) => r.token === "forged").length, 1);
  }),
);

Deno.test("MetricsAuth refuses without a review: no token, another scheme, a token over 8 KiB", async () => {
  const api = scraper();
  const auth = new MetricsAuth(api);
  for (const header of [null, "", "Basic Zm9vOmJhcg==", `Bearer ${"x".repeat(MAX_AUTHORIZATION_BYTES)}`]) {
    const v = await auth.check(header, "/metrics");
    assert.equal(v.ok ? 200 : v.status, 401, String(header).slice(0, 20));
  }
  assert.equal(api.sent.length, 0);
  // A 4 KB token is reviewed.
  await auth.check(bearer("t".repeat(4096)), "/metrics");
  assert.equal(api.reviews("TokenReview"), 1);
});

Deno.test("MetricsAuth does not cache a failed review: the next scrape reviews again", async () => {
  const api = scraper();
  const auth = new MetricsAuth(api);
  api.fail = new ApiError(403, "Forbidden", "tokenreviews is forbidden");
  const v = await auth.check(bearer("good"), "/metrics");
  assert.equal(v.ok ? 200 : v.status, 500);
  assert.match((v as { reason: string }).reason, /cannot review the request: 403 Forbidden/);
  api.fail = undefined;
  assert.ok((await auth.check(bearer("good"), "/metrics")).ok);
  assert.equal(api.reviews("TokenReview"), 2);
});

Deno.test("MetricsAuth: concurrent scrapes with one token share one review", async () => {
  const api = scraper();
  api.hold = true;
  const auth = new MetricsAuth(api);
  const all = Array.from({ length: 20 }, () => auth.check(bearer("good"), "/metrics"));
  await until(() => auth.pending.scrapes === 20, "20 scrapes waiting");
  assert.equal(api.sent.length, 1);
  api.held.shift()!.release();
  await until(() => api.held.length === 1, "the SubjectAccessReview");
  api.held.shift()!.release();
  assert.ok((await Promise.all(all)).every((v) => v.ok));
  assert.deepEqual([api.reviews("TokenReview"), api.reviews("SubjectAccessReview")], [1, 1]);
});

Deno.test("MetricsAuth aborts a check once every client waiting for it has gone away, not before", async () => {
  const api = scraper();
  api.hold = true;
  const auth = new MetricsAuth(api);
  const a = new AbortController();
  const b = new AbortController();
  const first = auth.check(bearer("good"), "/metrics", a.signal);
  const second = auth.check(bearer("good"), "/metrics", b.signal);
  await until(() => auth.pending.scrapes === 2 && api.sent.length === 1, "both waiting for one review");
  const review = api.sent[0];
  a.abort(new Error("client gone"));
  assert.equal((await first).ok, false);
  assert.equal(review.signal?.aborted, false, "one client still waits");
  b.abort(new Error("client gone"));
  const v = await second;
  assert.equal(v.ok ? 200 : v.status, 503);
  assert.equal(review.signal?.aborted, true, "the review is aborted");
  await until(() => auth.pending.inFlight === 0, "the slot freed");
  assert.deepEqual(auth.pending, { inFlight: 0, waiting: 0, scrapes: 0 });
  // Nothing was learned: the next scrape reviews.
  api.hold = false;
  assert.ok((await auth.check(bearer("good"), "/metrics")).ok);
});

Deno.test("MetricsAuth: at most 64 scrapes wait for verdicts, 503 beyond; one answered from the caches never waits", async () => {
  const api = scraper();
  const auth = new MetricsAuth(api);
  assert.ok((await auth.check(bearer("good"), "/metrics")).ok);
  api.hold = true;
  const waiting = Array.from({ length: MAX_WAITING_SCRAPES }, () => auth.check(bearer("other"), "/metrics"));
  await until(() => auth.pending.scrapes === MAX_WAITING_SCRAPES, "64 scrapes waiting");
  const over = await auth.check(bearer("other"), "/metrics");
  assert.equal(over.ok ? 200 : over.status, 503);
  assert.equal((over as { retryAfterSeconds?: number }).retryAfterSeconds, 1);
  assert.ok((await auth.check(bearer("good"), "/metrics")).ok, "from the caches");
  api.held.shift()!.release();
  await until(() => api.held.length === 1, "the SubjectAccessReview");
  api.held.shift()!.release();
  assert.ok((await Promise.all(waiting)).every((v) => !v.ok && v.status === 403));
  assert.equal(api.reviews("TokenReview"), 2);
});

Deno.test(
  "MetricsAuth gives up on a check after 10 s (the review timeout), and caches nothing",
  withClock(async (clock) => {
    const api = scraper();
    api.hold = true;
    const auth = new MetricsAuth(api);
    const pending = auth.check(bearer("good"), "/metrics");
    await until(() => api.sent.length === 1, "the review", clock);
    await clock.tickAsync(CHECK_TIMEOUT_MS);
    const v = await pending;
    assert.equal(v.ok ? 200 : v.status, 503);
    assert.match((v as { reason: string }).reason, /no verdict within 10s/);
    assert.deepEqual(auth.pending, { inFlight: 0, waiting: 0, scrapes: 0 });
  }),
);

Deno.test(
  "MetricsAuth under a flood of unknown tokens: bounded reviews and waiters, 429 at once, a known scraper served",
  withClock(async (clock) => {
    const api = scraper();
    const auth = new MetricsAuth(api);
    assert.ok((await auth.check(bearer("good"), "/metrics")).ok, "the scraper, before the flood");
    const before = api.sent.length;
    let scrapes = 0;
    let okScrapes = 0;
    const statuses = new Map<number, number>();
    let mostPending = 0;
    const all: Promise<void>[] = [];
    const count = (v: Verdict) => {
      const s = v.ok ? 200 : v.status;
      statuses.set(s, (statuses.get(s) ?? 0) + 1);
    };
    // 150 unknown 4 KB tokens a second for 3 minutes (past every cache lifetime), each client giving up after 1 s;
    // the scraper every 15 s.
    const seconds = 180;
    for (let ms = 0; ms < seconds * 1000; ms += 20) {
      for (let i = 0; i < 3; i++) {
        const stop = new AbortController();
        setTimeout(() => stop.abort(new Error("gave up")), 1000);
        const token = crypto.randomUUID().repeat(4096 / 36 + 1).slice(0, 4096);
        all.push(auth.check(bearer(token), "/metrics", stop.signal).then(count));
      }
      if (ms % 15_000 === 0) {
        scrapes++;
        all.push(auth.check(bearer("good"), "/metrics").then((v) => void (v.ok && okScrapes++)));
      }
      const p = auth.pending;
      mostPending = Math.max(mostPending, p.inFlight + p.waiting);
      await clock.tickAsync(20);
    }
    let settled = 0;
    for (const p of all) p.then(() => settled++);
    await until(() => settled === all.length, "every check settled", clock);
    const reviews = api.sent.length - before;
    assert.ok(
      reviews <= BUDGET.burst + BUDGET.qps * (seconds + 10),
      `${reviews} reviews in ${seconds} s, at most ${BUDGET.qps} a second`,
    );
    assert.ok(mostPending <= BUDGET.maxInFlight + BUDGET.maxWaiting, `${mostPending} checks pending at once`);
    assert.equal(okScrapes, scrapes, "every scrape of the known scraper got its metrics");
    assert.ok((statuses.get(429) ?? 0) > seconds * 50, `refused at once: ${JSON.stringify([...statuses])}`);
    assert.equal(auth.refused, statuses.get(429));
  }),
);

Deno.test("TtlCache keeps at most `max` entries, least recently used out first, and forgets expired ones", () => {
  let now = 0;
  const cache = new TtlCache<number>(3, () => now);
  cache.set("a", 1, 100);
  cache.set("b", 2, 100);
  cache.set("c", 3, 100);
  assert.equal(cache.get("a"), 1); // a is now the most recently used
  cache.set("d", 4, 100);
  assert.equal(cache.size, 3);
  assert.equal(cache.get("b"), undefined, "b was the least recently used");
  assert.deepEqual([cache.get("a"), cache.get("c"), cache.get("d")], [1, 3, 4]);
  now = 100;
  assert.equal(cache.get("a"), undefined, "expired");
  assert.equal(cache.size, 2);
});

/**
 * A known scraper always gets its scrape (issue 44): MetricsAuth (lib/app/metrics_auth.ts) under the worst a flood of
 * strangers can do, every waiting place taken again as soon as it frees, as 160 keep-alive connections sending random
 * tokens do. A scraper whose cached verdict expired is answered, never refused; a new token the cluster issued to it
 * (a rotated ServiceAccount token) is reviewed within seconds; and a token that only claims to be the scraper's, or
 * that the cluster issued to someone else, waits with the strangers'.
 */
import assert from "node:assert/strict";
import {
  AUTHENTICATION_MS,
  BUDGET,
  MAX_WAITING_SCRAPES,
  MetricsAuth,
  type Verdict,
} from "../../lib/app/metrics_auth.ts";
import { type Clock, withClock } from "./fake_clock.ts";
import {
  bearer,
  FakeReviews,
  realSleep,
  scraper,
  serviceAccountKey,
  serviceAccountToken,
  until,
} from "./fake_reviews.ts";

const status = (v: Verdict) => v.ok ? 200 : v.status;
const randomToken = () => crypto.randomUUID().repeat(4096 / 36 + 1).slice(0, 4096);

/**
 * Strangers who take every place the moment it frees: distinct tokens until the budget's slots and line are full,
 * then the newest token again (one scrape per connection) until strangers' scrapes fill their waiting cap. The fake
 * API server holds every review, and {@link step} answers the oldest one each 200 ms: the budget's 5 a second.
 */
class Flood {
  readonly statuses = new Map<number, number>();
  /** The most checks holding a slot or waiting for one, after any refill. */
  mostPending = 0;
  /** Refills after which strangers held fewer than every place (the budget's, or their waiting scrapes'). */
  gaps = 0;
  readonly #all: Promise<void>[] = [];
  readonly #stop = new AbortController();
  #outstanding = 0;
  #last = "";

  constructor(
    readonly auth: MetricsAuth,
    readonly api: FakeReviews,
    readonly clock: Clock,
    readonly token: () => string = randomToken,
  ) {}

  /**
   * Takes every free place again: a new token while the budget has room, else the newest token again, until
   * strangers' scrapes fill their cap or one is refused at once (their places are all taken).
   */
  async refill(): Promise<void> {
    const pending = () => this.auth.pending.inFlight + this.auth.pending.waiting;
    while (this.#outstanding < MAX_WAITING_SCRAPES) {
      if (pending() < BUDGET.maxInFlight + BUDGET.maxWaiting) this.#last = this.token();
      if (!await this.#send(this.#last)) break;
    }
    this.mostPending = Math.max(this.mostPending, pending());
    if (pending() < BUDGET.maxInFlight + BUDGET.maxWaiting && this.#outstanding < MAX_WAITING_SCRAPES) this.gaps++;
  }

  /** The API server answers the oldest review it holds; 200 ms pass; strangers take the freed places. */
  async step(): Promise<void> {
    this.api.held.shift()?.release();
    await this.clock.tickAsync(200);
    await this.refill();
  }

  /** Every stranger goes away, and the held reviews are answered. */
  async stop(): Promise<void> {
    this.#stop.abort(new Error("the flood ended"));
    this.api.hold = false;
    for (const h of this.api.held.splice(0)) h.release();
    let settled = 0;
    for (const p of this.#all) p.then(() => settled++);
    await until(() => settled === this.#all.length, "every stranger's scrape settled", this.clock);
  }

  /** One stranger's scrape; true when it waits (it reached the check, and was not refused at once). */
  async #send(token: string): Promise<boolean> {
    const before = this.auth.pending.scrapes;
    let settled = false;
    this.#outstanding++;
    this.#all.push(
      this.auth.check(bearer(token), "/metrics", this.#stop.signal).then((v) => {
        settled = true;
        this.#outstanding--;
        this.statuses.set(status(v), (this.statuses.get(status(v)) ?? 0) + 1);
      }),
    );
    await until(() => settled || this.auth.pending.scrapes > before, "a stranger's scrape to arrive");
    return !settled;
  }
}

/**
 * A scrape with `token`, sent when strangers hold every place, and given real time (no fake time passes) to reach the
 * check: it must find its way past them, not slip into a place freed a moment later. It has arrived when it is
 * answered or the scrapes waiting change (a known one may push a stranger's check and its scrapes out); a digest
 * takes microseconds, so 50 ms are plenty when neither shows.
 */
async function scrapeAmidFlood(auth: MetricsAuth, token: string): Promise<{ verdict?: Verdict }> {
  const out: { verdict?: Verdict } = {};
  const before = auth.pending.scrapes;
  auth.check(bearer(token), "/metrics").then((v) => out.verdict = v);
  for (let ms = 0; ms < 50 && out.verdict === undefined && auth.pending.scrapes === before; ms++) await realSleep(1);
  return out;
}

/** Scrapes with `token` until answered 200, trying again after a 429 or 503 as Retry-After says: the fake ms taken. */
async function scrapeUntilAnswered(
  auth: MetricsAuth,
  flood: Flood,
  token: string,
  giveUpMs: number,
): Promise<{ ms: number; tries: number; last: number }> {
  const started = Date.now();
  let tries = 0;
  let last = 0;
  while (Date.now() - started < giveUpMs) {
    tries++;
    const scrape = await scrapeAmidFlood(auth, token);
    while (!scrape.verdict && Date.now() - started < giveUpMs) await flood.step();
    const verdict = scrape.verdict;
    if (!verdict) break;
    last = status(verdict);
    if (verdict.ok) return { ms: Date.now() - started, tries, last };
    if (last !== 429 && last !== 503) break;
    const retryAt = Date.now() + ((verdict as { retryAfterSeconds: number }).retryAfterSeconds * 1000);
    while (Date.now() < retryAt) await flood.step();
  }
  return { ms: Infinity, tries, last };
}

Deno.test(
  "MetricsAuth answers a known scraper whose verdict expired while strangers hold every waiting place",
  withClock(async (clock) => {
    const api = scraper();
    const auth = new MetricsAuth(api);
    assert.ok((await auth.check(bearer("good"), "/metrics")).ok, "the scraper, before the flood");
    await clock.tickAsync(AUTHENTICATION_MS); // its authentication expired (its authorization stands 5 minutes)
    api.hold = true;
    const flood = new Flood(auth, api, clock);
    await flood.refill();
    assert.deepEqual(
      auth.pending,
      { inFlight: BUDGET.maxInFlight, waiting: BUDGET.maxWaiting, scrapes: MAX_WAITING_SCRAPES },
      "strangers hold every place",
    );
    // The scraper every 2 s for 20 s, never trying again: each scrape must be answered 200.
    const scrapes: { at: number; status: number; ms: number }[] = [];
    const start = Date.now();
    for (let i = 0; i < 10; i++) {
      const at = Date.now();
      const scrape = await scrapeAmidFlood(auth, "good");
      while (!scrape.verdict && Date.now() - at < 10_000) await flood.step();
      scrapes.push({ at: at - start, status: scrape.verdict ? status(scrape.verdict) : 0, ms: Date.now() - at });
      while (Date.now() - at < 2000) await flood.step();
    }
    await flood.stop();
    assert.deepEqual(scrapes.filter((s) => s.status !== 200), [], "every scrape answered 200");
    assert.ok(scrapes.every((s) => s.ms <= 2000), `answered within 2 s: ${JSON.stringify(scrapes)}`);
    assert.ok(flood.mostPending <= BUDGET.maxInFlight + BUDGET.maxWaiting, `${flood.mostPending} checks at once`);
    assert.equal(flood.gaps, 0, "strangers held every place after every step");
    assert.ok((flood.statuses.get(401) ?? 0) >= 5 * 20, `strangers reviewed: ${JSON.stringify([...flood.statuses])}`);
  }),
);

Deno.test(
  "MetricsAuth reviews a scraper's rotated ServiceAccount token within 10 s under the flood; forged ones wait",
  withClock(async (clock) => {
    const cluster = await serviceAccountKey("k1");
    const impostor = await serviceAccountKey("k1"); // another key under the cluster key's id
    const user = "system:serviceaccount:monitoring:prometheus";
    const nowS = Math.floor(Date.now() / 1000);
    const rotated = await serviceAccountToken(cluster.privateKey, "k1", user, nowS);
    const forged = await serviceAccountToken(impostor.privateKey, "k1", user, nowS);
    const otherUser = await serviceAccountToken(cluster.privateKey, "k1", "system:serviceaccount:x:intruder", nowS);
    const expired = await serviceAccountToken(cluster.privateKey, "k1", user, nowS - 7200, 3600);
    const api = new FakeReviews(
      { good: user, [rotated]: user, [otherUser]: "system:serviceaccount:x:intruder" },
      new Set([user]),
    );
    api.jwks = { keys: [cluster.jwk] };
    const auth = new MetricsAuth(api);
    assert.ok((await auth.check(bearer("good"), "/metrics")).ok, "the scraper, before the flood");
    // Strangers who know the scraper's name: half their tokens are JWTs naming it, each with a signature of its own.
    const [signedPart] = /^[^.]+\.[^.]+\./.exec(forged)!;
    let n = 0;
    const strangerToken = () =>
      n++ % 2 ? randomToken() : signedPart + btoa(randomToken().slice(0, 256)).replace(/=+$/, "");
    api.hold = true;
    const flood = new Flood(auth, api, clock, strangerToken);
    await flood.refill();

    // None of these is the cluster's token of a scraper in force: each is refused at once, as a stranger's.
    for (const [what, token] of [["forged", forged], ["another user's", otherUser], ["expired", expired]]) {
      const v = await auth.check(bearer(token), "/metrics");
      assert.ok([429, 503].includes(status(v)), `the ${what} token refused at once as a stranger's: ${status(v)}`);
      await flood.refill();
    }

    const answered = await scrapeUntilAnswered(auth, flood, rotated, 15_000);
    await flood.stop();
    assert.ok(answered.ms <= 10_000, `the rotated token answered after ${answered.ms} ms: ${JSON.stringify(answered)}`);
    assert.ok(api.keyFetches <= 1, `the cluster's keys fetched ${api.keyFetches} times in under a minute`);
    assert.ok(flood.mostPending <= BUDGET.maxInFlight + BUDGET.maxWaiting, `${flood.mostPending} checks at once`);
    assert.equal(flood.gaps, 0, "strangers held every place after every step");
  }),
);

/**
 * A known scraper always gets its scrape (issue 44), against the real API server's reviews: the controller runs as it
 * ships, inside 100M / 30 % CPU with `--metrics-secure`, while 160 keep-alive connections send random 4 KB tokens as
 * fast as they are answered. The scraper scrapes every 2 s on a keep-alive connection of its own and never tries again,
 * through the expiry of its cached authentication (1 minute): every scrape must be answered 200. A second
 * ServiceAccount token of the scraper, made mid-flood (its token rotated), must be answered within 10 s.
 *
 * The flood is as hostile as its tokens can make it: 12 are live at a time (as many as the review budget has places
 * for checks), each sent on a dozen connections at once and replaced by a new random one once answered. So the
 * budget's line is always full, and the scrapes that share a waiting check fill strangers' waiting places too.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { makeCerts } from "../../testenv/certs.ts";
import { createServiceAccount, freePorts, kubeconfigYaml } from "../../testenv/controlplane.ts";
import { clientFor, eventually, testCluster, uniqueName } from "../../testenv/shared.ts";
import { Cgroup } from "../../testenv/cgroup.ts";
import { imageEnvironment } from "../../testenv/image_env.ts";
import { shippedArgv, spawnLogged } from "../../testenv/process.ts";
import { auditNow, requestsBy } from "../../testenv/harness.ts";
import { espejoIdentity } from "../../testenv/espejo_rbac.ts";
import {
  installMetricsRoles,
  KeepAliveScraper,
  randomToken,
  rawScrape,
  type ScrapeResult,
} from "../../testenv/metrics_scrapes.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const MiB = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const CONNECTIONS = 160;
/** Past the 1-minute authentication cache: the scraper's verdict is renewed under the flood. */
const RUN_SECONDS = 80;
const SCRAPE_EVERY_MS = 2000;
/** Prometheus's default scrape timeout. */
const SCRAPE_TIMEOUT_MS = 10_000;
const ROTATE_AT_SECONDS = 20;
/** Live tokens of the flood: the review budget's 4 checks in flight and 8 waiting. */
const LIVE_TOKENS = 12;

Deno.test(
  "--metrics-secure inside 100M/30 %: under 160 keep-alive connections of random tokens, a known scraper gets every " +
    "scrape after its cached verdict expires, and its rotated token is answered within 10 s",
  opts,
  async () => {
    const c = await testCluster();
    const admin = clientFor(c);
    const ns = uniqueName("metrics-known");
    const dir = await Deno.makeTempDir({ prefix: "espejo-metrics-known-" });
    const cgroup = await Cgroup.create(`espejo-metricsknown-${crypto.randomUUID().slice(0, 8)}`, "100M", 0.3);
    let child: Deno.ChildProcess | undefined;
    let exited: Deno.CommandStatus | undefined;
    const logFile = join(dir, "controller.log");
    const flood: KeepAliveScraper[] = [];
    let stop = false;
    try {
      await installMetricsRoles(admin);
      await espejoIdentity(admin, ns);
      const espejo = await createServiceAccount(admin, ns, "espejo", "espejo-metrics-auth");
      const scraper = await createServiceAccount(admin, ns, "scraper", "espejo-metrics-reader");
      const kubeconfig = join(dir, "kubeconfig");
      await Deno.writeTextFile(kubeconfig, kubeconfigYaml(c.server, c.caPem, espejo));
      const certs = await makeCerts(dir);
      const certDir = join(dir, "metrics-certs");
      await Deno.mkdir(certDir);
      await Deno.copyFile(certs.servingCert, join(certDir, "tls.crt"));
      await Deno.copyFile(certs.servingKey, join(certDir, "tls.key"));
      const ca = await Deno.readTextFile(certs.caCert);

      const [port, healthPort] = await freePorts(2);
      child = spawnLogged(
        shippedArgv([
          ...["--kubeconfig", kubeconfig, "--metrics-secure", `--metrics-addr=127.0.0.1:${port}`],
          ...["--metrics-cert-path", certDir, `--health-addr=127.0.0.1:${healthPort}`, "--log-format=json"],
        ]),
        { env: { ...imageEnvironment(), WATCH_NAMESPACE: ns }, logFile, cgroup },
      );
      child.status.then((s) => exited = s);
      const alive = async () => {
        if (!exited) return;
        const tail = (await Deno.readTextFile(logFile).catch(() => "")).slice(-3000);
        throw new Error(
          `the controller ended (${JSON.stringify(exited)}, ${await cgroup.oomKills()} OOM kills): ${tail}`,
        );
      };

      // The scraper is known: its token allowed, its verdict cached for a minute from now.
      const first = await eventually(
        async () => {
          await alive();
          const r = await rawScrape(port, ca, scraper.token, SCRAPE_TIMEOUT_MS);
          return r.status === 200 ? r : undefined;
        },
        60_000,
        "the scraper's first scrape",
      );
      const known = performance.now();
      assert.equal(first.status, 200);
      const before = await cgroup.stats();
      cgroup.sampleRss(250);
      const since = auditNow();

      // The flood: each connection sends its next scrape as soon as the last is answered, with one of the live
      // tokens; a token answered 401 (reviewed, and cached as refused) is replaced by a new one.
      const statuses = new Map<string, number>();
      const live = Array.from({ length: LIVE_TOKENS }, randomToken);
      const flooding = Array.from({ length: CONNECTIONS }, async (_, i) => {
        const conn = new KeepAliveScraper(port, ca);
        flood.push(conn);
        const slot = i % LIVE_TOKENS;
        while (!stop) {
          const token = live[slot];
          const r = await conn.scrape(token, SCRAPE_TIMEOUT_MS);
          statuses.set(String(r.status), (statuses.get(String(r.status)) ?? 0) + 1);
          if (r.status === 401 && live[slot] === token) live[slot] = randomToken();
        }
        conn.close();
      });
      const elapsed = () => Math.round((performance.now() - known) / 100) / 10;

      // The scraper: every 2 s, never trying again, on a connection of its own.
      const scrapes: { at: number; status: ScrapeResult["status"]; ms: number }[] = [];
      const scraping = (async () => {
        const conn = new KeepAliveScraper(port, ca);
        for (let i = 1; (i * SCRAPE_EVERY_MS) / 1000 <= RUN_SECONDS; i++) {
          while (performance.now() - known < i * SCRAPE_EVERY_MS) await sleep(20);
          const at = elapsed();
          const begun = performance.now();
          const r = await conn.scrape(scraper.token, SCRAPE_TIMEOUT_MS);
          scrapes.push({ at, status: r.status, ms: Math.round(performance.now() - begun) });
        }
        conn.close();
      })();

      // Mid-flood, the scraper's token rotates: a new one, as the kubelet renews a projected token. It scrapes as
      // the scraper would, trying again after a refusal as Retry-After says.
      while (performance.now() - known < ROTATE_AT_SECONDS * 1000) await sleep(100);
      const { status: { token: rotated } } = await admin.request<{ status: { token: string } }>({
        method: "POST",
        path: `/api/v1/namespaces/${ns}/serviceaccounts/scraper/token`,
        body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: { expirationSeconds: 3600 } },
      });
      assert.notEqual(rotated, scraper.token);
      const made = performance.now();
      const rotation: { status: ScrapeResult["status"]; ms: number }[] = [];
      const rotatedConn = new KeepAliveScraper(port, ca);
      while (performance.now() - made < 15_000) {
        const r = await rotatedConn.scrape(rotated, SCRAPE_TIMEOUT_MS);
        rotation.push({ status: r.status, ms: Math.round(performance.now() - made) });
        if (r.status === 200) break;
        await sleep((r.retryAfter ?? 1) * 1000);
      }
      rotatedConn.close();

      await scraping;
      stop = true;
      await Promise.all(flooding);
      const after = await cgroup.stats();
      await alive();
      const requests = await requestsBy(c, espejo, since);
      const reviews = requests.filter((e) =>
        e.verb === "create" && /^(tokenreviews|subjectaccessreviews)$/.test(e.objectRef?.resource ?? "")
      ).length;
      // The rotated token went ahead because the API server's signature on it was checked with its published keys.
      const keyReads = requests.filter((e) =>
        e.requestURI === "/openid/v1/jwks" && e.responseStatus?.code === 200
      );
      const seconds = (performance.now() - known) / 1000;
      const answered = rotation.find((r) => r.status === 200)?.ms ?? Infinity;
      const refused = scrapes.filter((s) => s.status !== 200);
      console.log(
        `known scraper: ${refused.length} of ${scrapes.length} scrapes not answered 200 ${JSON.stringify(refused)}, ` +
          `slowest ${Math.max(...scrapes.map((s) => s.ms))} ms; rotated token answered after ${answered} ms ` +
          `${JSON.stringify(rotation)}; ${keyReads.length} reads of the issuer's keys; flood ${
            JSON.stringify(Object.fromEntries(statuses))
          }; ${reviews} reviews in ` +
          `${seconds.toFixed(0)} s; anonymous memory ${MiB(before.rssBytes)} MiB before, peak ` +
          `${MiB(cgroup.peakRssBytes)} MiB; throttled ${((after.throttledNs - before.throttledNs) / 1e9).toFixed(1)} s`,
      );
      assert.equal(await cgroup.oomKills(), 0, "no kill by the memory limit");
      assert.equal(scrapes.length, RUN_SECONDS * 1000 / SCRAPE_EVERY_MS);
      assert.deepEqual(refused, [], "every scrape of the known scraper answered 200, its verdict's expiry included");
      assert.ok(answered <= 10_000, `the rotated token answered within 10 s: ${JSON.stringify(rotation)}`);
      assert.ok(keyReads.length >= 1 && keyReads.length <= 2, `${keyReads.length} reads of the keys, once a minute`);
      assert.ok((statuses.get("429") ?? 0) + (statuses.get("503") ?? 0) > 0, "the flood was refused at once");
      assert.ok(reviews <= 10 + 5 * (seconds + 5), `${reviews} reviews in ${seconds.toFixed(0)} s, 5 a second`);
      assert.ok(cgroup.peakRssBytes < 80 * 1024 * 1024, `anonymous peak ${MiB(cgroup.peakRssBytes)} MiB`);
    } finally {
      stop = true;
      for (const conn of flood) conn.close();
      try {
        child?.kill("SIGTERM");
      } catch { /* gone */ }
      await child?.status;
      await cgroup.remove();
      await admin.request({ method: "DELETE", path: `/api/v1/namespaces/${ns}` }).catch(() => {});
      admin.close();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
);

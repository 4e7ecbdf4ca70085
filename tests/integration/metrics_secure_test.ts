/**
 * `--metrics-secure`: /metrics over HTTPS for authenticated and authorized scrapers only, checked by the real API
 * server's TokenReview and SubjectAccessReview (as controller-runtime's filters do), with deploy/'s RBAC for both
 * sides. The controller runs as it ships (main.ts with the shipped permissions).
 */
import assert from "node:assert/strict";
import https from "node:https";
import { join } from "node:path";
import { repoRoot } from "../../testenv/build.ts";
import { makeCerts } from "../../testenv/certs.ts";
import { createServiceAccount, freePorts, kubeconfigYaml } from "../../testenv/controlplane.ts";
import { shippedFlags } from "../../testenv/permissions.ts";
import { clientFor, eventually, testCluster, uniqueName } from "../../testenv/shared.ts";
import { Cgroup } from "../../testenv/cgroup.ts";
import { imageEnvironment } from "../../testenv/image_env.ts";
import { shippedArgv, spawnLogged } from "../../testenv/process.ts";
import { auditNow, createNamespace, createSyncConfig, getObject, requestsBy } from "../../testenv/harness.ts";
import { espejoIdentity } from "../../testenv/espejo_rbac.ts";
import { installMetricsRoles, randomToken, rawScrape } from "../../testenv/metrics_scrapes.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

/** GET /metrics over HTTPS without verifying the certificate (a self-signed one), with an optional bearer token. */
function scrape(port: number, token?: string, ca?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request({
      host: "127.0.0.1",
      port,
      path: "/metrics",
      ...(ca ? { ca } : { rejectUnauthorized: false }),
      headers: token ? { authorization: `Bearer ${token}` } : {},
    }, (res) => {
      let body = "";
      res.on("data", (d) => body += d);
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

Deno.test("--metrics-secure serves /metrics over HTTPS only to a token allowed to get /metrics", opts, async () => {
  const c = await testCluster();
  const admin = clientFor(c);
  const ns = uniqueName("metrics-secure");
  const dir = await Deno.makeTempDir();
  const children: Deno.ChildProcess[] = [];
  try {
    await installMetricsRoles(admin);
    await espejoIdentity(admin, ns);
    const espejo = await createServiceAccount(admin, ns, "espejo", "espejo-metrics-auth");
    const scraper = await createServiceAccount(admin, ns, "scraper", "espejo-metrics-reader");
    const nobody = await createServiceAccount(admin, ns, "nobody", "view");
    const kubeconfig = join(dir, "kubeconfig");
    await Deno.writeTextFile(kubeconfig, kubeconfigYaml(c.server, c.caPem, espejo));

    const start = async (extra: string[]) => {
      const [port] = await freePorts(1);
      const child = new Deno.Command(Deno.execPath(), {
        args: [
          ...["run", ...shippedFlags(), join(repoRoot, "main.ts"), "--kubeconfig", kubeconfig, "--health-addr=0"],
          ...["--metrics-secure", `--metrics-addr=127.0.0.1:${port}`, ...extra],
        ],
        env: { WATCH_NAMESPACE: ns },
        stdout: "null",
        stderr: "null",
      }).spawn();
      children.push(child);
      return port;
    };

    // A self-signed certificate when none is given, as controller-runtime makes one.
    const port = await start([]);
    const anonymous = await eventually(() => scrape(port).catch(() => undefined), 30_000, "the HTTPS endpoint");
    assert.equal(anonymous.status, 401, anonymous.body);
    assert.match(anonymous.body, /Unauthorized: a bearer token is needed/);
    const bogus = await scrape(port, "not-a-token");
    assert.equal(bogus.status, 401, bogus.body);
    const denied = await scrape(port, nobody.token);
    assert.equal(denied.status, 403, denied.body);
    assert.match(denied.body, new RegExp(`user "system:serviceaccount:${ns}:nobody" cannot get path "/metrics"`));
    const allowed = await scrape(port, scraper.token);
    assert.equal(allowed.status, 200, allowed.body);
    assert.match(allowed.body, /^# TYPE espejo_api_requests_total counter$/m);
    // No plain HTTP on the port.
    await assert.rejects(fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text()));

    // A certificate from --metrics-cert-path (tls.crt, tls.key), which a scraper can verify.
    const certs = await makeCerts(dir); // paths of PEM files: a CA, and a serving pair for 127.0.0.1 it signed
    const certDir = join(dir, "metrics-certs");
    await Deno.mkdir(certDir);
    await Deno.copyFile(certs.servingCert, join(certDir, "tls.crt"));
    await Deno.copyFile(certs.servingKey, join(certDir, "tls.key"));
    const ca = await Deno.readTextFile(certs.caCert);
    const verified = await start(["--metrics-cert-path", certDir]);
    const ok = await eventually(
      () => scrape(verified, scraper.token, ca).catch(() => undefined),
      30_000,
      "the HTTPS endpoint with the given certificate",
    );
    assert.equal(ok.status, 200, ok.body);
  } finally {
    for (const child of children) {
      try {
        child.kill("SIGTERM");
      } catch { /* gone */ }
      await child.status;
    }
    admin.close();
    await Deno.remove(dir, { recursive: true });
  }
});

const MiB = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);

const FLOOD_PER_SECOND = 150;
/** Longer than the 1-minute authentication cache: the scraper's verdict is renewed during the flood. */
const FLOOD_SECONDS = 75;
const RECONCILE_INTERVAL_MS = 10_000;

Deno.test(
  "--metrics-secure inside 100M/30 %: a flood of unknown tokens neither kills the controller nor delays restores, " +
    "and a scraper still gets its metrics",
  opts,
  async () => {
    const c = await testCluster();
    const admin = clientFor(c);
    const ns = uniqueName("metrics-flood");
    const target = uniqueName("metrics-flood-target");
    const dir = await Deno.makeTempDir({ prefix: "espejo-metrics-flood-" });
    const cgroup = await Cgroup.create(`espejo-metricsflood-${crypto.randomUUID().slice(0, 8)}`, "100M", 0.3);
    let child: Deno.ChildProcess | undefined;
    let exited: Deno.CommandStatus | undefined;
    const logFile = join(dir, "controller.log");
    const logTail = async () => (await Deno.readTextFile(logFile).catch(() => "")).slice(-3000);
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
      await createNamespace(admin, target);
      await createSyncConfig(admin, ns, "flood", {
        namespaceSelector: { matchNames: [target] },
        syncItems: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "policy" }, data: { a: "b" } }],
      });

      const [port, healthPort] = await freePorts(2);
      child = spawnLogged(
        shippedArgv([
          ...["--kubeconfig", kubeconfig, "--metrics-secure", `--metrics-addr=127.0.0.1:${port}`],
          ...["--metrics-cert-path", certDir, `--health-addr=127.0.0.1:${healthPort}`, "--log-format=json"],
          `--reconcile-interval=${RECONCILE_INTERVAL_MS / 1000}s`,
        ]),
        { env: { ...imageEnvironment(), WATCH_NAMESPACE: ns }, logFile, cgroup },
      );
      child.status.then((s) => exited = s);
      const alive = async () => {
        if (exited) {
          throw new Error(
            `the controller ended (${JSON.stringify(exited)}, ${await cgroup.oomKills()} kills by the memory limit): ` +
              await logTail(),
          );
        }
      };
      const policy = `/api/v1/namespaces/${target}/configmaps/policy`;
      await eventually(
        async () => {
          await alive();
          return await getObject(admin, policy);
        },
        120_000,
        "the ConfigMap synced",
      );
      const first = await rawScrape(port, ca, scraper.token, 10_000);
      assert.equal(first.status, 200, "the scraper, before the flood");
      const before = await cgroup.stats();
      cgroup.sampleRss(250);
      const floodSince = auditNow();

      // The flood: FLOOD_PER_SECOND connections a second, each with a new random 4 KB token, each giving up after
      // 1 s; started by the clock (how many should have started by now), so a slow machine sends no burst.
      const statuses = new Map<string, number>();
      const floodDone = (async () => {
        const started = performance.now();
        const all: Promise<void>[] = [];
        let sent = 0;
        while (performance.now() - started < FLOOD_SECONDS * 1000) {
          const due = Math.floor(((performance.now() - started) / 1000) * FLOOD_PER_SECOND);
          for (; sent < due; sent++) {
            all.push(
              rawScrape(port, ca, randomToken(), 1000).then((r) => {
                statuses.set(String(r.status), (statuses.get(String(r.status)) ?? 0) + 1);
              }),
            );
          }
          await new Promise((r) => setTimeout(r, 10));
        }
        await Promise.all(all);
        return sent;
      })();

      // Meanwhile: the scraper every 5 s (retrying after a 429 or 503 as Retry-After says, within 15 s), and the
      // synced ConfigMap deleted three times, each restore timed.
      const floodStart = performance.now();
      const scrapes: { at: number; status: number | string; tries: number }[] = [];
      const scraping = (async () => {
        while (performance.now() - floodStart < FLOOD_SECONDS * 1000) {
          const at = Math.round((performance.now() - floodStart) / 1000);
          const begun = performance.now();
          let r = await rawScrape(port, ca, scraper.token, 10_000);
          let tries = 1;
          while ((r.status === 429 || r.status === 503) && performance.now() - begun < 15_000) {
            await new Promise((res) => setTimeout(res, (r.retryAfter ?? 1) * 1000));
            r = await rawScrape(port, ca, scraper.token, 10_000);
            tries++;
          }
          scrapes.push({ at, status: r.status, tries });
          await new Promise((res) => setTimeout(res, 5000));
        }
      })();
      const restores: number[] = [];
      for (const atSeconds of [10, 40, 65]) {
        while (performance.now() - floodStart < atSeconds * 1000) await new Promise((r) => setTimeout(r, 100));
        await admin.request({ method: "DELETE", path: policy });
        const deleted = performance.now();
        await eventually(
          async () => {
            await alive();
            return await getObject(admin, policy);
          },
          4 * RECONCILE_INTERVAL_MS,
          `the ConfigMap restored (deleted ${atSeconds} s into the flood)`,
        );
        restores.push(Math.round(performance.now() - deleted));
      }
      const sent = await floodDone;
      await scraping;
      const after = await cgroup.stats();
      await alive();
      const reviews = (await requestsBy(c, espejo, floodSince)).filter((e) =>
        e.verb === "create" && /^(tokenreviews|subjectaccessreviews)$/.test(e.objectRef?.resource ?? "")
      ).length;
      const peak = cgroup.peakRssBytes;
      const counts = JSON.stringify(Object.fromEntries(statuses));
      console.log(
        `metrics flood: ${sent} connections in ${FLOOD_SECONDS} s, statuses ${counts}; ${reviews} reviews by espejo; ` +
          `restores in ${restores.join(", ")} ms; scraper ${JSON.stringify(scrapes)}; anonymous memory ` +
          `${MiB(before.rssBytes)} MiB before, peak ${MiB(peak)} MiB, cgroup peak ${MiB(after.maxUsageBytes)} MiB; ` +
          `throttled ${((after.throttledNs - before.throttledNs) / 1e9).toFixed(1)} s of CPU periods`,
      );
      assert.equal(await cgroup.oomKills(), 0, "no kill by the memory limit");
      for (const ms of restores) {
        assert.ok(ms <= 2 * RECONCILE_INTERVAL_MS, `restored in ${ms} ms, within 2 intervals`);
      }
      assert.ok(scrapes.length >= FLOOD_SECONDS / 6, `${scrapes.length} scrapes`);
      const failed = scrapes.filter((r) =>
        r.status !== 200
      );
      assert.deepEqual(failed, [], "every scrape got its metrics");
      assert.ok((statuses.get("429") ?? 0) > 0, "the flood was refused with 429");
      // The budget's 5 a second (and 10 at once), over the flood and the last scrapes after it.
      assert.ok(reviews <= 10 + 5 * (FLOOD_SECONDS + 20), `${reviews} reviews in about ${FLOOD_SECONDS} s`);
      assert.ok(peak < 80 * 1024 * 1024, `anonymous peak ${MiB(peak)} MiB, under 80 MiB`);
    } finally {
      try {
        child?.kill("SIGTERM");
      } catch { /* gone */ }
      await child?.status;
      await cgroup.remove();
      for (const n of [ns, target]) {
        await admin.request({ method: "DELETE", path: `/api/v1/namespaces/${n}` }).catch(() => {});
      }
      admin.close();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
);

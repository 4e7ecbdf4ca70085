/**
 * `--metrics-secure`: /metrics over HTTPS for authenticated and authorized scrapers only, checked by the real API
 * server's TokenReview and SubjectAccessReview (as controller-runtime's filters do), with deploy/'s RBAC for both
 * sides. The controller runs as it ships (main.ts with the shipped permissions).
 */
import assert from "node:assert/strict";
import https from "node:https";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { repoRoot } from "../../testenv/build.ts";
import { makeCerts } from "../../testenv/certs.ts";
import { createServiceAccount, freePorts, kubeconfigYaml } from "../../testenv/controlplane.ts";
import { shippedFlags } from "../../testenv/permissions.ts";
import { clientFor, eventually, testCluster, uniqueName } from "../../testenv/shared.ts";
import { isAlreadyExists } from "../../lib/kube/errors.ts";
import { espejoIdentity } from "../../testenv/espejo_rbac.ts";

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
    // deploy/'s two ClusterRoles: the reviews espejo makes, and the right a scraper needs.
    const roles = parseAllDocuments(await Deno.readTextFile(join(repoRoot, "deploy/rbac/metrics_auth_role.yaml")))
      .map((d) => d.toJSON()).filter((o) => o?.kind === "ClusterRole");
    assert.deepEqual(roles.map((r) => r.metadata.name), ["espejo-metrics-auth", "espejo-metrics-reader"]);
    for (const role of roles) {
      await admin.request({ method: "POST", path: "/apis/rbac.authorization.k8s.io/v1/clusterroles", body: role })
        .catch((e) => {
          if (!isAlreadyExists(e)) throw e;
        });
    }
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

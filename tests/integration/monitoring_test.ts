/**
 * deploy/monitoring with the real tools: promtool checks and unit-tests every alert; the kustomization, plain and with
 * the --metrics-secure component, is accepted by the API server under the Prometheus Operator's own CRDs (their
 * schemas refuse an unknown field); and a real Prometheus, scraping a controller under test, evaluates every alert and dashboard
 * query, which must name only metrics the controller serves. A stall provoked by stopping the API server makes the
 * stall alert's expression return a series; a healthy run returns none.
 */
import assert from "node:assert/strict";
import { join, relative } from "node:path";
import { parse, parseAllDocuments } from "yaml";
import { serveMetrics } from "../../lib/app/http_server.ts";
import { isAlreadyExists } from "../../lib/kube/errors.ts";
import { repoRoot } from "../../testenv/build.ts";
import { ControlPlane, freePorts, kubeconfigYaml } from "../../testenv/controlplane.ts";
import { ensurePrometheusTools } from "../../testenv/prometheus_tools.ts";
import { clientFor, eventually, installBase, type TestCluster, testCluster } from "../../testenv/shared.ts";
import { createNamespace, createSyncConfig, startController } from "../../testenv/harness.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const monitoring = join(repoRoot, "deploy/monitoring");

interface Rule {
  alert: string;
  expr: string;
}
const rules = (): Rule[] =>
  (parse(Deno.readTextFileSync(join(monitoring, "espejo.rules.yaml"))) as { groups: { rules: Rule[] }[] }).groups
    .flatMap((g) => g.rules);

interface Panel {
  title?: string;
  type?: string;
  datasource?: { uid?: string };
  fieldConfig?: { defaults?: { unit?: string } };
  targets?: { expr?: string; datasource?: { uid?: string } }[];
}
const dashboard = () =>
  JSON.parse(Deno.readTextFileSync(join(monitoring, "dashboard.json"))) as {
    panels: Panel[];
    templating: { list: { name: string; type: string }[] };
  };

async function run(cmd: string, args: string[], cwd = monitoring): Promise<{ code: number; out: string }> {
  const o = await new Deno.Command(cmd, { args, cwd, stdout: "piped", stderr: "piped" }).output();
  const dec = new TextDecoder();
  return { code: o.code, out: dec.decode(o.stdout) + dec.decode(o.stderr) };
}

Deno.test("promtool: the rules check clean, and a unit test covers every alert", opts, async () => {
  const { promtool } = await ensurePrometheusTools();
  const check = await run(promtool, ["check", "rules", "espejo.rules.yaml"]);
  assert.equal(check.code, 0, check.out);
  assert.match(check.out, /SUCCESS: 9 rules found/);
  const test = await run(promtool, ["test", "rules", "tests/rules_test.yaml"]);
  assert.equal(test.code, 0, test.out);
  // Every alert is expected to fire in some test (the same tests hold series that must leave it quiet).
  const tests = parse(Deno.readTextFileSync(join(monitoring, "tests/rules_test.yaml"))) as {
    tests: { alert_rule_test: { alertname: string; exp_alerts: unknown[] }[] }[];
  };
  const cases = tests.tests.flatMap((t) => t.alert_rule_test);
  for (const { alert } of rules()) {
    assert.ok(cases.some((c) => c.alertname === alert && c.exp_alerts.length > 0), `${alert} is tested firing`);
  }
});

Deno.test("The PrometheusRule carries exactly the groups of the plain rule file", () => {
  const pr = parse(Deno.readTextFileSync(join(monitoring, "prometheus_rule.yaml"))) as { spec: { groups: unknown } };
  const plain = parse(Deno.readTextFileSync(join(monitoring, "espejo.rules.yaml"))) as { groups: unknown };
  assert.deepEqual(pr.spec.groups, plain.groups);
});

Deno.test("The dashboard: every panel has a title, a unit and a query on the datasource variable", () => {
  const d = dashboard();
  assert.ok(d.templating.list.some((v) => v.name === "datasource" && v.type === "datasource"));
  assert.ok(d.panels.length >= 12);
  for (const p of d.panels) {
    assert.ok(p.title, "a panel without a title");
    assert.ok(p.fieldConfig?.defaults?.unit, `${p.title}: no unit`);
    assert.ok(p.targets?.length && p.targets.every((t) => t.expr), `${p.title}: no query`);
    assert.equal(p.datasource?.uid, "${datasource}", `${p.title}: datasource`);
  }
});

/**
 * The Prometheus Operator's CRDs of PrometheusRule and ServiceMonitor, from its Go module (fetched like the control
 * plane's sources, through the Go module proxy, and cached by Go), so that the API server checks our objects against
 * their real schemas: with kubectl's strict field validation a misspelt or unknown field is refused.
 */
const PROMETHEUS_OPERATOR = "github.com/prometheus-operator/prometheus-operator@v0.85.0";
async function operatorCrds(): Promise<Record<string, unknown>[]> {
  const cwd = await Deno.makeTempDir({ prefix: "espejo-go-" }); // outside any Go module
  try {
    const o = await new Deno.Command("go", {
      args: ["mod", "download", "-json", PROMETHEUS_OPERATOR],
      cwd,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const out = new TextDecoder().decode(o.stdout);
    assert.equal(o.code, 0, `go mod download ${PROMETHEUS_OPERATOR}: ${out} ${new TextDecoder().decode(o.stderr)}`);
    const { Dir } = JSON.parse(out) as { Dir: string };
    return ["prometheusrules", "servicemonitors"].map((plural) =>
      parse(Deno.readTextFileSync(join(Dir, "example/prometheus-operator-crd", `monitoring.coreos.com_${plural}.yaml`)))
    );
  } finally {
    await Deno.remove(cwd, { recursive: true });
  }
}

Deno.test(
  "kubectl apply -k deploy/monitoring, plain and secure, is accepted by the API server with the operator's CRDs",
  opts,
  async () => {
    const c = await testCluster();
    const admin = clientFor(c);
    try {
      for (const crd of await operatorCrds()) {
        await admin.request({
          method: "POST",
          path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
          body: crd,
        })
          .catch((e) => {
            if (!isAlreadyExists(e)) throw e;
          });
      }
      for (const namespace of ["espejo-system", "appuio-espejo"]) {
        await createNamespace(admin, namespace).catch((e) => {
          if (!isAlreadyExists(e)) throw e;
        });
      }
      await eventually(
        async () => {
          try {
            await admin.request({ method: "GET", path: "/apis/monitoring.coreos.com/v1/prometheusrules" });
            await admin.request({ method: "GET", path: "/apis/monitoring.coreos.com/v1/servicemonitors" });
            return true;
          } catch {
            return false;
          }
        },
        30_000,
        "the operator's CRDs to be served",
      );
      const kubeconfig = await Deno.makeTempFile({ suffix: ".yaml" });
      await Deno.writeTextFile(kubeconfig, kubeconfigYaml(c.server, c.caPem, c.admin));
      const rendered = await run("kubectl", ["kustomize", monitoring]);
      assert.equal(rendered.code, 0, rendered.out);
      const kinds = parseAllDocuments(rendered.out).map((d) => (d.toJSON() as { kind: string }).kind).sort();
      assert.deepEqual(kinds, ["ConfigMap", "PrometheusRule", "ServiceMonitor"]);
      const applied = await run("kubectl", ["--kubeconfig", kubeconfig, "apply", "-k", monitoring, "--dry-run=server"]);
      assert.equal(applied.code, 0, applied.out);
      // The --metrics-secure component, in another namespace (tests/unit/deploy_monitoring_test.ts checks what it
      // renders; here the operator's schema checks its fields).
      const overlay = await Deno.makeTempDir({ prefix: "espejo-monitoring-" });
      try {
        await Deno.writeTextFile(
          join(overlay, "kustomization.yaml"),
          [
            "apiVersion: kustomize.config.k8s.io/v1beta1",
            "kind: Kustomization",
            "namespace: appuio-espejo",
            `resources: [${relative(overlay, monitoring)}]`, // kustomize refuses absolute paths
            `components: [${relative(overlay, join(monitoring, "secure"))}]`,
            "",
          ].join("\n"),
        );
        const secure = await run("kubectl", ["--kubeconfig", kubeconfig, "apply", "-k", overlay, "--dry-run=server"]);
        assert.equal(secure.code, 0, secure.out);
        assert.match(secure.out, /servicemonitor\.monitoring\.coreos\.com\/espejo created \(server dry run\)/);
        // The schema is in force: a misspelt field is refused, not kept or dropped.
        const misspelt = join(overlay, "misspelt.yaml");
        await Deno.writeTextFile(
          misspelt,
          "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: { name: misspelt, namespace: appuio-espejo }\n" +
            "spec: { selector: {}, endpoints: [{ port: metrics, bearerTokenFil: /token }] }\n",
        );
        const refused = await run("kubectl", ["--kubeconfig", kubeconfig, "apply", "-f", misspelt, "--dry-run=server"]);
        assert.notEqual(refused.code, 0, refused.out);
        assert.match(refused.out, /unknown field "spec\.endpoints\[0\]\.bearerTokenFil"/);
      } finally {
        await Deno.remove(overlay, { recursive: true });
      }
    } finally {
      admin.close();
    }
  },
);

/** Metric names an expression refers to: the families espejo and the process serve. */
function metricNames(expr: string): string[] {
  const names = expr.match(
    /\b(espejo|process|nodejs|controller_runtime|workqueue|rest_client|leader_election)_[a-z_]+\b/g,
  );
  return [...new Set(names ?? [])];
}

/** A dashboard query as Grafana sends it, its variables filled in. */
const asSent = (expr: string) =>
  expr.replaceAll("$__rate_interval", "1m").replaceAll("$instance", ".*").replaceAll("$job", ".*");

Deno.test(
  "Live: every alert and panel query evaluates on a real Prometheus; the stall alert sees a stall",
  opts,
  async () => {
    const { prometheus } = await ensurePrometheusTools();
    // A control plane of its own: the stall stops its API server.
    const cp = await ControlPlane.start({ log: () => {} });
    const c: TestCluster = { server: cp.server, caPem: cp.caPem, admin: cp.admin, auditLogPath: cp.auditLogPath };
    await installBase(cp.client());
    const admin = clientFor(c);
    const stop = new AbortController();
    const ctl = await startController(c, {
      watchNamespace: "monitoring-cfg",
      reconcileIntervalMs: 1_000,
      processMetrics: true,
    });
    const [metricsPort, promPort] = await freePorts(2);
    serveMetrics({ hostname: "127.0.0.1", port: metricsPort }, ctl.metrics, stop.signal);
    const dir = await Deno.makeTempDir({ prefix: "espejo-prometheus-" });
    await Deno.writeTextFile(
      join(dir, "prometheus.yml"),
      [
        "global: { scrape_interval: 1s, evaluation_interval: 1s }",
        "scrape_configs:",
        "  - job_name: espejo",
        `    static_configs: [{ targets: ["127.0.0.1:${metricsPort}"] }]`,
        "",
      ].join("\n"),
    );
    const server = new Deno.Command(prometheus, {
      args: [
        `--config.file=${join(dir, "prometheus.yml")}`,
        `--storage.tsdb.path=${join(dir, "data")}`,
        `--web.listen-address=127.0.0.1:${promPort}`,
      ],
      stdout: "null",
      stderr: "null",
    }).spawn();
    const query = async (expr: string) => {
      const r = await fetch(`http://127.0.0.1:${promPort}/api/v1/query?query=${encodeURIComponent(expr)}`);
      return await r.json() as { status: string; error?: string; data?: { result: unknown[] } };
    };
    try {
      await createNamespace(admin, "monitored");
      await createSyncConfig(admin, "monitoring-cfg", "watched", {
        namespaceSelector: { matchNames: ["monitored"] },
        syncItems: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "m" }, data: { a: "1" } }],
      });
      await eventually(
        async () => {
          try {
            return ((await query("espejo_items")).data?.result.length ?? 0) > 0;
          } catch {
            return false; // Prometheus is still starting
          }
        },
        60_000,
        "Prometheus to scrape the controller",
      );
      const served = new Set(
        (await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()).split("\n")
          .filter((l) => l.startsWith("# TYPE ")).map((l) => l.split(" ")[2]),
      );
      const expressions = [
        ...rules().map((r) => ({ where: `alert ${r.alert}`, expr: r.expr })),
        ...dashboard().panels.flatMap((p) =>
          p.targets!.map((t) => ({ where: `panel ${p.title}`, expr: asSent(t.expr!) }))
        ),
      ];
      for (const { where, expr } of expressions) {
        const r = await query(expr);
        assert.equal(r.status, "success", `${where}: ${r.error}`);
        for (const name of metricNames(expr)) {
          const family = name.replace(/_(bucket|sum|count)$/, "");
          assert.ok(
            served.has(name) || served.has(family),
            `${where} names ${name}, which the controller does not serve`,
          );
        }
      }
      const stalled = rules().find((r) => r.alert === "EspejoStalled")!.expr;
      // Healthy: passes every second over live watches.
      await eventually(
        async () => (await query("time() - espejo_last_full_pass_timestamp_seconds < 3")).data?.result.length === 1,
        30_000,
        "a healthy pass",
      );
      assert.deepEqual((await query(stalled)).data?.result, [], "no stall while healthy");
      await cp.stopApiServer();
      await eventually(
        async () => ((await query(stalled)).data?.result.length ?? 0) === 1,
        60_000,
        "the stall to show",
      );
    } finally {
      server.kill("SIGTERM");
      await server.status;
      stop.abort();
      await ctl.stop();
      admin.close();
      await cp.stop();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
);

/**
 * deploy/monitoring follows espejo wherever a kustomization puts it: rendered by kubectl's kustomize (no server) as
 * `kubectl apply -k deploy/monitoring` installs it into espejo-system, and as docs/migration.md's kustomization
 * (read from the page) installs it into appuio-espejo, with and without the --metrics-secure component. In each, the
 * ServiceMonitor must select espejo's metrics Service (its namespace, labels and port), the alerts must live in that
 * namespace without naming any namespace, and no two objects may share a kind and name. After the move to
 * appuio-espejo, a ServiceMonitor left in espejo-system selected nothing and EspejoNoLeader fired.
 */
import assert from "node:assert/strict";
import { join, relative } from "node:path";
import { parseAllDocuments } from "yaml";
import { repoRoot } from "../../testenv/build.ts";

interface Obj {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  // deno-lint-ignore no-explicit-any
  spec?: any;
}

interface Endpoint {
  port?: string;
  scheme?: string;
  bearerTokenFile?: string;
  authorization?: unknown;
  tlsConfig?: { insecureSkipVerify?: boolean; ca?: unknown };
}

async function kustomize(dir: string): Promise<Obj[]> {
  let out: Deno.CommandOutput;
  try {
    out = await new Deno.Command("kubectl", { args: ["kustomize", dir], stdout: "piped", stderr: "piped" }).output();
  } catch (e) {
    throw new Error(`kubectl is needed for this test (it renders kustomizations as users do): ${e}`);
  }
  assert.equal(out.code, 0, `kubectl kustomize ${dir}: ${new TextDecoder().decode(out.stderr)}`);
  return parseAllDocuments(new TextDecoder().decode(out.stdout)).map((d) => d.toJS() as Obj).filter((o) => o?.kind);
}

/** docs/migration.md's kustomization, as the page shows it, in a directory beside this repository (`../espejo/`). */
function migrationKustomization(): string {
  const page = Deno.readTextFileSync(join(repoRoot, "docs", "migration.md"));
  const block = /```yaml\n( *)# espejo-appuio\/kustomization\.yaml\n([\s\S]*?)\n\1```/.exec(page);
  assert.ok(block, "docs/migration.md shows espejo-appuio/kustomization.yaml");
  const indent = block[1].length;
  return block[2].split("\n").map((l) => l.slice(indent)).join("\n") + "\n";
}

async function render(kustomization: string): Promise<Obj[]> {
  const dir = await Deno.makeTempDir({ prefix: "espejo-overlay-" });
  try {
    const repo = relative(dir, repoRoot);
    await Deno.writeTextFile(join(dir, "kustomization.yaml"), kustomization.replaceAll("../espejo/", `${repo}/`));
    return await kustomize(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const one = (objs: Obj[], kind: string): Obj => {
  const found = objs.filter((o) => o.kind === kind);
  assert.equal(found.length, 1, `one ${kind}: ${found.map((o) => o.metadata.name)}`);
  return found[0];
};

/** The namespaces a ServiceMonitor discovers Services in: its own unless its namespaceSelector says otherwise. */
function scrapedNamespaces(sm: Obj): string[] | "any" {
  const selector = sm.spec.namespaceSelector as { any?: boolean; matchNames?: string[] } | undefined;
  if (selector?.any) return "any";
  return selector?.matchNames?.length ? selector.matchNames : [sm.metadata.namespace!];
}

/**
 * What every rendering must hold: the monitoring objects in `namespace` beside the Deployment and Service; the
 * ServiceMonitor selects the Service; the alert expressions name no namespace; kinds and names unique.
 */
function assertFollows(objs: Obj[], namespace: string, secure: boolean) {
  const deployment = one(objs, "Deployment");
  const service = one(objs, "Service");
  const sm = one(objs, "ServiceMonitor");
  const rule = one(objs, "PrometheusRule");
  const dashboard = objs.find((o) => o.kind === "ConfigMap" && o.metadata.name === "espejo-dashboard");
  assert.ok(dashboard, "the dashboard's ConfigMap");
  for (const o of [deployment, service, sm, rule, dashboard]) {
    assert.equal(o.metadata.namespace, namespace, `${o.kind} ${o.metadata.name}`);
  }
  const scraped = scrapedNamespaces(sm);
  assert.ok(scraped === "any" || scraped.includes(namespace), `the ServiceMonitor looks in ${scraped}`);
  for (const [k, v] of Object.entries(sm.spec.selector.matchLabels as Record<string, string>)) {
    assert.equal(service.metadata.labels?.[k], v, `the ServiceMonitor selects the Service by ${k}`);
  }
  assert.equal(sm.spec.selector.matchExpressions, undefined);
  const ports = (service.spec.ports as { name: string }[]).map((p) => p.name);
  const endpoints = sm.spec.endpoints as Endpoint[];
  assert.equal(endpoints.length, 1);
  const [endpoint] = endpoints;
  assert.ok(ports.includes(endpoint.port!), `port ${endpoint.port} is one of the Service's: ${ports}`);

  const args = deployment.spec.template.spec.containers[0].args as string[];
  if (secure) {
    assert.equal(args.filter((a) => a === "--metrics-secure").length, 1, `${args}`);
    assert.equal(endpoint.scheme, "https");
    assert.equal(endpoint.bearerTokenFile, "/var/run/secrets/kubernetes.io/serviceaccount/token");
    assert.deepEqual(endpoint.tlsConfig, { insecureSkipVerify: true }, "no CA exists for the self-signed certificate");
  } else {
    assert.ok(!args.some((a) => a.startsWith("--metrics-secure")), `${args}`);
    assert.ok(endpoint.scheme === undefined || endpoint.scheme === "http");
    assert.equal(endpoint.bearerTokenFile, undefined);
  }

  const namespaces = ["espejo-system", "appuio-espejo", namespace];
  for (const group of rule.spec.groups as { rules: { alert: string; expr: string }[] }[]) {
    for (const { alert, expr } of group.rules) {
      assert.doesNotMatch(expr, /\bnamespace\s*(=|!=|=~|!~)/, `${alert} selects by namespace`);
      for (const ns of namespaces) assert.ok(!expr.includes(ns), `${alert} names ${ns}`);
    }
  }

  const keys = objs.map((o) => `${o.kind} ${o.metadata.namespace ?? ""}/${o.metadata.name}`);
  assert.deepEqual(keys.filter((k, i) => keys.indexOf(k) !== i), [], "kinds and names are unique");
}

Deno.test("kubectl apply -k deploy/ and deploy/monitoring: monitoring in espejo-system, selecting espejo", async () => {
  const objs = [...await kustomize(join(repoRoot, "deploy")), ...await kustomize(join(repoRoot, "deploy/monitoring"))];
  assertFollows(objs, "espejo-system", false);
});

Deno.test("docs/migration.md's kustomization moves deploy/monitoring with espejo into appuio-espejo", async () => {
  const kustomization = migrationKustomization();
  assert.match(kustomization, /^namespace: appuio-espejo$/m);
  assert.match(kustomization, /^ {2}- \.\.\/espejo\/deploy\/monitoring\b/m, "the page lists deploy/monitoring");
  const objs = await render(kustomization);
  assert.ok(!objs.some((o) => o.kind === "Namespace"), "appuio-espejo exists already");
  assertFollows(objs, "appuio-espejo", false);
});

Deno.test("deploy/monitoring/secure turns --metrics-secure on and scrapes over HTTPS with a token", async () => {
  const kustomization = migrationKustomization();
  const commented = /^# (components:\n)# ( {2}- \.\.\/espejo\/deploy\/monitoring\/secure\b.*)$/m.exec(kustomization);
  assert.ok(commented, "the page shows the component, commented out");
  const objs = await render(kustomization.replace(commented[0], `${commented[1]}${commented[2]}`));
  assertFollows(objs, "appuio-espejo", true);
  // The same component in the default namespace.
  const plain = [
    "apiVersion: kustomize.config.k8s.io/v1beta1",
    "kind: Kustomization",
    "resources: [../espejo/deploy, ../espejo/deploy/monitoring]",
    "components: [../espejo/deploy/monitoring/secure]",
  ].join("\n");
  assertFollows(await render(plain), "espejo-system", true);
});

Deno.test("deploy/ defines each ServiceMonitor and PrometheusRule once", () => {
  const names: string[] = [];
  const walk = (dir: string) => {
    for (const e of Deno.readDirSync(dir)) {
      const path = join(dir, e.name);
      if (e.isDirectory) walk(path);
      else if (/\.ya?ml$/.test(e.name)) {
        for (const d of parseAllDocuments(Deno.readTextFileSync(path))) {
          const o = d.toJS() as Obj | null;
          if (o?.kind === "ServiceMonitor" || o?.kind === "PrometheusRule") {
            names.push(`${o.kind} ${o.metadata.name} (${relative(repoRoot, path)})`);
          }
        }
      }
    }
  };
  walk(join(repoRoot, "deploy"));
  const kindAndName = names.map((n) => n.split(" (")[0]);
  assert.deepEqual(kindAndName.sort(), ["PrometheusRule espejo", "ServiceMonitor espejo"], names.join(", "));
});

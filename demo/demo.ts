/**
 * `deno task demo`: the five-minute tour. Starts a local control plane (building it on the first run), installs
 * the CRD and the sample SyncConfig, runs the controller under the RBAC of deploy/, creates namespaces that match,
 * are ignored and get relabelled, narrates what happens as it happens, prints a table, and cleans up.
 */
import { join } from "node:path";
import { parse } from "yaml";
import { Controller } from "../lib/controller/controller.ts";
import { HttpKubeClient } from "../lib/kube/client.ts";
import { Reflector } from "../lib/kube/reflector.ts";
import { Metrics } from "../lib/metrics/metrics.ts";
import type { KubeObject } from "../lib/kube/objects.ts";
import { repoRoot } from "../testenv/build.ts";
import { ControlPlane } from "../testenv/controlplane.ts";
import { applyObject } from "../testenv/apply.ts";
import { installBase } from "../testenv/shared.ts";
import { espejoIdentity } from "../testenv/espejo_rbac.ts";

const bold = (s: string) => `\x1b[1m${s}\x1b[0m`;
const dim = (s: string) => `\x1b[2m${s}\x1b[0m`;
const say = (s: string) => console.log(s);
const step = (s: string) => console.log(`\n${bold("▶ " + s)}`);
const started = performance.now();
const at = () => dim(`[${((performance.now() - started) / 1000).toFixed(1)}s]`);

async function until<T>(check: () => T | undefined | false | Promise<T | undefined | false>, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error("demo: something did not happen in time");
    await new Promise((r) => setTimeout(r, 25));
  }
}

say(bold("espejo demo") + " — copies objects into namespaces as SyncConfigs describe");
step("Starting a local Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager)");
say(dim("  The first run builds them from source with Go, which takes about 12 minutes; later runs take seconds."));
const cp = await ControlPlane.start({ log: (l) => say(dim("  " + l)) });
const stop = new AbortController();
let exitCode = 0;
try {
  await installBase(cp.client());
  const admin = cp.client();
  say(`  ${at()} API server ready at ${cp.server}; CRD and ClusterRoles from deploy/ installed`);

  const sample = parse(await Deno.readTextFile(join(repoRoot, "deploy/samples/syncconfig.yaml"))) as KubeObject;
  const items = (sample.spec as { syncItems: KubeObject[] }).syncItems.map((i) => `${i.kind} ${i.metadata!.name}`);
  const identity = await espejoIdentity(admin, "espejo-system");
  say(`  ${at()} The controller runs as ${identity.username}, with the RBAC of deploy/`);

  // Narration: watch what espejo writes.
  const seen = new Map<string, Set<string>>();
  const createdAt = new Map<string, number>();
  const watches = [
    "/api/v1/configmaps",
    "/apis/rbac.authorization.k8s.io/v1/roles",
    "/apis/rbac.authorization.k8s.io/v1/rolebindings",
  ];
  for (const path of watches) {
    new Reflector(admin, {
      path,
      labelSelector: "sync.appuio.ch/managed-by=espejo",
      decode: (raw) => raw,
      onChange: (type, obj) => {
        const ns = obj.metadata!.namespace!;
        const what = `${obj.kind ?? kindOf(path)} ${obj.metadata!.name}`;
        if (type === "added") {
          const set = seen.get(ns) ?? new Set();
          set.add(what);
          seen.set(ns, set);
          const after = createdAt.has(ns)
            ? dim(` (${Math.round(performance.now() - createdAt.get(ns)!)} ms after the namespace changed)`)
            : "";
          say(`  ${at()} ${bold("+")} ${what} appeared in ${ns}${after}`);
        }
      },
    }).run(stop.signal);
  }
  const removed = new Reflector(
    admin,
    {
      path: "/api/v1/configmaps",
      decode: (raw) => raw,
      onChange: (type, obj) => {
        if (type === "deleted" && obj.metadata?.name === "legacy-tenant-info") {
          say(
            `  ${at()} ${bold("-")} ConfigMap legacy-tenant-info deleted from ${obj.metadata.namespace} (a deleteItem)`,
          );
        }
      },
    },
  );
  removed.run(stop.signal);

  const metrics = new Metrics();
  const client = new HttpKubeClient({
    server: cp.server,
    caCerts: [cp.caPem],
    authorization: () => `Bearer ${identity.token}`,
  });
  const controller = new Controller({ client, watchNamespace: "", reconcileIntervalMs: 10_000, metrics });
  const running = controller.run(stop.signal);
  await until(() => controller.ready);

  step("Applying deploy/samples/syncconfig.yaml");
  say(
    dim(
      "  Selects namespaces labelled espejo.example/tenant or named team-*, except team-sandbox; copies: " +
        items.join(", "),
    ),
  );
  const ns = (name: string, labels: Record<string, string> = {}) =>
    admin.request({
      method: "POST",
      path: "/api/v1/namespaces",
      body: { apiVersion: "v1", kind: "Namespace", metadata: { name, labels } },
    });
  await applyObject(admin, sample, "default");

  step("Creating namespace team-a (matches team-.*)");
  createdAt.set("team-a", performance.now());
  await ns("team-a");
  await until(() => seen.get("team-a")?.size === items.length);
  say(`  ${at()} team-a has all ${items.length} items; no other namespace was touched`);

  step("Creating namespace team-sandbox (matches team-.*, but ignoreNames excludes it)");
  const units = () => metrics.registry.values("espejo_syncs_total").reduce((a, v) => a + v.value, 0);
  const before = await units();
  await ns("team-sandbox");
  await until(async () => (await units()) > before);
  say(
    `  ${at()} The controller looked at team-sandbox and wrote nothing: ${
      seen.has("team-sandbox") ? "✗ something appeared" : "✓ empty"
    }`,
  );

  step("Creating namespace shop (no match), with a ConfigMap legacy-tenant-info in it");
  await ns("shop");
  await admin.request({
    method: "POST",
    path: "/api/v1/namespaces/shop/configmaps",
    body: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "legacy-tenant-info" } },
  });
  say(`  ${at()} Nothing happens in shop: it is not selected`);

  step("Labelling shop with espejo.example/tenant=shop (now the label selector matches)");
  createdAt.set("shop", performance.now());
  await admin.request({
    method: "PATCH",
    path: "/api/v1/namespaces/shop",
    contentType: "application/merge-patch+json",
    body: { metadata: { labels: { "espejo.example/tenant": "shop" } } },
  });
  await until(() => seen.get("shop")?.size === items.length);
  await until(async () =>
    !(await admin.request({ method: "GET", path: "/api/v1/namespaces/shop/configmaps/legacy-tenant-info" }).then(
      () => true,
      () => false,
    ))
  );

  step("Editing team-a's ConfigMap by hand (drift)");
  await admin.request({
    method: "PATCH",
    path: "/api/v1/namespaces/team-a/configmaps/tenant-info",
    contentType: "application/merge-patch+json",
    body: { data: { namespace: "tampered", extra: "added by hand" } },
  });
  const restored = await until(async () => {
    const cm = await admin.request<{ data: Record<string, string> }>({
      method: "GET",
      path: "/api/v1/namespaces/team-a/configmaps/tenant-info",
    });
    return cm.data.namespace === "team-a" && !("extra" in cm.data) ? cm : undefined;
  });
  say(`  ${at()} Written back: data.namespace=${restored.data.namespace}, the extra key is gone`);

  step("Result");
  const namespaces = ["team-a", "team-sandbox", "shop"];
  const width = Math.max(...items.map((i) => i.length)) + 2;
  say("  " + "".padEnd(width) + namespaces.map((n) => n.padEnd(14)).join(""));
  for (const item of items) {
    say("  " + item.padEnd(width) + namespaces.map((n) => (seen.get(n)?.has(item) ? "✓" : "–").padEnd(14)).join(""));
  }
  type View = { status?: { synchronizedItemCount?: number; conditions?: { type: string; status: string }[] } };
  const sc = await until(async () => {
    const s = await admin.request<View>({
      method: "GET",
      path: "/apis/sync.appuio.ch/v1alpha1/namespaces/default/syncconfigs/tenant-defaults",
    });
    return s.status?.synchronizedItemCount === items.length * 2 ? s : undefined;
  });
  say(
    `\n  SyncConfig default/tenant-defaults: Ready=${
      sc.status?.conditions?.find((c) => c.type === "Ready")?.status
    }, ` +
      `synchronized ${items.length * 2} items in 2 namespaces`,
  );

  say(`\n${bold("Explore further")}
  deno task cluster                       # a control plane that stays up; kubeconfig in .testenv/kubeconfig
  export KUBECONFIG=$PWD/.testenv/kubeconfig
  kubectl apply -f deploy/crds/ && kubectl apply -n default -f deploy/samples/syncconfig.yaml
  deno task dev                           # the controller, from source
  kubectl create namespace team-b && kubectl get syncconfigs -A && kubectl describe syncconfig tenant-defaults
  docs/reference.md explains every field, flag and metric.`);
  stop.abort();
  await running;
  client.close();
  admin.close();
} catch (e) {
  console.error(`demo failed: ${e instanceof Error ? e.message : e}`);
  exitCode = 1;
} finally {
  stop.abort();
  await cp.stop();
}
Deno.exit(exitCode);

function kindOf(path: string): string {
  return path.endsWith("configmaps") ? "ConfigMap" : path.endsWith("rolebindings") ? "RoleBinding" : "Role";
}

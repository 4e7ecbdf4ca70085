/**
 * deploy/ as users apply it: `kubectl apply -k deploy/` and its opt-ins, and the kustomization of docs/migration.md's
 * steps that puts it into the Go espejo's namespace. Rendered by kubectl's kustomize and accepted by the real API server
 * (server-side dry run: validation and admission, nothing stored).
 */
import assert from "node:assert/strict";
import { join, relative } from "node:path";
import { parseAllDocuments } from "yaml";
import { repoRoot } from "../../testenv/build.ts";
import { kubeconfigYaml } from "../../testenv/controlplane.ts";
import { clientFor, testCluster } from "../../testenv/shared.ts";
import { isAlreadyExists } from "../../lib/kube/errors.ts";
import type { KubeObject } from "../../lib/kube/objects.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

async function kubectl(args: string[], kubeconfig?: string): Promise<string> {
  let out: Deno.CommandOutput;
  try {
    out = await new Deno.Command("kubectl", {
      args: kubeconfig ? ["--kubeconfig", kubeconfig, ...args] : args,
      stdout: "piped",
      stderr: "piped",
    }).output();
  } catch (e) {
    throw new Error(`kubectl is needed for this test (it renders kustomizations as users do): ${e}`);
  }
  const stderr = new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, `kubectl ${args.join(" ")} failed:\n${stderr}`);
  return new TextDecoder().decode(out.stdout);
}

/** docs/migration.md's kustomization, in a directory beside the repository's deploy/. */
async function migrationOverlay(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "espejo-appuio-" });
  await Deno.writeTextFile(
    join(dir, "kustomization.yaml"),
    [
      "apiVersion: kustomize.config.k8s.io/v1beta1",
      "kind: Kustomization",
      "namespace: appuio-espejo",
      "resources:",
      `  - ${relative(dir, join(repoRoot, "deploy"))}`,
      "patches:",
      "  - target: { kind: Namespace, name: espejo-system }",
      "    patch: |-",
      "      $patch: delete",
      "      apiVersion: v1",
      "      kind: Namespace",
      "      metadata:",
      "        name: espejo-system",
      "",
    ].join("\n"),
  );
  return dir;
}

Deno.test("deploy/ and the migration kustomization render and are accepted by the API server", opts, async () => {
  const c = await testCluster();
  const admin = clientFor(c);
  const overlay = await migrationOverlay();
  const kubeconfig = join(overlay, "..", `${overlay.split("/").pop()}.kubeconfig`);
  try {
    await Deno.writeTextFile(kubeconfig, kubeconfigYaml(c.server, c.caPem, c.admin));
    const objects = parseAllDocuments(await kubectl(["kustomize", overlay]))
      .map((d) => d.toJSON() as KubeObject);
    const kinds = objects.map((o) => o.kind);
    assert.ok(!kinds.includes("Namespace"), "appuio-espejo exists already; espejo-system is not created");
    for (const o of objects) {
      if (["CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding"].includes(o.kind!)) continue;
      assert.equal(o.metadata?.namespace, "appuio-espejo", `${o.kind} ${o.metadata?.name}`);
    }
    // Every binding to espejo's ServiceAccount, the Events Role's among them, follows it into appuio-espejo.
    const bindings = objects.filter((o) =>
      o.kind === "ClusterRoleBinding" || o.kind === "RoleBinding"
    ) as (KubeObject & {
      subjects: { namespace: string }[];
    })[];
    assert.ok(bindings.some((b) => b.metadata?.name === "espejo-events"));
    for (const b of bindings) assert.deepEqual(b.subjects.map((s) => s.namespace), ["appuio-espejo"], b.metadata?.name);
    const deployment = objects.find((o) => o.kind === "Deployment") as KubeObject & {
      spec: { template: { spec: { containers: { env: { name: string; valueFrom?: unknown }[] }[] } } };
    };
    const env = deployment.spec.template.spec.containers[0].env;
    assert.deepEqual(
      env.find((e) => e.name === "WATCH_NAMESPACE")?.valueFrom,
      { fieldRef: { fieldPath: "metadata.namespace" } },
      "SyncConfigs are read from the pod's namespace, as the Go espejo does",
    );

    // A dry run creates no namespace, so the namespaced objects need theirs to exist.
    for (const name of ["appuio-espejo", "espejo-system"]) {
      await admin.request({
        method: "POST",
        path: "/api/v1/namespaces",
        body: { apiVersion: "v1", kind: "Namespace", metadata: { name } },
      }).catch((e) => {
        if (!isAlreadyExists(e)) throw e;
      });
    }
    await kubectl(["apply", "--dry-run=server", "-k", overlay], kubeconfig);
    await kubectl(["apply", "--dry-run=server", "-k", join(repoRoot, "deploy")], kubeconfig);
    // The opt-ins, each applied on its own as docs/install.md says.
    for (const optIn of Deno.readDirSync(join(repoRoot, "deploy", "opt-in"))) {
      await kubectl(["apply", "--dry-run=server", "-k", join(repoRoot, "deploy", "opt-in", optIn.name)], kubeconfig);
    }
  } finally {
    admin.close();
    await Deno.remove(overlay, { recursive: true });
    await Deno.remove(kubeconfig).catch(() => {});
  }
});

/**
 * deploy/admission (the opt-in ValidatingAdmissionPolicy) on the real API server: applied with kubectl as users apply
 * it, with espejo's identity set by the overlay patch its kustomization.yaml documents. A hostile tenant (a
 * ServiceAccount with a Role in its namespace only) is refused every write of what espejo manages, and any labelled
 * create; espejo, run by the harness under its ServiceAccount, still creates, updates and deletes; the tenant's own
 * unlabelled objects and the namespace's deletion are untouched.
 *
 * The policy is cluster-wide; so that the tests running beside this one (other controllers, other identities) are
 * not refused, the test's overlay also binds it to this test's namespace only and gives it a name of its own.
 */
import assert from "node:assert/strict";
import { join, relative } from "node:path";
import { HttpKubeClient } from "../../lib/kube/client.ts";
import { ApiError, isNotFound } from "../../lib/kube/errors.ts";
import type { KubeObject } from "../../lib/kube/objects.ts";
import { repoRoot } from "../../testenv/build.ts";
import { type Identity, kubeconfigYaml } from "../../testenv/controlplane.ts";
import { clientFor, eventually, type TestCluster, testCluster, uniqueName } from "../../testenv/shared.ts";
import { createNamespace, createSyncConfig, getObject, startController } from "../../testenv/harness.ts";
import { espejoIdentity } from "../../testenv/espejo_rbac.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const LABEL = { "sync.appuio.ch/managed-by": "espejo" };
const MESSAGE = /objects labelled sync\.appuio\.ch\/managed-by=espejo are written only by espejo/;

async function kubectl(args: string[]): Promise<string> {
  const out = await new Deno.Command("kubectl", { args, stdout: "piped", stderr: "piped" }).output();
  const dec = new TextDecoder();
  assert.equal(out.code, 0, `kubectl ${args.join(" ")} failed:\n${dec.decode(out.stderr)}`);
  return dec.decode(out.stdout);
}

/**
 * An overlay of deploy/admission: espejo's identity set as kustomization.yaml says, and (for this test only) a name
 * and a namespace selector of its own.
 */
async function overlay(dir: string, suffix: string, espejo: string, namespaceLabel: string): Promise<void> {
  const binding = [
    "  - target: { kind: ValidatingAdmissionPolicyBinding }",
    "    patch: |-",
    "      - op: replace",
    "        path: /spec/policyName",
    `        value: espejo-managed-objects${suffix}`,
    "      - op: add",
    "        path: /spec/matchResources",
    `        value: { namespaceSelector: { matchLabels: { espejo-test/admission: "${namespaceLabel}" } } }`,
  ];
  await Deno.writeTextFile(
    join(dir, "kustomization.yaml"),
    [
      "apiVersion: kustomize.config.k8s.io/v1beta1",
      "kind: Kustomization",
      `nameSuffix: ${suffix}`,
      "resources:",
      `  - ${relative(dir, join(repoRoot, "deploy", "admission"))}`,
      "patches:",
      "  - target: { kind: ValidatingAdmissionPolicy, name: espejo-managed-objects }",
      "    patch: |-",
      "      - op: replace",
      "        path: /spec/variables/0/expression",
      `        value: "'${espejo}'"`,
      ...binding,
      "",
    ].join("\n"),
  );
}

/** A ServiceAccount of `namespace` bound to a Role there that may do anything with configmaps; never more. */
async function createTenant(c: TestCluster, admin: HttpKubeClient, namespace: string): Promise<HttpKubeClient> {
  const create = (path: string, body: unknown) => admin.request({ method: "POST", path, body });
  await create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}/roles`, {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "Role",
    metadata: { name: "tenant-editor" },
    rules: [{
      apiGroups: [""],
      resources: ["configmaps"],
      verbs: ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"],
    }],
  });
  await create(`/api/v1/namespaces/${namespace}/serviceaccounts`, {
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: { name: "tenant" },
  });
  await create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}/rolebindings`, {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
    metadata: { name: "tenant-editor" },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "tenant-editor" },
    subjects: [{ kind: "ServiceAccount", name: "tenant", namespace }],
  });
  const tr = await admin.request<{ status: { token: string } }>({
    method: "POST",
    path: `/api/v1/namespaces/${namespace}/serviceaccounts/tenant/token`,
    body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: { expirationSeconds: 3600 } },
  });
  const client = new HttpKubeClient({
    server: c.server,
    caCerts: [c.caPem],
    authorization: () => `Bearer ${tr.status.token}`,
    userAgent: "kubectl/v1.35.4 (tenant)",
  });
  await eventually(
    () => client.request({ method: "GET", path: `/api/v1/namespaces/${namespace}/configmaps`, query: { limit: 1 } }),
    10_000,
    `the tenant's RoleBinding in ${namespace} to take effect`,
  );
  return client;
}

/** The refusal of `write`: a 403 with the policy's message, naming who was refused. */
async function refused(write: () => Promise<unknown>, what: string, who: string): Promise<void> {
  const err = await write().then(() => undefined, (e) => e);
  assert.ok(err instanceof ApiError, `${what}: the policy let it through`);
  assert.equal(err.code, 403, `${what}: ${err.message}`);
  assert.match(err.message, MESSAGE, what);
  assert.ok(err.message.includes(`${who} may not`), `${what}: ${err.message}`);
}

const cm = (name: string, data: Record<string, string>, labels: Record<string, string> = {}) => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, labels },
  data,
});

Deno.test(
  "deploy/admission refuses a tenant's writes of what espejo manages, and lets espejo write",
  opts,
  async () => {
    const c = await testCluster();
    const admin = clientFor(c);
    const cfgNs = uniqueName("cfg");
    const ns = uniqueName("adm");
    const suffix = `-${ns}`;
    await createNamespace(admin, ns, { "espejo-test/admission": ns });
    const cms = `/api/v1/namespaces/${ns}/configmaps`;
    const dir = await Deno.makeTempDir({ prefix: "espejo-admission-" });
    const kubeconfig = `${dir}.kubeconfig`;
    await Deno.writeTextFile(kubeconfig, kubeconfigYaml(c.server, c.caPem, c.admin));
    // The identity the harness runs the controller as (deploy/'s ServiceAccount name, in the test's namespace).
    const espejo: Identity = await espejoIdentity(admin, cfgNs);
    await overlay(dir, suffix, espejo.username, ns);
    const tenant = await createTenant(c, admin, ns);
    const tenantName = `system:serviceaccount:${ns}:tenant`;
    const ctl = await startController(c, { watchNamespace: cfgNs });
    try {
      const rendered = await kubectl(["kustomize", dir]);
      assert.match(rendered, /validationActions:\n\s+- Deny/);
      assert.doesNotMatch(rendered, /paramRef|paramKind/, "the policy works without parameters");
      await kubectl(["--kubeconfig", kubeconfig, "apply", "-k", dir]);
      // The policy takes effect once the API server has loaded it: a labelled create by the tenant is refused.
      await eventually(
        async () => {
          try {
            await tenant.request({ method: "POST", path: cms, query: { dryRun: "All" }, body: cm("probe", {}, LABEL) });
            return false;
          } catch (e) {
            return e instanceof ApiError && e.code === 403 && MESSAGE.test(e.message);
          }
        },
        30_000,
        "the admission policy to refuse a labelled create",
      );

      // espejo creates.
      await createSyncConfig(admin, cfgNs, "adm", {
        namespaceSelector: { matchNames: [ns] },
        syncItems: [cm("settings", { a: "1" })],
      });
      const synced = await eventually(
        async () => (await getObject(admin, `${cms}/settings`))?.data?.a === "1",
        20_000,
        "espejo to create settings",
      );
      assert.ok(synced);

      // The tenant: every write of the managed object is refused, with the policy's message.
      const path = `${cms}/settings`;
      const merge = (body: unknown) => () =>
        tenant.request({ method: "PATCH", path, contentType: "application/merge-patch+json", body });
      await refused(merge({ data: { a: "tenant" } }), "an update of its data", tenantName);
      await refused(
        merge({ metadata: { labels: { "sync.appuio.ch/managed-by": null } } }),
        "the removal of espejo's label",
        tenantName,
      );
      await refused(() => tenant.request({ method: "DELETE", path }), "its deletion", tenantName);
      await refused(
        () => tenant.request({ method: "POST", path: cms, body: cm("squat", { x: "1" }, LABEL) }),
        "a create with espejo's label",
        tenantName,
      );
      // A deletecollection is admitted object by object: the managed one stays.
      await tenant.request({ method: "DELETE", path: cms }).catch((e) => {
        if (!(e instanceof ApiError && e.code === 403)) throw e;
      });
      assert.equal((await getObject(admin, path))?.data?.a, "1", "after all that, the object is espejo's");

      // Its own unlabelled objects: untouched by the policy. Labelling one is refused.
      await tenant.request({ method: "POST", path: cms, body: cm("mine", { v: "1" }) });
      await tenant.request({
        method: "PATCH",
        path: `${cms}/mine`,
        contentType: "application/merge-patch+json",
        body: { data: { v: "2" } },
      });
      await refused(
        () =>
          tenant.request({
            method: "PATCH",
            path: `${cms}/mine`,
            contentType: "application/merge-patch+json",
            body: { metadata: { labels: LABEL } },
          }),
        "labelling its own object",
        tenantName,
      );
      await tenant.request({ method: "DELETE", path: `${cms}/mine` });

      // espejo updates, creates and deletes.
      const sc = await admin.request<{ metadata: { resourceVersion: string } }>({
        method: "GET",
        path: `/apis/sync.appuio.ch/v1alpha1/namespaces/${cfgNs}/syncconfigs/adm`,
      });
      await admin.request({
        method: "PUT",
        path: `/apis/sync.appuio.ch/v1alpha1/namespaces/${cfgNs}/syncconfigs/adm`,
        body: {
          apiVersion: "sync.appuio.ch/v1alpha1",
          kind: "SyncConfig",
          metadata: { name: "adm", namespace: cfgNs, resourceVersion: sc.metadata.resourceVersion },
          spec: {
            namespaceSelector: { matchNames: [ns] },
            syncItems: [cm("other", { b: "2" })],
            deleteItems: [{ apiVersion: "v1", kind: "ConfigMap", name: "settings" }],
          },
        },
      });
      await eventually(
        async () => (await getObject(admin, `${cms}/other`))?.data?.b === "2" && !(await getObject(admin, path)),
        20_000,
        "espejo to create other and delete settings",
      );
      await measure(c, espejo, cms);

      // The namespace goes, labelled objects and all: its deletion is not held by the policy.
      await admin.request({ method: "DELETE", path: `/api/v1/namespaces/${ns}` });
      await eventually(
        async () => !(await getObject(admin, `/api/v1/namespaces/${ns}`)),
        60_000,
        `namespace ${ns} to be deleted`,
      );
    } finally {
      await ctl.stop();
      tenant.close();
      for (const r of ["validatingadmissionpolicybindings", "validatingadmissionpolicies"]) {
        await admin.request({
          method: "DELETE",
          path: `/apis/admissionregistration.k8s.io/v1/${r}/espejo-managed-objects${suffix}`,
        }).catch((e) => {
          if (!isNotFound(e)) throw e;
        });
      }
      await Deno.remove(dir, { recursive: true });
      await Deno.remove(kubeconfig);
      admin.close();
    }
  },
);

/**
 * What the policy costs espejo's writes: 100 updates of a labelled object under espejo's identity, matched by the
 * policy, beside 100 of an unlabelled one, which it does not match. A figure for docs/threat-model.md, printed, not
 * asserted.
 */
async function measure(c: TestCluster, espejo: Identity, cms: string): Promise<void> {
  const client = clientFor(c, espejo);
  try {
    const time = async (name: string, labels: Record<string, string>) => {
      // As espejo writes: PUT (its ClusterRole has no patch), each on the version the last reply returned.
      let o = await client.request<KubeObject>({ method: "POST", path: cms, body: cm(name, { n: "0" }, labels) });
      const start = performance.now();
      for (let i = 1; i <= 100; i++) {
        o = await client.request<KubeObject>({
          method: "PUT",
          path: `${cms}/${name}`,
          body: { ...o, data: { n: String(i) } },
        });
      }
      return performance.now() - start;
    };
    // Alternated, three rounds each, medians: the machine is shared and the first round warms caches.
    const matched: number[] = [];
    const unmatched: number[] = [];
    for (let round = 0; round < 3; round++) {
      unmatched.push(await time(`timed-plain-${round}`, {}));
      matched.push(await time(`timed-labelled-${round}`, LABEL));
    }
    const median = (xs: number[]) => xs.toSorted((a, b) => a - b)[1].toFixed(0);
    console.log(
      `admission policy: 100 updates by espejo of a labelled object ${median(matched)} ms (median of ` +
        `${matched.map((x) => x.toFixed(0))}), of an unlabelled one ${median(unmatched)} ms ` +
        `(${unmatched.map((x) => x.toFixed(0))})`,
    );
  } finally {
    client.close();
  }
}

/**
 * `espejo plan` as a process (the shipped permission set), against the real API server: what it lists is what the
 * controller then does, it writes nothing, its exit codes, `--server-dry-run` against a real admission policy,
 * prunes, and that it never shows a Secret's data.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { HttpKubeClient } from "../../lib/kube/client.ts";
import { encodeBase64 } from "../../lib/kube/objects.ts";
import { createServiceAccount, kubeconfigYaml } from "../../testenv/controlplane.ts";
import { planProcess, type PlanRun } from "../../testenv/plan_process.ts";
import { auditEvents, clientFor, eventually, type TestCluster, testCluster, uniqueName } from "../../testenv/shared.ts";
import { auditNow, createNamespace, getObject, requestsBy, startController, statusOf } from "../../testenv/harness.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const cm = (name: string, data: Record<string, string> = { v: name }) => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name },
  data,
});
const syncConfig = (namespace: string, name: string, spec: unknown, annotations?: Record<string, string>) => ({
  apiVersion: "sync.appuio.ch/v1alpha1",
  kind: "SyncConfig",
  metadata: { name, namespace, annotations },
  spec,
});

interface PlanJson {
  syncConfigs: {
    syncConfig: string;
    invalid?: string;
    actions: {
      action: string;
      namespace: string;
      kind: string;
      name: string;
      reason?: string;
      changes?: { op: string; path: string; from?: string; to?: string }[];
    }[];
  }[];
  summary: Record<string, number>;
  comparison: { mode: string; why: string };
  controller?: { identity: string; missingRights: { verb: string; resource: string }[] };
}

/** A ServiceAccount bound to cluster-admin for the plan, so that its requests are told apart in the audit log. */
async function planner(
  c: TestCluster,
  admin: HttpKubeClient,
  cfgNs: string,
): Promise<{ kubeconfig: string; username: string }> {
  const identity = await createServiceAccount(admin, cfgNs, "planner", "cluster-admin");
  const kubeconfig = await Deno.makeTempFile({ suffix: ".yaml" });
  await Deno.writeTextFile(kubeconfig, kubeconfigYaml(c.server, c.caPem, identity));
  return { kubeconfig, username: identity.username };
}

async function plan(kubeconfig: string, cfgNs: string, args: string[], files: unknown[][] = []): Promise<PlanRun> {
  const fileArgs: string[] = [];
  for (const docs of files) {
    const f = await Deno.makeTempFile({ suffix: ".json" });
    await Deno.writeTextFile(f, docs.map((d) => JSON.stringify(d)).join("\n---\n"));
    fileArgs.push("-f", f);
  }
  return await planProcess(["--kubeconfig", kubeconfig, ...fileArgs, ...args], { WATCH_NAMESPACE: cfgNs });
}

const key = (a: { namespace?: string; kind?: string; resource?: string }) => `${a.namespace} ${a.kind ?? a.resource}`;

Deno.test("espejo plan lists exactly the creates the controller then performs, and writes nothing", opts, async () => {
  const c = await testCluster();
  const admin = clientFor(c);
  const cfgNs = uniqueName("cfg");
  const prefix = uniqueName("plan");
  const namespaces = [`${prefix}-a`, `${prefix}-b`, `${prefix}-c`];
  for (const ns of namespaces) await createNamespace(admin, ns);
  // Exists before: adopted (an update), not created. And one object a deleteItem removes.
  await admin.request({ method: "POST", path: `/api/v1/namespaces/${prefix}-a/configmaps`, body: cm("shared") });
  await admin.request({ method: "POST", path: `/api/v1/namespaces/${prefix}-b/configmaps`, body: cm("old") });
  const { kubeconfig, username } = await planner(c, admin, cfgNs);
  const sc = syncConfig(cfgNs, "p", {
    namespaceSelector: { matchNames: [`${prefix}-.*`] },
    syncItems: [cm("shared"), cm("own-${PROJECT_NAME}")],
    deleteItems: [{ apiVersion: "v1", kind: "ConfigMap", name: "old" }],
  });
  const since = auditNow();
  const run = await plan(kubeconfig, cfgNs, ["--output", "json"], [[sc]]);
  assert.equal(run.code, 2, run.stderr);
  const report = JSON.parse(run.stdout) as PlanJson;
  const actions = report.syncConfigs.find((s) => s.syncConfig === `${cfgNs}/p`)!.actions;
  const creates = actions.filter((a) => a.action === "create");
  assert.equal(creates.length, 5); // own-* in 3 namespaces, shared in 2
  assert.deepEqual(actions.filter((a) => a.action === "adopt").map((a) => `${a.namespace}/${a.name}`), [
    `${prefix}-a/shared`,
  ]);
  assert.deepEqual(actions.filter((a) => a.action === "delete").map((a) => `${a.namespace}/${a.name}`), [
    `${prefix}-b/old`,
  ]);
  // Its identity may write: the creates were dry-run, and that is said.
  assert.equal(report.comparison.mode, "server-dry-run");
  assert.equal(report.comparison.why, `as ${username}`);
  assert.equal(report.controller, undefined, "the rights check is off unless asked for");
  // Reads only: lists and gets, dry runs, and the (unstored) reviews of who it is and what it may do.
  const byPlan = (await auditEvents(c)).filter((e) =>
    e.user.username === username && e.requestReceivedTimestamp >= since
  );
  assert.ok(byPlan.length > 0);
  const reviews = ["selfsubjectreviews", "selfsubjectaccessreviews"];
  const writes = byPlan.filter((e) =>
    !["get", "list"].includes(e.verb) && !reviews.includes(e.objectRef?.resource ?? "") &&
    !e.requestURI.includes("dryRun=All")
  );
  assert.deepEqual(writes.map((e) => `${e.verb} ${e.requestURI}`), []);

  const ctl = await startController(c, { watchNamespace: cfgNs });
  try {
    const started = auditNow();
    await admin.request({
      method: "POST",
      path: `/apis/sync.appuio.ch/v1alpha1/namespaces/${cfgNs}/syncconfigs`,
      body: sc,
    });
    await eventually(
      async () => (await statusOf(admin, cfgNs, "p")).synchronizedItemCount === 6,
      20_000,
      "6 items synced",
    );
    const created = (await requestsBy(c, ctl.identity, started))
      .filter((e) => e.verb === "create" && e.responseStatus?.code === 201 && e.objectRef?.resource === "configmaps");
    assert.deepEqual(
      created.map((e) => key(e.objectRef!)).sort(),
      creates.map((a) => `${a.namespace} configmaps`).sort(),
    );
    for (const a of creates) {
      const o = await getObject(admin, `/api/v1/namespaces/${a.namespace}/configmaps/${a.name}`);
      assert.equal(o?.metadata?.annotations?.["sync.appuio.ch/created-by"], `${cfgNs}/p`, `${a.namespace}/${a.name}`);
    }
    // Nothing left to do: exit code 0.
    const again = await plan(kubeconfig, cfgNs, ["--output", "json"]);
    assert.equal(again.code, 0, again.stdout + again.stderr);
    const summary = (JSON.parse(again.stdout) as PlanJson).summary;
    assert.equal(summary.unchanged, 6);
    assert.equal(summary.create + summary.update + summary.adopt + summary.delete, 0);
  } finally {
    await ctl.stop();
    admin.close();
  }
});

Deno.test(
  "espejo plan: exit 1 on an Invalid SyncConfig; --server-dry-run reports an admission rejection",
  opts,
  async () => {
    const c = await testCluster();
    const admin = clientFor(c);
    const cfgNs = uniqueName("cfg");
    const ns = uniqueName("plan-vap");
    await createNamespace(admin, ns, { "espejo-test/vap": ns });
    const policy = uniqueName("no-forbidden");
    await admin.request({
      method: "POST",
      path: "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
      body: {
        apiVersion: "admissionregistration.k8s.io/v1",
        kind: "ValidatingAdmissionPolicy",
        metadata: { name: policy },
        spec: {
          failurePolicy: "Fail",
          matchConstraints: {
            resourceRules: [{
              apiGroups: [""],
              apiVersions: ["v1"],
              operations: ["CREATE", "UPDATE"],
              resources: ["configmaps"],
            }],
          },
          validations: [{
            expression: "!has(object.data) || !('forbidden' in object.data)",
            message: "no forbidden key",
          }],
        },
      },
    });
    await admin.request({
      method: "POST",
      path: "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
      body: {
        apiVersion: "admissionregistration.k8s.io/v1",
        kind: "ValidatingAdmissionPolicyBinding",
        metadata: { name: policy },
        spec: {
          policyName: policy,
          validationActions: ["Deny"],
          matchResources: { namespaceSelector: { matchLabels: { "espejo-test/vap": ns } } },
        },
      },
    });
    // The policy takes effect once the API server has loaded it.
    await eventually(
      async () => {
        try {
          await admin.request({
            method: "POST",
            path: `/api/v1/namespaces/${ns}/configmaps`,
            query: { dryRun: "All" },
            body: cm("probe", { forbidden: "x" }),
          });
          return false;
        } catch {
          return true;
        }
      },
      30_000,
      "the admission policy to reject a ConfigMap",
    );
    const { kubeconfig } = await planner(c, admin, cfgNs);
    try {
      const sc = syncConfig(cfgNs, "p", {
        namespaceSelector: { matchNames: [ns] },
        syncItems: [cm("x", { forbidden: "1" })],
      });
      const rules = await plan(kubeconfig, cfgNs, ["--output", "json", "--server-dry-run=false"], [[sc]]);
      assert.equal(rules.code, 2, rules.stderr);
      // A dry run is the default where the identity may make it, and --server-dry-run forces it.
      for (const flags of [[], ["--server-dry-run"], ["--server-dry-run=true"]]) {
        const dry = await plan(kubeconfig, cfgNs, ["--output", "json", ...flags], [[sc]]);
        assert.equal(dry.code, 1, dry.stderr);
        const [action] = (JSON.parse(dry.stdout) as PlanJson).syncConfigs[0].actions;
        assert.equal(action.action, "fail");
        assert.match(action.reason ?? "", /would reject the create: .*no forbidden key/);
      }

      const invalid = syncConfig(cfgNs, "bad", { namespaceSelector: { matchNames: ["("] }, syncItems: [cm("x")] });
      const text = await plan(kubeconfig, cfgNs, [], [[invalid]]);
      assert.equal(text.code, 1);
      assert.match(text.stdout, new RegExp(`SyncConfig ${cfgNs}/bad .*: Invalid: .*matchNames`));
      const notManifest = await plan(kubeconfig, cfgNs, [], [[sc, { kind: "ConfigMap" }]]);
      assert.equal(notManifest.code, 1);
      assert.match(notManifest.stderr, /^espejo plan: error: .*\.json: document 2 has no apiVersion$/m);
    } finally {
      await admin.request({
        method: "DELETE",
        path: `/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings/${policy}`,
      });
      await admin.request({
        method: "DELETE",
        path: `/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/${policy}`,
      });
      admin.close();
    }
  },
);

Deno.test("espejo plan shows what an edit of a pruning SyncConfig would prune", opts, async () => {
  const c = await testCluster();
  const admin = clientFor(c);
  const cfgNs = uniqueName("cfg");
  const namespaces = [uniqueName("plan-pa"), uniqueName("plan-pb")];
  for (const ns of namespaces) await createNamespace(admin, ns);
  const pruning = { "sync.appuio.ch/prune": "true" };
  const selector = { matchNames: namespaces };
  const sc = syncConfig(cfgNs, "p", { namespaceSelector: selector, syncItems: [cm("keep"), cm("drop")] }, pruning);
  const ctl = await startController(c, { watchNamespace: cfgNs });
  try {
    await admin.request({
      method: "POST",
      path: `/apis/sync.appuio.ch/v1alpha1/namespaces/${cfgNs}/syncconfigs`,
      body: sc,
    });
    await eventually(
      async () => (await statusOf(admin, cfgNs, "p")).synchronizedItemCount === 4,
      20_000,
      "4 items synced",
    );
  } finally {
    await ctl.stop();
  }
  const { kubeconfig } = await planner(c, admin, cfgNs);
  const edited = syncConfig(cfgNs, "p", { namespaceSelector: selector, syncItems: [cm("keep")] }, pruning);
  const run = await plan(kubeconfig, cfgNs, ["--output", "json"], [[edited]]);
  assert.equal(run.code, 2, run.stderr);
  const actions = (JSON.parse(run.stdout) as PlanJson).syncConfigs[0].actions;
  assert.deepEqual(
    actions.map((a) => `${a.action} ${a.namespace}/${a.name}`).sort(),
    namespaces.map((ns) => `prune ${ns}/drop`).sort(),
  );
  const text = await plan(kubeconfig, cfgNs, [], [[edited]]);
  assert.match(text.stdout, /- prune {4}ConfigMap drop: .*no syncItem of SyncConfig .* names it any more/);
  assert.match(
    text.stdout,
    /Plan: 0 to create, 0 to adopt, 0 to update, 0 to recreate, 0 to delete, 2 to prune, 0 failing; 2 unchanged\./,
  );
  admin.close();
});

/** Every piece of eight characters of each value and of its base64. */
function secretPieces(values: string[]): string[] {
  return values.flatMap((v) => [v, encodeBase64(v)]).flatMap((s) =>
    Array.from({ length: s.length - 7 }, (_, i) => s.slice(i, i + 8))
  );
}

Deno.test(
  "espejo plan never shows a Secret's data: not changed, not removed whole, not in kubectl's last-applied annotation, " +
    "however the item spells the core group (v1, /v1)",
  opts,
  async () => {
    const c = await testCluster();
    const admin = clientFor(c);
    const cfgNs = uniqueName("cfg");
    const ns = uniqueName("plan-secret");
    await createNamespace(admin, ns, { "espejo-test/secret-vap": ns });
    const [applied, appliedToken, wanted] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
    // As a user creates Secrets: kubectl apply, which copies the manifest, values and all, into an annotation.
    const dir = await Deno.makeTempDir({ prefix: "espejo-plan-secret-" });
    const kubeconfigAdmin = join(dir, "admin.kubeconfig");
    await Deno.writeTextFile(kubeconfigAdmin, kubeconfigYaml(c.server, c.caPem, c.admin));
    const manifest = (name: string) => ({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name, namespace: ns },
      type: "Opaque",
      stringData: { password: applied },
      data: { token: encodeBase64(appliedToken) },
    });
    await Deno.writeTextFile(
      join(dir, "secrets.json"),
      JSON.stringify({
        apiVersion: "v1",
        kind: "List",
        items: ["creds", "bare", "creds-slash", "bare-slash"].map(manifest),
      }),
    );
    const apply = await new Deno.Command("kubectl", {
      args: ["--kubeconfig", kubeconfigAdmin, "apply", "-f", join(dir, "secrets.json")],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(apply.code, 0, new TextDecoder().decode(apply.stderr));
    const live = await getObject(admin, `/api/v1/namespaces/${ns}/secrets/creds`);
    const lastApplied = live?.metadata?.annotations?.["kubectl.kubernetes.io/last-applied-configuration"] ?? "";
    assert.ok(lastApplied.includes(applied), "kubectl apply put the value into its annotation");

    // A policy whose own message quotes the values it refuses, old and new, as stored (base64).
    const policy = uniqueName("quotes-secrets");
    const quote = (o: string) =>
      `(${o} != null && has(${o}.data) && 'password' in ${o}.data ? ${o}.data['password'] : '-')`;
    await admin.request({
      method: "POST",
      path: "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
      body: {
        apiVersion: "admissionregistration.k8s.io/v1",
        kind: "ValidatingAdmissionPolicy",
        metadata: { name: policy },
        spec: {
          failurePolicy: "Fail",
          matchConstraints: {
            resourceRules: [{ apiGroups: [""], apiVersions: ["v1"], operations: ["UPDATE"], resources: ["secrets"] }],
          },
          validations: [{
            expression: "false",
            messageExpression: `'refused: new ' + ${quote("object")} + ', old ' + ${quote("oldObject")}`,
          }],
        },
      },
    });
    await admin.request({
      method: "POST",
      path: "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
      body: {
        apiVersion: "admissionregistration.k8s.io/v1",
        kind: "ValidatingAdmissionPolicyBinding",
        metadata: { name: policy },
        spec: {
          policyName: policy,
          validationActions: ["Deny"],
          matchResources: { namespaceSelector: { matchLabels: { "espejo-test/secret-vap": ns } } },
        },
      },
    });
    const { kubeconfig } = await planner(c, admin, cfgNs);
    try {
      // The policy quotes the value once the API server has loaded it.
      await eventually(
        async () => {
          try {
            await admin.request({
              method: "PUT",
              path: `/api/v1/namespaces/${ns}/secrets/creds`,
              query: { dryRun: "All" },
              body: live,
            });
            return false;
          } catch (e) {
            return String(e).includes(`old ${encodeBase64(applied)}`);
          }
        },
        30_000,
        "the admission policy to quote a Secret's value",
      );
      // `/v1` is the core group's v1 to the API server (which admits it in a SyncConfig) and to espejo's resolver:
      // these are Secrets as much as those spelled `v1` (issue 36: they were shown whole). First, so that the
      // Secrets are listed for the `/v1` items: the plan must not depend on another item spelling `v1`.
      const items = (apiVersion: string, suffix: string) => [
        // Other data than the live Secret's, given as stringData.
        {
          apiVersion,
          kind: "Secret",
          metadata: { name: `creds${suffix}` },
          type: "Opaque",
          stringData: { password: wanted },
        },
        // No data at all: the live Secret's is removed as a whole.
        { apiVersion, kind: "Secret", metadata: { name: `bare${suffix}` }, type: "Opaque" },
      ];
      const sc = syncConfig(cfgNs, "p", {
        namespaceSelector: { matchNames: [ns] },
        syncItems: [...items("/v1", "-slash"), ...items("v1", "")],
      });
      // The API server takes the SyncConfig as it is (a dry run: the plan reads it from its file).
      await admin.request({
        method: "POST",
        path: `/apis/sync.appuio.ch/v1alpha1/namespaces/${cfgNs}/syncconfigs`,
        query: { dryRun: "All" },
        body: sc,
      });
      const text = await plan(kubeconfig, cfgNs, ["--server-dry-run=false"], [[sc]]);
      const json = await plan(kubeconfig, cfgNs, ["--server-dry-run=false", "--output", "json"], [[sc]]);
      const dry = await plan(kubeconfig, cfgNs, ["--server-dry-run"], [[sc]]);
      const dryJson = await plan(kubeconfig, cfgNs, ["--server-dry-run", "--output", "json"], [[sc]]);
      assert.equal(text.code, 2, text.stderr);
      assert.equal(dry.code, 1, dry.stderr);
      // What changes is shown, key by key, without a value.
      assert.match(text.stdout, /~ \.data\.password: \*\*\* \(before\) -> \*\*\* \(after\)/);
      assert.match(text.stdout, /- \.data\.token: \*\*\*/);
      assert.match(
        text.stdout,
        /- \.metadata\.annotations\.kubectl\.kubernetes\.io\/last-applied-configuration: \*\*\*/,
      );
      assert.match(
        dry.stdout,
        /would reject the (adopt|update): .*refused: new \[redacted\], old \[redacted\]/,
      );
      const actions = (JSON.parse(json.stdout) as PlanJson).syncConfigs[0].actions;
      assert.deepEqual(actions.map((a) => `${a.action} ${a.name}`).sort(), [
        "adopt bare",
        "adopt bare-slash",
        "adopt creds",
        "adopt creds-slash",
      ]);
      // Each spelling's Secrets are compared (not failed) and shown key by key, every value masked.
      const lastApplied = ".metadata.annotations.kubectl.kubernetes.io/last-applied-configuration";
      for (const a of actions) {
        const secretChanges = (a.changes ?? []).filter((ch) =>
          /^\.(data|stringData|metadata\.annotations)\./.test(ch.path)
        );
        assert.ok(secretChanges.some((ch) => ch.path === ".data.token"), `${a.name}: ${JSON.stringify(a.changes)}`);
        assert.ok(secretChanges.some((ch) => ch.path === lastApplied), `${a.name}: ${JSON.stringify(a.changes)}`);
        for (const ch of secretChanges) {
          assert.ok([undefined, "***", "*** (before)", "*** (after)"].includes(ch.from), JSON.stringify(ch));
          assert.ok([undefined, "***", "*** (before)", "*** (after)"].includes(ch.to), JSON.stringify(ch));
        }
      }
      const dryActions = (JSON.parse(dryJson.stdout) as PlanJson).syncConfigs[0].actions;
      for (const name of ["creds", "creds-slash"]) {
        const refused = dryActions.find((a) => a.name === name);
        assert.match(refused?.reason ?? "", /refused: new \[redacted\], old \[redacted\]/, JSON.stringify(refused));
      }
      const pieces = secretPieces([applied, appliedToken, wanted]);
      for (const [name, run] of Object.entries({ text, json, dry, dryJson })) {
        for (const out of [run.stdout, run.stderr]) {
          const shown = pieces.find((p) => out.includes(p));
          assert.equal(shown, undefined, `${name} shows ${shown}:\n${out}`);
        }
      }
    } finally {
      await admin.request({
        method: "DELETE",
        path: `/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings/${policy}`,
      });
      await admin.request({
        method: "DELETE",
        path: `/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/${policy}`,
      });
      await Deno.remove(dir, { recursive: true });
      admin.close();
    }
  },
);

/** A kubeconfig for `identity` whose current context sets `namespace`, as `kubectl config set-context --namespace`. */
async function kubeconfigWithNamespace(c: TestCluster, identity: { username: string; token: string }, ns: string) {
  const file = await Deno.makeTempFile({ suffix: ".yaml" });
  const yaml = kubeconfigYaml(c.server, c.caPem, identity).replace(
    "    cluster: testenv\n",
    `    cluster: testenv\n    namespace: ${ns}\n`,
  );
  assert.ok(yaml.includes(`namespace: ${ns}`));
  await Deno.writeTextFile(file, yaml);
  return file;
}

const names = (run: PlanRun) => (JSON.parse(run.stdout) as PlanJson).syncConfigs.map((s) => s.syncConfig).sort();

Deno.test(
  "espejo plan on a converged cluster: no change and exit 0 for every kind the controller syncs, by dry run and by rules",
  opts,
  async () => {
    const c = await testCluster();
    const admin = clientFor(c);
    const cfgNs = uniqueName("cfg");
    const namespaces = [uniqueName("plan-ca"), uniqueName("plan-cb")];
    for (const ns of namespaces) await createNamespace(admin, ns);
    const rbac = "rbac.authorization.k8s.io";
    const items = [
      cm("settings"),
      // No type: the server stores Opaque.
      { apiVersion: "v1", kind: "Secret", metadata: { name: "creds" }, data: { token: encodeBase64("t") } },
      { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "bot" } },
      {
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "web" },
        spec: { selector: { app: "w" }, ports: [{ port: 80 }] },
      },
      {
        apiVersion: "v1",
        kind: "LimitRange",
        metadata: { name: "limits" },
        spec: { limits: [{ type: "Container", max: { cpu: "2" }, default: { memory: "64Mi" } }] },
      },
      { apiVersion: "v1", kind: "ResourceQuota", metadata: { name: "quota" }, spec: { hard: { pods: "10" } } },
      {
        apiVersion: `${rbac}/v1`,
        kind: "Role",
        metadata: { name: "reader" },
        rules: [{ apiGroups: [""], resources: ["configmaps"], verbs: ["get"] }],
      },
      {
        apiVersion: `${rbac}/v1`,
        kind: "RoleBinding",
        metadata: { name: "readers" },
        roleRef: { apiGroup: rbac, kind: "Role", name: "reader" },
        subjects: [{ kind: "User", name: "alice" }, { kind: "Group", name: "devs" }],
      },
      // `egress: []` is dropped by the server, which adds policyTypes.
      {
        apiVersion: "networking.k8s.io/v1",
        kind: "NetworkPolicy",
        metadata: { name: "deny" },
        spec: { podSelector: {}, egress: [] },
      },
    ];
    const total = items.length * namespaces.length;
    const ctl = await startController(c, { watchNamespace: cfgNs, optIn: ["secrets", "serviceaccounts"] });
    try {
      await admin.request({
        method: "POST",
        path: `/apis/sync.appuio.ch/v1alpha1/namespaces/${cfgNs}/syncconfigs`,
        body: syncConfig(cfgNs, "every-kind", { namespaceSelector: { matchNames: namespaces }, syncItems: items }),
      });
      await eventually(
        async () => (await statusOf(admin, cfgNs, "every-kind")).synchronizedItemCount === total,
        30_000,
        `${total} items synced`,
      );
    } finally {
      await ctl.stop();
    }
    const { kubeconfig, username } = await planner(c, admin, cfgNs);
    // Reads everything, writes nothing: no dry run is allowed to it.
    await admin.request({
      method: "POST",
      path: `/apis/${rbac}/v1/clusterroles`,
      body: {
        apiVersion: `${rbac}/v1`,
        kind: "ClusterRole",
        metadata: { name: `${cfgNs}-reader` },
        rules: [{ apiGroups: ["*"], resources: ["*"], verbs: ["get", "list"] }],
      },
    });
    const reader = await createServiceAccount(admin, cfgNs, "reader", `${cfgNs}-reader`);
    const readerConfig = await Deno.makeTempFile({ suffix: ".yaml" });
    await Deno.writeTextFile(readerConfig, kubeconfigYaml(c.server, c.caPem, reader));
    try {
      const runs: [string, string, string[], string, RegExp][] = [
        ["by default, as one who may write", kubeconfig, [], "server-dry-run", new RegExp(`^as ${username}$`)],
        ["forced", kubeconfig, ["--server-dry-run"], "server-dry-run", /^--server-dry-run, as /],
        ["by rules when asked", kubeconfig, ["--server-dry-run=false"], "rules", /^--server-dry-run=false$/],
        [
          "by rules, as one who may not write",
          readerConfig,
          [],
          "rules",
          new RegExp(`^no rights to dry-run: ${reader.username} may not (update|create|delete) `),
        ],
      ];
      for (const [name, config, flags, mode, why] of runs) {
        const run = await plan(config, cfgNs, ["--output", "json", ...flags]);
        assert.equal(run.code, 0, `${name}: ${run.stdout}\n${run.stderr}`);
        const report = JSON.parse(run.stdout) as PlanJson;
        assert.deepEqual(report.syncConfigs[0].actions, [], name);
        assert.equal(report.summary.unchanged, total, name);
        assert.equal(report.comparison.mode, mode, name);
        assert.match(report.comparison.why, why, name);
      }
      const text = await plan(kubeconfig, cfgNs, []);
      assert.equal(text.code, 0, text.stdout + text.stderr);
      assert.match(text.stdout, new RegExp(`^SyncConfigs read from namespace ${cfgNs} \\(WATCH_NAMESPACE\\)\\.$`, "m"));
      assert.match(text.stdout, new RegExp(`^Writes compared by server-side dry run \\(as ${username}\\)\\.$`, "m"));
      assert.match(text.stdout, new RegExp(`0 failing; ${total} unchanged\\.$`, "m"));
      const rules = await plan(readerConfig, cfgNs, []);
      assert.match(rules.stdout, /^Writes compared by espejo's rules \(no rights to dry-run: .* may not .*\)\.$/m);
    } finally {
      await admin.request({ method: "DELETE", path: `/apis/${rbac}/v1/clusterroles/${cfgNs}-reader` });
      admin.close();
    }
  },
);

Deno.test(
  "espejo plan reads what kubectl apply -f reads, in the namespace kubectl would use, and only what the controller reads",
  opts,
  async () => {
    const c = await testCluster();
    const admin = clientFor(c);
    const cfgNs = uniqueName("cfg");
    const otherNs = uniqueName("cfg-other");
    const target = uniqueName("plan-in");
    await createNamespace(admin, target);
    await createNamespace(admin, otherNs);
    const spec = { namespaceSelector: { matchNames: [target] }, syncItems: [cm("x")] };
    const nameless = (name: string) => ({ ...syncConfig("", name, spec), metadata: { name } });
    // In the cluster, in a namespace the controller of cfgNs does not read.
    await admin.request({
      method: "POST",
      path: `/apis/sync.appuio.ch/v1alpha1/namespaces/${otherNs}/syncconfigs`,
      body: syncConfig(otherNs, "elsewhere", spec),
    });
    const identity = await createServiceAccount(admin, cfgNs, "planner", "cluster-admin");
    const kubeconfig = await planner(c, admin, cfgNs).then((p) => p.kubeconfig);
    const inContext = await kubeconfigWithNamespace(c, identity, cfgNs);
    const dir = await Deno.makeTempDir({ prefix: "espejo-plan-input-" });
    try {
      const watched = { WATCH_NAMESPACE: cfgNs };
      const run = (args: string[], env: Record<string, string> = watched, stdin?: string) =>
        planProcess(["--kubeconfig", kubeconfig, "--output", "json", ...args], env, stdin);

      // WATCH_NAMESPACE (or --watch-namespace) limits what is read from the cluster, as for the controller.
      const watching = await run([]);
      assert.equal(watching.code, 0, watching.stderr);
      assert.ok(!names(watching).includes(`${otherNs}/elsewhere`), watching.stdout);
      const flagged = await run(["--watch-namespace", otherNs]);
      assert.deepEqual(names(flagged), [`${otherNs}/elsewhere`]);
      const everywhere = await run([], {});
      assert.ok(names(everywhere).includes(`${otherNs}/elsewhere`));
      assert.match((JSON.parse(everywhere.stdout) as { syncConfigsFrom: string }).syncConfigsFrom, /^every namespace/);

      // A v1 List, as kubectl get -o yaml prints it; its other kinds are ignored, in one line.
      const list = join(dir, "list.json");
      await Deno.writeTextFile(
        list,
        JSON.stringify({ apiVersion: "v1", kind: "List", items: [syncConfig(cfgNs, "from-list", spec), cm("aside")] }),
      );
      const fromList = await run(["-f", list]);
      assert.equal(fromList.code, 2, fromList.stderr);
      assert.deepEqual(names(fromList), [`${cfgNs}/from-list`]);
      assert.match(fromList.stderr, /^espejo plan: ignoring 1 object\(s\) that are not SyncConfigs: ConfigMap aside /m);

      // A directory: its manifests, with -R those of its subdirectories.
      const tree = join(dir, "tree");
      await Deno.mkdir(join(tree, "sub"), { recursive: true });
      await Deno.writeTextFile(join(tree, "top.yaml"), JSON.stringify(syncConfig(cfgNs, "top", spec)));
      await Deno.writeTextFile(join(tree, "sub", "deep.yml"), JSON.stringify(syncConfig(cfgNs, "deep", spec)));
      await Deno.writeTextFile(join(tree, "README.txt"), "not: [a manifest");
      assert.deepEqual(names(await run(["-f", tree])), [`${cfgNs}/top`]);
      assert.deepEqual(names(await run(["-R", "-f", tree])), [`${cfgNs}/deep`, `${cfgNs}/top`]);

      // Standard input, beside a file.
      const piped = await run(["-f", "-", "-f", list], watched, JSON.stringify(syncConfig(cfgNs, "piped", spec)));
      assert.deepEqual(names(piped), [`${cfgNs}/from-list`, `${cfgNs}/piped`]);

      // No namespace in the file: -n, else where the controller reads (WATCH_NAMESPACE, --watch-namespace), else
      // the context's, else default, as kubectl.
      const bare = join(dir, "bare.yaml");
      await Deno.writeTextFile(bare, JSON.stringify(nameless("bare")));
      const inOther = ["--kubeconfig", await kubeconfigWithNamespace(c, identity, otherNs), "-o", "json", "-f", bare];
      const byWatch = await planProcess(inOther, watched);
      assert.equal(byWatch.code, 2, byWatch.stderr);
      assert.deepEqual(names(byWatch), [`${cfgNs}/bare`], "WATCH_NAMESPACE before the context's");
      assert.deepEqual(names(await planProcess([...inOther, "--watch-namespace", target], watched)), [
        `${target}/bare`,
      ]);
      const byContext = await planProcess(inOther, {});
      assert.equal(byContext.code, 2, byContext.stderr);
      assert.deepEqual(names(byContext), [`${otherNs}/bare`], "no WATCH_NAMESPACE: the context's");
      assert.deepEqual(names(await planProcess(["--kubeconfig", inContext, "-o", "json", "-f", bare], watched)), [
        `${cfgNs}/bare`,
      ]);
      assert.deepEqual(names(await run(["-f", bare], {})), ["default/bare"], "neither: default");
      assert.deepEqual(names(await run(["-n", cfgNs, "-f", bare])), [`${cfgNs}/bare`]);
      const elsewhere = await run(["-n", otherNs, "-f", bare]);
      assert.equal(elsewhere.code, 1);
      assert.match(
        elsewhere.stderr,
        new RegExp(
          `^espejo plan: error: .*SyncConfig ${otherNs}/bare is in namespace ${otherNs}, .*reads only ${cfgNs}`,
          "m",
        ),
      );
      const help = await planProcess(["--help"], {});
      assert.match(
        help.stdout.replace(/\s+/g, " "),
        /-n, --namespace .*default: WATCH_NAMESPACE or --watch-namespace when set, else the kubeconfig context's/,
      );
      const contradicts = await run(["-n", otherNs, "-f", list]);
      assert.equal(contradicts.code, 1);
      assert.match(contradicts.stderr, /does not match the namespace .* given with -n/);

      // The rights check: off unless asked for; then it names whom it checked, first.
      const quiet = await planProcess(["--kubeconfig", kubeconfig, "-f", list], watched);
      assert.doesNotMatch(quiet.stdout, /[Rr]ights/);
      const checked = await planProcess(["--kubeconfig", kubeconfig, "-f", list, "--check-rights"], watched);
      assert.match(checked.stdout, /^Rights checked for system:serviceaccount:espejo-system:espejo:$/m);
      const named = await run(["-f", list, "--check-rights", "--controller-identity", identity.username]);
      const controller = (JSON.parse(named.stdout) as PlanJson).controller!;
      assert.equal(controller.identity, identity.username);
      assert.deepEqual(controller.missingRights, [], "cluster-admin lacks nothing");
    } finally {
      await Deno.remove(dir, { recursive: true });
      admin.close();
    }
  },
);

Deno.test(
  "espejo plan -f plans the files' SyncConfigs only, as kubectl diff -f: drift and an Invalid SyncConfig elsewhere " +
    "change neither its output nor its exit code, --all shows them, and what a file contradicts is still reported",
  opts,
  async () => {
    const c = await testCluster();
    const admin = clientFor(c);
    const cfgNs = uniqueName("cfg");
    const ns = uniqueName("plan-scope");
    await createNamespace(admin, ns);
    const selector = { matchNames: [ns] };
    const good = syncConfig(cfgNs, "good", { namespaceSelector: selector, syncItems: [cm("good")] });
    const drifted = syncConfig(cfgNs, "drifted", { namespaceSelector: selector, syncItems: [cm("theirs")] });
    const create = (sc: unknown) =>
      admin.request({
        method: "POST",
        path: `/apis/sync.appuio.ch/v1alpha1/namespaces/${cfgNs}/syncconfigs`,
        body: sc,
      });
    const ctl = await startController(c, { watchNamespace: cfgNs });
    try {
      await create(good);
      await create(drifted);
      for (const name of ["good", "drifted"]) {
        await eventually(async () => (await statusOf(admin, cfgNs, name)).synchronizedItemCount === 1, 20_000, name);
      }
    } finally {
      await ctl.stop();
    }
    // Changed by hand while no controller runs: drift that only --all shows.
    await admin.request({
      method: "PATCH",
      path: `/api/v1/namespaces/${ns}/configmaps/theirs`,
      contentType: "application/merge-patch+json",
      body: { data: { v: "changed by hand" } },
    });
    const { kubeconfig } = await planner(c, admin, cfgNs);
    const json = (run: PlanRun) => JSON.parse(run.stdout) as PlanJson & { contextSyncConfigs: string[] };
    try {
      const onlyGood = await plan(kubeconfig, cfgNs, ["-o", "json"], [[good]]);
      assert.equal(onlyGood.code, 0, onlyGood.stdout + onlyGood.stderr);
      assert.deepEqual(names(onlyGood), [`${cfgNs}/good`]);
      assert.deepEqual(json(onlyGood).contextSyncConfigs, [`${cfgNs}/drifted`]);
      const all = await plan(kubeconfig, cfgNs, ["-o", "json", "--all"], [[good]]);
      assert.equal(all.code, 2, all.stdout + all.stderr);
      const theirs = json(all).syncConfigs.find((s) => s.syncConfig === `${cfgNs}/drifted`)?.actions;
      assert.deepEqual(theirs?.map((a) => `${a.action} ${a.name}`), ["update theirs"]);

      // An Invalid SyncConfig elsewhere: still not this plan's error.
      await create(syncConfig(cfgNs, "broken", { namespaceSelector: { matchNames: ["("] }, syncItems: [cm("b")] }));
      const text = await plan(kubeconfig, cfgNs, [], [[good]]);
      assert.equal(text.code, 0, text.stdout + text.stderr);
      assert.match(text.stdout, /^Planned: the SyncConfigs of -f; 2 others are read as context only \(--all /m);
      assert.doesNotMatch(text.stdout, /drifted|broken/);
      for (const args of [["--all"], []]) {
        const every = await plan(kubeconfig, cfgNs, ["-o", "json", ...args], args.length ? [[good]] : []);
        assert.equal(every.code, 1, `${args}: ${every.stdout}${every.stderr}`);
        assert.deepEqual(names(every), [`${cfgNs}/broken`, `${cfgNs}/drifted`, `${cfgNs}/good`], `${args}`);
        assert.deepEqual(json(every).contextSyncConfigs, [], `${args}`);
      }

      // A file's items against another SyncConfig's, which is context: still reported, and exit 1.
      const deleter = syncConfig(cfgNs, "deleter", {
        namespaceSelector: selector,
        deleteItems: [{ apiVersion: "v1", kind: "ConfigMap", name: "theirs" }],
      });
      const deletes = await plan(kubeconfig, cfgNs, ["-o", "json"], [[deleter]]);
      assert.equal(deletes.code, 1, deletes.stdout + deletes.stderr);
      assert.deepEqual(names(deletes), [`${cfgNs}/deleter`]);
      const [contradiction] = json(deletes).syncConfigs[0].actions;
      assert.equal(contradiction.action, "fail");
      assert.match(
        contradiction.reason ?? "",
        new RegExp(`contradicts \\.spec\\.syncItems\\[0\\] of SyncConfig ${cfgNs}/drifted`),
      );
      const taker = syncConfig(cfgNs, "taker", { namespaceSelector: selector, syncItems: [cm("theirs")] });
      const takes = await plan(kubeconfig, cfgNs, ["-o", "json"], [[taker]]);
      assert.equal(takes.code, 1, takes.stdout + takes.stderr);
      const [held] = json(takes).syncConfigs[0].actions;
      assert.equal(held.action, "fail");
      assert.match(held.reason ?? "", new RegExp(`already managed by SyncConfig ${cfgNs}/drifted`));
    } finally {
      admin.close();
    }
  },
);

Deno.test("espejo plan: an unreachable API server is one line naming the cause, exit 1", opts, async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close(); // nothing listens there now: the connection is refused
  const kubeconfig = await Deno.makeTempFile({ suffix: ".yaml" });
  await Deno.writeTextFile(
    kubeconfig,
    kubeconfigYaml(`https://127.0.0.1:${port}`, "", { username: "nobody", token: "t" }).replace(
      /^ {4}certificate-authority-data: .*\n/m,
      "",
    ),
  );
  const run = await planProcess(["--kubeconfig", kubeconfig], {});
  assert.equal(run.code, 1, run.stdout + run.stderr);
  assert.equal(run.stdout, "");
  const errors = run.stderr.split("\n").filter((l) => l.includes("error"));
  assert.equal(errors.length, 1, run.stderr);
  assert.match(
    errors[0],
    new RegExp(
      `^espejo plan: error: cannot reach the API server at https://127\\.0\\.0\\.1:${port}: .*connection refused$`,
    ),
  );
});

/**
 * `espejo plan` for a team's SyncConfig (docs/delegation.md), as a process against the real API server: in delegated
 * mode it says which SyncConfig writes as which ServiceAccount and which is Invalid without one, and `--check-rights`
 * reviews the ServiceAccount's rights namespace by namespace, by SubjectAccessReviews made as the user running the
 * plan (who needs no right to impersonate), naming each missing right as the API server's 403 would.
 */
import assert from "node:assert/strict";
import { createServiceAccount, kubeconfigYaml } from "../../testenv/controlplane.ts";
import { createTeam } from "../../testenv/delegation.ts";
import { auditNow } from "../../testenv/harness.ts";
import { planProcess } from "../../testenv/plan_process.ts";
import { auditEvents, clientFor, testCluster, uniqueName } from "../../testenv/shared.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

interface Missing {
  verb: string;
  resource: string;
  group: string;
  namespace?: string;
  name?: string;
  message: string;
}
interface DelegatedPlanJson {
  syncConfigs: { syncConfig: string; invalid?: string; serviceAccount?: string; actions: { namespace: string }[] }[];
  trustedNamespaces?: string[];
  controller: { identity: string; missingRights: Missing[] };
  serviceAccounts: { serviceAccount: string; syncConfigs: string[]; missingRights: Missing[]; unreviewed: number }[];
}

Deno.test(
  "espejo plan --check-rights reviews a team SyncConfig's ServiceAccount where the plan writes: the rights it lacks " +
    "in 2 of 5 namespaces, named as the API server would; delegated mode's Invalid; espejo needs to impersonate it",
  opts,
  async () => {
    const c = await testCluster();
    const admin = clientFor(c);
    const team = await createTeam(admin, 5, 3);
    // Whoever runs the plan: may read and review, may not impersonate (the plan never needs to).
    const planner = await createServiceAccount(admin, team.namespace, uniqueName("planner"), "view");
    await admin.request({
      method: "POST",
      path: "/apis/rbac.authorization.k8s.io/v1/clusterroles",
      body: {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRole",
        metadata: { name: `${team.label}-review` },
        rules: [
          { apiGroups: ["authorization.k8s.io"], resources: ["subjectaccessreviews"], verbs: ["create"] },
          { apiGroups: ["sync.appuio.ch"], resources: ["syncconfigs"], verbs: ["get", "list"] },
        ],
      },
    });
    await admin.request({
      method: "POST",
      path: "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
      body: {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRoleBinding",
        metadata: { name: `${team.label}-review` },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: `${team.label}-review` },
        subjects: [{ kind: "ServiceAccount", name: planner.username.split(":")[3], namespace: team.namespace }],
      },
    });
    const kubeconfig = await Deno.makeTempFile({ suffix: ".yaml" });
    await Deno.writeTextFile(kubeconfig, kubeconfigYaml(c.server, c.caPem, planner));
    const file = await Deno.makeTempFile({ suffix: ".json" });
    const spec = {
      namespaceSelector: { labelSelector: { matchLabels: { [team.label]: "yes" } } },
      syncItems: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "team-settings" }, data: { a: "1" } }],
    };
    const meta = (name: string, annotations?: Record<string, string>) => ({
      apiVersion: "sync.appuio.ch/v1alpha1",
      kind: "SyncConfig",
      metadata: { name, namespace: team.namespace, annotations },
      spec,
    });
    await Deno.writeTextFile(
      file,
      [meta("as-writer", { "sync.appuio.ch/service-account": "writer" }), meta("as-espejo")]
        .map((d) => JSON.stringify(d)).join("\n---\n"),
    );
    const args = ["--kubeconfig", kubeconfig, "-f", file, "--check-rights", "--trusted-namespaces", "espejo-system"];
    const since = auditNow();
    try {
      const json = await planProcess([...args, "-o", "json"], { WATCH_NAMESPACE: team.namespace });
      assert.equal(json.code, 1, `the Invalid SyncConfig fails the plan: ${json.stderr}`);
      const report = JSON.parse(json.stdout) as DelegatedPlanJson;
      assert.deepEqual(report.trustedNamespaces, ["espejo-system"]);
      const [asEspejo, asWriter] = report.syncConfigs;
      assert.equal(asEspejo.syncConfig, `${team.namespace}/as-espejo`);
      assert.match(asEspejo.invalid ?? "", /names no ServiceAccount to write as, and its namespace .* is not trusted/);
      assert.deepEqual(asEspejo.actions, [], "an Invalid SyncConfig plans nothing");
      assert.equal(asWriter.serviceAccount, `${team.namespace}/writer`);
      assert.deepEqual(asWriter.actions.map((a) => a.namespace).sort(), team.targets, "it creates in all 5");

      const [writer] = report.serviceAccounts;
      assert.equal(report.serviceAccounts.length, 1);
      assert.deepEqual(writer.syncConfigs, [`${team.namespace}/as-writer`], "the Invalid one writes as nobody");
      assert.equal(writer.unreviewed, 0);
      const lacking = team.targets.slice(3);
      assert.deepEqual(
        writer.missingRights.map((m) => `${m.namespace} ${m.resource} ${m.verb}`),
        lacking.flatMap((ns) => [
          ...["get", "create", "update"].map((verb) => `${ns} configmaps ${verb}`),
          // Delegated mode: the controller acts for the SyncConfig only where its ServiceAccount may get the namespace.
          `${ns} namespaces get`,
        ]),
        "what the Role grants in the first 3 namespaces is not reported; the 2 others lack each verb",
      );
      assert.equal(
        writer.missingRights[1].message,
        `ServiceAccount ${team.namespace}/writer cannot create configmaps in namespace ${lacking[0]}`,
      );
      // espejo's own identity (not created here) would need to review the ServiceAccount's rights, and to impersonate
      // it, by name.
      assert.ok(
        report.controller.missingRights.some((m) => m.resource === "subjectaccessreviews" && m.verb === "create"),
        "the reviews",
      );
      const impersonate = report.controller.missingRights.filter((m) => m.verb === "impersonate");
      assert.deepEqual(
        impersonate.map((m) => `${m.group}/${m.resource} ${m.namespace ?? ""} ${m.name ?? ""}`.trim()),
        [`/serviceaccounts ${team.namespace} writer`, "authentication.k8s.io/userextras/sync.appuio.ch/syncconfig"],
      );

      const text = await planProcess(args, { WATCH_NAMESPACE: team.namespace });
      assert.match(text.stdout, /Delegated mode \(--trusted-namespaces\): only SyncConfigs of espejo-system may write/);
      assert.match(text.stdout, new RegExp(`writes as ServiceAccount ${team.namespace}/writer`));
      assert.match(
        text.stdout,
        new RegExp(
          `^Rights checked for ServiceAccount ${team.namespace}/writer, which SyncConfig ${team.namespace}/as-writer ` +
            "writes as:$",
          "m",
        ),
      );
      for (const ns of lacking) {
        assert.match(
          text.stdout,
          new RegExp(`^  ServiceAccount \\S+/writer cannot update configmaps in namespace ${ns}$`, "m"),
        );
      }
      for (const ns of team.targets.slice(0, 3)) {
        assert.doesNotMatch(text.stdout, new RegExp(`cannot .* in namespace ${ns}$`, "m"));
      }
      assert.match(text.stdout, /its team grants them with a RoleBinding in each of those namespaces/);

      // The plan wrote nothing (reviews of any kind are not stored) and impersonated no one.
      const planners = (await auditEvents(c)).filter((e) =>
        e.requestReceivedTimestamp >= since && e.user.username === planner.username
      );
      assert.ok(
        planners.some((e) => e.objectRef?.resource === "subjectaccessreviews"),
        "the audit log has its reviews",
      );
      assert.deepEqual(
        planners.filter((e) => e.verb !== "get" && e.verb !== "list" && !e.objectRef?.resource?.endsWith("reviews"))
          .map((e) => `${e.verb} ${e.objectRef?.resource}`),
        [],
      );
      assert.ok(planners.every((e) => !e.impersonatedUser), "no request as another user");
    } finally {
      await Deno.remove(file);
      await Deno.remove(kubeconfig);
      for (const path of ["clusterrolebindings", "clusterroles"]) {
        await admin.request({
          method: "DELETE",
          path: `/apis/rbac.authorization.k8s.io/v1/${path}/${team.label}-review`,
        }).catch(() => {});
      }
      admin.close();
    }
  },
);

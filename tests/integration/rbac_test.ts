/**
 * Least privilege as deploy/ installs it: espejo's identity writes Events only in its own namespace and reads no
 * Secret until a cluster admin applies deploy/opt-in/secrets; without it a Secret item fails with a message that
 * names the missing right and the opt-in, the other items carry on, and once the opt-in is applied it syncs.
 *
 * Other tests of the run opt in to Secrets on deploy/'s ClusterRole espejo-manager, so these tests bind espejo to a
 * copy of deploy/'s ClusterRoles aggregated apart (testenv/espejo_rbac.ts): the same rules, no opt-in but their own.
 */
import assert from "node:assert/strict";
import type { HttpKubeClient } from "../../lib/kube/client.ts";
import { copyOfDeployedRbac, espejoIdentity, type ManagerRole, optIn } from "../../testenv/espejo_rbac.ts";
import { clientFor, eventually, testCluster, uniqueName } from "../../testenv/shared.ts";
import { isNotFound } from "../../lib/kube/errors.ts";
import {
  condition,
  createNamespace,
  createSyncConfig,
  getObject,
  startController,
  statusOf,
} from "../../testenv/harness.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const RBAC_API = "/apis/rbac.authorization.k8s.io/v1";

/** Removes a copy's ClusterRoles (all named `...-<label>`) and the bindings to them. */
async function removeCopy(admin: HttpKubeClient, manager: ManagerRole): Promise<void> {
  for (const kind of ["clusterrolebindings", "clusterroles"]) {
    const list = await admin.request<{ items: { metadata: { name: string } }[] }>({
      method: "GET",
      path: `${RBAC_API}/${kind}`,
    });
    for (const { metadata: { name } } of list.items) {
      if (!name.endsWith(manager.name) && !name.endsWith(`-${manager.label}`)) continue;
      await admin.request({ method: "DELETE", path: `${RBAC_API}/${kind}/${name}` }).catch((e) => {
        if (!isNotFound(e)) throw e;
      });
    }
  }
}

/** Whether the identity behind `client` may, as `kubectl auth can-i` asks it: a SelfSubjectAccessReview. */
async function canI(
  client: HttpKubeClient,
  verb: string,
  resource: string,
  namespace?: string,
): Promise<boolean> {
  const review = await client.request<{ status?: { allowed?: boolean } }>({
    method: "POST",
    path: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
    body: {
      apiVersion: "authorization.k8s.io/v1",
      kind: "SelfSubjectAccessReview",
      spec: { resourceAttributes: { verb, resource, namespace } },
    },
  });
  return review.status?.allowed === true;
}

Deno.test(
  "espejo's identity may write Events only in its own namespace, and read Secrets only once they are opted in",
  opts,
  async () => {
    const c = await testCluster();
    const admin = clientFor(c);
    const cfgNs = uniqueName("cfg");
    const elsewhere = uniqueName("other");
    const manager = await copyOfDeployedRbac(admin, uniqueName("can-i"));
    const espejo = clientFor(c, await espejoIdentity(admin, cfgNs, { manager }));
    try {
      await createNamespace(admin, elsewhere);
      // What the controller does with Events: create one on a SyncConfig, patch the count of a repeat.
      assert.ok(await canI(espejo, "create", "events", cfgNs), "create events in its own namespace");
      assert.ok(await canI(espejo, "patch", "events", cfgNs), "patch events in its own namespace");
      assert.ok(!(await canI(espejo, "create", "events", elsewhere)), "no events in another namespace");
      assert.ok(!(await canI(espejo, "patch", "events", elsewhere)), "no events in another namespace");
      assert.ok(!(await canI(espejo, "create", "events")), "no events cluster-wide");
      // The common kinds, yes; Secrets and ServiceAccounts, not without their opt-in.
      assert.ok(await canI(espejo, "list", "configmaps"), "the common kinds are granted");
      for (const verb of ["list", "watch", "get"]) {
        assert.ok(!(await canI(espejo, verb, "secrets")), `no ${verb} secrets`);
        assert.ok(!(await canI(espejo, verb, "secrets", elsewhere)), `no ${verb} secrets in a namespace`);
      }
      assert.ok(!(await canI(espejo, "create", "serviceaccounts", elsewhere)), "no serviceaccounts");

      await optIn(admin, "secrets", manager);
      await eventually(() => canI(espejo, "list", "secrets"), 20_000, "list secrets after the opt-in");
      assert.ok(await canI(espejo, "create", "secrets", elsewhere));
      assert.ok(!(await canI(espejo, "create", "serviceaccounts", elsewhere)), "one opt-in grants one group");
      assert.ok(!(await canI(espejo, "create", "events", elsewhere)), "still no events in another namespace");
    } finally {
      espejo.close();
      await removeCopy(admin, manager);
      admin.close();
    }
  },
);

Deno.test(
  "A Secret item without the opt-in fails naming the missing right and the opt-in; the others carry on; " +
    "after kubectl apply -k deploy/opt-in/secrets it syncs",
  opts,
  async () => {
    const c = await testCluster();
    const admin = clientFor(c);
    const cfgNs = uniqueName("cfg");
    const ns = uniqueName("optin");
    const manager = await copyOfDeployedRbac(admin, uniqueName("opt-in"));
    const ctl = await startController(c, { watchNamespace: cfgNs, manager, reconcileIntervalMs: 1000 });
    try {
      await createNamespace(admin, ns);
      await createSyncConfig(admin, cfgNs, "mixed", {
        namespaceSelector: { matchNames: [ns] },
        syncItems: [
          { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "plain" }, data: { a: "1" } },
          { apiVersion: "v1", kind: "Secret", metadata: { name: "creds" }, stringData: { token: "t" } },
        ],
      });
      const failed = await eventually(
        async () => {
          const s = await statusOf(admin, cfgNs, "mixed");
          return s.synchronizedItemCount === 1 && s.failedItemCount === 1 ? s : undefined;
        },
        30_000,
        "the ConfigMap synced and the Secret failed",
      );
      assert.ok(await getObject(admin, `/api/v1/namespaces/${ns}/configmaps/plain`), "the other item carries on");
      const message = condition(failed, "Ready")?.message ?? "";
      // The API server's words, as kubectl prints them, then what to do.
      assert.match(message, /\.spec\.syncItems\[1\] \(Secret creds\) in namespace /);
      assert.match(
        message,
        /User "system:serviceaccount:[^"]+:espejo" cannot (list|watch) resource "secrets" in API group "" at the cluster scope/,
      );
      assert.match(
        message,
        /espejo gets secrets only on request: kubectl apply -k deploy\/opt-in\/secrets \(docs\/install\.md#opt-in-kinds\)/,
      );
      const events = await eventually(
        async () => {
          const list = await admin.request<{ items: { reason: string; message: string }[] }>({
            method: "GET",
            path: `/api/v1/namespaces/${cfgNs}/events`,
            query: { fieldSelector: "involvedObject.name=mixed,involvedObject.kind=SyncConfig" },
          });
          return list.items.find((e) => e.reason === "SyncFailed");
        },
        20_000,
        "a SyncFailed Event",
      );
      assert.match(events.message, /kubectl apply -k deploy\/opt-in\/secrets/);

      await optIn(admin, "secrets", manager);
      await eventually(
        async () => {
          const s = await statusOf(admin, cfgNs, "mixed");
          return s.synchronizedItemCount === 2 && s.failedItemCount === 0;
        },
        90_000,
        "both items synced after the opt-in",
      );
      const secret = await getObject(admin, `/api/v1/namespaces/${ns}/secrets/creds`);
      assert.equal(secret?.data?.token, btoa("t"));
    } finally {
      await ctl.stop();
      await removeCopy(admin, manager);
      admin.close();
    }
  },
);

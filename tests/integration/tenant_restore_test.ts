/**
 * Hostile tenants, part two (issue 20, cases 2 and 3): changes no update can undo (an immutable ConfigMap, a Secret's
 * type, a RoleBinding's roleRef, a finalizer that holds the old object) and a tenant writing to one synced object as
 * fast as it can. Each attack is made with the tenant's own token against the real API server, the controller run
 * with the shipped rights; what espejo sent is counted in the audit log.
 */
import assert from "node:assert/strict";
import type { HttpKubeClient } from "../../lib/kube/client.ts";
import { deepEqual } from "../../lib/kube/objects.ts";
import type { AuditEvent } from "../../testenv/controlplane.ts";
import { clientFor, eventually, type TestCluster, testCluster, uniqueName } from "../../testenv/shared.ts";
import {
  auditNow,
  counterValue,
  createNamespace,
  createSyncConfig,
  getObject,
  requestsBy,
  type RunningController,
  startController,
  statusOf,
  type TestObject,
} from "../../testenv/harness.ts";
import { createTenant, type Tenant } from "../../testenv/tenant.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const INTERVAL_MS = 3000;
/** How long a tenant's change may survive: about one interval and then some (on a busy machine). */
const REVERT_MS = 20_000;
const RBAC = "rbac.authorization.k8s.io";

const cmPath = (ns: string, name = "") => `/api/v1/namespaces/${ns}/configmaps${name ? `/${name}` : ""}`;
const secretPath = (ns: string, name = "") => `/api/v1/namespaces/${ns}/secrets${name ? `/${name}` : ""}`;
const rbPath = (ns: string, name = "") => `/apis/${RBAC}/v1/namespaces/${ns}/rolebindings${name ? `/${name}` : ""}`;

/** What the tenant may write in its namespace: configmaps, secrets and rolebindings (binding its own Role). */
const TENANT_RULES = [
  { apiGroups: [""], resources: ["configmaps", "secrets"] },
  { apiGroups: [RBAC], resources: ["rolebindings"] },
];

/** A request of the tenant's; a refusal is a bug of the test (the attack was never made), not espejo's win. */
async function tenantDoes<T>(what: string, p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (e) {
    throw new Error(`the tenant's ${what} was refused, so the attack was never made: ${e}`);
  }
}

const mergePatch = (tenant: Tenant, path: string, body: unknown) =>
  tenantDoes(
    `PATCH of ${path}`,
    tenant.client.request<TestObject>({ method: "PATCH", path, contentType: "application/merge-patch+json", body }),
  );

async function waitSynced(admin: HttpKubeClient, cfgNs: string, name: string, items: number): Promise<void> {
  await eventually(
    async () => {
      const s = await statusOf(admin, cfgNs, name);
      return s.synchronizedItemCount === items && s.failedItemCount === 0;
    },
    30_000,
    `SyncConfig ${cfgNs}/${name} to report ${items} synchronized item(s)`,
  );
}

/** Polls `path` until `ok` holds; on timeout the error names the last object and the SyncConfig's status. */
async function restored(
  admin: HttpKubeClient,
  path: string,
  ok: (o: TestObject | undefined) => boolean,
  what: string,
  cfg: { ns: string; name: string },
): Promise<TestObject> {
  let last: TestObject | undefined;
  try {
    return await eventually(async () => (ok(last = await getObject(admin, path)) ? last : undefined), REVERT_MS, what);
  } catch {
    const status = await statusOf(admin, cfg.ns, cfg.name).catch((e) => String(e));
    const seen = last && { ...last, metadata: { ...last.metadata, managedFields: undefined } };
    throw new Error(
      `Timed out waiting for ${what}; last seen: ${JSON.stringify(seen)}; status: ${JSON.stringify(status)}`,
    );
  }
}

/** espejo's requests about one object (by collection path and name) since `since`, as the audit log has them. */
async function requestsFor(
  c: TestCluster,
  ctl: RunningController,
  since: string,
  collection: string,
  name: string,
  until?: string,
): Promise<AuditEvent[]> {
  return (await requestsBy(c, ctl.identity, since)).filter((e) => {
    if (until && e.requestReceivedTimestamp > until) return false;
    const uriPath = e.requestURI.split("?")[0];
    return uriPath === `${collection}/${name}` || (uriPath === collection && e.objectRef?.name === name);
  });
}

const summary = (events: AuditEvent[]) =>
  events.map((e) => `${e.requestReceivedTimestamp.slice(11, 23)} ${e.verb} ${e.responseStatus?.code}`).join(", ");

interface Setup {
  c: TestCluster;
  admin: HttpKubeClient;
  cfgNs: string;
  ns: string;
  tenant: Tenant;
  ctl: RunningController;
}

async function setUp(prefix: string): Promise<Setup> {
  const c = await testCluster();
  const admin = clientFor(c);
  const cfgNs = uniqueName("cfg");
  const ns = uniqueName(prefix);
  await createNamespace(admin, ns);
  const tenant = await createTenant(c, admin, ns, { rules: TENANT_RULES });
  const ctl = await startController(c, { watchNamespace: cfgNs, reconcileIntervalMs: INTERVAL_MS, optIn: ["secrets"] });
  return { c, admin, cfgNs, ns, tenant, ctl };
}

async function tearDown(s: Setup): Promise<void> {
  await s.ctl.stop();
  s.tenant.client.close();
  s.admin.close();
}

Deno.test(
  "Tenant cannot keep a ConfigMap by making it immutable with its own data: espejo replaces it",
  opts,
  async () => {
    const s = await setUp("tenant-immutable");
    const { c, admin, cfgNs, ns, tenant, ctl } = s;
    try {
      await createSyncConfig(admin, cfgNs, "imm", {
        namespaceSelector: { matchNames: [ns] },
        syncItems: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "settings" }, data: { a: "1" } }],
      });
      await waitSynced(admin, cfgNs, "imm", 1);
      const since = auditNow();
      const locked = await mergePatch(tenant, cmPath(ns, "settings"), { immutable: true, data: { a: "tenant" } });
      assert.equal(locked.data?.a, "tenant", "the tenant's change took effect");
      const back = await restored(
        admin,
        cmPath(ns, "settings"),
        (o) => deepEqual(o?.data, { a: "1" }) && (o as { immutable?: boolean }).immutable !== true,
        "the immutable ConfigMap to be replaced by the item's",
        { ns: cfgNs, name: "imm" },
      );
      assert.notEqual(back.metadata?.uid, locked.metadata?.uid, "a new object");
      // The counter moves after the create's reply is read, which may be after the object is visible here.
      await eventually(
        async () => (await counterValue(ctl.metrics, "espejo_replaces_total", { reason: "immutable" })) >= 1,
        20_000,
        "espejo_replaces_total{reason=immutable} to count the replace",
      );
      const all = await requestsFor(c, ctl, since, cmPath(ns), "settings");
      console.log(`immutable ConfigMap: espejo's requests about it: ${summary(all)}`);
      const creates = all.filter((e) => e.verb === "create");
      assert.ok(creates.length <= 3, `espejo sent ${creates.length} creates: ${summary(creates)}`);
    } finally {
      await tearDown(s);
    }
  },
);

Deno.test("Tenant cannot keep a Secret of another type by deleting and creating it again", opts, async () => {
  const s = await setUp("tenant-secret");
  const { admin, cfgNs, ns, tenant } = s;
  try {
    await createSyncConfig(admin, cfgNs, "sec", {
      namespaceSelector: { matchNames: [ns] },
      syncItems: [{
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "creds" },
        type: "Opaque",
        data: { k: "dg==" },
      }],
    });
    await waitSynced(admin, cfgNs, "sec", 1);
    await tenantDoes("DELETE", tenant.client.request({ method: "DELETE", path: secretPath(ns, "creds") }));
    // Created again at once; espejo may have restored it in between, then the tenant's create fails and it tries again.
    await eventually(
      async () => {
        try {
          await tenant.client.request({
            method: "POST",
            path: secretPath(ns),
            body: { metadata: { name: "creds" }, type: "kubernetes.io/basic-auth", data: { username: "dGVuYW50" } },
          });
          return true;
        } catch {
          await tenant.client.request({ method: "DELETE", path: secretPath(ns, "creds") }).catch(() => {});
          return false;
        }
      },
      10_000,
      "the tenant's Secret of type basic-auth to be created",
    );
    await restored(
      admin,
      secretPath(ns, "creds"),
      (o) => (o as { type?: string })?.type === "Opaque" && deepEqual(o?.data, { k: "dg==" }),
      "the Secret to be of type Opaque with the item's data again",
      { ns: cfgNs, name: "sec" },
    );
  } finally {
    await tearDown(s);
  }
});

for (const forceRecreate of [false, true]) {
  Deno.test(
    `Tenant cannot keep a RoleBinding with its own roleRef and a finalizer (forceRecreate ${forceRecreate})`,
    opts,
    async () => {
      const s = await setUp("tenant-rb");
      const { c, admin, cfgNs, ns, tenant, ctl } = s;
      const name = "team-readers";
      try {
        // The Role the item binds; espejo holds its rights (it reads configmaps everywhere), so it may bind it.
        await admin.request({
          method: "POST",
          path: `/apis/${RBAC}/v1/namespaces/${ns}/roles`,
          body: {
            metadata: { name: "reader" },
            rules: [{ apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list"] }],
          },
        });
        const binding = {
          apiVersion: `${RBAC}/v1`,
          kind: "RoleBinding",
          metadata: { name },
          roleRef: { apiGroup: RBAC, kind: "Role", name: "reader" },
          subjects: [{ apiGroup: RBAC, kind: "Group", name: "team" }],
        };
        await createSyncConfig(admin, cfgNs, "rb", {
          namespaceSelector: { matchNames: [ns] },
          forceRecreate,
          syncItems: [binding],
        });
        await waitSynced(admin, cfgNs, "rb", 1);
        const since = auditNow();
        // Deleted and created again with the tenant's own Role, espejo's label and a finalizer of the tenant's.
        await tenantDoes("DELETE", tenant.client.request({ method: "DELETE", path: rbPath(ns, name) }));
        const theirs = await eventually(
          () =>
            tenant.client.request<TestObject>({
              method: "POST",
              path: rbPath(ns),
              body: {
                ...binding,
                metadata: {
                  name,
                  labels: { "sync.appuio.ch/managed-by": "espejo" },
                  finalizers: ["tenant.example/keep"],
                },
                roleRef: { apiGroup: RBAC, kind: "Role", name: "tenant-editor" },
              },
            }).catch(async (e) => {
              // espejo restored it in between: delete that one and try again.
              await tenant.client.request({ method: "DELETE", path: rbPath(ns, name) }).catch(() => {});
              if (String(e).includes("already exists")) return undefined;
              throw e;
            }),
          10_000,
          "the tenant's RoleBinding to be created",
        );
        const back = await restored(
          admin,
          rbPath(ns, name),
          (o) =>
            (o as { roleRef?: { name?: string } })?.roleRef?.name === "reader" && !o?.metadata?.deletionTimestamp &&
            !o?.metadata?.finalizers?.length,
          "the RoleBinding to be replaced by the item's, without the tenant's finalizer",
          { ns: cfgNs, name: "rb" },
        );
        assert.notEqual(back.metadata?.uid, theirs.metadata?.uid);
        // Both counters move after the create's reply is read, which may be after the object is visible here.
        for (const metric of ["espejo_finalizers_removed_total", "espejo_replaces_total"]) {
          await eventually(
            async () => (await counterValue(ctl.metrics, metric, { syncconfig: `${cfgNs}/rb` })) >= 1,
            20_000,
            `${metric} to count the replace`,
          );
        }
        const event = await eventually(
          async () => {
            const list = await admin.request<{ items: { reason?: string; message?: string }[] }>({
              method: "GET",
              path: `/api/v1/namespaces/${cfgNs}/events`,
            });
            return list.items.find((e) => e.reason === "FinalizersRemoved");
          },
          10_000,
          "a FinalizersRemoved Event on the SyncConfig",
        );
        assert.match(event.message ?? "", /tenant\.example\/keep/);
        assert.match(event.message ?? "", new RegExp(`RoleBinding ${ns}/${name}`));
        const all = await requestsFor(c, ctl, since, rbPath(ns), name);
        console.log(`RoleBinding (forceRecreate ${forceRecreate}): espejo's requests about it: ${summary(all)}`);
        const creates = all.filter((e) => e.verb === "create");
        assert.ok(creates.length <= 4, `espejo sent ${creates.length} creates (no polling): ${summary(creates)}`);
      } finally {
        await tearDown(s);
      }
    },
  );
}

Deno.test("Tenant writing as fast as it can gets a few requests a minute from espejo, and loses", opts, async () => {
  const s = await setUp("tenant-storm");
  const { c, admin, cfgNs, ns, tenant, ctl } = s;
  const other = uniqueName("bystander");
  await createNamespace(admin, other);
  const path = cmPath(ns, "fought");
  const want = { v: "desired" };
  try {
    await createSyncConfig(admin, cfgNs, "storm", {
      namespaceSelector: { matchNames: [ns] },
      syncItems: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "fought" }, data: want }],
    });
    await waitSynced(admin, cfgNs, "storm", 1);
    const since = auditNow();
    const started = Date.now();
    const FIGHT_MS = 20_000;
    let writes = 0;
    // Eight writers in parallel, each as fast as the server answers, for a bounded time and count.
    const writer = async (w: number) => {
      for (let i = 0; i < 20_000 && Date.now() - started < FIGHT_MS; i++) {
        await mergePatch(tenant, path, { data: { v: `tenant-${w}-${i}` } });
        writes++;
      }
    };
    const fight = Promise.all(Array.from({ length: 8 }, (_, w) => writer(w)));
    // A second SyncConfig, created during the fight, still converges.
    await createSyncConfig(admin, cfgNs, "bystander", {
      namespaceSelector: { matchNames: [other] },
      syncItems: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "calm" }, data: { ok: "yes" } }],
    });
    await waitSynced(admin, cfgNs, "bystander", 1);
    await fight;
    const until = auditNow();
    const seconds = (Date.now() - started) / 1000;
    await restored(admin, path, (o) => deepEqual(o?.data, want), "the fought ConfigMap to end as desired", {
      ns: cfgNs,
      name: "storm",
    });
    const requests = await requestsFor(c, ctl, since, cmPath(ns), "fought", until);
    // The back-off schedule: 1 s, 2 s, 4 s ... up to the interval. In `seconds` that is at most
    // log2(interval) + 1 moves to reach the interval and one per interval after, each one write; the first conflict
    // (not yet a fight) may be re-read and written once more. Twice that as room for a busy machine.
    const moves = Math.ceil(Math.log2(INTERVAL_MS / 1000)) + 1 + Math.ceil(seconds / (INTERVAL_MS / 1000));
    const bound = 2 * (moves + 2);
    assert.ok(writes > 200, `the tenant wrote ${writes} times in ${seconds.toFixed(1)} s: not a storm`);
    assert.ok(
      requests.length <= bound,
      `espejo sent ${requests.length} requests about the object during ${writes} tenant writes in ${
        seconds.toFixed(1)
      } s (want at most ${bound}): ${summary(requests)}`,
    );
    assert.ok((await counterValue(ctl.metrics, "espejo_fight_restores_total")) > 0, "the fight is counted");
    console.log(`storm: ${writes} tenant writes in ${seconds.toFixed(1)} s; espejo: ${requests.length} requests`);
  } finally {
    await tearDown(s);
  }
});

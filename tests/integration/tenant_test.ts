/**
 * Hostile tenants (DESIGN.md, "Who can write what"): a ServiceAccount that may write configmaps and networkpolicies
 * in its own namespace only, attacking the objects espejo syncs there. Each test is one attack, made with the
 * tenant's own token against the real API server; espejo must restore what the SyncConfig says, stay cheap, and
 * back off from a fight instead of looping.
 */
import assert from "node:assert/strict";
import type { HttpKubeClient } from "../../lib/kube/client.ts";
import { ApiError } from "../../lib/kube/errors.ts";
import { deepEqual } from "../../lib/kube/objects.ts";
import type { AuditEvent } from "../../testenv/controlplane.ts";
import { clientFor, eventually, testCluster, uniqueName } from "../../testenv/shared.ts";
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
/** The reconcile interval of every controller in this file. */
const INTERVAL_MS = 3000;
/** How long a tenant's change may survive: one interval and then some (a watch event should be much faster). */
const REVERT_MS = 15_000;

const MANAGED_LABEL = "sync.appuio.ch/managed-by";
const OWNER_ANNOTATION = "sync.appuio.ch/owner";
const HASH_ANNOTATION = "sync.appuio.ch/desired-hash";

const cmPath = (ns: string, name: string) => `/api/v1/namespaces/${ns}/configmaps/${name}`;
const npPath = (ns: string, name: string) => `/apis/networking.k8s.io/v1/namespaces/${ns}/networkpolicies/${name}`;

/** A merge patch sent by the tenant; a refusal is a bug of the test (the tenant may do this), not espejo's win. */
async function tenantPatch(tenant: Tenant, path: string, body: unknown, fieldManager?: string): Promise<TestObject> {
  try {
    return await tenant.client.request<TestObject>({
      method: "PATCH",
      path,
      query: fieldManager ? { fieldManager } : undefined,
      contentType: "application/merge-patch+json",
      body,
    });
  } catch (e) {
    throw new Error(`the tenant's PATCH of ${path} was refused, so the attack was never made: ${e}`);
  }
}

async function tenantCreate(tenant: Tenant, body: TestObject): Promise<TestObject> {
  const path = `/api/v1/namespaces/${tenant.namespace}/configmaps`;
  try {
    return await tenant.client.request<TestObject>({ method: "POST", path, body });
  } catch (e) {
    throw new Error(`the tenant's POST to ${path} was refused, so the attack was never made: ${e}`);
  }
}

/** A SyncConfig in `cfgNs` that syncs one ConfigMap `name` with `data` into `ns`. */
function configMapSpec(ns: string, name: string, data: Record<string, string>) {
  return {
    namespaceSelector: { matchNames: [ns] },
    syncItems: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name }, data }],
  };
}

/**
 * Polls `path` until `mismatch` finds nothing wrong with it. On timeout the error names the last mismatch and the
 * SyncConfig's status (whose conditions say why espejo did not write, e.g. "already managed by ...").
 */
async function converges(
  admin: HttpKubeClient,
  path: string,
  mismatch: (o: TestObject | undefined) => string | undefined,
  what: string,
  cfg: { ns: string; name: string },
  timeoutMs = REVERT_MS,
): Promise<TestObject> {
  let last = "nothing read yet";
  try {
    return await eventually(
      async () => {
        const o = await getObject(admin, path);
        const m = mismatch(o);
        last = m ?? "";
        return m === undefined ? o : undefined;
      },
      timeoutMs,
      what,
    );
  } catch {
    const status = await statusOf(admin, cfg.ns, cfg.name).catch((e) => String(e));
    throw new Error(
      `Timed out after ${timeoutMs} ms waiting for ${what}; last seen: ${last}; SyncConfig status: ${
        JSON.stringify(status)
      }`,
    );
  }
}

/** What is wrong with a ConfigMap that should be exactly the item's (data and owner annotation), or undefined. */
function configMapMismatch(want: Record<string, string>, owner: string) {
  return (o: TestObject | undefined): string | undefined => {
    if (!o) return "the ConfigMap does not exist";
    const problems: string[] = [];
    if (!deepEqual(o.data ?? {}, want)) {
      problems.push(`data is ${JSON.stringify(o.data)}, want ${JSON.stringify(want)}`);
    }
    const got = o.metadata?.annotations?.[OWNER_ANNOTATION];
    if (got !== owner) problems.push(`owner annotation is ${JSON.stringify(got)}, want ${JSON.stringify(owner)}`);
    return problems.length ? problems.join("; ") : undefined;
  };
}

/** Waits until the SyncConfig reports its items synced (the object is written and espejo has settled on it). */
async function waitSynced(admin: HttpKubeClient, cfgNs: string, name: string, items: number): Promise<void> {
  await eventually(
    async () => {
      const s = await statusOf(admin, cfgNs, name);
      return s.synchronizedItemCount === items && s.failedItemCount === 0;
    },
    20_000,
    `SyncConfig ${cfgNs}/${name} to report ${items} synchronized item(s)`,
  );
}

/** `ctl.controller.retainedContentBytes()`, which the controller is to expose; fails clearly while it does not. */
function retainedContentBytes(ctl: RunningController): number {
  const fn = (ctl.controller as unknown as { retainedContentBytes?: () => number }).retainedContentBytes;
  if (typeof fn !== "function") {
    assert.fail(
      "Controller.retainedContentBytes() does not exist: what the managed-object caches retain cannot be measured",
    );
  }
  return fn.call(ctl.controller);
}

const JUNK_COUNT = 40;
const JUNK_VALUE = "x".repeat(900 * 1024);
const RETAINED_LIMIT = 5 * 1024 * 1024;

/** The tenant's junk: ConfigMaps of ~900 KiB with espejo's label that no item names. */
async function createJunk(tenant: Tenant): Promise<void> {
  const names = Array.from({ length: JUNK_COUNT }, (_, i) => `junk-${i}`);
  for (let i = 0; i < names.length; i += 4) {
    await Promise.all(
      names.slice(i, i + 4).map((name) =>
        tenantCreate(tenant, {
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name, labels: { [MANAGED_LABEL]: "espejo", "espejo-test/junk": "true" } },
          data: { blob: JUNK_VALUE },
        })
      ),
    );
  }
}

/** Removes the junk at once, so that no later controller (in this file or another) lists 36 MB of it. */
async function deleteJunk(admin: HttpKubeClient, ns: string): Promise<void> {
  await admin.request({
    method: "DELETE",
    path: `/api/v1/namespaces/${ns}/configmaps`,
    query: { labelSelector: "espejo-test/junk=true" },
  }).catch((e) => console.error(`could not delete the junk in ${ns}: ${e}`));
}

/** Waits (bounded) for the retained content to be under the limit; fails with the last value. */
async function assertRetainedBelowLimit(ctl: RunningController): Promise<void> {
  let last = retainedContentBytes(ctl);
  // Bounded by two passes: content that is dropped only at the next pass is fine, content kept for good is not.
  const deadline = Date.now() + 2 * INTERVAL_MS + 1000;
  while (last >= RETAINED_LIMIT && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    last = retainedContentBytes(ctl);
  }
  assert.ok(
    last < RETAINED_LIMIT,
    `the managed-object caches retain ${last} bytes of content (${(last / 1024 / 1024).toFixed(1)} MiB) with the ` +
      `tenant's ${JUNK_COUNT} junk ConfigMaps of 900 KiB; want < 5 MiB`,
  );
}

Deno.test("Tenant cannot keep a NetworkPolicy changed under espejo's field manager", opts, async () => {
  const c = await testCluster();
  const admin = clientFor(c);
  const cfgNs = uniqueName("cfg");
  const ns = uniqueName("tenant-np");
  await createNamespace(admin, ns);
  const tenant = await createTenant(c, admin, ns);
  const ctl = await startController(c, { watchNamespace: cfgNs, reconcileIntervalMs: INTERVAL_MS });
  try {
    await createSyncConfig(admin, cfgNs, "netpol", {
      namespaceSelector: { matchNames: [ns] },
      syncItems: [{
        apiVersion: "networking.k8s.io/v1",
        kind: "NetworkPolicy",
        metadata: { name: "deny-all" },
        spec: { podSelector: {}, policyTypes: ["Ingress"] },
      }],
    });
    await waitSynced(admin, cfgNs, "netpol", 1);
    const patched = await tenantPatch(
      tenant,
      npPath(ns, "deny-all"),
      { spec: { podSelector: { matchLabels: { x: "y" } } } },
      "espejo",
    );
    const spec = patched.spec as { podSelector?: unknown };
    assert.deepEqual(spec.podSelector, { matchLabels: { x: "y" } }, "the tenant's patch took effect");
    // The point of the attack: the server now records the tenant's field as espejo's own.
    assert.deepEqual(
      [...new Set((patched.metadata?.managedFields ?? []).map((m) => m.manager))],
      ["espejo"],
      "every field is recorded as espejo's",
    );
    await converges(
      admin,
      npPath(ns, "deny-all"),
      (o) => {
        if (!o) return "the NetworkPolicy does not exist";
        const s = o.spec as { podSelector?: unknown; policyTypes?: unknown };
        return deepEqual(s.podSelector, {}) && deepEqual(s.policyTypes, ["Ingress"])
          ? undefined
          : `spec is ${JSON.stringify(s)}`;
      },
      "the NetworkPolicy's podSelector to be reverted to {}",
      { ns: cfgNs, name: "netpol" },
    );
  } finally {
    await ctl.stop();
    tenant.client.close();
    admin.close();
  }
});

Deno.test("Tenant cannot hide changes to a ConfigMap by stripping its managedFields", opts, async () => {
  const c = await testCluster();
  const admin = clientFor(c);
  const cfgNs = uniqueName("cfg");
  const ns = uniqueName("tenant-mf");
  await createNamespace(admin, ns);
  const tenant = await createTenant(c, admin, ns);
  const ctl = await startController(c, { watchNamespace: cfgNs, reconcileIntervalMs: INTERVAL_MS });
  const want = { a: "1", b: "2" };
  const desired = configMapMismatch(want, `${cfgNs}/stripped`);
  try {
    await createSyncConfig(admin, cfgNs, "stripped", configMapSpec(ns, "settings", want));
    await waitSynced(admin, cfgNs, "stripped", 1);
    // `managedFields: [{}]` makes the server drop every managedFields entry; the data change comes with it.
    const stripped = await tenantPatch(tenant, cmPath(ns, "settings"), {
      metadata: { managedFields: [{}] },
      data: { a: "tenant" },
    });
    assert.equal(stripped.data?.a, "tenant", "the tenant's patch took effect");
    assert.ok(
      !(stripped.metadata?.managedFields ?? []).some((m) => m.manager === "espejo"),
      `espejo's managedFields entry was stripped: ${JSON.stringify(stripped.metadata?.managedFields)}`,
    );
    await converges(admin, cmPath(ns, "settings"), desired, "the stripped and changed ConfigMap to be reverted", {
      ns: cfgNs,
      name: "stripped",
    });
    // Once stripped, espejo's write records only what it changed: a later change must be seen all the same.
    const again = await tenantPatch(tenant, cmPath(ns, "settings"), { data: { b: "tenant-again" } });
    assert.equal(again.data?.b, "tenant-again", "the tenant's second patch took effect");
    await converges(admin, cmPath(ns, "settings"), desired, "the second change to be reverted too", {
      ns: cfgNs,
      name: "stripped",
    });
  } finally {
    await ctl.stop();
    tenant.client.close();
    admin.close();
  }
});

Deno.test("Tenant cannot keep a ConfigMap changed by pointing its owner annotation elsewhere", opts, async () => {
  const c = await testCluster();
  const admin = clientFor(c);
  const cfgNs = uniqueName("cfg");
  const ns = uniqueName("tenant-owner");
  await createNamespace(admin, ns);
  const tenant = await createTenant(c, admin, ns);
  const ctl = await startController(c, { watchNamespace: cfgNs, reconcileIntervalMs: INTERVAL_MS });
  const want = { a: "1", b: "2" };
  try {
    await createSyncConfig(admin, cfgNs, "owned", configMapSpec(ns, "settings", want));
    await waitSynced(admin, cfgNs, "owned", 1);
    const patched = await tenantPatch(tenant, cmPath(ns, "settings"), {
      metadata: { annotations: { [OWNER_ANNOTATION]: "kube-system/whatever" } },
      data: { a: "tenant" },
    });
    assert.equal(patched.data?.a, "tenant", "the tenant's patch took effect");
    assert.equal(patched.metadata?.annotations?.[OWNER_ANNOTATION], "kube-system/whatever");
    await converges(
      admin,
      cmPath(ns, "settings"),
      configMapMismatch(want, `${cfgNs}/owned`),
      "data and owner annotation to be restored",
      { ns: cfgNs, name: "owned" },
    );
  } finally {
    await ctl.stop();
    tenant.client.close();
    admin.close();
  }
});

Deno.test(
  "Tenant cannot keep a pre-created ConfigMap from being taken over by claiming another owner",
  opts,
  async () => {
    const c = await testCluster();
    const admin = clientFor(c);
    const cfgNs = uniqueName("cfg");
    const ns = uniqueName("tenant-pre");
    await createNamespace(admin, ns);
    const tenant = await createTenant(c, admin, ns);
    const want = { a: "1", b: "2" };
    const planted = await tenantCreate(tenant, {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: {
        name: "settings",
        labels: { [MANAGED_LABEL]: "espejo" },
        annotations: { [OWNER_ANNOTATION]: "kube-system/whatever" },
      },
      data: { planted: "by the tenant" },
    });
    assert.equal(planted.metadata?.annotations?.[OWNER_ANNOTATION], "kube-system/whatever");
    const ctl = await startController(c, { watchNamespace: cfgNs, reconcileIntervalMs: INTERVAL_MS });
    try {
      await createSyncConfig(admin, cfgNs, "takeover", {
        namespaceSelector: { labelSelector: { matchLabels: { "espejo-test/tenant": ns } } },
        syncItems: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "settings" }, data: want }],
      });
      // Not selected yet: the planted object stays as it is.
      assert.equal((await getObject(admin, cmPath(ns, "settings")))?.data?.planted, "by the tenant");
      await admin.request({
        method: "PATCH",
        path: `/api/v1/namespaces/${ns}`,
        contentType: "application/merge-patch+json",
        body: { metadata: { labels: { "espejo-test/tenant": ns } } },
      });
      await converges(
        admin,
        cmPath(ns, "settings"),
        configMapMismatch(want, `${cfgNs}/takeover`),
        "the planted ConfigMap to be taken over",
        { ns: cfgNs, name: "takeover" },
        20_000,
      );
    } finally {
      await ctl.stop();
      tenant.client.close();
      admin.close();
    }
  },
);

Deno.test(
  "Tenant's labelled junk ConfigMaps cost the caches no content (created while espejo runs)",
  opts,
  async () => {
    const c = await testCluster();
    const admin = clientFor(c);
    const cfgNs = uniqueName("cfg");
    const ns = uniqueName("tenant-junk");
    await createNamespace(admin, ns);
    const tenant = await createTenant(c, admin, ns);
    const ctl = await startController(c, { watchNamespace: cfgNs, reconcileIntervalMs: INTERVAL_MS });
    const want = { small: "yes" };
    const desired = configMapMismatch(want, `${cfgNs}/junk`);
    try {
      await createSyncConfig(admin, cfgNs, "junk", configMapSpec(ns, "small", want));
      await waitSynced(admin, cfgNs, "junk", 1);
      const unitsBefore = await counterValue(ctl.metrics, "espejo_syncs_total", { trigger: "namespace" });
      await createJunk(tenant);
      for (let i = 0; i < JUNK_COUNT; i += 4) {
        await Promise.all(
          Array.from({ length: 4 }, (_, j) => tenantPatch(tenant, cmPath(ns, `junk-${i + j}`), { data: { v: "2" } })),
        );
      }
      // Sentinel: one watch stream carries every labelled ConfigMap in order, so once espejo has seen (and reverted)
      // a change made after the last junk was created, the junk has been delivered to it too.
      await tenantPatch(tenant, cmPath(ns, "small"), { data: { small: "sentinel" } });
      await converges(admin, cmPath(ns, "small"), desired, "the sentinel change to be reverted", {
        ns: cfgNs,
        name: "junk",
      });
      await assertRetainedBelowLimit(ctl);
      const units = (await counterValue(ctl.metrics, "espejo_syncs_total", { trigger: "namespace" })) - unitsBefore;
      assert.ok(units <= 3, `${units} namespace syncs for ${2 * JUNK_COUNT} junk changes and one sentinel (want <= 3)`);
      assert.equal(desired(await getObject(admin, cmPath(ns, "small"))), undefined, "the small item is still synced");
      await waitSynced(admin, cfgNs, "junk", 1);
    } finally {
      await ctl.stop();
      await deleteJunk(admin, ns);
      tenant.client.close();
      admin.close();
    }
  },
);

Deno.test(
  "Tenant's labelled junk ConfigMaps cost the caches no content (present before espejo starts)",
  opts,
  async () => {
    const c = await testCluster();
    const admin = clientFor(c);
    const cfgNs = uniqueName("cfg");
    const ns = uniqueName("tenant-junk0");
    await createNamespace(admin, ns);
    const tenant = await createTenant(c, admin, ns);
    const want = { small: "yes" };
    const desired = configMapMismatch(want, `${cfgNs}/junk`);
    let ctl: RunningController | undefined;
    try {
      await createNamespace(admin, cfgNs);
      await createSyncConfig(admin, cfgNs, "junk", configMapSpec(ns, "small", want));
      await createJunk(tenant);
      ctl = await startController(c, { watchNamespace: cfgNs, reconcileIntervalMs: INTERVAL_MS });
      // The item is written only after the ConfigMap cache's first list, which already holds every junk object.
      await converges(admin, cmPath(ns, "small"), desired, "the small item to be synced", { ns: cfgNs, name: "junk" });
      await waitSynced(admin, cfgNs, "junk", 1);
      await assertRetainedBelowLimit(ctl);
      assert.equal(desired(await getObject(admin, cmPath(ns, "small"))), undefined, "the small item is still synced");
    } finally {
      await ctl?.stop();
      await deleteJunk(admin, ns);
      tenant.client.close();
      admin.close();
    }
  },
);

/**
 * The most writes of one object espejo may make in a fight lasting `seconds`: restores back off 1, 2, 4 s... up to the
 * interval, so 12 in 15 s and one more per interval after that (a busy machine stretches the tenant's loop).
 */
const mostFightWrites = (seconds: number) => 7 + Math.floor((seconds * 1000) / INTERVAL_MS);

Deno.test("Tenant fighting espejo over a ConfigMap gets few writes from it, and loses", opts, async () => {
  const c = await testCluster();
  const admin = clientFor(c);
  const cfgNs = uniqueName("cfg");
  const ns = uniqueName("tenant-fight");
  await createNamespace(admin, ns);
  const tenant = await createTenant(c, admin, ns);
  const ctl = await startController(c, { watchNamespace: cfgNs, reconcileIntervalMs: INTERVAL_MS });
  const want = { v: "desired" };
  const path = cmPath(ns, "fought");
  try {
    await createSyncConfig(admin, cfgNs, "fight", configMapSpec(ns, "fought", want));
    await waitSynced(admin, cfgNs, "fight", 1);
    const since = auditNow();
    const start = Date.now();
    // Pacing, not synchronisation: one change every 0.5 s for 15 s.
    for (let i = 0; i < 30; i++) {
      const changed = await tenantPatch(tenant, path, { data: { v: `tenant-${i}` } });
      assert.equal(changed.data?.v, `tenant-${i}`, "the tenant's change took effect");
      const next = start + (i + 1) * 500;
      await new Promise((r) => setTimeout(r, Math.max(0, next - Date.now())));
    }
    const until = auditNow();
    const seconds = (Date.now() - start) / 1000;
    await converges(admin, path, configMapMismatch(want, `${cfgNs}/fight`), "the fought ConfigMap to end as desired", {
      ns: cfgNs,
      name: "fight",
    });
    const isWriteOfObject = (e: AuditEvent) => {
      const uriPath = e.requestURI.split("?")[0];
      if (e.verb === "update" || e.verb === "patch") return uriPath === path;
      return e.verb === "create" && uriPath === `/api/v1/namespaces/${ns}/configmaps` && e.objectRef?.name === "fought";
    };
    const writes = (await requestsBy(c, ctl.identity, since)).filter((e) =>
      e.requestReceivedTimestamp <= until && isWriteOfObject(e)
    );
    const most = mostFightWrites(seconds);
    assert.ok(
      writes.length <= most,
      `espejo wrote the object ${writes.length} times during the tenant's 30 changes in ${
        seconds.toFixed(1)
      } s (want at most ${most}): ${
        writes.map((e) => `${e.requestReceivedTimestamp.slice(11, 23)} ${e.verb} ${e.responseStatus?.code}`).join(", ")
      }`,
    );
  } finally {
    await ctl.stop();
    tenant.client.close();
    admin.close();
  }
});

Deno.test(
  "Tenant deleting and unlabelling a ConfigMap again and again gets few writes from it, and loses",
  opts,
  async () => {
    const c = await testCluster();
    const admin = clientFor(c);
    const cfgNs = uniqueName("cfg");
    const ns = uniqueName("tenant-remove");
    await createNamespace(admin, ns);
    const tenant = await createTenant(c, admin, ns);
    const ctl = await startController(c, { watchNamespace: cfgNs, reconcileIntervalMs: INTERVAL_MS });
    const want = { v: "desired" };
    const path = cmPath(ns, "removed");
    try {
      await createSyncConfig(admin, cfgNs, "remove", configMapSpec(ns, "removed", want));
      await waitSynced(admin, cfgNs, "remove", 1);
      const since = auditNow();
      const start = Date.now();
      let removals = 0;
      // Pacing, not synchronisation: every 0.5 s, delete the object or take espejo's label off, whichever finds it
      // (404: espejo has not written it back yet, nothing to remove). For 15 s, and on a busy machine, where espejo's
      // restores come slower, on until the tenant has removed it 10 times: the bound below follows the time taken.
      for (let i = 0; i < 30 || (removals < 10 && Date.now() - start < 120_000); i++) {
        try {
          if (i % 2) {
            await tenant.client.request({
              method: "PATCH",
              path,
              contentType: "application/merge-patch+json",
              body: { metadata: { labels: { [MANAGED_LABEL]: null } } },
            });
          } else await tenant.client.request({ method: "DELETE", path });
          removals++;
        } catch (e) {
          if (!(e instanceof ApiError && e.code === 404)) throw e;
        }
        const next = start + (i + 1) * 500;
        await new Promise((r) => setTimeout(r, Math.max(0, next - Date.now())));
      }
      const until = auditNow();
      const seconds = (Date.now() - start) / 1000;
      assert.ok(removals >= 10, `the tenant removed the object ${removals} times in ${seconds.toFixed(1)} s`);
      await converges(
        admin,
        path,
        (o) =>
          configMapMismatch(want, `${cfgNs}/remove`)(o) ??
            (o?.metadata?.labels?.[MANAGED_LABEL] ? undefined : "no label"),
        "the removed ConfigMap to be back as desired",
        { ns: cfgNs, name: "remove" },
      );
      const writes = (await requestsBy(c, ctl.identity, since)).filter((e) => {
        if (e.requestReceivedTimestamp > until) return false;
        const uriPath = e.requestURI.split("?")[0];
        if (e.verb === "update" || e.verb === "patch") return uriPath === path;
        return e.verb === "create" && uriPath === `/api/v1/namespaces/${ns}/configmaps` &&
          e.objectRef?.name === "removed";
      });
      const most = mostFightWrites(seconds);
      assert.ok(
        writes.length <= most,
        `espejo wrote the object ${writes.length} times during the tenant's ${removals} removals in ${
          seconds.toFixed(1)
        } s (want at most ${most}): ${
          writes.map((e) => `${e.requestReceivedTimestamp.slice(11, 23)} ${e.verb} ${e.responseStatus?.code}`).join(
            ", ",
          )
        }`,
      );
    } finally {
      await ctl.stop();
      tenant.client.close();
      admin.close();
    }
  },
);

Deno.test("Tenant cannot hide a change made while espejo is down by stripping managedFields", opts, async () => {
  const c = await testCluster();
  const admin = clientFor(c);
  const cfgNs = uniqueName("cfg");
  const ns = uniqueName("tenant-down");
  await createNamespace(admin, ns);
  const tenant = await createTenant(c, admin, ns);
  let ctl: RunningController | undefined = await startController(c, {
    watchNamespace: cfgNs,
    reconcileIntervalMs: INTERVAL_MS,
  });
  const want = { a: "1", b: "2" };
  const path = cmPath(ns, "settings");
  try {
    await createSyncConfig(admin, cfgNs, "restart", configMapSpec(ns, "settings", want));
    await waitSynced(admin, cfgNs, "restart", 1);
    const before = await getObject(admin, path);
    await ctl.stop();
    ctl = undefined;
    // First the change (the tenant's manager owns data.a), then the strip: afterwards nobody owns anything.
    const changed = await tenantPatch(tenant, path, { data: { a: "tenant" } });
    assert.equal(changed.data?.a, "tenant", "the tenant's change took effect");
    const stripped = await tenantPatch(tenant, path, { metadata: { managedFields: [{}] } });
    assert.deepEqual(stripped.metadata?.managedFields ?? [], [], "managedFields are gone");
    assert.deepEqual(stripped.data, { a: "tenant", b: "2" });
    // espejo's markers are untouched: only the comparison by value can tell.
    const marker = (o: TestObject | undefined) => ({
      label: o?.metadata?.labels?.[MANAGED_LABEL],
      owner: o?.metadata?.annotations?.[OWNER_ANNOTATION],
      hash: o?.metadata?.annotations?.[HASH_ANNOTATION],
    });
    assert.deepEqual(marker(stripped), marker(before), "label and annotations are espejo's");
    ctl = await startController(c, { watchNamespace: cfgNs, reconcileIntervalMs: INTERVAL_MS });
    await converges(
      admin,
      path,
      configMapMismatch(want, `${cfgNs}/restart`),
      "the restarted controller to revert the change",
      { ns: cfgNs, name: "restart" },
    );
  } finally {
    await ctl?.stop();
    tenant.client.close();
    admin.close();
  }
});

// After a restart an object found in sync by comparison keeps what the comparison proved as its baseline, not a hash
// of its content (lib/sync/verdict.ts): each of these later edits must still be told from the desired object.
Deno.test(
  "Tenant edits after a restart are restored from a baseline proved by comparison: espejo's field manager, managedFields stripped, a spoofed owner, a finalizer, immutable",
  opts,
  async () => {
    const c = await testCluster();
    const admin = clientFor(c);
    const cfgNs = uniqueName("cfg");
    const ns = uniqueName("tenant-proved");
    await createNamespace(admin, ns);
    const tenant = await createTenant(c, admin, ns);
    let ctl: RunningController | undefined = await startController(c, {
      watchNamespace: cfgNs,
      reconcileIntervalMs: INTERVAL_MS,
    });
    const want = { a: "1", b: "2" };
    const path = cmPath(ns, "settings");
    const cfg = { ns: cfgNs, name: "proved" };
    const wanted = configMapMismatch(want, `${cfgNs}/proved`);
    try {
      await createSyncConfig(admin, cfgNs, "proved", configMapSpec(ns, "settings", want));
      await waitSynced(admin, cfgNs, "proved", 1);
      await ctl.stop();
      // Restarted with the object unchanged: it is judged in sync by comparison, no write, before any edit.
      ctl = await startController(c, { watchNamespace: cfgNs, reconcileIntervalMs: INTERVAL_MS });
      const started = ctl;
      await eventually(
        async () => (await counterValue(started.metrics, "espejo_syncs_total")) >= 1,
        REVERT_MS,
        "the restarted controller to sync the namespace once",
      );
      const edits: [string, unknown, string | undefined][] = [
        ["a data change under espejo's field manager", { data: { a: "tenant" } }, "espejo"],
        [
          "a data change with managedFields stripped",
          { metadata: { managedFields: [{}] }, data: { b: "tenant" } },
          undefined,
        ],
        [
          "a spoofed owner annotation",
          { metadata: { annotations: { [OWNER_ANNOTATION]: `${cfgNs}/other` } } },
          undefined,
        ],
        ["a key added", { data: { extra: "tenant" } }, "espejo"],
      ];
      for (const [what, patch, fieldManager] of edits) {
        await tenantPatch(tenant, path, patch, fieldManager);
        await converges(admin, path, wanted, `espejo to restore ${what}`, cfg);
      }
      await tenantPatch(tenant, path, { metadata: { finalizers: ["example.com/keep"] } });
      await converges(
        admin,
        path,
        (o) =>
          wanted(o) ??
            (o?.metadata?.finalizers?.length ? `finalizers ${JSON.stringify(o.metadata.finalizers)}` : undefined),
        "espejo to remove the tenant's finalizer",
        cfg,
      );
      await tenantPatch(tenant, path, { immutable: true });
      await converges(
        admin,
        path,
        (o) => wanted(o) ?? ((o as { immutable?: boolean } | undefined)?.immutable ? "it is immutable" : undefined),
        "espejo to replace the ConfigMap the tenant made immutable",
        cfg,
      );
    } finally {
      await ctl?.stop();
      tenant.client.close();
      admin.close();
    }
  },
);

Deno.test("Tenant identity is confined to its own namespace (sanity)", opts, async () => {
  const c = await testCluster();
  const admin = clientFor(c);
  const ns = uniqueName("tenant-own");
  const other = uniqueName("tenant-other");
  await createNamespace(admin, ns);
  await createNamespace(admin, other);
  const tenant = await createTenant(c, admin, ns);
  const cm = (name: string) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name }, data: { k: "v" } });
  const code = async (p: Promise<unknown>) => {
    try {
      await p;
      return 200;
    } catch (e) {
      if (e instanceof ApiError) return e.code;
      throw e;
    }
  };
  try {
    await admin.request({ method: "POST", path: `/api/v1/namespaces/${other}/configmaps`, body: cm("victim") });
    // Positive control: the token works, in the tenant's own namespace.
    await tenantCreate(tenant, cm("mine"));
    await tenantPatch(tenant, cmPath(ns, "mine"), { data: { k: "w" } });
    const t = tenant.client;
    assert.equal(
      await code(t.request({ method: "POST", path: `/api/v1/namespaces/${other}/configmaps`, body: cm("planted") })),
      403,
      "create in another namespace",
    );
    assert.equal(
      await code(t.request({
        method: "PATCH",
        path: cmPath(other, "victim"),
        contentType: "application/merge-patch+json",
        body: { data: { k: "tenant" } },
      })),
      403,
      "patch in another namespace",
    );
    assert.equal(
      await code(t.request({
        method: "POST",
        path: `/apis/networking.k8s.io/v1/namespaces/${other}/networkpolicies`,
        body: {
          apiVersion: "networking.k8s.io/v1",
          kind: "NetworkPolicy",
          metadata: { name: "x" },
          spec: { podSelector: {} },
        },
      })),
      403,
      "create a NetworkPolicy in another namespace",
    );
    assert.equal(await code(t.request({ method: "GET", path: "/api/v1/configmaps" })), 403, "list cluster-wide");
    assert.equal(
      await code(t.request({
        method: "PATCH",
        path: `/api/v1/namespaces/${ns}`,
        contentType: "application/merge-patch+json",
        body: { metadata: { labels: { x: "y" } } },
      })),
      403,
      "label its own namespace",
    );
    assert.equal((await getObject(admin, cmPath(other, "victim")))?.data?.k, "v", "the victim is untouched");
  } finally {
    tenant.client.close();
    admin.close();
  }
});

Deno.test(
  "Tenant's games with the creation record: no write, and no prune beyond what both markers say",
  opts,
  async () => {
    const c = await testCluster();
    const admin = clientFor(c);
    const cfgNs = uniqueName("cfg");
    const ns = uniqueName("tenant-prune");
    await createNamespace(admin, ns);
    const tenant = await createTenant(c, admin, ns);
    const ctl = await startController(c, { watchNamespace: cfgNs, reconcileIntervalMs: INTERVAL_MS });
    const created = "sync.appuio.ch/created-by";
    const cm = (name: string) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name }, data: { v: name } });
    const spec = (...names: string[]) => ({ namespaceSelector: { matchNames: [ns] }, syncItems: names.map(cm) });
    try {
      await admin.request({
        method: "POST",
        path: `/apis/sync.appuio.ch/v1alpha1/namespaces/${cfgNs}/syncconfigs`,
        body: {
          apiVersion: "sync.appuio.ch/v1alpha1",
          kind: "SyncConfig",
          metadata: { name: "p", annotations: { "sync.appuio.ch/prune": "true" } },
          spec: spec("policy", "kept"),
        },
      });
      await waitSynced(admin, cfgNs, "p", 2);
      const key = `${cfgNs}/p`;
      assert.equal((await getObject(admin, cmPath(ns, "policy")))?.metadata?.annotations?.[created], key);
      const updatesBefore = await counterValue(ctl.metrics, "espejo_object_writes_total", { action: "update" });
      // 1. The tenant strips the creation record: that is no drift (espejo writes nothing back), and it only takes the
      //    object out of pruning.
      await tenantPatch(tenant, cmPath(ns, "policy"), { metadata: { annotations: { [created]: null } } });
      // 2. Junk objects with espejo's label claiming P in part: the owner without the record, the record without the
      //    owner. Neither claims both markers, so neither may be pruned.
      const junk = (name: string, annotations: Record<string, string>) =>
        tenantCreate(tenant, { ...cm(name), metadata: { name, labels: { [MANAGED_LABEL]: "espejo" }, annotations } });
      await junk("junk-owner", { [OWNER_ANNOTATION]: key });
      await junk("junk-record", { [OWNER_ANNOTATION]: `${cfgNs}/other`, [created]: key });
      // The item goes: P prunes what it created and still claims.
      await admin.request({
        method: "PATCH",
        path: `/apis/sync.appuio.ch/v1alpha1/namespaces/${cfgNs}/syncconfigs/p`,
        contentType: "application/merge-patch+json",
        body: { spec: spec("kept") },
      });
      await waitSynced(admin, cfgNs, "p", 1);
      for (const name of ["policy", "junk-owner", "junk-record", "kept"]) {
        assert.ok(await getObject(admin, cmPath(ns, name)), `${name} must not be pruned`);
      }
      assert.equal(await counterValue(ctl.metrics, "espejo_prunes_total"), 0);
      assert.equal(
        await counterValue(ctl.metrics, "espejo_object_writes_total", { action: "update" }),
        updatesBefore,
        "removing the creation record is not drift",
      );
    } finally {
      await ctl.stop();
      tenant.client.close();
      admin.close();
    }
  },
);

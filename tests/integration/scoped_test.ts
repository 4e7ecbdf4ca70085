/**
 * Scoped reconciles: a namespace event touches that namespace only, checked against the API server's audit log of
 * the controller's own identity.
 */
import assert from "node:assert/strict";
import { clientFor, eventually, testCluster, uniqueName } from "../../testenv/shared.ts";
import {
  aboutSyncConfig,
  auditNow,
  counterValue,
  createNamespace,
  createSyncConfig,
  getObject,
  requestsBy,
  startController,
  statusOf,
} from "../../testenv/harness.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const items = [
  { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "one" }, data: { ns: "${PROJECT_NAME}" } },
  { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "two" } },
];

Deno.test(
  "A new namespace is synced alone: only creates, only in that namespace; an ignored one gets no request",
  opts,
  async () => {
    const c = await testCluster();
    const admin = clientFor(c);
    const cfgNs = uniqueName("cfg");
    const prefix = uniqueName("scope");
    const ctl = await startController(c, { watchNamespace: cfgNs, optIn: ["secrets", "serviceaccounts"] });
    try {
      for (const s of ["a", "b", "c"]) await createNamespace(admin, `${prefix}-${s}`);
      await createSyncConfig(admin, cfgNs, "first", {
        namespaceSelector: { matchNames: [`${prefix}-.*`], ignoreNames: [`${prefix}-skip.*`] },
        syncItems: items,
      });
      await createSyncConfig(admin, cfgNs, "second", {
        namespaceSelector: { matchNames: [`${prefix}-.*`], ignoreNames: [`${prefix}-skip.*`] },
        syncItems: [{ apiVersion: "v1", kind: "Secret", metadata: { name: "three" }, stringData: { k: "v" } }],
      });
      await eventually(
        async () => (await statusOf(admin, cfgNs, "first")).synchronizedItemCount === 6,
        20_000,
        "first converged",
      );
      await eventually(
        async () => (await statusOf(admin, cfgNs, "second")).synchronizedItemCount === 3,
        20_000,
        "second converged",
      );

      const since = auditNow();
      const fresh = `${prefix}-new`;
      await createNamespace(admin, fresh);
      await eventually(
        () => getObject(admin, `/api/v1/namespaces/${fresh}/secrets/three`),
        20_000,
        "items in the new namespace",
      );
      await eventually(() => getObject(admin, `/api/v1/namespaces/${fresh}/configmaps/one`));
      await eventually(() => getObject(admin, `/api/v1/namespaces/${fresh}/serviceaccounts/two`));
      await eventually(
        async () => (await statusOf(admin, cfgNs, "first")).synchronizedItemCount === 8,
        20_000,
        "status counts the new namespace",
      );
      const inNamespaces = (await requestsBy(c, ctl.identity, since)).filter((e) => !aboutSyncConfig(e));
      assert.deepEqual(
        inNamespaces.map((e) => `${e.verb} ${e.objectRef?.resource} ${e.objectRef?.namespace}`).sort(),
        [`create configmaps ${fresh}`, `create secrets ${fresh}`, `create serviceaccounts ${fresh}`],
      );

      // An ignored namespace: no unit runs and no request names it. A selected namespace created after it is the
      // sentinel: the namespace watch delivers events in order, so once its items exist the ignored one was seen.
      const skipped = `${prefix}-skip`;
      const sentinel = `${prefix}-sentinel`;
      const before = await counterValue(ctl.metrics, "espejo_syncs_total", { trigger: "namespace" });
      const since2 = auditNow();
      await createNamespace(admin, skipped);
      await createNamespace(admin, sentinel);
      await eventually(() => getObject(admin, `/api/v1/namespaces/${sentinel}/secrets/three`), 20_000, "the sentinel");
      await eventually(
        async () => (await counterValue(ctl.metrics, "espejo_syncs_total", { trigger: "namespace" })) > before,
      );
      assert.equal(
        await counterValue(ctl.metrics, "espejo_syncs_total", { trigger: "namespace" }),
        before + 1,
        "one unit, the sentinel's; none for the ignored namespace",
      );
      const touching = (await requestsBy(c, ctl.identity, since2)).filter((e) => e.objectRef?.namespace === skipped);
      assert.deepEqual(touching, []);
    } finally {
      await ctl.stop();
      admin.close();
    }
  },
);

Deno.test(
  "Relabelling a namespace syncs it alone when it starts matching, and writes nothing when it stops",
  opts,
  async () => {
    const c = await testCluster();
    const admin = clientFor(c);
    const cfgNs = uniqueName("cfg");
    const prefix = uniqueName("relabel");
    const label = `espejo-test/${prefix}`;
    const ctl = await startController(c, { watchNamespace: cfgNs });
    try {
      await createNamespace(admin, `${prefix}-member`, { [label]: "yes" });
      await createNamespace(admin, `${prefix}-later`);
      await createSyncConfig(admin, cfgNs, "by-label", {
        namespaceSelector: { labelSelector: { matchExpressions: [{ key: label, operator: "In", values: ["yes"] }] } },
        syncItems: items,
      });
      await eventually(
        async () => (await statusOf(admin, cfgNs, "by-label")).synchronizedItemCount === 2,
        20_000,
        "converged",
      );
      assert.equal(await getObject(admin, `/api/v1/namespaces/${prefix}-later/configmaps/one`), undefined);

      const since = auditNow();
      await admin.request({
        method: "PATCH",
        path: `/api/v1/namespaces/${prefix}-later`,
        contentType: "application/merge-patch+json",
        body: { metadata: { labels: { [label]: "yes" } } },
      });
      await eventually(
        () => getObject(admin, `/api/v1/namespaces/${prefix}-later/configmaps/one`),
        20_000,
        "synced after relabel",
      );
      await eventually(
        async () => (await statusOf(admin, cfgNs, "by-label")).synchronizedItemCount === 4,
        20_000,
        "status",
      );
      const writes = (await requestsBy(c, ctl.identity, since)).filter((e) => !aboutSyncConfig(e));
      assert.ok(
        writes.length > 0 && writes.every((e) => e.objectRef?.namespace === `${prefix}-later`),
        JSON.stringify(writes.map((e) => e.requestURI)),
      );

      const since2 = auditNow();
      await admin.request({
        method: "PATCH",
        path: `/api/v1/namespaces/${prefix}-later`,
        contentType: "application/merge-patch+json",
        body: { metadata: { labels: { [label]: "no" } } },
      });
      await eventually(
        async () => (await statusOf(admin, cfgNs, "by-label")).synchronizedItemCount === 2,
        20_000,
        "status shrinks",
      );
      const after = (await requestsBy(c, ctl.identity, since2)).filter((e) => !aboutSyncConfig(e));
      assert.deepEqual(after.map((e) => e.requestURI), [], "nothing written when a namespace stops matching");
      assert.ok(await getObject(admin, `/api/v1/namespaces/${prefix}-later/configmaps/one`), "and nothing deleted");
    } finally {
      await ctl.stop();
      admin.close();
    }
  },
);

Deno.test(
  "A new SyncConfig over many namespaces costs one create per item and namespace, and one status write",
  opts,
  async () => {
    const c = await testCluster();
    const admin = clientFor(c);
    const cfgNs = uniqueName("cfg");
    const prefix = uniqueName("wide");
    const ctl = await startController(c, { watchNamespace: cfgNs });
    try {
      // More namespaces than workers, so that some are still being synced when the queue runs empty.
      const names = Array.from({ length: 12 }, (_, i) => `${prefix}-${i}`);
      for (const name of names) await createNamespace(admin, name);
      const since = auditNow();
      await createSyncConfig(admin, cfgNs, "wide", {
        namespaceSelector: { matchNames: [`${prefix}-.*`] },
        syncItems: items,
      });
      await eventually(
        async () => (await statusOf(admin, cfgNs, "wide")).synchronizedItemCount === 2 * names.length,
        30_000,
        "converged",
      );
      const requests = await requestsBy(c, ctl.identity, since);
      const writes = requests.filter((e) => !aboutSyncConfig(e) && !["get", "list"].includes(e.verb));
      assert.equal(writes.length, 2 * names.length);
      assert.ok(writes.every((e) => e.verb === "create"), writes.map((e) => e.verb).join(","));
      const statusWrites = requests.filter((e) => e.objectRef?.subresource === "status");
      assert.equal(statusWrites.length, 1, "one status write for the whole burst");
    } finally {
      await ctl.stop();
      admin.close();
    }
  },
);

Deno.test(
  "Editing one item of a SyncConfig updates that item in each namespace and writes nothing else",
  opts,
  async () => {
    const c = await testCluster();
    const admin = clientFor(c);
    const cfgNs = uniqueName("cfg");
    const prefix = uniqueName("edit");
    const ctl = await startController(c, { watchNamespace: cfgNs });
    const spec = (version: string) => ({
      namespaceSelector: { matchNames: [`${prefix}-.*`] },
      syncItems: [
        { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "edited" }, data: { version } },
        ...items,
      ],
    });
    try {
      const names = ["a", "b", "c"].map((s) => `${prefix}-${s}`);
      for (const name of names) await createNamespace(admin, name);
      await createSyncConfig(admin, cfgNs, "edit", spec("1"));
      await eventually(async () => (await statusOf(admin, cfgNs, "edit")).synchronizedItemCount === 9, 20_000);
      const synced = () => counterValue(ctl.metrics, "espejo_syncs_total", { trigger: "syncconfig" });
      const syncedBefore = await synced();
      const since = auditNow();
      await admin.request({
        method: "PATCH",
        path: `/apis/sync.appuio.ch/v1alpha1/namespaces/${cfgNs}/syncconfigs/edit`,
        contentType: "application/merge-patch+json",
        body: { spec: spec("2") },
      });
      await eventually(
        async () => {
          for (const name of names) {
            if ((await getObject(admin, `/api/v1/namespaces/${name}/configmaps/edited`))?.data?.version !== "2") {
              return false;
            }
          }
          return true;
        },
        20_000,
        "the edit applied everywhere",
      );
      // Every namespace synced for the new generation, and nothing left in the queue.
      await eventually(
        async () => (await synced()) >= syncedBefore + 3 && ctl.controller.queue.idle,
        20_000,
        "the edit's units done",
      );
      const writes = (await requestsBy(c, ctl.identity, since))
        .filter((e) => !aboutSyncConfig(e));
      assert.deepEqual(
        writes.map((e) => `${e.verb} ${e.objectRef?.resource}/${e.objectRef?.name} ${e.objectRef?.namespace}`).sort(),
        names.map((n) => `update configmaps/edited ${n}`).sort(),
      );
    } finally {
      await ctl.stop();
      admin.close();
    }
  },
);

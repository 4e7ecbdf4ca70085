/**
 * Opt-in pruning against the real API server: each trigger deletes exactly what espejo created for the SyncConfig,
 * and nothing else; without the annotation nothing is deleted, as before.
 */
import assert from "node:assert/strict";
import type { HttpKubeClient } from "../../lib/kube/client.ts";
import { clientFor, eventually, type TestCluster, testCluster, uniqueName } from "../../testenv/shared.ts";
import {
  condition,
  counterValue,
  createNamespace,
  getObject,
  type RunningController,
  startController,
  statusOf,
} from "../../testenv/harness.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const SC_API = "/apis/sync.appuio.ch/v1alpha1";
const cmPath = (ns: string, name: string) => `/api/v1/namespaces/${ns}/configmaps/${name}`;
const scPath = (ns: string, name: string) => `${SC_API}/namespaces/${ns}/syncconfigs/${name}`;
const cm = (name: string) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name }, data: { v: name } });

async function createSyncConfig(
  admin: HttpKubeClient,
  namespace: string,
  name: string,
  spec: unknown,
  prune?: string,
): Promise<void> {
  const annotations = prune === undefined ? undefined : { "sync.appuio.ch/prune": prune };
  await admin.request({
    method: "POST",
    path: `${SC_API}/namespaces/${namespace}/syncconfigs`,
    body: {
      apiVersion: "sync.appuio.ch/v1alpha1",
      kind: "SyncConfig",
      metadata: { name, namespace, annotations },
      spec,
    },
  });
}

async function patch(admin: HttpKubeClient, path: string, body: unknown): Promise<void> {
  await admin.request({ method: "PATCH", path, body, contentType: "application/merge-patch+json" });
}

const finalizersOf = async (admin: HttpKubeClient, ns: string, name: string) =>
  (await getObject(admin, scPath(ns, name)))?.metadata?.finalizers ?? [];

async function gone(admin: HttpKubeClient, path: string, what: string): Promise<void> {
  await eventually(async () => (await getObject(admin, path)) === undefined, 20_000, `${what} to be pruned`);
}

/** Checked once the controller has acted on the change (each caller waits for a sign of that first). */
async function present(admin: HttpKubeClient, paths: string[]): Promise<void> {
  for (const p of paths) assert.ok(await getObject(admin, p), `${p} must not be deleted`);
}

/** The status counts `n` synchronized items: the controller has synced the SyncConfig's current generation. */
async function counted(admin: HttpKubeClient, ns: string, name: string, n: number): Promise<void> {
  await eventually(
    async () => (await statusOf(admin, ns, name)).synchronizedItemCount === n,
    20_000,
    `SyncConfig ${name} to count ${n} synchronized items`,
  );
}

/** A controller under test on its own SyncConfig namespace, stopped afterwards whatever happened. */
async function withController(
  body: (t: { c: TestCluster; admin: HttpKubeClient; cfgNs: string; ctl: RunningController }) => Promise<void>,
): Promise<void> {
  const c = await testCluster();
  const admin = clientFor(c);
  const cfgNs = uniqueName("cfg");
  const ctl = await startController(c, { watchNamespace: cfgNs });
  try {
    await body({ c, admin, cfgNs, ctl });
  } finally {
    await ctl.stop();
    admin.close();
  }
}

Deno.test(
  "Pruning: a removed item's objects go in every namespace; adopted objects and kept items stay",
  opts,
  async () => {
    await withController(async ({ admin, cfgNs, ctl }) => {
      const [a, b] = [uniqueName("pa"), uniqueName("pb")];
      await createNamespace(admin, a);
      await createNamespace(admin, b);
      // Made by hand before the SyncConfig: adopted in `a`, created in `b`.
      await admin.request({ method: "POST", path: `/api/v1/namespaces/${a}/configmaps`, body: cm("legacy") });
      await createSyncConfig(admin, cfgNs, "p", {
        namespaceSelector: { matchNames: [a, b] },
        syncItems: [cm("keep"), cm("drop"), cm("legacy")],
      }, "true");
      for (const ns of [a, b]) {
        for (const n of ["keep", "drop"]) {
          await eventually(
            () => getObject(admin, cmPath(ns, n)),
            20_000,
            `${n} in ${ns}`,
          );
        }
        await eventually(
          async () => (await getObject(admin, cmPath(ns, "legacy")))?.metadata?.labels,
          20_000,
          "legacy",
        );
      }
      assert.equal(
        (await getObject(admin, cmPath(a, "keep")))?.metadata?.annotations?.["sync.appuio.ch/created-by"],
        `${cfgNs}/p`,
      );
      assert.equal(
        (await getObject(admin, cmPath(a, "legacy")))?.metadata?.annotations?.["sync.appuio.ch/created-by"],
        undefined,
      );
      await eventually(
        async () => (await finalizersOf(admin, cfgNs, "p")).includes("sync.appuio.ch/prune"),
        20_000,
        "finalizer",
      );

      await patch(admin, scPath(cfgNs, "p"), { spec: { syncItems: [cm("keep")] } });
      for (const ns of [a, b]) await gone(admin, cmPath(ns, "drop"), `drop in ${ns}`);
      await gone(admin, cmPath(b, "legacy"), "legacy created in b");
      await counted(admin, cfgNs, "p", 2);
      await present(admin, [cmPath(a, "legacy"), cmPath(a, "keep"), cmPath(b, "keep")]);
      assert.equal(await counterValue(ctl.metrics, "espejo_prunes_total", { reason: "item removed" }), 3);
    });
  },
);

Deno.test("Pruning: a namespace no longer selected loses the objects of that SyncConfig only", opts, async () => {
  await withController(async ({ admin, cfgNs, ctl }) => {
    const ns = uniqueName("pn");
    const label = { "espejo-test/prune": ns };
    await createNamespace(admin, ns, label);
    const byLabel = { labelSelector: { matchLabels: label } };
    await createSyncConfig(admin, cfgNs, "pruning", { namespaceSelector: byLabel, syncItems: [cm("p")] }, "true");
    await createSyncConfig(admin, cfgNs, "keeping", { namespaceSelector: byLabel, syncItems: [cm("k")] });
    await createSyncConfig(
      admin,
      cfgNs,
      "by-name",
      { namespaceSelector: { matchNames: [ns] }, syncItems: [cm("n")] },
      "true",
    );
    for (const n of ["p", "k", "n"]) await eventually(() => getObject(admin, cmPath(ns, n)), 20_000, `${n}`);
    await patch(admin, `/api/v1/namespaces/${ns}`, { metadata: { labels: { "espejo-test/prune": null } } });
    await gone(admin, cmPath(ns, "p"), "the pruning SyncConfig's object");
    await counted(admin, cfgNs, "keeping", 0); // the unit that pruned also counted the namespace out
    await present(admin, [cmPath(ns, "k"), cmPath(ns, "n")]);
    assert.equal(await counterValue(ctl.metrics, "espejo_prunes_total", { reason: "namespace not selected" }), 1);
  });
});

Deno.test("Pruning: deleting the SyncConfig deletes what it created, then the SyncConfig goes", opts, async () => {
  await withController(async ({ admin, cfgNs, ctl }) => {
    const ns = uniqueName("pd");
    await createNamespace(admin, ns);
    await createSyncConfig(
      admin,
      cfgNs,
      "p",
      { namespaceSelector: { matchNames: [ns] }, syncItems: [cm("x")] },
      "true",
    );
    await createSyncConfig(admin, cfgNs, "other", { namespaceSelector: { matchNames: [ns] }, syncItems: [cm("y")] });
    await eventually(() => getObject(admin, cmPath(ns, "x")), 20_000, "x");
    await eventually(() => getObject(admin, cmPath(ns, "y")), 20_000, "y");
    await eventually(async () => (await finalizersOf(admin, cfgNs, "p")).length > 0, 20_000, "finalizer");
    await admin.request({ method: "DELETE", path: scPath(cfgNs, "p") });
    await gone(admin, cmPath(ns, "x"), "x");
    await eventually(async () => (await getObject(admin, scPath(cfgNs, "p"))) === undefined, 20_000, "SyncConfig gone");
    await present(admin, [cmPath(ns, "y")]);
    assert.equal(await counterValue(ctl.metrics, "espejo_prunes_total", { reason: "SyncConfig deleted" }), 1);
  });
});

Deno.test("Pruning: a SyncConfig deleted while espejo is stopped is cleaned up when it starts", opts, async () => {
  const c = await testCluster();
  const admin = clientFor(c);
  const cfgNs = uniqueName("cfg");
  const ns = uniqueName("ps");
  await createNamespace(admin, ns);
  let ctl = await startController(c, { watchNamespace: cfgNs });
  try {
    await createSyncConfig(
      admin,
      cfgNs,
      "p",
      { namespaceSelector: { matchNames: [ns] }, syncItems: [cm("x")] },
      "true",
    );
    await eventually(() => getObject(admin, cmPath(ns, "x")), 20_000, "x");
    await eventually(async () => (await finalizersOf(admin, cfgNs, "p")).length > 0, 20_000, "finalizer");
    await ctl.stop();
    await admin.request({ method: "DELETE", path: scPath(cfgNs, "p") });
    // Held by the finalizer while nobody prunes.
    const held = await getObject(admin, scPath(cfgNs, "p"));
    assert.ok(held?.metadata?.deletionTimestamp, "the finalizer holds the SyncConfig");
    assert.ok(await getObject(admin, cmPath(ns, "x")));
    ctl = await startController(c, { watchNamespace: cfgNs });
    await gone(admin, cmPath(ns, "x"), "x after the start");
    await eventually(async () => (await getObject(admin, scPath(cfgNs, "p"))) === undefined, 20_000, "SyncConfig gone");
  } finally {
    await ctl.stop();
    admin.close();
  }
});

Deno.test("Without the prune annotation nothing is deleted and no finalizer is added (as before)", opts, async () => {
  await withController(async ({ admin, cfgNs, ctl }) => {
    const ns = uniqueName("pk");
    const label = { "espejo-test/keep": ns };
    await createNamespace(admin, ns, label);
    await createSyncConfig(admin, cfgNs, "k", {
      namespaceSelector: { labelSelector: { matchLabels: label } },
      syncItems: [cm("one"), cm("two")],
    });
    await counted(admin, cfgNs, "k", 2);
    await patch(admin, scPath(cfgNs, "k"), { spec: { syncItems: [cm("one")] } });
    await counted(admin, cfgNs, "k", 1);
    await present(admin, [cmPath(ns, "one"), cmPath(ns, "two")]);
    await patch(admin, `/api/v1/namespaces/${ns}`, { metadata: { labels: { "espejo-test/keep": null } } });
    await counted(admin, cfgNs, "k", 0);
    await present(admin, [cmPath(ns, "one"), cmPath(ns, "two")]);
    assert.deepEqual(await finalizersOf(admin, cfgNs, "k"), []);
    await admin.request({ method: "DELETE", path: scPath(cfgNs, "k") });
    // Deleted at once (no finalizer): once the controller has seen it go and has nothing left to do, it did it all.
    await eventually(
      () => ctl.controller.syncConfigs.get(`${cfgNs}/k`) === undefined,
      20_000,
      "the watch to see it go",
    );
    await eventually(
      () => ctl.controller.queue.length() === 0 && ctl.controller.idleForMs === 0,
      20_000,
      "the controller to be idle",
    );
    await present(admin, [cmPath(ns, "one"), cmPath(ns, "two")]);
    assert.equal(await counterValue(ctl.metrics, "espejo_prunes_total"), 0);
  });
});

Deno.test("Pruning: turning the annotation off removes the finalizer and stops pruning at once", opts, async () => {
  await withController(async ({ admin, cfgNs }) => {
    const ns = uniqueName("po");
    await createNamespace(admin, ns);
    await createSyncConfig(admin, cfgNs, "p", {
      namespaceSelector: { matchNames: [ns] },
      syncItems: [cm("a"), cm("b")],
    }, "true");
    for (const n of ["a", "b"]) await eventually(() => getObject(admin, cmPath(ns, n)), 20_000, n);
    await eventually(async () => (await finalizersOf(admin, cfgNs, "p")).length > 0, 20_000, "finalizer");
    await patch(admin, scPath(cfgNs, "p"), { metadata: { annotations: { "sync.appuio.ch/prune": "false" } } });
    await eventually(async () => (await finalizersOf(admin, cfgNs, "p")).length === 0, 20_000, "finalizer removed");
    await patch(admin, scPath(cfgNs, "p"), { spec: { syncItems: [cm("a")] } });
    await counted(admin, cfgNs, "p", 1);
    await present(admin, [cmPath(ns, "a"), cmPath(ns, "b")]);
  });
});

Deno.test("Pruning: a SyncConfig made Invalid prunes nothing", opts, async () => {
  await withController(async ({ admin, cfgNs }) => {
    const ns = uniqueName("pi");
    await createNamespace(admin, ns);
    await createSyncConfig(admin, cfgNs, "p", {
      namespaceSelector: { matchNames: [ns] },
      syncItems: [cm("a"), cm("b")],
    }, "true");
    for (const n of ["a", "b"]) await eventually(() => getObject(admin, cmPath(ns, n)), 20_000, n);
    // A broken pattern, and one item fewer, in the same edit.
    await patch(admin, scPath(cfgNs, "p"), {
      spec: { namespaceSelector: { matchNames: ["("] }, syncItems: [cm("a")] },
    });
    await eventually(
      async () => condition(await statusOf(admin, cfgNs, "p"), "Invalid")?.status === "True",
      20_000,
      "the Invalid condition",
    );
    await present(admin, [cmPath(ns, "a"), cmPath(ns, "b")]);
  });
});

Deno.test("Pruning: an item whose kind is mistyped prunes nothing (a typo is not a removal)", opts, async () => {
  await withController(async ({ admin, cfgNs, ctl }) => {
    const ns = uniqueName("pt");
    await createNamespace(admin, ns);
    const spec = (kind: string) => ({
      namespaceSelector: { matchNames: [ns] },
      syncItems: [{ ...cm("a"), kind }, cm("b")],
    });
    await createSyncConfig(admin, cfgNs, "p", spec("ConfigMap"), "true");
    await counted(admin, cfgNs, "p", 2);
    await patch(admin, scPath(cfgNs, "p"), { spec: spec("ConfigMapp") });
    await eventually(async () => (await statusOf(admin, cfgNs, "p")).failedItemCount === 1, 20_000, "the typo to fail");
    await present(admin, [cmPath(ns, "a"), cmPath(ns, "b")]);
    assert.equal(await counterValue(ctl.metrics, "espejo_prunes_total"), 0);
  });
});

Deno.test(
  "Pruning: a SyncConfig deleted and created again under its name keeps the new one's objects",
  opts,
  async () => {
    await withController(async ({ admin, cfgNs, ctl }) => {
      const ns = uniqueName("pr");
      await createNamespace(admin, ns);
      const spec = { namespaceSelector: { matchNames: [ns] }, syncItems: [cm("x")] };
      await createSyncConfig(admin, cfgNs, "p", spec, "true");
      await eventually(() => getObject(admin, cmPath(ns, "x")), 20_000, "x created by the first SyncConfig");
      await eventually(async () => (await finalizersOf(admin, cfgNs, "p")).length > 0, 20_000, "finalizer");
      await admin.request({ method: "DELETE", path: scPath(cfgNs, "p") });
      await eventually(
        async () => (await getObject(admin, scPath(cfgNs, "p"))) === undefined,
        20_000,
        "SyncConfig gone",
      );
      assert.equal(await getObject(admin, cmPath(ns, "x")), undefined, "the first SyncConfig's x was pruned");
      await createSyncConfig(admin, cfgNs, "p", spec, "true");
      await eventually(
        async () => (await getObject(admin, cmPath(ns, "x")))?.metadata?.annotations?.["sync.appuio.ch/created-by"],
        20_000,
        "x created by the new SyncConfig",
      );
      await eventually(
        async () => (await finalizersOf(admin, cfgNs, "p")).length > 0,
        20_000,
        "the new one's finalizer",
      );
      await counted(admin, cfgNs, "p", 1);
      await present(admin, [cmPath(ns, "x")]);
      assert.equal(await counterValue(ctl.metrics, "espejo_prunes_total"), 1, "only the first SyncConfig's object");
    });
  },
);

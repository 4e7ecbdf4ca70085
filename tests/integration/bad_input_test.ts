/**
 * Bad input, table-driven: each case gets a specific message naming the SyncConfig, the field or item and the
 * reason; the other items carry on, nothing unrelated is deleted, and the controller stays ready.
 */
import assert from "node:assert/strict";
import { applyYaml } from "../../testenv/apply.ts";
import { clientFor, eventually, testCluster, uniqueName } from "../../testenv/shared.ts";
import {
  auditNow,
  condition,
  counterValue,
  createNamespace,
  createSyncConfig,
  getObject,
  requestsBy,
  startController,
  statusOf,
} from "../../testenv/harness.ts";
import { widgetKindYaml } from "../../testenv/widgets.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

/** Specs that are invalid as a whole: Invalid=True with this message, nothing synced. */
const INVALID_SPECS: [name: string, spec: (ns: string) => unknown, message: RegExp][] = [
  [
    "bad-match-pattern",
    (ns) => ({ namespaceSelector: { matchNames: [ns, "a(b"] }, syncItems: [cm("x")] }),
    /\.spec\.namespaceSelector\.matchNames\[1\] is not a valid regular expression: missing closing \)/,
  ],
  [
    "bad-ignore-pattern",
    (ns) => ({ namespaceSelector: { matchNames: [ns], ignoreNames: ["*x"] }, syncItems: [cm("x")] }),
    /\.spec\.namespaceSelector\.ignoreNames\[0\] is not a valid regular expression: missing argument to repetition operator/,
  ],
  [
    "lookahead-pattern",
    (ns) => ({ namespaceSelector: { matchNames: [`${ns}(?=x)`] }, syncItems: [cm("x")] }),
    /matchNames\[0\] is not a valid regular expression/,
  ],
  [
    "huge-pattern",
    (ns) => ({ namespaceSelector: { matchNames: [ns + "a".repeat(2000)] }, syncItems: [cm("x")] }),
    /matchNames\[0\] is \d+ characters long, more than the 1024 allowed/,
  ],
  [
    // 1000 characters that re2js would compile to ~200,000 instructions (over 300 MiB): refused before compiling.
    "costly-pattern",
    (ns) => ({ namespaceSelector: { matchNames: ["\\pL{0,999}".repeat(100), ns] }, syncItems: [cm("x")] }),
    /\.spec\.namespaceSelector\.matchNames\[0\] is not a valid regular expression: expression too large: it would compile to 199800 instructions, more than the 5000 allowed$/,
  ],
  [
    "bad-operator",
    () => ({
      namespaceSelector: { labelSelector: { matchExpressions: [{ key: "a", operator: "Equals", values: ["b"] }] } },
      syncItems: [cm("x")],
    }),
    /\.spec\.namespaceSelector\.labelSelector\.matchExpressions\[0\]\.operator "Equals" is not a valid operator/,
  ],
  [
    "in-without-values",
    () => ({
      namespaceSelector: { labelSelector: { matchExpressions: [{ key: "a", operator: "In" }] } },
      syncItems: [cm("x")],
    }),
    /matchExpressions\[0\]\.values must be non-empty for operator In/,
  ],
  [
    "bad-label-key",
    () => ({ namespaceSelector: { labelSelector: { matchLabels: { "bad key!": "x" } } }, syncItems: [cm("x")] }),
    /matchLabels\["bad key!"\] "bad key!" is not a valid label key/,
  ],
  [
    "no-selector",
    () => ({ namespaceSelector: {}, syncItems: [cm("x")] }),
    /\.spec\.namespaceSelector needs matchNames or labelSelector/,
  ],
  [
    "nothing-to-do",
    (ns) => ({ namespaceSelector: { matchNames: [ns] } }),
    /\.spec\.syncItems and \.spec\.deleteItems are both empty/,
  ],
];

/** Items that fail alone, with this message; the good item beside them is synced. */
const BAD_ITEMS: [item: unknown, message: RegExp][] = [
  [{ apiVersion: "v1", kind: "ConfigMap", metadata: {} }, /\.spec\.syncItems\[\d+\] has no metadata\.name/],
  [
    { apiVersion: "v1", kind: "Nope", metadata: { name: "n" } },
    /\(Nope n\): kind Nope is not served in apiVersion v1/,
  ],
  [
    { apiVersion: "nothing.example.com/v1", kind: "Thing", metadata: { name: "t" } },
    /\(Thing t\): apiVersion nothing\.example\.com\/v1 is not served/,
  ],
  [
    { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name: "escalate" }, rules: [] },
    /\(ClusterRole escalate\): ClusterRole \(rbac\.authorization\.k8s\.io\/v1\) is cluster-scoped; only namespaced objects are synced/,
  ],
  [{ apiVersion: "v1", kind: "Namespace", metadata: { name: "evil" } }, /\(Namespace evil\).*is cluster-scoped/],
  [
    { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "bad-key" }, data: { "no spaces allowed": "x" } },
    /\(ConfigMap bad-key\): the API server refused it \(422 Invalid: .*a valid config key/,
  ],
  [
    { apiVersion: "v1", kind: "Secret", metadata: { name: "secret-bad" }, stringData: { "bad key": "s3cr3t-value" } },
    /\(Secret secret-bad\): the API server refused it \(422 Invalid/,
  ],
  [
    { apiVersion: "v1", kind: "Secret", metadata: { name: "secret-number" }, stringData: { pin: 1234 } },
    /\.spec\.syncItems\[\d+\]\.stringData\["pin"\] is not a string/,
  ],
  [
    { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "deep" }, data: {}, nested: nested(3000) },
    /\.spec\.syncItems\[\d+\] is nested 300\d levels deep, more than the 100 allowed/,
  ],
  [
    { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "forbidden" }, spec: {} },
    /\(Deployment forbidden\): cannot list and watch deployments: the API server refused it \(403 Forbidden: .*cannot (?:list|watch) resource "deployments"/,
  ],
];

/** An object nested `depth` levels deep, built without recursion. */
function nested(depth: number): unknown {
  let v: unknown = "bottom";
  for (let i = 0; i < depth; i++) v = { x: v };
  return v;
}

function cm(name: string, data: Record<string, string> = {}) {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name }, data };
}

Deno.test("Bad input gets a specific message, and everything else carries on", opts, async () => {
  const c = await testCluster();
  const admin = clientFor(c);
  const cfgNs = uniqueName("cfg");
  const ns = uniqueName("bad");
  const ctl = await startController(c, { watchNamespace: cfgNs, optIn: ["secrets"] });
  try {
    await createNamespace(admin, ns);
    // Something unrelated that must survive everything below.
    await admin.request({ method: "POST", path: `/api/v1/namespaces/${ns}/configmaps`, body: cm("bystander") });

    for (const [name, spec] of INVALID_SPECS) await createSyncConfig(admin, cfgNs, name, spec(ns));
    // Items without kind or apiVersion never get this far: the CRD declares syncItems as embedded resources, so
    // the API server rejects the SyncConfig itself (the controller checks anyway, for older CRDs).
    await assert.rejects(
      createSyncConfig(admin, cfgNs, "kindless", {
        namespaceSelector: { matchNames: [ns] },
        syncItems: [{ apiVersion: "v1", metadata: { name: "x" } }],
      }),
      /spec\.syncItems\[0\]\.kind: Required value/,
    );
    const goodItems = [cm("good", { ok: "yes" })];
    // A big SyncConfig is not bad input: 150 items are synced like 1.
    for (let i = 0; i < 150; i++) goodItems.push(cm(`bulk-${i}`));
    await createSyncConfig(admin, cfgNs, "mixed", {
      namespaceSelector: { matchNames: [ns] },
      syncItems: [...BAD_ITEMS.map(([item]) => item), ...goodItems],
      deleteItems: [{ apiVersion: "v1", kind: "ConfigMap" }],
    });
    await createSyncConfig(admin, cfgNs, "first-owner", {
      namespaceSelector: { matchNames: [ns] },
      syncItems: [cm("contested", { by: "first" })],
    });

    for (const [name, , message] of INVALID_SPECS) {
      const s = await eventually(
        async () => {
          const s = await statusOf(admin, cfgNs, name);
          return condition(s, "Invalid") ? s : undefined;
        },
        20_000,
        `Invalid condition on ${name}`,
      );
      assert.equal(condition(s, "Invalid")?.status, "True", name);
      assert.equal(condition(s, "Invalid")?.reason, "InvalidSyncConfigSpec", name);
      assert.match(condition(s, "Invalid")?.message ?? "", new RegExp(`^SyncConfig ${cfgNs}/${name}: `), name);
      assert.match(condition(s, "Invalid")?.message ?? "", message, name);
    }

    const mixed = await eventually(
      async () => {
        const s = await statusOf(admin, cfgNs, "mixed");
        return s.synchronizedItemCount === goodItems.length ? s : undefined;
      },
      60_000,
      "the good items of the mixed SyncConfig",
    );
    assert.equal(mixed.failedItemCount, BAD_ITEMS.length + 1, "every bad item and the bad deleteItem fail");
    assert.equal(condition(mixed, "Ready")?.status, "True");
    assert.equal((await getObject(admin, `/api/v1/namespaces/${ns}/configmaps/good`))?.data?.ok, "yes");

    // Every bad item's message reaches the status (Ready lists the first; all are in the events and the log).
    const events = await eventually(
      async () => {
        const list = await admin.request<{ items: { message: string }[] }>({
          method: "GET",
          path: `/api/v1/namespaces/${cfgNs}/events`,
          query: { fieldSelector: "involvedObject.name=mixed,reason=SyncFailed" },
        });
        return list.items.length >= BAD_ITEMS.length + 1 ? list.items : undefined;
      },
      20_000,
      "events for the bad items",
    );
    const text = events.map((e) => e.message).join("\n");
    for (const [item, message] of BAD_ITEMS) assert.match(text, message, `${JSON.stringify(item)} in:\n${text}`);
    assert.doesNotMatch(text, /s3cr3t-value/, "secret values never appear in messages");
    // Values quoted by the API server's validation are redacted in Events (and status); the log keeps them.
    assert.match(text, /\(ConfigMap bad-key\): .*Invalid value: \[redacted\]: a valid config key/);
    assert.doesNotMatch(text, /Invalid value: "no spaces allowed"/);
    assert.match(text, /\.spec\.deleteItems\[0\] has no name/);

    // Two SyncConfigs writing one object: the second one fails, the first keeps it.
    await eventually(() => getObject(admin, `/api/v1/namespaces/${ns}/configmaps/contested`));
    await createSyncConfig(admin, cfgNs, "second-owner", {
      namespaceSelector: { matchNames: [ns] },
      syncItems: [cm("contested", { by: "second" })],
    });
    const second = await eventually(
      async () => {
        const s = await statusOf(admin, cfgNs, "second-owner");
        return s.failedItemCount === 1 ? s : undefined;
      },
      20_000,
      "the second owner to fail",
    );
    assert.match(
      condition(second, "Errored")?.message ?? "",
      new RegExp(`already managed by SyncConfig ${cfgNs}/first-owner`),
    );
    assert.equal((await getObject(admin, `/api/v1/namespaces/${ns}/configmaps/contested`))?.data?.by, "first");

    assert.ok(await getObject(admin, `/api/v1/namespaces/${ns}/configmaps/bystander`), "nothing unrelated deleted");
    assert.ok(ctl.controller.ready, "still ready");
  } finally {
    await ctl.stop();
    admin.close();
  }
});

Deno.test("A kind whose CRD is deleted mid-run fails alone; the other items carry on", opts, async () => {
  const c = await testCluster();
  const admin = clientFor(c);
  const cfgNs = uniqueName("cfg");
  const ns = uniqueName("crd");
  const group = `${ns}.example.com`;
  await applyYaml(admin, widgetKindYaml(group, `espejo-widgets-${ns}`));
  const ctl = await startController(c, { watchNamespace: cfgNs, reconcileIntervalMs: 500 });
  try {
    await createNamespace(admin, ns);
    await eventually(() => getObject(admin, `/apis/${group}/v1/widgets`), 20_000, "the CRD to be served");
    await createSyncConfig(admin, cfgNs, "with-crd", {
      namespaceSelector: { matchNames: [ns] },
      syncItems: [cm("plain"), { apiVersion: `${group}/v1`, kind: "Widget", metadata: { name: "w" }, size: 3 }],
    });
    await eventually(() => getObject(admin, `/apis/${group}/v1/namespaces/${ns}/widgets/w`), 30_000, "widget synced");
    await admin.request({
      method: "DELETE",
      path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.${group}`,
    });
    const s = await eventually(
      async () => {
        const s = await statusOf(admin, cfgNs, "with-crd");
        return s.failedItemCount === 1 ? s : undefined;
      },
      60_000,
      "the Widget item to fail",
    );
    assert.equal(s.synchronizedItemCount, 1);
    assert.match(condition(s, "Ready")?.message ?? "", /\(Widget w\) in namespace \S+: /);
    // The plain item is still kept in sync: delete it, it comes back.
    await admin.request({ method: "DELETE", path: `/api/v1/namespaces/${ns}/configmaps/plain` });
    await eventually(() => getObject(admin, `/api/v1/namespaces/${ns}/configmaps/plain`), 20_000, "recreated");
    assert.ok(ctl.controller.ready);
  } finally {
    await ctl.stop();
    admin.close();
  }
});

Deno.test("A rejected write is retried with backoff, not on every pass", opts, async () => {
  const c = await testCluster();
  const admin = clientFor(c);
  const cfgNs = uniqueName("cfg");
  const ns = uniqueName("backoff");
  const ctl = await startController(c, { watchNamespace: cfgNs, reconcileIntervalMs: 100 });
  try {
    await createNamespace(admin, ns);
    const since = auditNow();
    await createSyncConfig(admin, cfgNs, "rejected", {
      namespaceSelector: { matchNames: [ns] },
      syncItems: [cm("fine"), { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "bad" }, data: { "a b": "x" } }],
    });
    await eventually(async () => (await statusOf(admin, cfgNs, "rejected")).failedItemCount === 1, 20_000);
    // Passes every 100 ms for 3.5 s: without backoff ~35 attempts; with 1 s, 2 s, 4 s steps at most 3.
    const passes = await counterValue(ctl.metrics, "espejo_syncs_total", { trigger: "interval" });
    await eventually(
      async () => (await counterValue(ctl.metrics, "espejo_syncs_total", { trigger: "interval" })) >= passes + 20,
      20_000,
      "twenty passes",
    );
    const attempts = (await requestsBy(c, ctl.identity, since)).filter((e) =>
      e.verb === "create" && e.objectRef?.resource === "configmaps" && e.responseStatus?.code === 422
    );
    assert.ok(attempts.length >= 1 && attempts.length <= 4, `${attempts.length} attempts`);
  } finally {
    await ctl.stop();
    admin.close();
  }
});

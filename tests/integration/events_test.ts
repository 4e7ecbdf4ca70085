/** Kubernetes Events on SyncConfigs: specific, and aggregated instead of repeated every pass. */
import assert from "node:assert/strict";
import { clientFor, eventually, testCluster, uniqueName } from "../../testenv/shared.ts";
import { renderMessage } from "../../lib/app/logging.ts";
import {
  counterValue,
  createNamespace,
  createSyncConfig,
  eventsOf,
  getObject,
  startController,
} from "../../testenv/harness.ts";
import { withLogRecords } from "./log_records.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

Deno.test("A failing item produces one aggregated Warning event, not one per pass", opts, async () => {
  const c = await testCluster();
  const admin = clientFor(c);
  const cfgNs = uniqueName("cfg");
  const prefix = uniqueName("ev");
  const ctl = await startController(c, { watchNamespace: cfgNs, reconcileIntervalMs: 200 });
  try {
    for (const s of ["a", "b", "c"]) await createNamespace(admin, `${prefix}-${s}`);
    await createSyncConfig(admin, cfgNs, "half-bad", {
      namespaceSelector: { matchNames: [`${prefix}-.*`] },
      syncItems: [
        { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "fine" } },
        { apiVersion: "v1", kind: "NoSuchKind", metadata: { name: "broken" } },
      ],
    });
    await createSyncConfig(admin, cfgNs, "invalid", {
      namespaceSelector: {},
      syncItems: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "x" } }],
    });
    const passes = await counterValue(ctl.metrics, "espejo_syncs_total", { trigger: "interval" });
    await eventually(
      async () => (await counterValue(ctl.metrics, "espejo_syncs_total", { trigger: "interval" })) >= passes + 15,
      20_000,
      "at least five full passes",
    );
    const events = await eventsOf(admin, cfgNs, "half-bad");
    const warnings = events.filter((e) => e.type === "Warning");
    assert.equal(warnings.length, 1, JSON.stringify(warnings));
    assert.equal(warnings[0].reason, "SyncFailed");
    assert.match(
      warnings[0].message,
      /\.spec\.syncItems\[1\] \(NoSuchKind broken\): kind NoSuchKind is not served in apiVersion v1$/,
    );
    const normal = events.filter((e) => e.type === "Normal" && e.reason === "Synchronized");
    assert.equal(normal.length, 1, "one summary for the pass that created objects");
    assert.match(normal[0].message, /Objects 3 created in 3 namespaces/);

    const invalid = await eventually(async () =>
      (await eventsOf(admin, cfgNs, "invalid")).find((e) => e.reason === "InvalidSyncConfigSpec")
    );
    assert.equal(invalid.type, "Warning");
    assert.match(invalid.message, /\.spec\.namespaceSelector needs matchNames or labelSelector/);
  } finally {
    await ctl.stop();
    admin.close();
  }
});

Deno.test("A deleteItem with ${PROJECT_NAME} in its name is warned about once, in an Event", opts, async () => {
  const c = await testCluster();
  const admin = clientFor(c);
  const cfgNs = uniqueName("cfg");
  const ns = uniqueName("tmpl");
  const ctl = await startController(c, { watchNamespace: cfgNs, reconcileIntervalMs: 500 });
  try {
    await createNamespace(admin, ns);
    await admin.request({
      method: "POST",
      path: `/api/v1/namespaces/${ns}/configmaps`,
      body: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: `legacy-${ns}` } },
    });
    await createSyncConfig(admin, cfgNs, "templated", {
      namespaceSelector: { matchNames: [ns] },
      deleteItems: [
        { apiVersion: "v1", kind: "ConfigMap", name: "plain" },
        { apiVersion: "v1", kind: "ConfigMap", name: "legacy-${PROJECT_NAME}" },
      ],
    });
    const warning = await eventually(
      async () => (await eventsOf(admin, cfgNs, "templated")).find((e) => e.reason === "TemplatedDeleteItems"),
      20_000,
      "the TemplatedDeleteItems event",
    );
    assert.equal(warning.type, "Warning");
    assert.match(warning.message, /\.spec\.deleteItems\[1\] \(ConfigMap legacy-\$\{PROJECT_NAME\}\)/);
    assert.doesNotMatch(warning.message, /deleteItems\[0\]/, "only the templated one is named");
    // Passes go on (every 500 ms), the warning is not repeated by them.
    const passes = await counterValue(ctl.metrics, "espejo_syncs_total", { trigger: "interval" });
    await eventually(
      async () => (await counterValue(ctl.metrics, "espejo_syncs_total", { trigger: "interval" })) >= passes + 3,
      20_000,
      "three more passes",
    );
    const events = (await eventsOf(admin, cfgNs, "templated")).filter((e) => e.reason === "TemplatedDeleteItems");
    assert.equal(
      events.length,
      1,
      `one warning: ${JSON.stringify(events.map((e) => [e.metadata.name, e.metadata.creationTimestamp]))}`,
    );
    assert.ok(events.every((e) => (e.count ?? 1) === 1), "nor a repeated one");
  } finally {
    await ctl.stop();
    admin.close();
  }
});

Deno.test(
  "A deleteItem with ${PROJECT_NAME} of a SyncConfig that exists before the controller starts is warned about once",
  opts,
  async () => {
    const c = await testCluster();
    const admin = clientFor(c);
    const cfgNs = uniqueName("cfg");
    const ns = uniqueName("tmpl");
    try {
      // Everything exists before the controller starts: the SyncConfig comes in its first list.
      await createNamespace(admin, cfgNs);
      await createNamespace(admin, ns);
      await admin.request({
        method: "POST",
        path: `/api/v1/namespaces/${ns}/configmaps`,
        body: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: `legacy-${ns}` } },
      });
      await createSyncConfig(admin, cfgNs, "templated-early", {
        namespaceSelector: { matchNames: [ns] },
        deleteItems: [
          { apiVersion: "v1", kind: "ConfigMap", name: "plain" },
          { apiVersion: "v1", kind: "ConfigMap", name: "legacy-${PROJECT_NAME}" },
        ],
      });
      await withLogRecords(async (records) => {
        // Its own WATCH_NAMESPACE: the controller sees no SyncConfig of the tests running beside this one.
        const ctl = await startController(c, { watchNamespace: cfgNs, reconcileIntervalMs: 500 });
        try {
          const warning = await eventually(
            async () =>
              (await eventsOf(admin, cfgNs, "templated-early")).find((e) => e.reason === "TemplatedDeleteItems"),
            20_000,
            "the TemplatedDeleteItems event",
          );
          assert.equal(warning.type, "Warning");
          assert.match(warning.message, /\.spec\.deleteItems\[1\] \(ConfigMap legacy-\$\{PROJECT_NAME\}\)/);
          // What it warns about happened: the templated name was deleted in the namespace.
          await eventually(
            async () => (await getObject(admin, `/api/v1/namespaces/${ns}/configmaps/legacy-${ns}`)) === undefined,
            20_000,
            "the templated deleteItem deleted",
          );
          // Passes go on (every 500 ms); neither they nor the start's own work warn again.
          const passes = await counterValue(ctl.metrics, "espejo_syncs_total", { trigger: "interval" });
          await eventually(
            async () => (await counterValue(ctl.metrics, "espejo_syncs_total", { trigger: "interval" })) >= passes + 3,
            20_000,
            "three more passes",
          );
        } finally {
          await ctl.stop();
        }
        const events = (await eventsOf(admin, cfgNs, "templated-early"))
          .filter((e) => e.reason === "TemplatedDeleteItems");
        assert.equal(
          events.length,
          1,
          `one Event: ${JSON.stringify(events.map((e) => [e.metadata.name, e.metadata.creationTimestamp]))}`,
        );
        assert.equal(events[0].count ?? 1, 1, "not repeated");
        const key = `${cfgNs}/templated-early`;
        const lines = records.map(renderMessage).filter((m) => m.includes(`SyncConfig ${key}:`));
        const warned = records.filter((r) => r.level === "warning" && renderMessage(r).includes(`SyncConfig ${key}:`));
        assert.equal(warned.length, 1, `one warning in the log, of:\n${lines.join("\n")}`);
        assert.match(renderMessage(warned[0]), /\.spec\.deleteItems\[1\] \(ConfigMap legacy-\$\{PROJECT_NAME\}\)/);
        assert.equal(warned[0].properties.syncConfig, key);
      });
    } finally {
      admin.close();
    }
  },
);

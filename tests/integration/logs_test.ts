/**
 * The log as a pipeline reads it (docs/reference.md, "Logs"): a failed item is one error line whose fields say which
 * SyncConfig, namespace, item and object failed, and the API server's code and reason; at debug, every item's decision.
 */
import assert from "node:assert/strict";
import type { LogRecord } from "@logtape/logtape";
import { clientFor, eventually, testCluster, uniqueName } from "../../testenv/shared.ts";
import { renderMessage } from "../../lib/app/logging.ts";
import { createNamespace, createSyncConfig, getObject, startController } from "../../testenv/harness.ts";
import { withLogRecords } from "./log_records.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

const about = (records: LogRecord[], key: string) => records.filter((r) => r.properties.syncConfig === key);

Deno.test(
  "A failed item is logged at level error with syncConfig, namespace, item, kind, name, code, reason and error",
  opts,
  async () => {
    const c = await testCluster();
    const admin = clientFor(c);
    const cfgNs = uniqueName("cfg");
    const ns = uniqueName("logs");
    try {
      await createNamespace(admin, cfgNs);
      await createNamespace(admin, ns);
      await admin.request({
        method: "POST",
        path: `/api/v1/namespaces/${ns}/configmaps`,
        body: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "retired" } },
      });
      await withLogRecords(async (records) => {
        const ctl = await startController(c, { watchNamespace: cfgNs });
        try {
          await createSyncConfig(admin, cfgNs, "logged", {
            namespaceSelector: { matchNames: [ns] },
            syncItems: [
              { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "fine" }, data: { a: "b" } },
              // A key the API server refuses: 422 Invalid.
              { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "refused" }, data: { "no spaces": "x" } },
            ],
            deleteItems: [{ apiVersion: "v1", kind: "ConfigMap", name: "retired" }],
          });
          const key = `${cfgNs}/logged`;
          const failed = await eventually(
            () => about(records, key).find((r) => r.level === "error"),
            20_000,
            "the failure in the log",
          );
          assert.deepEqual(
            { ...failed.properties, error: undefined, message: undefined },
            {
              syncConfig: key,
              namespace: ns,
              item: ".spec.syncItems[1]",
              kind: "ConfigMap",
              name: "refused",
              code: 422,
              reason: "Invalid",
              error: undefined,
              message: undefined,
            },
          );
          assert.match(String(failed.properties.error), /no spaces/, "the error, unredacted, is a field of its own");
          assert.match(
            renderMessage(failed),
            /^SyncConfig .*: \.spec\.syncItems\[1\] \(ConfigMap refused\) in namespace/,
          );
          await eventually(() => getObject(admin, `/api/v1/namespaces/${ns}/configmaps/fine`), 20_000, "synced");

          // At debug: each item's decision, with what came of a write.
          const decisions = await eventually(
            () => {
              const d = about(records, key).filter((r) => r.level === "debug" && r.properties.decision);
              return d.length >= 3 ? d : undefined;
            },
            20_000,
            "three decisions",
          );
          const decisionOf = (item: string) =>
            String(
              decisions.find((r) => r.properties.item === item && r.properties.namespace === ns)?.properties.decision,
            );
          assert.match(decisionOf(".spec.syncItems[0]"), /^create: it does not exist: create/);
          assert.match(decisionOf(".spec.syncItems[1]"), /^create: it does not exist: failed \(SyncConfig /);
          assert.match(decisionOf(".spec.deleteItems[0]"), /^delete: it exists \(uid [0-9a-f-]+\): deleted/);
        } finally {
          await ctl.stop();
        }
      });
    } finally {
      admin.close();
    }
  },
);

/** The log's JSON lines (lib/app/logging.ts): the schema docs/reference.md documents. */
import assert from "node:assert/strict";
import type { LogRecord } from "@logtape/logtape";
import { jsonLine, renderMessage } from "../../lib/app/logging.ts";

function record(level: LogRecord["level"], template: string, properties: Record<string, unknown>): LogRecord {
  // LogTape's message: the template split at its placeholders, the values between the parts.
  const parts = template.split(/\{(\w+)\}/);
  const message = parts.map((p, i) => (i % 2 === 0 ? p : properties[p]));
  return {
    category: ["espejo", "unit"],
    level,
    message,
    rawMessage: template,
    properties,
    timestamp: Date.UTC(2026, 11, 5, 10, 0, 0),
  };
}

Deno.test("jsonLine writes time, level, logger and message, then every field at the top level", () => {
  const fields = {
    syncConfig: "espejo-system/defaults",
    namespace: "team-a",
    item: ".spec.syncItems[1]",
    kind: "ConfigMap",
    name: "refused",
    code: 422,
    reason: "Invalid",
    error: 'ConfigMap "refused" is invalid',
  };
  const line = jsonLine(record("error", "{message}", { ...fields, message: "SyncConfig espejo-system/defaults: x" }));
  assert.ok(line.endsWith("\n") && !line.slice(0, -1).includes("\n"), "one line");
  assert.deepEqual(JSON.parse(line), {
    time: "2026-12-05T10:00:00.000Z",
    level: "error",
    logger: "espejo.unit",
    message: "SyncConfig espejo-system/defaults: x",
    ...fields,
  });
});

Deno.test("jsonLine leaves out fields that are undefined and writes an Error as its message", () => {
  const line = JSON.parse(
    jsonLine(record("warning", "Failed: {error}", { error: new Error("boom"), kind: undefined })),
  );
  assert.equal(line.error, "boom");
  assert.equal(line.message, "Failed: boom");
  assert.ok(!("kind" in line));
});

Deno.test("renderMessage fills placeholders, strings without quotes and objects as JSON", () => {
  assert.equal(renderMessage(record("info", "{a} and {b}", { a: "x", b: { c: 1 } })), 'x and {"c":1}');
});

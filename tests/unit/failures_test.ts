/** Failures of one item, classified once (lib/sync/failures.ts). */
import assert from "node:assert/strict";
import { ApiError } from "../../lib/kube/errors.ts";
import { UnknownKindError } from "../../lib/kube/discovery.ts";
import { failure, isTerminal, OwnedByOther } from "../../lib/sync/failures.ts";

const CASES: [string, unknown, boolean][] = [
  ["422 Invalid", new ApiError(422, "Invalid", "spec.ports[0].port: Invalid value: 99999"), true],
  ["403 Forbidden", new ApiError(403, "Forbidden", "no"), true],
  ["404 NotFound (namespace going)", new ApiError(404, "NotFound", "gone"), true],
  ["400 BadRequest", new ApiError(400, "BadRequest", "bad"), true],
  ["an unknown kind", new UnknownKindError("kind NoSuchKind is not served"), true],
  ["another SyncConfig's object", new OwnedByOther("x/y"), true],
  ["409 Conflict", new ApiError(409, "Conflict", "stale"), false],
  ["429 TooManyRequests", new ApiError(429, "TooManyRequests", "slow down"), false],
  ["500 InternalError", new ApiError(500, "InternalError", "etcd"), false],
  ["503 ServiceUnavailable", new ApiError(503, "ServiceUnavailable", "webhook"), false],
  ["a timeout", new DOMException("no reply within 30000 ms", "TimeoutError"), false],
  ["a network error", new TypeError("connection reset"), false],
];

for (const [name, error, terminal] of CASES) {
  Deno.test(`isTerminal: ${name} is ${terminal ? "terminal" : "retriable"}`, () => {
    assert.equal(isTerminal(error), terminal);
  });
}

Deno.test("failure names the item and redacts quoted values in the message, not in the detail", () => {
  const site = { syncConfig: "a/b", namespace: "n", item: ".spec.syncItems[0]", kind: "Service", name: "s" };
  const result = failure(site)(
    new ApiError(422, "Invalid", 'Service "s" is invalid: spec.ports[0].port: Invalid value: 99999: must be ...'),
  );
  assert.equal(result.state, "failed");
  if (result.state !== "failed") return;
  assert.equal(result.terminal, true);
  assert.match(result.message, /^SyncConfig a\/b: \.spec\.syncItems\[0\] \(Service s\) in namespace n: the API server/);
  assert.doesNotMatch(result.message, /99999/);
  assert.match(result.detail ?? "", /99999/);
});

Deno.test("failure gives the log the item, the object, the API server's code and reason, and the error unredacted", () => {
  const site = { syncConfig: "a/b", namespace: "n", item: ".spec.syncItems[0]", kind: "Service", name: "s" };
  const result = failure(site)(new ApiError(403, "Forbidden", 'services "s" is forbidden: User "x" cannot update'));
  assert.deepEqual(result.fields, {
    item: ".spec.syncItems[0]",
    kind: "Service",
    name: "s",
    code: 403,
    reason: "Forbidden",
    error: result.fields?.error,
  });
  assert.match(result.fields?.error ?? "", /services "s" is forbidden/);
});

Deno.test("failure of something that is no API error has no code or reason", () => {
  const site = { syncConfig: "a/b", namespace: "n", item: ".spec.deleteItems[1]", kind: "Secret", name: "t" };
  const { fields } = failure(site)(new TypeError("connection reset"));
  assert.equal(fields?.code, undefined);
  assert.equal(fields?.reason, undefined);
  assert.match(fields?.error ?? "", /connection reset/);
});

Deno.test("failure for a missing right says how to grant it, in the status and in the log", () => {
  const site = { syncConfig: "a/b", namespace: "n", item: ".spec.syncItems[1]", kind: "Secret", name: "creds" };
  const result = failure(site)(
    new Error(
      "cannot list and watch secrets: the API server refused it (403 Forbidden: secrets is forbidden: User " +
        '"system:serviceaccount:espejo-system:espejo" cannot list resource "secrets" in API group "" at the cluster scope)',
    ),
  );
  if (result.state !== "failed") return assert.fail("a failure");
  for (const text of [result.message, result.detail, result.fields?.error]) {
    assert.match(
      text ?? "",
      /cannot list resource "secrets" .*; espejo gets secrets only on request: kubectl apply -k/,
    );
  }
});

Deno.test("failure of a write sent as a SyncConfig's ServiceAccount names it in the log fields, status and hint", () => {
  const site = {
    syncConfig: "team/cfg",
    namespace: "team-3",
    item: ".spec.syncItems[0]",
    kind: "ConfigMap",
    name: "c",
    serviceAccount: "team/writer",
  };
  const result = failure(site)(
    new ApiError(
      403,
      "Forbidden",
      'configmaps is forbidden: User "system:serviceaccount:team:writer" cannot create resource "configmaps" in ' +
        'API group "" in the namespace "team-3"',
    ),
  );
  assert.equal(result.fields?.serviceAccount, "team/writer");
  assert.equal(result.terminal, true, "a missing right waits for a change");
  for (const text of [result.message, result.fields?.error]) {
    assert.match(
      text ?? "",
      /User "system:serviceaccount:team:writer" cannot create resource "configmaps" .*; the SyncConfig writes as ServiceAccount team\/writer: grant it with a RoleBinding in namespace team-3/,
    );
  }
});

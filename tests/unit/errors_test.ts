import assert from "node:assert/strict";
import fc from "fast-check";
import {
  ApiError,
  apiErrorFrom,
  isAlreadyExists,
  isConflict,
  isForbidden,
  isGone,
  isInvalid,
  isNotFound,
  isRetriable,
} from "../../lib/kube/errors.ts";

const status = (o: Record<string, unknown>) =>
  JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", ...o });

Deno.test("apiErrorFrom decodes a v1.Status into code, reason and message", () => {
  const e = apiErrorFrom(
    404,
    status({ reason: "NotFound", message: 'configmaps "cm" not found', code: 404, details: { name: "cm" } }),
    null,
  );
  assert.ok(e instanceof ApiError);
  assert.ok(e instanceof Error);
  assert.equal(e.name, "ApiError");
  assert.equal(e.code, 404);
  assert.equal(e.reason, "NotFound");
  assert.equal(e.message, 'configmaps "cm" not found');
  assert.equal(e.retryAfterSeconds, undefined);
});

const BODIES: [name: string, code: number, body: string, reason: string, message: string][] = [
  ["plain text", 502, "Bad Gateway\n", "Unknown", "Bad Gateway"],
  ["an empty body", 503, "", "Unknown", "HTTP 503"],
  ["whitespace only", 500, "  \n", "Unknown", "HTTP 500"],
  ["JSON that is not a Status", 400, '{"kind":"Pod"}', "Unknown", '{"kind":"Pod"}'],
  ["JSON null", 500, "null", "Unknown", "null"],
  ["a JSON string", 500, '"oops"', "Unknown", '"oops"'],
  ["a Status without reason or message", 500, status({}), "Unknown", status({})],
  ["a Status with an empty reason", 409, status({ reason: "", message: "m" }), "Unknown", "m"],
  ["a Status with a non-string reason", 409, status({ reason: 7, message: "m" }), "Unknown", "m"],
  ["a Status with only a reason", 422, status({ reason: "Invalid" }), "Invalid", status({ reason: "Invalid" })],
  ["truncated JSON", 500, '{"kind":"Status","rea', "Unknown", '{"kind":"Status","rea'],
];

for (const [name, code, body, reason, message] of BODIES) {
  Deno.test(`apiErrorFrom decodes ${name}`, () => {
    const e = apiErrorFrom(code, body, null);
    assert.equal(e.code, code);
    assert.equal(e.reason, reason);
    assert.equal(e.message, message);
  });
}

Deno.test("apiErrorFrom keeps at most 500 characters of a body that is not a Status", () => {
  const e = apiErrorFrom(500, `  ${"x".repeat(2000)}`, null);
  assert.equal(e.message, "x".repeat(500));
});

const RETRY: [name: string, header: string | null, body: string, want: number | undefined][] = [
  ["a Retry-After header", "5", "", 5],
  ["a Retry-After of 0", "0", "", 0],
  ["details.retryAfterSeconds", null, status({ reason: "TooManyRequests", details: { retryAfterSeconds: 3 } }), 3],
  ["the header over details", "7", status({ reason: "TooManyRequests", details: { retryAfterSeconds: 3 } }), 7],
  ["neither", null, status({ reason: "TooManyRequests" }), undefined],
  ["an empty header", "", "", undefined],
  ["a non-numeric header", "soon", "", undefined],
  ["a non-numeric retryAfterSeconds", null, status({ details: { retryAfterSeconds: "3" } }), undefined],
];

for (const [name, header, body, want] of RETRY) {
  Deno.test(`apiErrorFrom reads retryAfterSeconds from ${name}`, () => {
    assert.equal(apiErrorFrom(429, body, header).retryAfterSeconds, want);
  });
}

Deno.test({
  name: "apiErrorFrom falls back to details.retryAfterSeconds when Retry-After is an HTTP date",
  fn() {
    const e = apiErrorFrom(
      429,
      status({ reason: "TooManyRequests", details: { retryAfterSeconds: 3 } }),
      "Wed, 21 Oct 2015 07:28:00 GMT",
    );
    assert.equal(e.retryAfterSeconds, 3);
  },
});

const RETRIABLE: [name: string, error: unknown, want: boolean][] = [
  ["409 Conflict", new ApiError(409, "Conflict", "m"), true],
  ["409 AlreadyExists", new ApiError(409, "AlreadyExists", "m"), true],
  ["429 TooManyRequests", new ApiError(429, "TooManyRequests", "m"), true],
  ["500 InternalError", new ApiError(500, "InternalError", "m"), true],
  ["503 ServiceUnavailable", new ApiError(503, "ServiceUnavailable", "m"), true],
  ["504 Timeout", new ApiError(504, "Timeout", "m"), true],
  ["400 BadRequest", new ApiError(400, "BadRequest", "m"), false],
  ["401 Unauthorized", new ApiError(401, "Unauthorized", "m"), false],
  ["403 Forbidden", new ApiError(403, "Forbidden", "m"), false],
  ["404 NotFound", new ApiError(404, "NotFound", "m"), false],
  ["405 MethodNotAllowed", new ApiError(405, "MethodNotAllowed", "m"), false],
  ["422 Invalid", new ApiError(422, "Invalid", "m"), false],
  ["a network error (TypeError from fetch)", new TypeError("error sending request"), true],
  ["a connection error", new Deno.errors.ConnectionRefused("refused"), true],
  ["an AbortError", new DOMException("aborted", "AbortError"), false],
  ["another DOMException", new DOMException("timed out", "TimeoutError"), true],
];

for (const [name, error, want] of RETRIABLE) {
  Deno.test(`isRetriable of ${name} is ${want}`, () => {
    assert.equal(isRetriable(error), want);
  });
}

Deno.test("isRetriable of any ApiError is true exactly for 409, 429 and 5xx", () => {
  fc.assert(
    fc.property(fc.integer({ min: 400, max: 599 }), fc.string(), (code, reason) => {
      assert.equal(isRetriable(new ApiError(code, reason, "m")), code === 409 || code === 429 || code >= 500);
    }),
  );
});

Deno.test("isRetriable of an aborted AbortSignal reason is false", () => {
  const c = new AbortController();
  c.abort();
  assert.equal(isRetriable(c.signal.reason), false);
});

const PREDICATES: [name: string, fn: (e: unknown) => boolean, code: number, reason: string][] = [
  ["isNotFound", isNotFound, 404, "NotFound"],
  ["isAlreadyExists", isAlreadyExists, 409, "AlreadyExists"],
  ["isConflict", isConflict, 409, "Conflict"],
  ["isInvalid", isInvalid, 422, "Invalid"],
  ["isGone", isGone, 410, "Gone"],
  ["isForbidden", isForbidden, 403, "Forbidden"],
];

for (const [name, fn, code, reason] of PREDICATES) {
  Deno.test(`${name} matches exactly a decoded ${code} ${reason}`, () => {
    assert.equal(fn(apiErrorFrom(code, status({ reason, message: "m", code }), null)), true);
    for (const [, , otherCode, otherReason] of PREDICATES) {
      if (otherCode === code && otherReason === reason) continue;
      assert.equal(fn(new ApiError(otherCode, otherReason, "m")), false, `${otherCode} ${otherReason}`);
    }
    assert.equal(fn(new Error(`${code} ${reason}`)), false, "only ApiErrors are classified");
    assert.equal(fn(undefined), false);
  });
}

Deno.test("isImmutableField: the API server's 422 bodies for immutable fields and roleRef, not other refusals", async () => {
  const { isImmutableField } = await import("../../lib/kube/errors.ts");
  const status = (message: string, causes: { reason: string; message: string; field: string }[]) =>
    JSON.stringify({ kind: "Status", status: "Failure", message, reason: "Invalid", details: { causes }, code: 422 });
  // Copied from kube-apiserver replies (tests/integration/tenant_restore_test.ts makes them for real).
  const configMap = status(
    'ConfigMap "a" is invalid: [immutable: Forbidden: field is immutable when `immutable` is set]',
    [
      {
        reason: "FieldValueForbidden",
        message: "Forbidden: field is immutable when `immutable` is set",
        field: "data",
      },
    ],
  );
  const secretType = status(
    'Secret "s" is invalid: type: Invalid value: "kubernetes.io/basic-auth": field is immutable',
    [
      {
        reason: "FieldValueInvalid",
        message: 'Invalid value: "kubernetes.io/basic-auth": field is immutable',
        field: "type",
      },
    ],
  );
  const roleRef = status(
    'RoleBinding.rbac.authorization.k8s.io "rb" is invalid: roleRef: Invalid value: {}: cannot change roleRef',
    [
      { reason: "FieldValueInvalid", message: "Invalid value: {}: cannot change roleRef", field: "roleRef" },
    ],
  );
  const invalid = status('ConfigMap "a" is invalid: metadata.name: Invalid value', [
    {
      reason: "FieldValueInvalid",
      message: 'Invalid value: "A": a lowercase RFC 1123 subdomain',
      field: "metadata.name",
    },
  ]);
  for (const body of [configMap, secretType, roleRef]) {
    assert.equal(isImmutableField(apiErrorFrom(422, body, null)), true, body);
  }
  assert.equal(isImmutableField(apiErrorFrom(422, invalid, null)), false);
  assert.equal(isImmutableField(apiErrorFrom(409, roleRef, null)), false, "only a 422");
  assert.equal(apiErrorFrom(422, roleRef, null).causes[0].field, "roleRef");
});

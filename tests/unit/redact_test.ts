import assert from "node:assert/strict";
import fc from "fast-check";
import { encodeBase64, type KubeObject } from "../../lib/kube/objects.ts";
import {
  holdsSecret,
  isSecretPath,
  isSecretResource,
  REDACTED,
  redactValues,
  scrubSecretValues,
} from "../../lib/model/redact.ts";

const R = REDACTED;

/** Messages in the shapes kube-apiserver sends (field.Error, NewInvalid, decoders), and what may be shown of them. */
const CASES: [name: string, message: string, want: string][] = [
  [
    "a ConfigMap key",
    `ConfigMap "app" is invalid: data[pass word]: Invalid value: "pass word": a valid config key must consist of ` +
    `alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for ` +
    `validation is '[-._a-zA-Z0-9]+')`,
    `ConfigMap "app" is invalid: data[pass word]: Invalid value: ${R}: a valid config key must consist of ` +
    `alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for ` +
    `validation is '[-._a-zA-Z0-9]+')`,
  ],
  [
    "a number",
    `Service "web" is invalid: spec.ports[0].port: Invalid value: 99999: must be between 1 and 65535, inclusive`,
    `Service "web" is invalid: spec.ports[0].port: Invalid value: ${R}: must be between 1 and 65535, inclusive`,
  ],
  [
    "an unsupported value, keeping the supported ones",
    `Service "web" is invalid: spec.ports[0].protocol: Unsupported value: "Foo": supported values: "SCTP", "TCP", "UDP"`,
    `Service "web" is invalid: spec.ports[0].protocol: Unsupported value: ${R}: supported values: "SCTP", "TCP", "UDP"`,
  ],
  [
    "escaped quotes inside the value",
    `Secret "s" is invalid: metadata.labels: Invalid value: "a \\"quoted\\" value": a valid label must be an empty ` +
    `string or consist of alphanumeric characters`,
    `Secret "s" is invalid: metadata.labels: Invalid value: ${R}: a valid label must be an empty string or consist ` +
    `of alphanumeric characters`,
  ],
  [
    "several errors in one aggregate",
    `[a: Invalid value: "x": y, b: Invalid value: "z": w]`,
    `[a: Invalid value: ${R}: y, b: Invalid value: ${R}: w]`,
  ],
  [
    "an aggregate of numbers, duplicates and a value without detail at the end",
    `Service "web" is invalid: [spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive, ` +
    `spec.ports[1].name: Duplicate value: "http", spec.clusterIP: Invalid value: 10]`,
    `Service "web" is invalid: [spec.ports[0].port: Invalid value: ${R}: must be between 1 and 65535, inclusive, ` +
    `spec.ports[1].name: Duplicate value: ${R}, spec.clusterIP: Invalid value: ${R}]`,
  ],
  [
    "a Go map printed with %#v",
    `Widget.example.com "w" is invalid: spec.settings: Invalid value: map[string]interface {}{"password":"hunter2", ` +
    `"user":"admin"}: spec.settings in body must be of type string: "object"`,
    `Widget.example.com "w" is invalid: spec.settings: Invalid value: ${R}: spec.settings in body must be of type ` +
    `string: "object"`,
  ],
  [
    "a Go slice printed with %#v, nested in an aggregate",
    `[spec.hosts: Invalid value: []interface {}{"a.example.com", map[string]interface {}{"b":"c"}}: must be a ` +
    `string, spec.port: Required value]`,
    `[spec.hosts: Invalid value: ${R}: must be a string, spec.port: Required value]`,
  ],
  [
    "a Go struct printed with %#v",
    `spec.secretRef: Invalid value: core.SecretReference{Name:"db", Namespace:"other, ns"}: must be in the same namespace`,
    `spec.secretRef: Invalid value: ${R}: must be in the same namespace`,
  ],
  [
    "a JSON object",
    `Widget.example.com "w" is invalid: spec.config: Invalid value: {"token":"abc: def","n":[1,2]}: must be a string`,
    `Widget.example.com "w" is invalid: spec.config: Invalid value: ${R}: must be a string`,
  ],
  [
    "a type name from CRD schema validation",
    `Widget.example.com "w" is invalid: spec.size: Invalid value: "object": spec.size in body must be of type ` +
    `integer: "object"`,
    `Widget.example.com "w" is invalid: spec.size: Invalid value: ${R}: spec.size in body must be of type integer: ` +
    `"object"`,
  ],
  [
    "a value that looks like more errors",
    `data[k]: Invalid value: "x\\": Invalid value: \\"y, z]": bad, data[j]: Required value`,
    `data[k]: Invalid value: ${R}: bad, data[j]: Required value`,
  ],
  [
    "a message cut off inside the value",
    `ConfigMap "app" is invalid: data[k]: Invalid value: "secr`,
    `ConfigMap "app" is invalid: data[k]: Invalid value: ${R}`,
  ],
  [
    "Not found",
    `Pod "p" is invalid: spec.volumes[0].secret.secretName: Not found: "db-credentials"`,
    `Pod "p" is invalid: spec.volumes[0].secret.secretName: Not found: ${R}`,
  ],
  [
    "Too short",
    `Widget.example.com "w" is invalid: spec.pin: Too short: "12": must be at least 4 characters`,
    `Widget.example.com "w" is invalid: spec.pin: Too short: ${R}: must be at least 4 characters`,
  ],
  [
    "Go's escapes of control characters and non-ASCII",
    `metadata.name: Invalid value: "\\x00\\t\\u00e9\\\\": a lowercase RFC 1123 subdomain must consist of ...`,
    `metadata.name: Invalid value: ${R}: a lowercase RFC 1123 subdomain must consist of ...`,
  ],
  [
    "a duration that does not parse",
    `Widget in version "v1" cannot be handled as a Widget: time: invalid duration "forever"`,
    `Widget in version "v1" cannot be handled as a Widget: time: invalid duration ${R}`,
  ],
  [
    "a number that does not parse",
    `Widget in version "v1" cannot be handled as a Widget: strconv.ParseInt: parsing "12ab": invalid syntax`,
    `Widget in version "v1" cannot be handled as a Widget: strconv.ParseInt: parsing ${R}: invalid syntax`,
  ],
  [
    "encoding/json's ,string error",
    `json: invalid use of ,string struct tag, trying to unmarshal "abc" into int64`,
    `json: invalid use of ,string struct tag, trying to unmarshal ${R} into int64`,
  ],
  [
    "json-iterator's body excerpts",
    `ConfigMap in version "v1" cannot be handled as a ConfigMap: v1.ConfigMap.Data: ReadString: expects " or n, but ` +
    `found 1, error found in #10 byte of ...|"pass":1}}|..., bigger context ...|{"data":{"pass":1}},"kind":"ConfigMap"|...`,
    `ConfigMap in version "v1" cannot be handled as a ConfigMap: v1.ConfigMap.Data: ReadString: expects " or n, but ` +
    `found 1, error found in #10 byte of ...|${R}|...`,
  ],
];

/** Messages that quote no value (or only names and types): unchanged. */
const UNCHANGED = [
  `Deployment.apps "d" is invalid: spec.template.spec.containers[0].image: Required value`,
  `Pod "p" is invalid: spec: Forbidden: pod updates may not change fields other than spec.containers[*].image`,
  `metadata.annotations: Too long: may not be more than 262144 bytes`,
  `spec.items: Too many: 5: must have at most 3 items`,
  `Widget in version "v1" cannot be handled as a Widget: json: cannot unmarshal number into Go struct field ` +
  `WidgetSpec.spec.name of type string`,
  `strict decoding error: unknown field "spec.foo", unknown field "spec.bar"`,
  `configmaps "cm" not found`,
  `configmaps "cm" is forbidden: User "system:serviceaccount:espejo-system:espejo" cannot create resource ` +
  `"configmaps" in API group "" in the namespace "team-a"`,
  `admission webhook "validate.example.com" denied the request: no`,
  `Operation cannot be fulfilled on configmaps "cm": the object has been modified; please apply your changes to the ` +
  `latest version and try again`,
  `a parsing error without a quote, not found: x, invalid value: y`,
  "",
];

for (const [name, message, want] of CASES) {
  Deno.test(`redactValues removes ${name}`, () => assert.equal(redactValues(message), want));
}

for (const message of UNCHANGED) {
  Deno.test(`redactValues leaves ${JSON.stringify(message.slice(0, 60))} unchanged`, () => {
    assert.equal(redactValues(message), message);
  });
}

Deno.test("redactValues removes any JSON-quoted string after Invalid value", () => {
  const expected = `f: Invalid value: ${R}: reason`;
  fc.assert(fc.property(fc.string({ unit: "binary" }), (v) => {
    assert.equal(redactValues(`f: Invalid value: ${JSON.stringify(v)}: reason`), expected);
  }));
  // So the value is gone, unless it is part of what is kept (v = "reason", v = "[redacted]", ...).
  const value = fc.string({ unit: "binary", minLength: 4 }).filter((v) => !expected.includes(v));
  fc.assert(fc.property(value, (v) => {
    assert.ok(!redactValues(`f: Invalid value: ${JSON.stringify(v)}: reason`).includes(v));
  }));
});

const GO_ESCAPES: Record<string, string> = {
  "\x07": "\\a",
  "\b": "\\b",
  "\f": "\\f",
  "\n": "\\n",
  "\r": "\\r",
  "\t": "\\t",
  "\v": "\\v",
  '"': '\\"',
  "\\": "\\\\",
};

/** Go's `%q` (strconv.Quote), close enough: the escapes differ from JSON's, the backslash rule does not. */
function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (GO_ESCAPES[ch]) out += GO_ESCAPES[ch];
    else if (cp < 0x20 || cp === 0x7f) out += `\\x${cp.toString(16).padStart(2, "0")}`;
    else if (cp >= 0xd800 && cp <= 0xdfff) out += "\\ufffd";
    else out += ch;
  }
  return out + '"';
}

const anyString = fc.string({ unit: "binary" });
/** A bad value as field.Error prints it. */
const badValue = fc.oneof(
  anyString.map(goQuote),
  anyString.map((s) => JSON.stringify(s)),
  fc.integer().map(String),
  fc.double().map(String),
  fc.boolean().map(String),
  fc.jsonValue().map((v) => JSON.stringify(v)),
  fc.array(fc.tuple(anyString, anyString), { maxLength: 3 })
    .map((kv) => `map[string]interface {}{${kv.map(([k, v]) => `${goQuote(k)}:${goQuote(v)}`).join(", ")}}`),
  fc.array(anyString, { maxLength: 3 }).map((xs) => `[]interface {}{${xs.map(goQuote).join(", ")}}`),
);
const fieldPath = fc.stringMatching(/^[a-z]{1,8}(\.[a-z]{1,8}|\[[0-9]\])*$/);
const detail = fc.option(fc.stringMatching(/^[a-z][a-z0-9 ,'()._-]{0,30}$/), { nil: undefined });
const fieldError = fc.record({
  field: fieldPath,
  type: fc.constantFrom("Invalid value", "Unsupported value", "Duplicate value", "Not found", "Too short"),
  value: badValue,
  detail,
});

Deno.test("redactValues removes every value of an aggregate of field errors and keeps the rest", () => {
  fc.assert(fc.property(fc.array(fieldError, { minLength: 1, maxLength: 5 }), (errors) => {
    const render = (value: (e: (typeof errors)[number]) => string) => {
      const parts = errors.map((e) => `${e.field}: ${e.type}: ${value(e)}${e.detail ? `: ${e.detail}` : ""}`);
      return `Widget.example.com "w" is invalid: ${parts.length === 1 ? parts[0] : `[${parts.join(", ")}]`}`;
    };
    assert.equal(redactValues(render((e) => e.value)), render(() => R));
  }));
});

const fragment = fc.oneof(
  fc.constantFrom(
    "Invalid value: ",
    "Unsupported value: ",
    "Not found: ",
    "Duplicate value: ",
    "Too short: ",
    "parsing ",
    " byte of ...|",
    "|...",
    "invalid value: ",
    "supported values: ",
    ": ",
    ", ",
    '"',
    '\\"',
    "\\",
    "[",
    "]",
    "{",
    "}",
    "(",
    ")",
    "x",
    "a",
  ),
  fc.string({ maxLength: 3 }),
);
const messy = fc.array(fragment, { maxLength: 12 }).map((xs) => xs.join(""));

Deno.test("redactValues gives the same result when applied twice", () => {
  fc.assert(fc.property(messy, (m) => {
    const once = redactValues(m);
    assert.equal(redactValues(once), once);
  }));
});

Deno.test("redactValues leaves a message without a value marker unchanged", () => {
  const markers = [
    /(?<![A-Za-z])(Invalid value|Unsupported value|Duplicate value|Not found|Too short): /,
    /(?<![A-Za-z])(parsing|invalid duration|in duration|trying to unmarshal) "/,
    / byte of \.\.\.\|/,
  ];
  fc.assert(fc.property(messy.filter((m) => !markers.some((r) => r.test(m))), (m) => {
    assert.equal(redactValues(m), m);
  }));
});

/** The resources espejo's resolver finds for a Secret and a ConfigMap item (lib/kube/discovery.ts). */
const SECRETS = { group: "", resource: "secrets" };
const CONFIGMAPS = { group: "", resource: "configmaps" };

const secretObject = (data: Record<string, string>, annotations?: Record<string, string>): KubeObject => ({
  apiVersion: "v1",
  kind: "Secret",
  metadata: { name: "db", annotations },
  data,
});

Deno.test("scrubSecretValues removes a Secret's values, base64 and plain, from a policy's own words", () => {
  const live = secretObject({ password: encodeBase64("hunter2-old") }, {
    "kubectl.kubernetes.io/last-applied-configuration": JSON.stringify({
      apiVersion: "v1",
      kind: "Secret",
      stringData: { token: "tok-from-apply" },
    }),
  });
  const desired = secretObject({ password: encodeBase64("hunter2-new") });
  const message =
    `admission webhook "v.example.com" denied the request: hunter2-new (${encodeBase64("hunter2-new")}) ` +
    `may not replace hunter2-old, and tok-from-apply is ${encodeBase64("tok-from-apply")}`;
  assert.equal(
    scrubSecretValues(message, [desired, live], SECRETS),
    `admission webhook "v.example.com" denied the request: ${R} (${R}) may not replace ${R}, and ${R} is ${R}`,
  );
});

Deno.test("scrubSecretValues leaves the messages of other kinds unchanged, and redacts field errors of Secrets", () => {
  const cm = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" }, data: { a: "value-a" } };
  const m = `ConfigMap "c" is invalid: data[a]: Invalid value: "value-a": bad`;
  assert.equal(scrubSecretValues(m, [cm], CONFIGMAPS), m);
  assert.equal(
    scrubSecretValues(`Secret "db" is invalid: data[a b]: Invalid value: "a b": bad`, [secretObject({})], SECRETS),
    `Secret "db" is invalid: data[a b]: Invalid value: ${R}: bad`,
  );
});

Deno.test("scrubSecretValues: no value of 4 characters or more is left in any text", () => {
  // A value with a bracket, or inside the marker, could be formed again by the marker and what is around it.
  const value = fc.string({ unit: "binary", minLength: 4, maxLength: 30 })
    .filter((v) => !/[[\]]/.test(v) && !R.includes(v));
  fc.assert(fc.property(value, fc.string(), fc.string(), (v, before, after) => {
    const secret = secretObject({ k: encodeBase64(v) });
    const out = scrubSecretValues(`${before}${v}${after} ${encodeBase64(v)}`, [secret], SECRETS);
    assert.ok(!out.includes(v), out);
    assert.ok(!out.includes(encodeBase64(v)), out);
  }));
});

const SECRET_PATHS: [string[], boolean, boolean][] = [
  [[], false, true],
  [["metadata"], false, true],
  [["metadata", "annotations"], true, true],
  [["metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration"], true, true],
  [["metadata", "labels", "a"], false, false],
  [["data"], true, true],
  [["data", "password"], true, true],
  [["stringData", "password"], true, true],
  [["type"], false, false],
  [["immutable"], false, false],
];
for (const [path, secret, holds] of SECRET_PATHS) {
  Deno.test(`isSecretPath(.${path.join(".")}) is ${secret}, holdsSecret ${holds}`, () => {
    assert.equal(isSecretPath(path), secret);
    assert.equal(holdsSecret(path), holds);
  });
}

Deno.test("isSecretResource is decided by the resolved resource: the core group's secrets, or none resolved", () => {
  assert.equal(isSecretResource(SECRETS), true);
  assert.equal(isSecretResource(CONFIGMAPS), false);
  assert.equal(isSecretResource({ group: "example.com", resource: "secrets" }), false);
  assert.equal(isSecretResource(undefined), true);
});

Deno.test("scrubSecretValues keys on the resource the write goes to, not on the objects' apiVersion or kind", () => {
  const value = "hunter2-in-a-list";
  // As listed (no kind), and as an item spells the core group (`/v1`): a Secret because of where it is written.
  const listed: KubeObject = { metadata: { name: "db" }, data: { k: encodeBase64(value) } };
  const slashed: KubeObject = { ...secretObject({ k: encodeBase64(value) }), apiVersion: "/v1" };
  const message = `denied: ${value} is ${encodeBase64(value)}`;
  for (const sides of [[listed], [slashed], [slashed, listed]]) {
    assert.equal(scrubSecretValues(message, sides, SECRETS), `denied: ${R} is ${R}`);
    assert.equal(scrubSecretValues(message, sides, undefined), `denied: ${R} is ${R}`);
  }
  // A ConfigMap's values are its user's to read, whatever its objects claim to be.
  assert.equal(scrubSecretValues(message, [secretObject({ k: encodeBase64(value) })], CONFIGMAPS), message);
});

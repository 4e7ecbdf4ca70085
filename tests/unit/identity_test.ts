/** Whose rights a SyncConfig's writes use (lib/model/identity.ts): a table, and a property over any annotation. */
import assert from "node:assert/strict";
import fc from "fast-check";
import { serviceAccountNameProblem, SYNCCONFIG_EXTRA, writeIdentity } from "../../lib/model/identity.ts";
import { impersonationHeaders } from "../../lib/kube/client.ts";

const ANNOTATION = "sync.appuio.ch/service-account";
const named = (value: string) => ({ [ANNOTATION]: value });

Deno.test("writeIdentity: a ServiceAccount of the SyncConfig's own namespace, or why not", () => {
  const table: { annotations?: Record<string, string>; trusted?: string[]; want: RegExp | string | undefined }[] = [
    { want: undefined }, // no annotation, delegated mode off: espejo's own identity, as in the Go espejo
    { trusted: ["team"], want: undefined }, // a trusted namespace
    { trusted: ["espejo-system"], want: /^names no ServiceAccount to write as, and its namespace team is not trusted/ },
    { annotations: named("writer"), want: "system:serviceaccount:team:writer" },
    { annotations: named("writer"), trusted: ["espejo-system"], want: "system:serviceaccount:team:writer" },
    { annotations: named("a.b-c"), want: "system:serviceaccount:team:a.b-c" },
    { annotations: named(""), want: /"" is not the name of a ServiceAccount: it is empty/ },
    { annotations: named("other:writer"), want: /a ServiceAccount of another namespace cannot be named/ },
    { annotations: named("other/writer"), want: /a ServiceAccount of another namespace cannot be named/ },
    {
      annotations: named("system:serviceaccount:kube-system:generic-garbage-collector"),
      want: /a ServiceAccount of another namespace cannot be named/,
    },
    { annotations: named("Writer"), want: /must consist of lowercase letters/ },
    { annotations: named("x".repeat(254)), want: /longer than 253 characters/ },
  ];
  for (const { annotations, trusted, want } of table) {
    const r = writeIdentity("team", "cfg", annotations, trusted);
    const label = JSON.stringify({ annotations, trusted }).slice(0, 120);
    if (want === undefined) assert.deepEqual(r, { ok: true }, label);
    else if (typeof want === "string") {
      assert.equal(r.ok && r.writeAs?.username, want, label);
      assert.equal(r.ok && r.writeAs?.syncConfig, "team/cfg");
    } else assert.match(r.ok ? "" : r.problem, want, label);
  }
});

Deno.test("writeIdentity never names a user outside the SyncConfig's namespace, whatever the annotation says", () => {
  fc.assert(
    fc.property(fc.string({ maxLength: 80 }), fc.constantFrom("team", "a", "kube-system"), (value, namespace) => {
      const r = writeIdentity(namespace, "cfg", named(value), undefined);
      if (!r.ok) return;
      const user = r.writeAs!.username;
      assert.ok(user.startsWith(`system:serviceaccount:${namespace}:`), user);
      assert.equal(user.split(":").length, 4, user); // no further namespace or user part
      assert.equal(serviceAccountNameProblem(value), undefined);
      assert.deepEqual(r.writeAs!.as, { user, extra: { [SYNCCONFIG_EXTRA]: `${namespace}/cfg` } });
    }),
    { numRuns: 2000 },
  );
});

Deno.test("impersonationHeaders: the user, and each extra with its key percent-encoded in the header name", () => {
  const r = writeIdentity("team", "cfg", named("writer"), undefined);
  assert.deepEqual(impersonationHeaders(r.ok ? r.writeAs!.as : { user: "", extra: {} }), {
    "impersonate-user": "system:serviceaccount:team:writer",
    "impersonate-extra-sync.appuio.ch%2Fsyncconfig": "team/cfg",
  });
});

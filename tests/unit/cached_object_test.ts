import assert from "node:assert/strict";
import { extrasHash, type Verdict } from "../../lib/model/drift.ts";
import type { KubeObject, ManagedFieldsEntry } from "../../lib/kube/objects.ts";
import {
  type CachedObject,
  decodeManaged,
  MAX_KEPT_CONTENT,
  MAX_KEPT_REFERENCES,
} from "../../lib/sync/cached_object.ts";
import { acceptWritten, assess, remember } from "../../lib/sync/verdict.ts";
import { HASH_ANNOTATION, MANAGED_LABEL, OWNER_ANNOTATION } from "../../lib/model/markers.ts";

/** {@link assess}, then {@link remember}, as the executor does with an entry it owns. */
function judge(desired: KubeObject, desiredHash: string, cached: CachedObject, serverAdds?: string): Verdict {
  const { verdict, memo } = assess(desired, desiredHash, cached, serverAdds);
  remember(cached, memo);
  return verdict;
}

const HASH = "0123456789abcdef01234567";
const UID = "5f0c6c2e-0000-4000-8000-000000000000";

const desired: KubeObject = {
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: {
    name: "obj",
    namespace: "ns",
    labels: { [MANAGED_LABEL]: "espejo" },
    annotations: { [OWNER_ANNOTATION]: "espejo/cfg", [HASH_ANNOTATION]: HASH },
  },
  data: { a: "1" },
};

/** The server's copy of `desired` at `rv`, with `change` applied (a tenant's edit). */
function served(rv: string, change: (o: KubeObject & Record<string, unknown>) => void = () => {}): KubeObject {
  const o = structuredClone(desired) as KubeObject & Record<string, unknown>;
  o.metadata!.resourceVersion = rv;
  o.metadata!.uid = UID;
  o.metadata!.managedFields = [
    { manager: "espejo", operation: "Update", time: "2024-01-01T00:00:00Z" } as ManagedFieldsEntry,
  ];
  change(o);
  return o;
}

/** The cache entry after our own write produced version 1. */
function written(): CachedObject {
  const reply = served("1");
  const entry = decodeManaged(reply, undefined);
  acceptWritten(entry, reply, HASH);
  return entry;
}

Deno.test("decodeManaged keeps markers, ownerReferences and content, never managedFields", () => {
  const entry = decodeManaged(served("7", (o) => (o.metadata!.ownerReferences = [{ uid: "u" }])), undefined);
  assert.equal(entry.resourceVersion, "7");
  assert.equal(entry.uid, UID);
  assert.equal(entry.desiredHash, HASH);
  assert.equal(entry.owner, "espejo/cfg");
  assert.equal(entry.manager, "espejo");
  assert.deepEqual(JSON.parse(entry.ownerReferences!), [{ uid: "u" }]);
  assert.ok(entry.json && !entry.json.includes("managedFields"));
  assert.ok(!entry.json.includes("ownerReferences"), "kept once, apart from the content");
});

/** A tenant's ownerReferences: `n` of them, about 200 characters each (5,000 make 1 MiB). */
const tenantReferences = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    apiVersion: "v1",
    kind: "ConfigMap",
    name: `owner-${i}-${"o".repeat(100)}`,
    uid: `5f0c6c2e-0000-4000-8000-${String(i).padStart(12, "0")}`,
  }));

Deno.test("decodeManaged keeps ownerReferences up to MAX_KEPT_REFERENCES on every path, and marks the rest", () => {
  const paths: [string, boolean, boolean][] = [
    ["a write's reply or a GET", true, false],
    ["a list or watch, judged later", true, true],
    ["an object no item names", false, true],
  ];
  for (const [path, wanted, streamed] of paths) {
    for (const n of [1, 4, 5_000]) {
      const refs = tenantReferences(n);
      const entry = decodeManaged(
        served("3", (o) => (o.metadata!.ownerReferences = refs)),
        undefined,
        wanted,
        streamed,
      );
      const kept = JSON.stringify(refs).length <= MAX_KEPT_REFERENCES;
      const where = `${path}, ${n} references`;
      if (!wanted) {
        assert.equal(entry.ownerReferences, undefined, where);
        continue;
      }
      assert.equal(entry.ownerReferences !== undefined, kept, where);
      assert.equal(entry.referencesUnkept === true, !kept, where);
      // The entry costs its bound, whatever the tenant added: references (kept or not) and content are apart.
      assert.ok(
        JSON.stringify(entry).length < MAX_KEPT_REFERENCES + 2_000,
        `${where}: ${JSON.stringify(entry).length}`,
      );
    }
  }
});

Deno.test("decodeManaged: the verdict on an object does not change with its ownerReferences", () => {
  for (const n of [0, 1, 5_000]) {
    const entry = decodeManaged(served("2", (o) => (o.metadata!.ownerReferences = tenantReferences(n))), written());
    assert.deepEqual(judge(desired, HASH, entry), { inSync: true }, `${n} references`);
  }
});

Deno.test("decodeManaged keeps no content of an object no item names, whatever its size", () => {
  const junk = served("7", (o) => (o.data = { big: "x".repeat(900 * 1024) }));
  const entry = decodeManaged(junk, undefined, false);
  assert.equal(entry.json, undefined);
  assert.equal(entry.contentless, true);
  assert.ok(JSON.stringify(entry).length < 300, "identity and bounded markers only");
});

Deno.test("decodeManaged bounds markers a tenant can make huge", () => {
  const entry = decodeManaged(
    served("7", (o) => {
      o.metadata!.annotations![OWNER_ANNOTATION] = "x".repeat(100_000);
      o.metadata!.annotations![HASH_ANNOTATION] = "y".repeat(100_000);
      o.metadata!.managedFields = [{ manager: "z".repeat(100_000) }];
    }),
    undefined,
    false,
  );
  assert.ok(JSON.stringify(entry).length < 1000);
});

Deno.test("judge: our own write's reply is in sync and keeps no content", () => {
  const entry = written();
  assert.deepEqual(judge(desired, HASH, entry), { inSync: true });
  assert.equal(entry.json, undefined);
});

Deno.test("judge: a later version with the same content is in sync by its baseline", () => {
  const entry = decodeManaged(served("2", (o) => (o.metadata!.ownerReferences = [{ uid: "u" }])), written());
  assert.deepEqual(judge(desired, HASH, entry), { inSync: true });
  assert.equal(entry.json, undefined, "the verdict replaces the content");
});

const ATTACKS: [string, (o: KubeObject & Record<string, unknown>) => void][] = [
  ["a data change under espejo's field manager", (o) => (o.data = { a: "evil" })],
  ["managedFields stripped with a data change", (o) => {
    o.metadata!.managedFields = [];
    o.data = { a: "evil" };
  }],
  ["a key added with managedFields stripped", (o) => {
    delete o.metadata!.managedFields;
    o.data = { a: "1", extra: "" };
  }],
  ["a spoofed owner annotation", (o) => (o.metadata!.annotations![OWNER_ANNOTATION] = "kube-system/whatever")],
  ["a changed hash annotation", (o) => (o.metadata!.annotations![HASH_ANNOTATION] = "forged")],
  ["a finalizer added", (o) => (o.metadata!.finalizers = ["example.com/keep"])],
  ["immutable: true added", (o) => (o.immutable = true)],
];

for (const [name, attack] of ATTACKS) {
  Deno.test(`judge: ${name} after espejo's write is a restore`, () => {
    const verdict = judge(desired, HASH, decodeManaged(served("2", attack), written()));
    assert.equal(verdict.inSync, false);
    assert.equal(!verdict.inSync && verdict.restore, true);
  });
  Deno.test(`judge: ${name} after a restart's verdict by value is a restore`, () => {
    // In sync by comparison after a restart: the baseline is what the comparison proved, not a content hash.
    const proved = decodeManaged(served("5"), undefined);
    assert.deepEqual(judge(desired, HASH, proved), { inSync: true });
    const verdict = judge(desired, HASH, decodeManaged(served("6", attack), proved));
    assert.equal(verdict.inSync, false);
    assert.equal(!verdict.inSync && verdict.restore, true);
  });
  Deno.test(`judge: ${name} seen first after a restart is not in sync`, () => {
    const verdict = judge(desired, HASH, decodeManaged(served("2", attack), undefined));
    assert.equal(verdict.inSync, false);
    assert.equal(!verdict.inSync && verdict.restore, false, "no baseline: not counted as a fight");
  });
}

Deno.test("judge: after a restart an unchanged object is in sync by value and gets a baseline", () => {
  const entry = decodeManaged(served("5"), undefined);
  assert.deepEqual(judge(desired, HASH, entry), { inSync: true });
  assert.equal(entry.baseline?.desiredHash, HASH);
  const later = decodeManaged(served("6", (o) => (o.data = { a: "2" })), entry);
  assert.equal(judge(desired, HASH, later).inSync, false);
});

Deno.test("judge: a changed item is a write, not a restore", () => {
  const verdict = judge({ ...desired, data: { a: "2" } }, "newhash", written());
  assert.deepEqual(verdict, { inSync: false, reason: "the SyncConfig's item changed", restore: false });
});

Deno.test("judge: an entry kept without content is never in sync", () => {
  assert.equal(judge(desired, HASH, decodeManaged(served("5"), undefined, false)).inSync, false);
});

Deno.test("judge: an out-of-sync version keeps no content and is judged the same again", () => {
  const entry = decodeManaged(served("2", (o) => (o.data = { a: "x".repeat(100_000) })), written());
  const first = judge(desired, HASH, entry);
  assert.equal(first.inSync, false);
  assert.equal(entry.json, undefined, "the verdict replaces the content, even when a write is still to come");
  assert.ok(JSON.stringify(entry).length < 1000, "a failing write keeps no copy of a tenant's padding");
  assert.deepEqual(judge(desired, HASH, entry), first);
});

Deno.test("judge: a marker mismatch drops the content too", () => {
  const entry = decodeManaged(served("2", (o) => (o.metadata!.annotations![HASH_ANNOTATION] = "forged")), written());
  assert.equal(judge(desired, HASH, entry).inSync, false);
  assert.equal(entry.json, undefined);
});

Deno.test("judge: fields the item does not set are settled by the server's additions learnt later", () => {
  const defaulted = (o: KubeObject & Record<string, unknown>) => (o.immutable = false);
  const reply = served("9", defaulted);
  const learnt = extrasHash(desired, reply);
  // After a restart: not explained yet, and the content is gone once judged.
  const entry = decodeManaged(served("3", defaulted), undefined);
  const before = judge(desired, HASH, entry);
  assert.equal(!before.inSync && before.unexplained, true);
  assert.equal(entry.json, undefined);
  // The write of the same item elsewhere taught what the server adds: the same version is now in sync.
  assert.deepEqual(judge(desired, HASH, entry, learnt), { inSync: true });
  assert.equal(entry.baseline?.desiredHash, HASH);
  assert.equal(entry.outOfSync, undefined);
  // Other additions are not explained by it.
  const other = decodeManaged(served("4", (o) => (o.data = { a: "1", b: "tenant" })), undefined);
  const verdict = judge(desired, HASH, other, learnt);
  assert.equal(verdict.inSync, false);
  assert.equal(!verdict.inSync && verdict.unexplained, undefined, "explained as not the server's");
});

Deno.test("decodeManaged keeps no content of a large object from a list or watch, but of a reply it does", () => {
  const large = served("8", (o) => (o.data = { a: "x".repeat(MAX_KEPT_CONTENT) }));
  const streamed = decodeManaged(large, written(), true, true);
  assert.equal(streamed.json, undefined);
  assert.ok(streamed.contentless && streamed.large, "marked to be read when it is judged");
  assert.ok(JSON.stringify(streamed).length < 1000);
  assert.equal(judge(desired, HASH, streamed).inSync, false, "never in sync unread");
  const reply = decodeManaged(large, streamed, true, false);
  assert.ok(reply.json && !reply.contentless, "a reply is judged at once, with its content");
  judge(desired, HASH, reply);
  assert.equal(reply.json, undefined, "and dropped once judged");
  const small = decodeManaged(served("9"), written(), true, true);
  assert.ok(small.json && !small.large, "a small object keeps its content until judged");
});

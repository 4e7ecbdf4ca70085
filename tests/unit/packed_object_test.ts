/** A settled cache entry as one string (lib/sync/packed_object.ts): everything it says survives the round trip. */
import assert from "node:assert/strict";
import fc from "fast-check";
import { type CachedObject, decodeManaged, keepMarker, markers } from "../../lib/sync/cached_object.ts";
import { packedObjects } from "../../lib/sync/packed_object.ts";
import { AS_DESIRED, NOT_SET_BY_ITEM, WITH_EXTRAS } from "../../lib/sync/verdict.ts";

const hash = fc.string({ minLength: 1, maxLength: 64 }).filter((s) => !s.includes("\n"));
const marker = fc.option(fc.constantFrom("espejo/a", "espejo/b", "tenant/x", "espejo", "kubectl-edit"), {
  nil: undefined,
});

const settled: fc.Arbitrary<CachedObject> = fc.record({
  resourceVersion: fc.stringMatching(/^[0-9]{1,12}$/),
  uid: fc.uuid(),
  desiredHash: fc.option(hash, { nil: undefined }),
  owner: marker,
  createdBy: marker,
  manager: marker,
  baselineOwnHash: fc.boolean(),
  // A write's content hash, the desired object exactly, or it with the server's additions (lib/sync/verdict.ts).
  baseline: fc.option(
    fc.record({
      desiredHash: hash,
      content: fc.oneof(hash, fc.constant(AS_DESIRED), hash.map((h) => WITH_EXTRAS + h)),
    }),
    { nil: undefined },
  ),
  recordOwnHash: fc.boolean(),
  outOfSync: fc.option(
    fc.record({
      desiredHash: hash,
      reason: fc.oneof(
        fc.string().filter((s) => !s.includes("\n")),
        fc.constantFrom(".spec.policyTypes", "").map((path) => `${path}${NOT_SET_BY_ITEM}`),
      ),
      restore: fc.boolean(),
      extras: fc.option(fc.oneof(hash, fc.constant("")), { nil: undefined }),
    }),
    { nil: undefined },
  ),
  inSync: fc.option(fc.constant(true as const), { nil: undefined }),
  contentless: fc.option(fc.constant(true as const), { nil: undefined }),
  large: fc.option(fc.constant(true as const), { nil: undefined }),
  // As decodeManaged keeps them: JSON text (no raw newline), or a mark that there were more than it keeps.
  references: fc.option(
    fc.oneof(
      fc.array(fc.record({ kind: fc.string(), name: fc.string(), uid: fc.uuid() }), { minLength: 1, maxLength: 3 })
        .map((refs) => JSON.stringify(refs)),
      fc.constant("unkept"),
    ),
    { nil: undefined },
  ),
}).map(({ baselineOwnHash, recordOwnHash, ...o }) => {
  const out: CachedObject = {
    resourceVersion: o.resourceVersion,
    uid: o.uid,
    desiredHash: o.desiredHash,
    owner: o.owner,
    createdBy: o.createdBy,
    manager: o.manager,
  };
  if (o.baseline) {
    out.baseline = baselineOwnHash && o.desiredHash !== undefined
      ? { desiredHash: o.desiredHash, content: o.baseline.content }
      : { ...o.baseline };
  }
  if (o.contentless) out.contentless = true;
  if (o.large) out.large = true;
  if (o.references === "unkept") out.referencesUnkept = true;
  else if (o.references !== undefined) out.ownerReferences = o.references;
  if (o.inSync) out.inSync = true;
  if (o.outOfSync) {
    const { extras, ...record } = o.outOfSync;
    out.outOfSync = { ...record, ...(extras !== undefined ? { extras } : {}) };
    if (recordOwnHash && o.desiredHash !== undefined) out.outOfSync.desiredHash = o.desiredHash;
  }
  return out;
});

Deno.test("packedObjects: a settled entry unpacks to an equal one", () => {
  fc.assert(fc.property(settled, (o) => {
    const packed = packedObjects.pack(o);
    assert.ok(packed !== undefined);
    assert.deepEqual(packedObjects.unpack(packed, o.resourceVersion, o.uid), o);
  }));
});

Deno.test("packedObjects: an entry that may still change, or holds what a string cannot, stays an object", () => {
  const base: CachedObject = { resourceVersion: "1", uid: "u", desiredHash: "h", inSync: true };
  assert.equal(packedObjects.pack({ ...base, json: "{}" }), undefined, "content not judged yet");
  const outOfSync = { desiredHash: "h", reason: "field\nname differs", restore: false };
  assert.equal(packedObjects.pack({ ...base, outOfSync }), undefined, "a newline in a record's reason");
  assert.equal(packedObjects.pack({ ...base, desiredHash: "a\nb" }), undefined, "a newline in a tenant's marker");
  assert.ok(packedObjects.pack(base)!.length < 40);
});

Deno.test("packedObjects: a record of fields the server adds costs its path and hashes, not its sentence", () => {
  const o: CachedObject = {
    resourceVersion: "1",
    uid: "u",
    desiredHash: "h".repeat(22),
    owner: undefined,
    createdBy: undefined,
    manager: undefined,
    outOfSync: {
      desiredHash: "h".repeat(22),
      reason: `.spec.policyTypes${NOT_SET_BY_ITEM}`,
      restore: false,
      extras: "e".repeat(22),
    },
  };
  const packed = packedObjects.pack(o)!;
  assert.ok(packed.length < 22 * 2 + ".spec.policyTypes".length + 15, `${packed.length} characters`);
  assert.deepEqual(packedObjects.unpack(packed, "1", "u"), o);
});

Deno.test("packedObjects: tenants' markers neither fill the intern table nor stop packing", () => {
  const before = markers.size;
  const raw = (i: number) => ({
    metadata: {
      name: `cm-${i}`,
      namespace: "tenant",
      uid: `u-${i}`,
      resourceVersion: `${i}`,
      annotations: { "sync.appuio.ch/owner": `tenant/o${i}`, "sync.appuio.ch/created-by": `tenant/c${i}` },
      managedFields: [{ manager: `m${i}\nline`, operation: "Apply", time: "2026-01-01T00:00:00Z" }],
    },
  });
  for (let i = 0; i < 12_000; i++) {
    const entry = decodeManaged(raw(i), undefined, false, true);
    if (i % 1000 !== 999) continue;
    const packed = packedObjects.pack(entry);
    assert.ok(packed !== undefined, `object ${i} is packed`);
    assert.deepEqual(packedObjects.unpack(packed, entry.resourceVersion, entry.uid), entry);
  }
  assert.equal(markers.size, before, "no tenant value was interned");
  keepMarker("espejo/new-config");
  const ours = decodeManaged(
    { ...raw(0), metadata: { ...raw(0).metadata, annotations: { "sync.appuio.ch/owner": "espejo/new-config" } } },
    undefined,
    false,
  );
  assert.ok(packedObjects.pack(ours)!.length < 40, "a SyncConfig's key is written by number");
});

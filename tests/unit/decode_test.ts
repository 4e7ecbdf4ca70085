/** Decoders at the edge (lib/kube/api/decode.ts, lib/controller/syncconfig_api.ts): checked once, typed after. */
import assert from "node:assert/strict";
import { decodeLease, decodeNamespace, decodeObjectMeta } from "../../lib/kube/api/decode.ts";
import { decodeSyncConfig } from "../../lib/sync/syncconfig_api.ts";

const metaCases: [string, unknown, boolean][] = [
  ["absent metadata is empty", undefined, true],
  ["the usual fields", { name: "a", namespace: "b", uid: "u", resourceVersion: "1", generation: 3 }, true],
  ["labels and annotations of strings", { name: "a", labels: { x: "1" }, annotations: { y: "" } }, true],
  ["a name that is a number", { name: 1 }, false],
  ["a uid that is an object", { name: "a", uid: {} }, false],
  ["a generation that is a string", { name: "a", generation: "3" }, false],
  ["a generation that is a fraction", { name: "a", generation: 1.5 }, false],
  ["a label value that is a number", { name: "a", labels: { x: 1 } }, false],
  ["annotations that are a list", { name: "a", annotations: ["x"] }, false],
  ["metadata that is a string", "a", false],
];
for (const [name, raw, ok] of metaCases) {
  Deno.test(`decodeObjectMeta: ${name}`, () => {
    assert.equal(decodeObjectMeta(raw) !== undefined, ok);
  });
}

Deno.test("decodeObjectMeta: managedFields are dropped, other fields kept", () => {
  const meta = decodeObjectMeta({ name: "a", managedFields: [{ manager: "m" }], finalizers: ["f"] });
  assert.deepEqual(meta, { name: "a", finalizers: ["f"] });
});

Deno.test("decodeNamespace: name, labels and phase are always there", () => {
  const ns = decodeNamespace({ metadata: { name: "team-a" } });
  assert.deepEqual(ns?.metadata, { name: "team-a", labels: {} });
  assert.equal(ns?.status.phase, "Active"); // a brand-new namespace has no phase yet
  assert.equal(
    decodeNamespace({ metadata: { name: "t" }, status: { phase: "Terminating" } })?.status.phase,
    "Terminating",
  );
  // A phase this client's schema does not know is kept, not refused.
  assert.equal(decodeNamespace({ metadata: { name: "t" }, status: { phase: "Archived" } })?.status.phase, "Archived");
});

const badNamespaces: [string, unknown][] = [
  ["no name", { metadata: {} }],
  ["a phase that is a number", { metadata: { name: "t" }, status: { phase: 1 } }],
  ["a status that is a string", { metadata: { name: "t" }, status: "Active" }],
  ["labels of numbers", { metadata: { name: "t", labels: { a: 1 } } }],
  ["not an object", []],
];
for (const [name, raw] of badNamespaces) {
  Deno.test(`decodeNamespace: refuses ${name}`, () => assert.equal(decodeNamespace(raw), undefined));
}

Deno.test("decodeSyncConfig: metadata checked, spec left to the compiler", () => {
  const sc = decodeSyncConfig({ metadata: { name: "c", namespace: "e", generation: 2 }, spec: { bogus: 1 } });
  assert.equal(sc?.metadata?.generation, 2);
  assert.deepEqual(sc?.spec, { bogus: 1 });
  assert.equal(decodeSyncConfig({ metadata: { name: "c", generation: "2" } }), undefined);
  assert.equal(decodeSyncConfig({ metadata: {} }), undefined);
});

Deno.test("decodeLease: spec fields the elector reads are checked", () => {
  const lease = decodeLease({ metadata: { name: "l" }, spec: { holderIdentity: "me", leaseDurationSeconds: 15 } });
  assert.equal(lease?.spec.holderIdentity, "me");
  assert.deepEqual(decodeLease({ metadata: { name: "l" } })?.spec, {});
  assert.equal(decodeLease({ metadata: { name: "l" }, spec: { holderIdentity: 7 } }), undefined);
  assert.equal(decodeLease({ metadata: { name: "l" }, spec: { leaseDurationSeconds: "15" } }), undefined);
  assert.equal(decodeLease({ metadata: { name: "l" }, spec: { leaseTransitions: 0.5 } }), undefined);
});

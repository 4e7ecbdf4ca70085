/** A uid in 19 characters (lib/kube/compact_uid.ts): reads back exactly, and holds no separator. */
import assert from "node:assert/strict";
import fc from "fast-check";
import { compactUid, fullUid } from "../../lib/kube/compact_uid.ts";

Deno.test("compactUid: a UUID reads back exactly from 19 characters in U+0080..U+00FF", () => {
  fc.assert(fc.property(fc.uuid(), (uid) => {
    const stored = compactUid(uid);
    assert.equal(stored.length, 19);
    for (const c of stored) assert.ok(c.charCodeAt(0) >= 0x80 && c.charCodeAt(0) <= 0xff);
    assert.equal(fullUid(stored), uid);
  }));
  for (const uid of ["00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff"]) {
    assert.equal(fullUid(compactUid(uid)), uid);
  }
});

Deno.test("compactUid: any other uid is kept as it is", () => {
  for (const uid of ["", "u-a", "A31010C1-18F1-4913-A701-C73ECF41C2D6", "a31010c1-18f1-4913-a701-c73ecf41c2d"]) {
    assert.equal(compactUid(uid), uid);
    assert.equal(fullUid(uid), uid);
  }
  fc.assert(fc.property(fc.string(), (uid) => {
    // Either it reads back, or the store sees that it does not and keeps the entry unpacked.
    const stored = compactUid(uid);
    assert.ok(stored === uid || fullUid(stored) === uid);
  }));
});

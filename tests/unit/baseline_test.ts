/**
 * A baseline that a comparison by value proved (the desired object exactly, or it with the server's additions:
 * lib/sync/verdict.ts) must decide a later version of the object as the content hash of the version it stands for
 * would: in sync exactly when the content is the same, a restore otherwise.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { contentHash, extrasHash, type Verdict } from "../../lib/model/drift.ts";
import type { KubeObject } from "../../lib/kube/objects.ts";
import { type CachedObject, decodeManaged } from "../../lib/sync/cached_object.ts";
import { AS_DESIRED, assess, remember, WITH_EXTRAS } from "../../lib/sync/verdict.ts";
import { HASH_ANNOTATION, MANAGED_LABEL, OWNER_ANNOTATION } from "../../lib/model/markers.ts";

const HASH = "0123456789abcdef01234567";
const UID = "5f0c6c2e-0000-4000-8000-000000000000";

function judge(desired: KubeObject, cached: CachedObject, serverAdds?: string): Verdict {
  const { verdict, memo } = assess(desired, HASH, cached, serverAdds);
  remember(cached, memo);
  return verdict;
}

type Edit = (o: KubeObject & Record<string, unknown>) => void;
const data = (o: KubeObject & Record<string, unknown>) => (o.data ??= {}) as Record<string, unknown>;
const spec = (o: KubeObject & Record<string, unknown>) => (o.spec ??= {}) as Record<string, unknown>;

/** Edits a tenant, the server's defaults or the server's own bookkeeping may make. */
const edit: fc.Arbitrary<Edit> = fc.oneof(
  fc.tuple(fc.constantFrom("a", "b", "z"), fc.constantFrom("", "1", "2")).map(([k, v]): Edit => (o) => {
    data(o)[k] = v;
  }),
  fc.constantFrom("a", "b").map((k): Edit => (o) => delete data(o)[k]),
  fc.constantFrom<unknown>(false, "", 0, true, "x", ["Ingress"], {}).map((v): Edit => (o) => {
    spec(o).added = v;
  }),
  fc.constant<Edit>((o) => delete spec(o).flag),
  fc.constant<Edit>((o) => delete spec(o).empty),
  fc.constant<Edit>((o) => (spec(o).list as unknown[] | undefined)?.push(3)),
  fc.constant<Edit>((o) => (spec(o).list as unknown[] | undefined)?.reverse()),
  fc.constant<Edit>((o) => (o.metadata!.annotations!.tenant = "x")),
  fc.constant<Edit>((o) => (o.metadata!.finalizers = ["example.com/keep"])),
  fc.constant<Edit>((o) => (o.metadata!.resourceVersion = "99")),
  fc.constant<Edit>((o) => (o.status = { seen: true })),
);

const desiredObject = fc.record({
  data: fc.dictionary(fc.constantFrom("a", "b", "c"), fc.constantFrom("", "1", "2")),
  list: fc.array(fc.integer({ min: 0, max: 3 }), { maxLength: 3 }),
}).map(({ data, list }): KubeObject => ({
  apiVersion: "v1",
  kind: "Thing",
  metadata: {
    name: "obj",
    namespace: "ns",
    labels: { [MANAGED_LABEL]: "espejo" },
    annotations: { [OWNER_ANNOTATION]: "espejo/cfg", [HASH_ANNOTATION]: HASH },
  },
  data,
  spec: { list, flag: false, empty: [] },
}));

function served(desired: KubeObject, rv: string, edits: Edit[]): KubeObject {
  const o = structuredClone(desired) as KubeObject & Record<string, unknown>;
  o.metadata!.uid = UID;
  for (const e of edits) e(o);
  o.metadata!.resourceVersion = rv;
  return o;
}

Deno.test("a baseline a comparison proved decides a later version as the content hash of that version would", () => {
  fc.assert(
    fc.property(
      desiredObject,
      fc.array(edit, { maxLength: 3 }),
      fc.array(edit, { maxLength: 3 }),
      fc.boolean(),
      (desired, firstEdits, laterEdits, serverExplains) => {
        // After a restart: the first version judged by value, its additions explained by the server's (or not).
        const first = served(desired, "1", firstEdits);
        const entry = decodeManaged(first, undefined);
        if (!judge(desired, entry, serverExplains ? extrasHash(desired, first) : undefined).inSync) return;
        const proved = entry.baseline!;
        assert.ok(proved.content === AS_DESIRED || proved.content.startsWith(WITH_EXTRAS), proved.content);

        const later = served(desired, "2", laterEdits);
        const byProof = judge(desired, decodeManaged(later, entry));
        const hashed: CachedObject = { ...entry, baseline: { desiredHash: HASH, content: contentHash(first) } };
        const byHash = judge(desired, decodeManaged(later, hashed));
        assert.deepEqual(byProof, byHash);
        assert.equal(byProof.inSync, contentHash(later) === contentHash(first));
      },
    ),
    { numRuns: 2000 },
  );
});

Deno.test("a version judged equal to its desired object keeps no content hash; one with the server's additions keeps theirs", () => {
  const desired = fc.sample(desiredObject, { numRuns: 1, seed: 1 })[0];
  const equal = decodeManaged(served(desired, "1", []), undefined);
  assert.deepEqual(judge(desired, equal), { inSync: true });
  assert.deepEqual(equal.baseline, { desiredHash: HASH, content: AS_DESIRED });

  const defaulted = served(desired, "1", [(o) => (spec(o).added = ["Ingress"])]);
  const extended = decodeManaged(defaulted, undefined);
  const learnt = extrasHash(desired, defaulted);
  assert.deepEqual(judge(desired, extended, learnt), { inSync: true });
  assert.deepEqual(extended.baseline, { desiredHash: HASH, content: WITH_EXTRAS + learnt });
});

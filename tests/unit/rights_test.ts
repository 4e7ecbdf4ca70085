/**
 * A team's rights as espejo asks them (lib/sync/rights.ts), against a recording client: a right is asked for a kind
 * (cluster-wide, then in the namespace), never per object; verdicts stand their time, a denial less at first; they go
 * with the SyncConfig and are kept per SyncConfig; reviews are paced per team; concurrent asks share one review; a
 * review is a SubjectAccessReview for the ServiceAccount with its groups and the SyncConfig's extra.
 */
import assert from "node:assert/strict";
import type { KubeClient, KubeRequest } from "../../lib/kube/client.ts";
import type { ResourceAttributes } from "../../lib/kube/access_review.ts";
import { writeIdentity } from "../../lib/model/identity.ts";
import { type Asker, ReviewsPaced, Rights } from "../../lib/sync/rights.ts";

function askerFor(namespace: string, name: string, serviceAccount = "writer"): Asker {
  const identity = writeIdentity(namespace, name, { "sync.appuio.ch/service-account": serviceAccount }, ["espejo"]);
  if (!identity.ok || !identity.writeAs) throw new Error("no identity");
  return { key: `${namespace}/${name}`, namespace, writeAs: identity.writeAs };
}
const asker = askerFor("team-a", "t");

type Spec = { user: string; groups: string[]; extra?: Record<string, string[]>; resourceAttributes: never };

/** A client that answers reviews by `allowed(attributes)`, recording each review's spec. */
function client(allowed: (a: Record<string, string | undefined>) => boolean) {
  const specs: Spec[] = [];
  const c: KubeClient = {
    request<T>(req: KubeRequest): Promise<T> {
      const spec = (req.body as { spec: Spec }).spec;
      specs.push(spec);
      return Promise.resolve({ status: { allowed: allowed(spec.resourceAttributes) } } as T);
    },
    watch: () => {
      throw new Error("no watch");
    },
  };
  return { c, specs };
}

const get = (namespace: string, name?: string): ResourceAttributes => ({
  verb: "get",
  group: "",
  resource: "configmaps",
  namespace,
  name,
});
const unpaced = { perSecond: 1e9, burst: 1e9 };

Deno.test("Rights: a review is a SubjectAccessReview of the ServiceAccount, with its groups and the extra", async () => {
  const { c, specs } = client(() => true);
  await new Rights(c).may(asker, get("team-b-1"));
  assert.deepEqual({ ...specs[0], resourceAttributes: undefined }, {
    user: "system:serviceaccount:team-a:writer",
    groups: ["system:authenticated", "system:serviceaccounts", "system:serviceaccounts:team-a"],
    extra: { "sync.appuio.ch/syncconfig": ["team-a/t"] },
    resourceAttributes: undefined,
  });
});

Deno.test("Rights: a right is asked for the kind, cluster-wide then in the namespace, never per object", async () => {
  const { c, specs } = client((a) => a.namespace === "team-b-1");
  const rights = new Rights(c);
  for (const name of ["a", "b", "c"]) {
    assert.deepEqual(await rights.may(asker, get("team-b-1", name)), { allowed: true });
  }
  assert.deepEqual(specs.map((s) => JSON.stringify(s.resourceAttributes)), [
    JSON.stringify({ verb: "get", group: "", resource: "configmaps" }),
    JSON.stringify({ verb: "get", group: "", resource: "configmaps", namespace: "team-b-1" }),
  ]);
});

Deno.test("Rights: a right held cluster-wide answers for every namespace with one review", async () => {
  const { c, specs } = client((a) => a.namespace === undefined);
  const rights = new Rights(c);
  for (const ns of ["a", "b", "c"]) assert.deepEqual(await rights.may(asker, get(ns, "x")), { allowed: true });
  assert.equal(specs.length, 1);
});

Deno.test("Rights: a denial says so in the API server's words", async () => {
  const { c } = client(() => false);
  const denied = await new Rights(c).may(asker, get("team-b-1", "theirs"));
  assert.deepEqual({ ...denied, recheckInMs: undefined }, {
    allowed: false,
    denial: 'configmaps "theirs" is forbidden: User "system:serviceaccount:team-a:writer" cannot get resource ' +
      '"configmaps" in API group "" in the namespace "team-b-1"',
    recheckInMs: undefined,
  });
});

Deno.test("Rights: an allowed verdict stands its time, goes with the SyncConfig, and concurrent asks share a review", async () => {
  let now = 0;
  const { c, specs } = client((a) => a.namespace !== undefined);
  const rights = new Rights(c, { ttlMs: 1000, now: () => now });
  await Promise.all([rights.may(asker, get("ns")), rights.may(asker, get("ns"))]);
  assert.equal(specs.length, 2, "one round of reviews (cluster-wide, then the namespace) for two concurrent asks");
  now = 999;
  await rights.may(asker, get("ns"));
  assert.equal(specs.length, 2, "still standing");
  now = 1000;
  await rights.may(asker, get("ns"));
  assert.equal(specs.length, 4, "asked again once expired");
  rights.forgetConfig("team-a/t");
  await rights.may(asker, get("ns"));
  assert.equal(specs.length, 6, "asked again once the SyncConfig changed");
  await rights.may(askerFor("team-a", "other"), get("ns"));
  assert.equal(specs.length, 8, "another SyncConfig asks for itself");
  await rights.may(askerFor("team-a", "t", "another-writer"), get("ns"));
  assert.equal(specs.length, 10, "so does the same SyncConfig naming another ServiceAccount");
});

Deno.test("Rights: a denial is asked again soon, then less and less often, up to the allowed verdict's time", async () => {
  let now = 0;
  let allowed = false;
  const { c, specs } = client(() => allowed);
  const rights = new Rights(c, { ttlMs: 60_000, deniedFirstMs: 5_000, now: () => now, pace: unpaced });
  const namespaceGet = { verb: "get", group: "", resource: "namespaces", namespace: "ns" };
  const stands: number[] = [];
  for (let i = 0; i < 6; i++) {
    const right = await rights.may(asker, namespaceGet);
    if (right.allowed) throw new Error("allowed");
    stands.push(right.recheckInMs);
    now += right.recheckInMs - 1;
    const before = specs.length;
    await rights.may(asker, namespaceGet);
    assert.equal(specs.length, before, "not asked again before its time");
    now += 1;
  }
  assert.deepEqual(stands, [5_000, 10_000, 20_000, 40_000, 60_000, 60_000], "doubling, up to the allowed time");
  allowed = true; // the team bound its ServiceAccount
  assert.deepEqual(await rights.may(asker, namespaceGet), { allowed: true });
});

Deno.test("Rights: reviews are paced per team; past the pace nothing waits, and the answer says when to ask", async () => {
  let now = 0;
  const { c, specs } = client(() => true);
  const rights = new Rights(c, { pace: { perSecond: 2, burst: 3 }, now: () => now });
  const cluster = (resource: string): ResourceAttributes => ({ verb: "get", group: "", resource });
  for (const r of ["a", "b", "c"]) await rights.may(asker, cluster(r));
  await assert.rejects(rights.may(asker, cluster("d")), (e) => e instanceof ReviewsPaced && e.retryInMs === 500);
  await assert.rejects(rights.may(askerFor("team-a", "second"), cluster("d")), ReviewsPaced, "the team's pace");
  await rights.may(askerFor("team-b", "t"), cluster("d")); // another team has its own
  now = 500;
  await rights.may(asker, cluster("d"));
  assert.equal(specs.length, 5);
});

Deno.test("Rights: one SyncConfig's verdicts do not push another's out", async () => {
  const { c, specs } = client(() => true);
  const rights = new Rights(c, { maxPerConfig: 10, pace: unpaced });
  const other = askerFor("team-b", "victim");
  await rights.may(other, get("kept"));
  const asked = specs.length;
  for (let i = 0; i < 50; i++) await rights.may(asker, { ...get(`ns-${i}`), resource: `kind-${i}` });
  await rights.may(other, get("kept"));
  assert.equal(specs.length, asked + 50, "the victim's verdict is still there (cluster-wide answers each of the 50)");
});

Deno.test("Rights: a review that fails keeps no verdict and rejects", async () => {
  let fail = true;
  const c: KubeClient = {
    request<T>(): Promise<T> {
      return fail ? Promise.reject(new Error("outage")) : Promise.resolve({ status: { allowed: true } } as T);
    },
    watch: () => {
      throw new Error("no watch");
    },
  };
  const rights = new Rights(c);
  await assert.rejects(rights.may(asker, get("ns")), /outage/);
  fail = false;
  assert.deepEqual(await rights.may(asker, get("ns")), { allowed: true });
});

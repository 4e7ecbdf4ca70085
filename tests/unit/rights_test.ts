/**
 * A team's rights as espejo asks them (lib/sync/rights.ts), against a recording client: one review covers a kind in a
 * namespace, verdicts stand their time and go with the SyncConfig, concurrent asks share one review, and a review
 * is a SubjectAccessReview for the ServiceAccount with its groups and the SyncConfig's extra.
 */
import assert from "node:assert/strict";
import type { KubeClient, KubeRequest } from "../../lib/kube/client.ts";
import { writeIdentity } from "../../lib/model/identity.ts";
import { type Asker, Rights } from "../../lib/sync/rights.ts";

const identity = writeIdentity("team-a", "t", { "sync.appuio.ch/service-account": "writer" }, ["espejo"]);
if (!identity.ok || !identity.writeAs) throw new Error("no identity");
const asker: Asker = { key: "team-a/t", writeAs: identity.writeAs };

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

const get = (namespace: string, name?: string) => ({ verb: "get", group: "", resource: "configmaps", namespace, name });

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

Deno.test("Rights: a right to every name answers for each name with one review", async () => {
  const { c, specs } = client(() => true);
  const rights = new Rights(c);
  for (const name of ["a", "b", "c"]) {
    assert.deepEqual(await rights.may(asker, get("team-b-1", name)), { allowed: true });
  }
  assert.equal(specs.length, 1);
});

Deno.test("Rights: a right held cluster-wide answers for every namespace with one review", async () => {
  const { c, specs } = client((a) => a.namespace === undefined);
  const rights = new Rights(c);
  for (const ns of ["a", "b", "c"]) assert.deepEqual(await rights.may(asker, get(ns, "x")), { allowed: true });
  assert.equal(specs.length, 1);
});

Deno.test("Rights: a right limited to a name is found by the last review, and denied names say so", async () => {
  const { c, specs } = client((a) => a.name === "mine");
  const rights = new Rights(c);
  assert.deepEqual(await rights.may(asker, get("team-b-1", "mine")), { allowed: true });
  const denied = await rights.may(asker, get("team-b-1", "theirs"));
  assert.deepEqual({ ...denied, recheckInMs: undefined }, {
    allowed: false,
    denial: 'configmaps "theirs" is forbidden: User "system:serviceaccount:team-a:writer" cannot get resource ' +
      '"configmaps" in API group "" in the namespace "team-b-1"',
    recheckInMs: undefined,
  });
  assert.equal(specs.length, 4, "cluster-wide and the namespace once, then each name");
});

Deno.test("Rights: an allowed verdict stands its time, goes with the SyncConfig, and concurrent asks share a review", async () => {
  let now = 0;
  const { c, specs } = client(() => true);
  const rights = new Rights(c, 1000, 100, () => now);
  await Promise.all([rights.may(asker, get("ns")), rights.may(asker, get("ns"))]);
  assert.equal(specs.length, 1, "one review for two concurrent asks");
  now = 999;
  await rights.may(asker, get("ns"));
  assert.equal(specs.length, 1, "still standing");
  now = 1000;
  await rights.may(asker, get("ns"));
  assert.equal(specs.length, 2, "asked again once expired");
  rights.forgetConfig("team-a/t");
  await rights.may(asker, get("ns"));
  assert.equal(specs.length, 3, "asked again once the SyncConfig changed");
  await rights.may({ ...asker, key: "team-a/other" }, get("ns"));
  assert.equal(specs.length, 4, "another SyncConfig asks for itself");
});

Deno.test("Rights: a denial is asked again soon, then less and less often, up to the allowed verdict's time", async () => {
  let now = 0;
  let allowed = false;
  const { c, specs } = client(() => allowed);
  const rights = new Rights(c, 60_000, 100, () => now, 5_000);
  const stands: number[] = [];
  for (let i = 0; i < 6; i++) {
    const right = await rights.may(asker, { verb: "get", group: "", resource: "namespaces", name: "ns" });
    assert.equal(right.allowed, false);
    if (right.allowed) return;
    stands.push(right.recheckInMs);
    now += right.recheckInMs - 1;
    const before = specs.length;
    await rights.may(asker, { verb: "get", group: "", resource: "namespaces", name: "ns" });
    assert.equal(specs.length, before, "not asked again before its time");
    now += 1;
  }
  assert.deepEqual(stands, [5_000, 10_000, 20_000, 40_000, 60_000, 60_000], "doubling, up to the allowed time");
  allowed = true; // the team bound its ServiceAccount
  assert.deepEqual(await rights.may(asker, { verb: "get", group: "", resource: "namespaces", name: "ns" }), {
    allowed: true,
  });
});

Deno.test("Rights: at most the bound of verdicts are kept, whatever a team names", async () => {
  const { c, specs } = client((a) => a.namespace !== undefined);
  const rights = new Rights(c, 60_000, 10);
  for (let i = 0; i < 50; i++) await rights.may(asker, get(`ns-${i}`));
  const asked = specs.length;
  await rights.may(asker, get("ns-0"));
  assert.equal(specs.length, asked + 1, "the oldest went");
  await rights.may(asker, get("ns-49"));
  assert.equal(specs.length, asked + 1, "the newest stayed");
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

/**
 * The moves of the game: what a tenant with edit rights in its namespace (and, for one move, the namespace's
 * admin) can do to the objects espejo syncs there. Each move is a function of (rng, world, target) and says in
 * words what it did, so that a failing game's move list reads like the attack it was.
 *
 * A move never waits for espejo: it does its thing and returns. What espejo makes of it is the invariant's business.
 */
import {
  type Actor,
  type GameItem,
  HASH_ANNOTATION,
  type ItemId,
  MANAGED_LABEL,
  OTHER_ROLE,
  OWNER_ANNOTATION,
  SELECT_LABEL,
  type World,
} from "./world.ts";
import { create, get, mergePatch, remove, said, sendDeep } from "./actions.ts";
import type { Rng } from "./rng.ts";
import type { KubeObject } from "../../lib/kube/objects.ts";
import { API_SERVER_MAX_DEPTH } from "../../lib/kube/json_depth.ts";

export type Target = ItemId | "namespace";

export interface Move {
  name: string;
  targets: readonly Target[];
  /**
   * The fix in PENDING_FIXES (pending_fixes.ts) this move needs against `target` to be won by espejo today, if any:
   * a game that leaves out pending fixes leaves this move out.
   */
  needs?: (target: Target) => string | undefined;
  play(rng: Rng, world: World, target: Target): Promise<string>;
}

const ALL_ITEMS: readonly ItemId[] = ["configmap", "secret", "rolebinding", "networkpolicy", "resourcequota", "widget"];
/** How deep the deep-nesting move makes the Widget (the object itself the first level). */
export const DEEP_LEVELS: readonly number[] = [5_000, 8_000, API_SERVER_MAX_DEPTH];
const b64 = (s: string) => btoa(s);

function itemOf(world: World, target: Target): GameItem {
  const item = world.items.find((i) => i.id === target);
  if (!item) throw new Error(`no item ${target}`);
  return item;
}

/** A change of a value the item sets, as a merge patch, and its words. */
function changeOfSetField(rng: Rng, id: ItemId): [unknown, string] {
  const w = rng.word();
  if (rng.chance(0.25)) {
    return [{ metadata: { labels: { "game.example/policy": w } } }, `label game.example/policy=${w}`];
  }
  switch (id) {
    case "configmap":
      return [{ data: { mode: w } }, `data.mode=${w}`];
    case "secret":
      return [{ data: { token: b64(w) } }, `data.token=base64(${w})`];
    case "rolebinding":
      return [
        { subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: w }] },
        `subjects=[Group ${w}]`,
      ];
    case "networkpolicy":
      return [{ spec: { podSelector: { matchLabels: { app: w } } } }, `spec.podSelector={app: ${w}}`];
    case "resourcequota": {
      const pods = String(rng.int(11, 999));
      return [{ spec: { hard: { pods } } }, `spec.hard.pods=${pods}`];
    }
    case "widget": {
      if (rng.chance(0.5)) return [{ spec: { limits: { cpu: w } } }, `spec.limits.cpu=${w}`];
      const size = rng.int(4, 99);
      return [{ spec: { size } }, `spec.size=${size}`];
    }
  }
}

/** An addition of a field the item does not set. */
function additionOfUnsetField(rng: Rng, id: ItemId): [unknown, string] {
  const w = rng.word();
  if (rng.chance(0.4)) return [{ metadata: { annotations: { "tenant.example/note": w } } }, `annotation note=${w}`];
  switch (id) {
    case "configmap":
      return [{ data: { [`extra-${w}`]: w } }, `data.extra-${w}`];
    case "secret":
      return [{ data: { [`extra-${w}`]: b64(w) } }, `data.extra-${w}`];
    case "rolebinding":
      return [{ metadata: { labels: { "tenant.example/team": w } } }, `label tenant.example/team=${w}`];
    case "networkpolicy":
      return [{ spec: { egress: [{ to: [{ ipBlock: { cidr: "0.0.0.0/0" } }] }] } }, "spec.egress=[allow all]"];
    case "resourcequota":
      return [{ spec: { scopes: ["BestEffort"] } }, "spec.scopes=[BestEffort]"];
    case "widget":
      // A top-level field too: the kind's schema keeps whatever it is given.
      return rng.chance(0.5)
        ? [{ spec: { replicas: { min: 0, max: w } } }, `spec.replicas={min: 0, max: ${w}}`]
        : [{ tenantData: { note: w } }, `.tenantData={note: ${w}}`];
  }
}

/** A removal of a field the item sets. */
function removalOfSetField(rng: Rng, id: ItemId): [unknown, string] {
  if (rng.chance(0.25)) return [{ metadata: { labels: { "game.example/policy": null } } }, "label game.example/policy"];
  switch (id) {
    case "configmap":
      return [{ data: { "limits.yaml": null } }, "data.limits.yaml"];
    case "secret":
      return [{ data: { token: null } }, "data.token"];
    case "rolebinding":
      return [{ subjects: null }, "subjects"];
    case "networkpolicy":
      return [{ spec: { ingress: null } }, "spec.ingress"];
    case "resourcequota":
      return [{ spec: { hard: { configmaps: null } } }, "spec.hard.configmaps"];
    case "widget":
      return rng.chance(0.5)
        ? [{ spec: { tier: null } }, "spec.tier"]
        : [{ spec: { limits: { memory: null } } }, "spec.limits.memory"];
  }
}

async function patchItem(world: World, item: GameItem, body: unknown, words: string): Promise<string> {
  return `${item.id}: ${words}: ${said(await mergePatch(world.tenant, item.path, body))}`;
}

/** The tenant's own object of the same kind with another field that cannot be updated (Secret type, roleRef). */
function recreated(item: GameItem, old: KubeObject | undefined, keepMarkers: boolean): KubeObject {
  const t = structuredClone(item.template);
  const metadata: KubeObject["metadata"] = { name: item.name, labels: { ...t.metadata?.labels } };
  if (keepMarkers && old?.metadata) {
    metadata.labels = { ...old.metadata.labels };
    metadata.annotations = { ...old.metadata.annotations };
  }
  if (item.id === "secret") return { ...t, metadata, type: "game.example/other" };
  return { ...t, metadata, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: OTHER_ROLE } };
}

async function relabel(actor: Actor, world: World, on: boolean): Promise<string> {
  const value = on ? world.gameId : null;
  const outcome = await mergePatch(actor, `/api/v1/namespaces/${world.ns}`, {
    metadata: { labels: { [SELECT_LABEL]: value } },
  });
  if (outcome.ok) world.selected = on;
  return `${on ? "on" : "off"} ${outcome.ok ? "" : said(outcome)}`.trim();
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A ConfigMap the tenant makes to own a synced object, and the reference to it; or what refused it, in words. */
async function tenantOwner(rng: Rng, w: World): Promise<{ name: string; ref: Record<string, unknown> } | string> {
  const name = `tenant-owner-${rng.word()}`;
  const owner = await create(w.tenant, `/api/v1/namespaces/${w.ns}/configmaps`, {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name },
  });
  if (!owner.ok || !owner.object) return `create owner ConfigMap ${name}: ${said(owner)}`;
  return { name, ref: { apiVersion: "v1", kind: "ConfigMap", name, uid: owner.object.metadata!.uid } };
}

/**
 * `levels` levels around a string, objects `{ a: ... }` and one-element lists alternately: the API server stores a
 * path through lists at any depth up to its limit (one through objects only it refuses at 9,996 to 9,999 levels,
 * where its managedFields record nests deeper: lib/kube/json_depth.ts). Built by a loop: no recursion.
 */
function nested(levels: number, leaf: string): unknown {
  let v: unknown = leaf;
  for (let i = 0; i < levels; i++) v = i % 2 ? [v] : { a: v };
  return v;
}

export const MOVES: readonly Move[] = [
  {
    name: "patch-set-field",
    targets: ALL_ITEMS,
    play: (rng, w, t) => patchItem(w, itemOf(w, t), ...changeOfSetField(rng, t as ItemId)),
  },
  {
    name: "patch-unset-field",
    targets: ALL_ITEMS,
    play: (rng, w, t) => patchItem(w, itemOf(w, t), ...additionOfUnsetField(rng, t as ItemId)),
  },
  {
    name: "remove-field",
    targets: ALL_ITEMS,
    play: (rng, w, t) => patchItem(w, itemOf(w, t), ...removalOfSetField(rng, t as ItemId)),
  },
  {
    name: "immutable",
    targets: ["configmap", "secret"],
    needs: () => "immutable",
    play: (rng, w, t) => {
      const v = rng.word();
      const data = t === "secret" ? { token: b64(v) } : { mode: v };
      return patchItem(w, itemOf(w, t), { immutable: true, data }, `immutable: true with new data (${v})`);
    },
  },
  {
    name: "finalizer",
    targets: ALL_ITEMS,
    play: (_rng, w, t) =>
      patchItem(w, itemOf(w, t), { metadata: { finalizers: ["game.example/hold"] } }, "finalizer game.example/hold"),
  },
  {
    name: "owner-reference",
    targets: ALL_ITEMS,
    play: async (rng, w, t) => {
      const item = itemOf(w, t);
      const owner = await tenantOwner(rng, w);
      if (typeof owner === "string") return `${t}: ${owner}`;
      const { name, ref } = owner;
      const patched = await mergePatch(w.tenant, item.path, { metadata: { ownerReferences: [ref] } });
      // Deleting the owner lets the garbage collector delete the synced object (in the background).
      const dropOwner = rng.chance(0.5);
      if (dropOwner) await remove(w.tenant, `/api/v1/namespaces/${w.ns}/configmaps/${name}`);
      return `${t}: ownerReference to ConfigMap ${name}: ${said(patched)}${dropOwner ? ", owner deleted" : ""}`;
    },
  },
  {
    name: "owner-reference-flood",
    targets: ALL_ITEMS,
    play: async (rng, w, t) => {
      // About 1 MiB: one owner that exists (the garbage collector keeps the object) and 4,999 that do not, with a
      // change espejo must restore, keeping all 5,000 (its cache keeps none of them: threat-model.md, memory).
      const owner = await tenantOwner(rng, w);
      if (typeof owner === "string") return `${t}: ${owner}`;
      const { name } = owner;
      const refs = [
        owner.ref,
        ...Array.from({ length: 4_999 }, (_, i) => ({
          apiVersion: "v1",
          kind: "ConfigMap",
          name: `ghost-${i}-${"g".repeat(100)}`,
          uid: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
        })),
      ];
      const [change, words] = changeOfSetField(rng, t as ItemId);
      const patched = await mergePatch(w.tenant, itemOf(w, t).path, change);
      const flooded = await mergePatch(w.tenant, itemOf(w, t).path, { metadata: { ownerReferences: refs } });
      return `${t}: ${words}: ${said(patched)}; 5,000 ownerReferences (owner ${name}): ${said(flooded)}`;
    },
  },
  {
    name: "status-unlabel",
    targets: ["resourcequota"],
    play: async (_rng, w, t) => {
      // resourcequotas/status keeps the old spec but takes the new metadata: espejo's label goes by a path the
      // object's own rights do not name.
      const item = itemOf(w, t);
      const patched = await mergePatch(w.tenant, `${item.path}/status`, {
        metadata: { labels: { [MANAGED_LABEL]: null } },
      });
      return `${t}: label ${MANAGED_LABEL} removed through the status subresource: ${said(patched)}`;
    },
  },
  {
    name: "deep-nesting",
    targets: ["widget"],
    play: async (rng, w, t) => {
      // The tenant replaces the Widget (PUT, its own token) with `.spec.<field>` nested so that the object is `depth`
      // levels deep (the object the first level, .spec the second), a field the item sets or one it does not. Sent
      // as jsonText: JSON.stringify may recurse past the stack at this depth. A Widget that is gone is created so.
      const item = itemOf(w, t);
      const depth = rng.pick(DEEP_LEVELS);
      const field = rng.pick(["size", "limits", `deep-${rng.word()}`]);
      const value = nested(depth - 2, rng.word());
      const words = `.spec.${field} nested so that the object is ${depth.toLocaleString("en")} levels deep`;
      let outcome;
      let tries = 0;
      do {
        tries++;
        const live = await get(w.tenant, item.path);
        if (live) {
          // Without managedFields (the server keeps its own): a record of a deep object nests deeper than it does.
          const { managedFields: _, ...metadata } = live.metadata ?? {};
          const spec = { ...(live as { spec?: Record<string, unknown> }).spec, [field]: value };
          outcome = await sendDeep(w.cluster, w.tenant, "PUT", item.path, { ...live, metadata, spec });
        } else {
          const { labels } = item.template.metadata!;
          const spec = { ...(item.template as { spec?: Record<string, unknown> }).spec, [field]: value };
          const own = { ...item.template, metadata: { name: item.name, labels }, spec };
          outcome = await sendDeep(w.cluster, w.tenant, "POST", item.collection, own);
        }
        // A conflict is espejo's write in between (or the object still going): the tenant reads and tries again.
      } while (!outcome.ok && /^409 /.test(outcome.refusal) && tries < 5);
      return `${t}: ${words}${tries > 1 ? ` (${tries} tries)` : ""}: ${said(outcome)}`;
    },
  },
  {
    name: "delete",
    targets: ALL_ITEMS,
    play: async (_rng, w, t) => `${t}: delete: ${said(await remove(w.tenant, itemOf(w, t).path))}`,
  },
  {
    name: "recreate-other",
    targets: ["secret", "rolebinding"],
    needs: (t) => t === "secret" ? "secret-type-recreate" : "roleRef-recreate",
    play: async (rng, w, t) => {
      const item = itemOf(w, t);
      const old = await get(w.tenant, item.path);
      const keepMarkers = rng.chance(0.5);
      const deleted = await remove(w.tenant, item.path);
      // The tenant retries its create while the old object is still going (a few tries, as kubectl users do).
      let made = await create(w.tenant, item.collection, recreated(item, old, keepMarkers));
      for (let i = 0; i < 10 && !made.ok; i++) {
        await pause(200);
        made = await create(w.tenant, item.collection, recreated(item, old, keepMarkers));
      }
      const what = t === "secret" ? "type game.example/other" : `roleRef ClusterRole ${OTHER_ROLE}`;
      return `${t}: delete (${said(deleted)}), create with ${what}${keepMarkers ? " and espejo's markers" : ""}: ${
        said(made)
      }`;
    },
  },
  {
    name: "strip-markers",
    targets: ALL_ITEMS,
    play: (rng, w, t) => {
      const strip = [MANAGED_LABEL, OWNER_ANNOTATION, HASH_ANNOTATION].filter(() => rng.chance(0.6));
      if (strip.length === 0) strip.push(rng.pick([MANAGED_LABEL, OWNER_ANNOTATION, HASH_ANNOTATION]));
      const labels = strip.includes(MANAGED_LABEL) ? { [MANAGED_LABEL]: null } : undefined;
      const annotations = Object.fromEntries(strip.filter((k) => k !== MANAGED_LABEL).map((k) => [k, null]));
      return patchItem(w, itemOf(w, t), { metadata: { labels, annotations } }, `strip ${strip.join(", ")}`);
    },
  },
  {
    name: "spoof-owner",
    targets: ALL_ITEMS,
    play: (_rng, w, t) => {
      const item = itemOf(w, t);
      const other = w.configs.find((c) => c !== item.config)!;
      return patchItem(w, item, { metadata: { annotations: { [OWNER_ANNOTATION]: other.key } } }, `owner=${other.key}`);
    },
  },
  {
    name: "huge-annotation",
    targets: ALL_ITEMS,
    play: (rng, w, t) => {
      const kb = rng.int(150, 250);
      const body = { metadata: { annotations: { "tenant.example/blob": "x".repeat(kb * 1000) } } };
      return patchItem(w, itemOf(w, t), body, `annotation of ${kb} KB`);
    },
  },
  {
    name: "burst",
    targets: ALL_ITEMS,
    play: async (rng, w, t) => {
      const item = itemOf(w, t);
      const n = rng.int(20, 50);
      const patches = Array.from({ length: n }, () => changeOfSetField(rng, t as ItemId)[0]);
      const outcomes = await Promise.all(patches.map((p) => mergePatch(w.tenant, item.path, p)));
      return `${t}: burst of ${n} parallel patches: ${outcomes.filter((o) => o.ok).length} done`;
    },
  },
  {
    name: "relabel",
    targets: ["namespace"],
    play: async (rng, w) => {
      const pattern = rng.pick(["off", "on", "off-on", "flap"] as const);
      if (pattern === "off" || pattern === "on") return `namespace: ${await relabel(w.nsAdmin, w, pattern === "on")}`;
      if (pattern === "off-on") {
        const a = await relabel(w.nsAdmin, w, false);
        await pause(rng.int(0, 2 * w.intervalMs));
        return `namespace: ${a}, then ${await relabel(w.nsAdmin, w, true)}`;
      }
      const flips = rng.int(4, 20);
      const every = rng.int(50, 300);
      for (let i = 0; i < flips; i++) {
        await relabel(w.nsAdmin, w, !w.selected);
        await pause(every);
      }
      return `namespace: flapped ${flips} times every ${every} ms, ends ${w.selected ? "on" : "off"}`;
    },
  },
  {
    name: "namespace-label-flood",
    targets: ["namespace"],
    play: async (rng, w) => {
      // About 1 MiB of labels, as a namespace admin may write: the namespace keeps only the keys selectors read.
      // The same keys each time (new values), so that a second flood stays under the server's 2 MiB request limit.
      const tag = rng.word();
      const labels = Object.fromEntries(
        Array.from({ length: 10_000 }, (_, i) => [`flood-${i}`.padEnd(63, "x"), `${tag}-`.padEnd(40, "v")]),
      );
      const outcome = await mergePatch(w.nsAdmin, `/api/v1/namespaces/${w.ns}`, { metadata: { labels } });
      return `namespace: 10,000 labels (values ${tag}): ${said(outcome)}`;
    },
  },
];

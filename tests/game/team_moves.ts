/**
 * The team moves of the tenant game (docs/tenant-game.md): what a hostile team can try with SyncConfigs of its own
 * namespace in delegated mode, where espejo writes as the team's ServiceAccount. Against other SyncConfigs' items it
 * has no right to touch (a contesting deleteItem), against espejo's memory (a selector with fresh label keys on every
 * edit) and against what it may not read (an existence probe: deleteItems naming objects that exist and objects that
 * do not, in a namespace whose objects it may not read). Played by tests/integration/delegation_hostile_test.ts, in a
 * world of its own: delegated mode reads every namespace's SyncConfigs, so it needs a control plane of its own, where
 * the tenant moves (tests/game/moves.ts) play in the shared one.
 *
 * A move says in words what it did, and what the invariant must then hold of it ({@link Played}).
 */
import type { HttpKubeClient } from "../../lib/kube/client.ts";
import type { Rng } from "./rng.ts";

/** The world of the team moves. */
export interface TeamWorld {
  /** Teams that play: their namespace, whose ServiceAccount `writer` each SyncConfig names, and what it may see. */
  teams: {
    namespace: string;
    seesVictims: boolean;
    /** The team's author, with a token of its own that may write SyncConfigs in `namespace` only. */
    author: HttpKubeClient;
  }[];
  /** Namespaces where other SyncConfigs (a team's, the platform's) sync {@link victims}; the players have no right there. */
  victimNamespaces: string[];
  /** ConfigMaps other SyncConfigs sync into every victim namespace. */
  victims: string[];
  /** Objects in the first victim namespace (a Secret and a ConfigMap), and names of the same kinds that do not exist. */
  present: Probe[];
  absent: Probe[];
}

export interface Probe {
  kind: "Secret" | "ConfigMap";
  name: string;
}

/** What a move left for the invariant to check. */
export interface Played {
  words: string;
  /** The team's SyncConfig the move wrote, `namespace/name`. */
  syncConfig: string;
  /** An existence probe: each deleteItem's object, and whether it exists. */
  probe?: { item: Probe; exists: boolean }[];
  /** The probe's namespace is one the team may see (may get the namespace, not read the objects). */
  seen?: boolean;
}

export interface TeamMove {
  name: string;
  play(rng: Rng, world: TeamWorld, step: number): Promise<Played>;
}

const SC_API = "/apis/sync.appuio.ch/v1alpha1";

/** Creates or replaces (by merge patch of the whole spec) SyncConfig `namespace/name`, naming ServiceAccount writer. */
export async function writeSyncConfig(
  author: HttpKubeClient,
  namespace: string,
  name: string,
  spec: Record<string, unknown>,
): Promise<void> {
  const body = {
    apiVersion: "sync.appuio.ch/v1alpha1",
    kind: "SyncConfig",
    metadata: { name, annotations: { "sync.appuio.ch/service-account": "writer" } },
    spec,
  };
  try {
    await author.request({ method: "POST", path: `${SC_API}/namespaces/${namespace}/syncconfigs`, body });
  } catch {
    await author.request({
      method: "PATCH",
      path: `${SC_API}/namespaces/${namespace}/syncconfigs/${name}`,
      contentType: "application/merge-patch+json",
      body: { spec },
    });
  }
}

const configMapItem = (name: string) => ({ apiVersion: "v1", kind: "ConfigMap", name });

/** A deleteItem for another SyncConfig's object, in the victims' namespaces chosen by name, pattern or label. */
const contest: TeamMove = {
  name: "contesting-deleteItem",
  async play(rng, world, step) {
    const team = rng.pick(world.teams);
    const victims = world.victims.filter(() => rng.chance(0.7));
    if (!victims.length) victims.push(rng.pick(world.victims));
    const selector = rng.pick([
      { matchNames: [".*"] },
      { matchNames: [rng.pick(world.victimNamespaces)] },
      { matchNames: world.victimNamespaces.map((n) => n.replace(/-\d+$/, "-.*")).slice(0, 1) },
    ]);
    const name = `contest-${step}`;
    await writeSyncConfig(team.author, team.namespace, name, {
      namespaceSelector: selector,
      deleteItems: victims.map(configMapItem),
    });
    return {
      words: `${team.namespace}/${name} deletes ${victims.join(", ")} in ${JSON.stringify(selector)}`,
      syncConfig: `${team.namespace}/${name}`,
    };
  },
};

/** The team's selector edited with fresh label keys (a set no edit repeats), each edit a new generation. */
const freshKeys: TeamMove = {
  name: "selector-with-fresh-keys",
  async play(rng, world, step) {
    const team = rng.pick(world.teams);
    const count = rng.int(1, 16);
    const expressions = Array.from({ length: count }, (_, i) => ({
      key: `fresh.example/k-${step}-${i}-${rng.word()}`,
      operator: "DoesNotExist",
    }));
    await writeSyncConfig(team.author, team.namespace, "fresh-keys", {
      namespaceSelector: { labelSelector: { matchExpressions: expressions } },
      syncItems: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "fresh-keys" }, data: { step: `${step}` } }],
    });
    return {
      words: `${team.namespace}/fresh-keys reads ${count} fresh label keys`,
      syncConfig: `${team.namespace}/fresh-keys`,
    };
  },
};

/** deleteItems naming, in the first victim namespace, objects that exist and objects that do not, mixed. */
const probe: TeamMove = {
  name: "existence-probe",
  async play(rng, world, step) {
    const team = rng.pick(world.teams);
    const items = [
      ...world.present.map((item) => ({ item, exists: true })),
      ...world.absent.map((item) => ({ item, exists: false })),
    ].filter(() => rng.chance(0.6));
    if (!items.some((i) => i.exists)) items.push({ item: world.present[0], exists: true });
    if (!items.some((i) => !i.exists)) items.push({ item: world.absent[0], exists: false });
    const name = `probe-${step}`;
    await writeSyncConfig(team.author, team.namespace, name, {
      namespaceSelector: { matchNames: [world.victimNamespaces[0]] },
      deleteItems: items.map(({ item }) => ({ apiVersion: "v1", kind: item.kind, name: item.name })),
    });
    return {
      words: `${team.namespace}/${name} probes ${items.map((i) => `${i.item.kind}/${i.item.name}`).join(", ")}`,
      syncConfig: `${team.namespace}/${name}`,
      probe: items,
      seen: team.seesVictims,
    };
  },
};

export const TEAM_MOVES: readonly TeamMove[] = [contest, freshKeys, probe];

/**
 * Maps apiVersion + kind to the REST resource and its scope, from the API server's discovery documents.
 * A group version is fetched once and cached; an unknown kind refetches it at most every `refreshMs` (a CRD may
 * have been installed since), so a SyncConfig naming a kind that does not exist costs one request per interval.
 */
import type { KubeClient } from "./client.ts";
import { isNotFound } from "./errors.ts";
import { splitApiVersion } from "./objects.ts";

export interface ResourceInfo {
  /** Plural resource name, e.g. `configmaps`. */
  resource: string;
  namespaced: boolean;
  group: string;
  version: string;
  kind: string;
  verbs: string[];
}

interface GroupVersionEntry {
  fetchedAt: number;
  byKind: Map<string, ResourceInfo>;
  missing: boolean;
}

/** An apiVersion/kind that cannot be synced; the message says why. */
export class UnknownKindError extends Error {}

export class Discovery {
  readonly #cache = new Map<string, GroupVersionEntry>();
  readonly #inflight = new Map<string, Promise<GroupVersionEntry>>();

  constructor(private readonly client: KubeClient, private readonly refreshMs = 30_000) {}

  /** Resolves the resource for `apiVersion`/`kind`; throws {@link UnknownKindError} with a specific message. */
  async resolve(apiVersion: string, kind: string): Promise<ResourceInfo> {
    let entry = await this.#groupVersion(apiVersion, false);
    if (!entry.byKind.has(kind) && Date.now() - entry.fetchedAt > this.refreshMs) {
      entry = await this.#groupVersion(apiVersion, true);
    }
    if (entry.missing) {
      throw new UnknownKindError(`apiVersion ${apiVersion} is not served by the API server`);
    }
    const info = entry.byKind.get(kind);
    if (!info) throw new UnknownKindError(`kind ${kind} is not served in apiVersion ${apiVersion}`);
    return info;
  }

  #groupVersion(apiVersion: string, refresh: boolean): Promise<GroupVersionEntry> {
    const cached = this.#cache.get(apiVersion);
    if (cached && !refresh) return Promise.resolve(cached);
    const running = this.#inflight.get(apiVersion);
    if (running) return running;
    const p = this.#fetch(apiVersion).finally(() => this.#inflight.delete(apiVersion));
    this.#inflight.set(apiVersion, p);
    return p;
  }

  async #fetch(apiVersion: string): Promise<GroupVersionEntry> {
    const { group, version } = splitApiVersion(apiVersion);
    const path = group ? `/apis/${group}/${version}` : `/api/${version}`;
    const entry: GroupVersionEntry = { fetchedAt: Date.now(), byKind: new Map(), missing: false };
    if (!/^[a-z0-9.-]*$/.test(group) || !/^v[0-9a-z]+$/.test(version)) {
      entry.missing = true;
    } else {
      try {
        const list = await this.client.request<
          { resources: { name: string; kind: string; namespaced: boolean; verbs: string[] }[] }
        >({ method: "GET", path });
        for (const r of list.resources ?? []) {
          if (r.name.includes("/")) continue; // subresources
          entry.byKind.set(r.kind, {
            resource: r.name,
            namespaced: r.namespaced,
            group,
            version,
            kind: r.kind,
            verbs: r.verbs,
          });
        }
      } catch (e) {
        if (!isNotFound(e)) throw e;
        entry.missing = true;
      }
    }
    this.#cache.set(apiVersion, entry);
    return entry;
  }
}

/** The collection path of a resource, cluster-wide or in one namespace. */
/** The key of a resource in caches and indexes: `group/version/resource`. */
export const resourceKey = (r: ResourceInfo): string => `${r.group}/${r.version}/${r.resource}`;

/** `r`, if objects of it live in namespaces (only those are synced); else why not. */
export function namespacedOnly(r: ResourceInfo, apiVersion: string): ResourceInfo {
  if (r.namespaced) return r;
  throw new UnknownKindError(`${r.kind} (${apiVersion}) is cluster-scoped; only namespaced objects are synced`);
}

export function collectionPath(r: ResourceInfo, namespace?: string): string {
  const base = r.group ? `/apis/${r.group}/${r.version}` : `/api/${r.version}`;
  return namespace && r.namespaced ? `${base}/namespaces/${namespace}/${r.resource}` : `${base}/${r.resource}`;
}

export function objectPath(r: ResourceInfo, namespace: string, name: string): string {
  return `${collectionPath(r, namespace)}/${encodeURIComponent(name)}`;
}

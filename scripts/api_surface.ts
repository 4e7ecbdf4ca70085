/**
 * The part of the Kubernetes API the controller reaches by fixed path: the operations it performs and the types
 * they carry. `deno task openapi` keeps exactly this of the API server's OpenAPI v3 documents in `openapi/`, and
 * `deno task gen-types` generates the types and a typed client from those copies. Everything else (the kinds of
 * syncItems and deleteItems) goes through discovery.
 */

export interface ApiDocument {
  /** The document's path under `/openapi/v3/` on the API server. */
  path: string;
  /** The committed copy, under `openapi/`. */
  file: string;
  /** Schemas (with all they refer to) to generate types for; empty when the types come from elsewhere. */
  types: string[];
  /** Where the generated types go, when there are any. */
  typesOut?: string;
  /** Where the generated client goes. */
  clientOut: string;
  /** Schemas whose type comes from another module, as an import: schema name -> [module, type name]. */
  external?: Record<string, [string, string]>;
  /** operationId -> the client function's name. */
  operations: Record<string, string>;
}

export const API_DOCUMENTS: ApiDocument[] = [
  {
    path: "api/v1",
    file: "openapi/api__v1_openapi.json",
    types: ["io.k8s.api.core.v1.Namespace", "io.k8s.api.core.v1.Event"],
    typesOut: "lib/kube/api/core_v1.ts",
    clientOut: "lib/kube/api/core_v1_client.ts",
    operations: {
      listCoreV1Namespace: "listNamespaces",
      createCoreV1NamespacedEvent: "createEvent",
      patchCoreV1NamespacedEvent: "patchEvent",
    },
  },
  {
    path: "apis/coordination.k8s.io/v1",
    file: "openapi/apis__coordination.k8s.io__v1_openapi.json",
    types: ["io.k8s.api.coordination.v1.Lease"],
    typesOut: "lib/kube/api/coordination_v1.ts",
    clientOut: "lib/kube/api/coordination_v1_client.ts",
    operations: {
      readCoordinationV1NamespacedLease: "readLease",
      createCoordinationV1NamespacedLease: "createLease",
      replaceCoordinationV1NamespacedLease: "replaceLease",
    },
  },
  {
    // Served from the CRD once it is installed; the SyncConfig type itself is generated from the CRD file.
    path: "apis/sync.appuio.ch/v1alpha1",
    file: "openapi/apis__sync.appuio.ch__v1alpha1_openapi.json",
    types: [],
    clientOut: "lib/sync/syncconfig_client.ts",
    external: { "ch.appuio.sync.v1alpha1.SyncConfig": ["../model/syncconfig_types.ts", "SyncConfig"] },
    operations: {
      listSyncAppuioChV1alpha1SyncConfigForAllNamespaces: "listAllSyncConfigs",
      listSyncAppuioChV1alpha1NamespacedSyncConfig: "listSyncConfigs",
      patchSyncAppuioChV1alpha1NamespacedSyncConfig: "patchSyncConfig",
      patchSyncAppuioChV1alpha1NamespacedSyncConfigStatus: "patchSyncConfigStatus",
    },
  },
];

/**
 * Widget, a kind of the tests' own: a namespaced CRD that keeps every field (no schema beyond "an object"), and the
 * right for espejo to sync it, as an admin opts in a kind (a ClusterRole aggregated into espejo-manager).
 */

/**
 * The manifests of kind Widget in `group` (plural widgets, version v1) and of ClusterRole `clusterRole`, which may
 * get, list, watch, create, update and delete them and carries espejo's aggregation label. For applyYaml.
 */
export function widgetKindYaml(group: string, clusterRole: string): string {
  return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.${group}}
spec:
  group: ${group}
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: ${clusterRole}
  labels: {sync.appuio.ch/aggregate-to-espejo: "true"}
rules:
- apiGroups: [${group}]
  resources: [widgets]
  verbs: [get, list, watch, create, update, delete]
`;
}

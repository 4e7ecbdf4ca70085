/**
 * Namespace names the controller is given (WATCH_NAMESPACE, `--trusted-namespaces`), checked when it starts: a name
 * the API server could never hold would make a watch fail forever, or a trusted namespace that cannot exist.
 */

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Why `name` cannot name a namespace (a DNS-1123 label, as kube-apiserver requires), or undefined when it can. */
export function namespaceNameProblem(name: string): string | undefined {
  if (name.length > 63) return `it has ${name.length} characters, at most 63 are allowed`;
  if (!DNS1123_LABEL.test(name)) {
    return "it must consist of lowercase letters, digits and '-', and start and end with a letter or digit";
  }
  return undefined;
}

/**
 * The namespaces of a comma-separated list (`espejo-system,platform`), each checked; empty entries are skipped.
 * Undefined for an empty list: delegated mode is off.
 */
export function parseNamespaceList(text: string): string[] | undefined {
  const names = [...new Set(text.split(",").map((n) => n.trim()).filter((n) => n))];
  for (const name of names) {
    const problem = namespaceNameProblem(name);
    if (problem) throw new Error(`${JSON.stringify(name)} is not a namespace name: ${problem}`);
  }
  return names.length ? names : undefined;
}

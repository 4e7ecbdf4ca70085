/**
 * Namespace selection as espejo defines it: a namespace is targeted when the label selector matches or any
 * `matchNames` pattern matches, and no `ignoreNames` pattern matches. Patterns are RE2 (linear time, the syntax of
 * Go's regexp) and anchored at both ends. Everything is compiled once per SyncConfig generation.
 */
import { RE2JS } from "re2js";

export interface LabelSelectorRequirement {
  key: string;
  operator: string;
  values?: string[];
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

export interface NamespaceSelectorSpec {
  labelSelector?: LabelSelector;
  matchNames?: string[];
  ignoreNames?: string[];
}

/** The parts of a Namespace that selection needs. */
export interface NamespaceFacts {
  name: string;
  labels: Record<string, string>;
}

export type LabelPredicate = (labels: Record<string, string>) => boolean;

/** A selection error that names the field, e.g. `.spec.namespaceSelector.matchNames[2]`. */
export class SelectorError extends Error {
  constructor(readonly field: string, reason: string) {
    super(`${field} ${reason}`);
  }
}

/** Longest pattern accepted; RE2 is linear in the input, but compiling a huge pattern still costs memory. */
export const MAX_PATTERN_LENGTH = 1024;

const NAME = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Why a label key is invalid (Kubernetes qualified-name rules), or undefined when it is valid. */
export function labelKeyProblem(key: string): string | undefined {
  const slash = key.lastIndexOf("/");
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined && (prefix.length === 0 || prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix))) {
    return `has an invalid prefix "${prefix}": it must be a lowercase DNS subdomain`;
  }
  if (name.length === 0 || name.length > 63 || !NAME.test(name)) {
    return `"${key}" is not a valid label key: the name part must be 1-63 alphanumeric characters, '-', '_' or '.', ` +
      "starting and ending with an alphanumeric character";
  }
  return undefined;
}

function labelValueProblem(value: string): string | undefined {
  if (value === "") return undefined;
  if (value.length > 63 || !NAME.test(value)) {
    return `"${value}" is not a valid label value: at most 63 alphanumeric characters, '-', '_' or '.', ` +
      "starting and ending with an alphanumeric character";
  }
  return undefined;
}

/** Compiles a metav1.LabelSelector; throws {@link SelectorError} naming the offending field. */
export function compileLabelSelector(sel: LabelSelector, field: string): LabelPredicate {
  const checks: LabelPredicate[] = [];
  for (const [key, value] of Object.entries(sel.matchLabels ?? {})) {
    const problem = labelKeyProblem(key) ?? (typeof value === "string" ? labelValueProblem(value) : "must be a string");
    if (problem) throw new SelectorError(`${field}.matchLabels[${JSON.stringify(key)}]`, problem);
    checks.push((labels) => Object.hasOwn(labels, key) && labels[key] === value);
  }
  (sel.matchExpressions ?? []).forEach((req, i) => {
    const f = `${field}.matchExpressions[${i}]`;
    const keyProblem = labelKeyProblem(req.key ?? "");
    if (keyProblem) throw new SelectorError(`${f}.key`, keyProblem);
    const values = req.values ?? [];
    switch (req.operator) {
      case "In":
      case "NotIn": {
        if (values.length === 0) {
          throw new SelectorError(`${f}.values`, `must be non-empty for operator ${req.operator}`);
        }
        for (const v of values) {
          const p = labelValueProblem(v);
          if (p) throw new SelectorError(`${f}.values`, p);
        }
        const set = new Set(values);
        checks.push(
          req.operator === "In"
            ? (labels) => Object.hasOwn(labels, req.key) && set.has(labels[req.key])
            : (labels) => !Object.hasOwn(labels, req.key) || !set.has(labels[req.key]),
        );
        break;
      }
      case "Exists":
      case "DoesNotExist":
        if (values.length > 0) throw new SelectorError(`${f}.values`, `must be empty for operator ${req.operator}`);
        checks.push(
          req.operator === "Exists"
            ? (labels) => Object.hasOwn(labels, req.key)
            : (labels) => !Object.hasOwn(labels, req.key),
        );
        break;
      default:
        throw new SelectorError(
          `${f}.operator`,
          `"${req.operator}" is not a valid operator: use In, NotIn, Exists or DoesNotExist`,
        );
    }
  });
  return (labels) => checks.every((c) => c(labels));
}

/** Compiles a name pattern anchored at both ends; throws {@link SelectorError} naming the field. */
export function compilePattern(pattern: string, field: string): (name: string) => boolean {
  if (typeof pattern !== "string") throw new SelectorError(field, "must be a string");
  if (pattern.length > MAX_PATTERN_LENGTH) {
    throw new SelectorError(field, `is ${pattern.length} characters long, more than the ${MAX_PATTERN_LENGTH} allowed`);
  }
  try {
    // matches() is a whole-string match, so the pattern is anchored at both ends without rewriting it (wrapping it
    // in ^(?:...)$ would break a trailing \Q literal and make error messages quote our text instead of the user's).
    const re = RE2JS.compile(pattern);
    return (name) => re.matches(name);
  } catch (e) {
    const reason = (e instanceof Error ? e.message : String(e)).replace(/^error parsing regexp: /, "");
    throw new SelectorError(field, `is not a valid regular expression: ${reason}`);
  }
}

/** A compiled namespace selector. */
export interface NamespaceSelector {
  /** Whether the namespace is targeted (phase is not considered here). */
  selects(ns: NamespaceFacts): boolean;
}

/**
 * Compiles `.spec.namespaceSelector`. Throws {@link SelectorError} when neither labelSelector nor matchNames is set,
 * or when a pattern or the label selector is invalid.
 */
export function compileNamespaceSelector(spec: NamespaceSelectorSpec | undefined): NamespaceSelector {
  const base = ".spec.namespaceSelector";
  if (!spec || (!spec.labelSelector && !(spec.matchNames?.length))) {
    throw new SelectorError(base, "needs matchNames or labelSelector: without either no namespace is targeted");
  }
  const labels = spec.labelSelector ? compileLabelSelector(spec.labelSelector, `${base}.labelSelector`) : undefined;
  const match = (spec.matchNames ?? []).map((p, i) => compilePattern(p, `${base}.matchNames[${i}]`));
  const ignore = (spec.ignoreNames ?? []).map((p, i) => compilePattern(p, `${base}.ignoreNames[${i}]`));
  return {
    selects(ns) {
      if (ignore.some((m) => m(ns.name))) return false;
      if (labels && labels(ns.labels)) return true;
      return match.some((m) => m(ns.name));
    },
  };
}

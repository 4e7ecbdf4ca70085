/**
 * Namespace selection as espejo defines it: a namespace is targeted when the label selector matches or any
 * `matchNames` pattern matches, and no `ignoreNames` pattern matches. Patterns are RE2 (linear time, the syntax of
 * Go's regexp) and anchored at both ends. Everything is compiled once per SyncConfig generation.
 *
 * Matching is linear, but compiling is not free: re2js spends about 0.8 KiB per program instruction while compiling
 * and keeps about 0.2 KiB per instruction and 5 KiB per pattern afterwards, and one 1,000-character pattern can ask
 * for 200,000 instructions. So the cost of a selector is bounded before it is paid: each pattern's
 * program size is estimated from its text (lib/model/regexp_size.ts) and must stay within {@link MAX_PROGRAM_SIZE}, the
 * patterns of one selector within {@link MAX_SELECTOR_PROGRAM_SIZE} together, and each list within
 * {@link MAX_PATTERNS} patterns. These limits are tighter than Go's (which refuses programs only above 3.3 million
 * instructions), but every pattern that makes sense for a namespace name (at most 63 characters) is far below them.
 * A label selector is bounded too, in keys and characters (lib/model/selector_size.ts): its keys are held while its
 * SyncConfig is, and in delegated mode a team writes them.
 */
import { RE2JS } from "re2js";
import { isObject } from "../kube/objects.ts";
import { estimateProgramSize } from "./regexp_size.ts";
import { selectorSizeProblem } from "./selector_size.ts";

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
  /**
   * Set when the labels were trimmed to the keys SyncConfigs read (lib/model/namespace_info.ts): the version of that
   * key set then. A SyncConfig that came since may read a key that was left out (see Registry.labelsKnown).
   */
  labelsFor?: number;
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

/**
 * Largest program one pattern may compile to, in instructions by Go's size rule: about 4 MiB while compiling and 1
 * MiB kept. `\pL{0,63}` is 126, `tenant-[a-z]{1,20}-.*` 50, an alternation of 200 short names about 900,
 * `.{0,1000}` 2,000; without counted repeats no pattern of {@link MAX_PATTERN_LENGTH} characters exceeds about 1,600.
 */
export const MAX_PROGRAM_SIZE = 5000;

/** Largest program size of all patterns of one selector together: 1,000 names of 20 characters need about 22,000. */
export const MAX_SELECTOR_PROGRAM_SIZE = 50_000;

/** Most patterns in `matchNames` or in `ignoreNames`: each compiled pattern keeps about 5 KiB whatever its size. */
export const MAX_PATTERNS = 1000;

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

/** Whether untrusted JSON is not an object (without narrowing the declared type, which it is meant to check). */
const notObject = (v: unknown): boolean => !isObject(v);

/**
 * Compiles a metav1.LabelSelector; throws {@link SelectorError} naming the offending field, or the selector when it
 * is larger than selector_size.ts allows (in keys or characters).
 */
export function compileLabelSelector(sel: LabelSelector, field: string): LabelPredicate {
  const checks: LabelPredicate[] = [];
  if (notObject(sel)) throw new SelectorError(field, "must be an object");
  if (sel.matchLabels != null && notObject(sel.matchLabels)) {
    throw new SelectorError(`${field}.matchLabels`, "must be an object of strings");
  }
  if (sel.matchExpressions != null && !Array.isArray(sel.matchExpressions)) {
    throw new SelectorError(`${field}.matchExpressions`, "must be a list");
  }
  const size = selectorSizeProblem(sel);
  if (size) throw new SelectorError(field, size);
  for (const [key, value] of Object.entries(sel.matchLabels ?? {})) {
    const problem = labelKeyProblem(key) ?? (typeof value === "string" ? labelValueProblem(value) : "must be a string");
    if (problem) throw new SelectorError(`${field}.matchLabels[${JSON.stringify(key)}]`, problem);
    checks.push((labels) => Object.hasOwn(labels, key) && labels[key] === value);
  }
  (sel.matchExpressions ?? []).forEach((req, i) => {
    const f = `${field}.matchExpressions[${i}]`;
    if (notObject(req)) throw new SelectorError(f, "must be an object");
    if (req.key != null && typeof req.key !== "string") throw new SelectorError(`${f}.key`, "must be a string");
    const keyProblem = labelKeyProblem(req.key ?? "");
    if (keyProblem) throw new SelectorError(`${f}.key`, keyProblem);
    const values = req.values ?? [];
    if (!Array.isArray(values) || values.some((v) => typeof v !== "string")) {
      throw new SelectorError(`${f}.values`, "must be a list of strings");
    }
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

/**
 * Checks a pattern's type, length and estimated program size without compiling it, and returns that size. Throws
 * {@link SelectorError}: `is not a valid regular expression: expression too large: it would compile to N
 * instructions, more than the M allowed`, or `invalid repeat count` for nested counted repeats Go refuses (as Go
 * words it), so that an expensive pattern is never handed to re2js.
 */
function checkPattern(pattern: string, field: string): number {
  if (typeof pattern !== "string") throw new SelectorError(field, "must be a string");
  if (pattern.length > MAX_PATTERN_LENGTH) {
    throw new SelectorError(field, `is ${pattern.length} characters long, more than the ${MAX_PATTERN_LENGTH} allowed`);
  }
  const { size, invalidRepeat } = estimateProgramSize(pattern);
  if (size > MAX_PROGRAM_SIZE) {
    // A pattern within the limit goes to re2js, which reports its syntax errors (invalid repeats too) while parsing,
    // before the expensive part.
    throw new SelectorError(
      field,
      "is not a valid regular expression: " +
        (invalidRepeat !== undefined
          ? `invalid repeat count: \`${invalidRepeat}\``
          : `expression too large: it would compile to ${size} instructions, more than the ${MAX_PROGRAM_SIZE} allowed`),
    );
  }
  return size;
}

/**
 * Compiles a name pattern anchored at both ends; throws {@link SelectorError} naming the field when the pattern is
 * not a string, longer than {@link MAX_PATTERN_LENGTH}, would compile to more than {@link MAX_PROGRAM_SIZE}
 * instructions (checked before compiling), or is not valid RE2.
 */
export function compilePattern(pattern: string, field: string): (name: string) => boolean {
  checkPattern(pattern, field);
  return compileChecked(pattern, field);
}

function compileChecked(pattern: string, field: string): (name: string) => boolean {
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
 * when a pattern or the label selector is invalid, when a list has more than {@link MAX_PATTERNS} patterns, or when
 * the patterns together would compile to more than {@link MAX_SELECTOR_PROGRAM_SIZE} instructions. Each pattern is
 * checked before it is compiled, so the work done for a selector that is refused stays within these limits too.
 */
export function compileNamespaceSelector(spec: NamespaceSelectorSpec | undefined): NamespaceSelector {
  const base = ".spec.namespaceSelector";
  if (!spec || (!spec.labelSelector && !(spec.matchNames?.length))) {
    throw new SelectorError(base, "needs matchNames or labelSelector: without either no namespace is targeted");
  }
  const labels = spec.labelSelector ? compileLabelSelector(spec.labelSelector, `${base}.labelSelector`) : undefined;
  let total = 0;
  const compileList = (list: "matchNames" | "ignoreNames") => {
    const patterns: unknown = spec[list] ?? [];
    if (!Array.isArray(patterns)) throw new SelectorError(`${base}.${list}`, "must be a list of strings");
    if (patterns.length > MAX_PATTERNS) {
      throw new SelectorError(
        `${base}.${list}`,
        `has ${patterns.length} patterns, more than the ${MAX_PATTERNS} allowed: select many namespaces by label`,
      );
    }
    return patterns.map((p, i) => {
      const field = `${base}.${list}[${i}]`;
      total += checkPattern(p, field);
      if (total > MAX_SELECTOR_PROGRAM_SIZE) {
        throw new SelectorError(
          field,
          `is one pattern too many: with it the patterns would compile to ${total} instructions together, ` +
            `more than the ${MAX_SELECTOR_PROGRAM_SIZE} allowed`,
        );
      }
      return compileChecked(p, field);
    });
  };
  const match = compileList("matchNames");
  const ignore = compileList("ignoreNames");
  return {
    selects(ns) {
      if (ignore.some((m) => m(ns.name))) return false;
      if (labels && labels(ns.labels)) return true;
      return match.some((m) => m(ns.name));
    },
  };
}

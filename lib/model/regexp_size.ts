/**
 * The size of the program an RE2 pattern (Go syntax) compiles to, worked out from the pattern text before anything
 * is compiled. Compiling is where a hostile pattern costs: re2js expands every counted repeat into copies, about
 * 0.8 KiB of memory per instruction while compiling, so `\pL{0,999}` a hundred times over (1,000 characters, 199,800
 * instructions) takes the process to 300 MiB for more than a second. re2js refuses programs only above 1.4 million
 * instructions, and does not export its parser, so the size is estimated here with a scanner that follows the
 * structure re2js's parser gives a pattern (groups, classes, escapes, `\Q...\E`, which `{` starts a repeat) and
 * Go's `regexp/syntax` size rule: literals, classes and empty-width assertions count 1, a capture 2 more than its
 * contents, `*` 2 more, `+` and `?` 1 more, an alternation of n branches n-1 more, and `x{min,max}` counts
 * max copies of x plus max-min (`x{min,}`: min copies plus 1; `x{0,}` as `x*`).
 *
 * The estimate never falls below what re2js builds for a pattern it accepts (it does not factor alternations or
 * merge classes as the parser does), and it is only an estimate: it never throws, and syntax errors are left to
 * re2js, which finds them while parsing, before the expensive part.
 */

/** What {@link estimateProgramSize} found. */
export interface ProgramSize {
  /** Instructions the program would have, by Go's size rule; saturates at 2^40. */
  size: number;
  /**
   * The first counted repeat Go's regexp refuses with "invalid repeat count", as Go quotes it (e.g. "{500}"): a
   * count above 1000, min above max, or nested counted repeats whose counts multiply to more than 1000.
   */
  invalidRepeat?: string;
}

/** Go's limit on a repeat count and on the product of nested repeat counts (regexp/syntax `repeatIsValid`). */
export const MAX_REPEAT = 1000;

const CAP = 2 ** 40;
const sat = (n: number): number => Math.min(CAP, Math.max(1, n));

/** A parsed piece: its size and the largest product of counted repeats along any path into it. */
interface Piece {
  size: number;
  product: number;
}

/** An open group: its finished alternatives and the pieces of the current one. */
interface Group {
  capture: boolean;
  alternatives: Piece[];
  pieces: Piece[];
}

const LEAF: Piece = { size: 1, product: 1 };
const PERL_CLASSES = new Set(["d", "D", "s", "S", "w", "W"]);

function concat(pieces: Piece[]): Piece {
  let size = 0;
  let product = 1;
  for (const p of pieces) {
    size += p.size;
    product = Math.max(product, p.product);
  }
  return { size: sat(size), product };
}

function close(group: Group): Piece {
  const alternatives = [...group.alternatives, concat(group.pieces)];
  let size = alternatives.length - 1 + (group.capture ? 2 : 0);
  let product = 1;
  for (const a of alternatives) {
    size += a.size;
    product = Math.max(product, a.product);
  }
  return { size: sat(size), product };
}

/**
 * Parses a repeat count at `i` as re2js does: `{n}`, `{n,}` or `{n,m}`, digits without a leading zero. Returns
 * undefined when the text is not a repeat (then `{` is a literal); a count of more than 8 digits is Infinity.
 */
function parseRepeat(p: string, i: number): { min: number; max: number; end: number } | undefined {
  const int = (at: number): { n: number; end: number } | undefined => {
    let end = at;
    while (end < p.length && p[end] >= "0" && p[end] <= "9") end++;
    const digits = p.slice(at, end);
    if (digits.length === 0 || (digits.length > 1 && digits[0] === "0")) return undefined;
    return { n: digits.length > 8 ? Infinity : Number(digits), end };
  };
  const min = int(i + 1);
  if (!min) return undefined;
  let max = min.n;
  let j = min.end;
  if (p[j] === ",") {
    j++;
    if (p[j] === "}") {
      max = -1;
    } else {
      const m = int(j);
      if (!m) return undefined;
      max = m.n;
      j = m.end;
    }
  }
  if (p[j] !== "}") return undefined;
  return { min: min.n, max, end: j + 1 };
}

/** Index after an escape that starts at `i` (the backslash) and is neither `\Q` nor a class: `\x{...}`, `\x41`, `\n`. */
function escapeEnd(p: string, i: number): number {
  const c = p[i + 1];
  if (c === "x") {
    if (p[i + 2] === "{") {
      const close = p.indexOf("}", i + 3);
      return close < 0 ? i + 3 : close + 1;
    }
    return Math.min(p.length, i + 4);
  }
  if (c === "p" || c === "P") {
    if (p[i + 2] === "{") {
      const close = p.indexOf("}", i + 3);
      return close < 0 ? i + 3 : close + 1;
    }
    return codePointEnd(p, i + 2);
  }
  return codePointEnd(p, i + 1);
}

/** Index after the code point at `i` (a surrogate pair is one code point). */
function codePointEnd(p: string, i: number): number {
  if (i >= p.length) return p.length;
  return i + ((p.codePointAt(i) ?? 0) > 0xffff ? 2 : 1);
}

/** Index after the character class that starts at `i` (the `[`), following re2js's parseClass. */
function classEnd(p: string, i: number): number {
  let j = i + 1;
  if (p[j] === "^") j++;
  let first = true;
  while (j < p.length && (p[j] !== "]" || first)) {
    first = false;
    if (p.startsWith("[:", j)) {
      const close = p.indexOf(":]", j);
      if (close >= 0) {
        j = close + 2;
        continue;
      }
    }
    const single = p[j] !== "\\" || (p[j + 1] !== "p" && p[j + 1] !== "P" && !PERL_CLASSES.has(p[j + 1]));
    j = p[j] === "\\" ? escapeEnd(p, j) : codePointEnd(p, j);
    if (single && p[j] === "-" && p[j + 1] !== "]" && j + 1 < p.length) {
      j = p[j + 1] === "\\" ? escapeEnd(p, j + 1) : codePointEnd(p, j + 1);
    }
  }
  return Math.min(p.length, j + 1);
}

/**
 * Estimates the size of the program `pattern` compiles to (see the file comment), in time linear in its length and
 * without recursion. Patterns re2js refuses get some estimate; it does not matter which.
 */
export function estimateProgramSize(pattern: string): ProgramSize {
  const p = pattern;
  const stack: Group[] = [{ capture: false, alternatives: [], pieces: [] }];
  let invalidRepeat: string | undefined;
  const top = () => stack[stack.length - 1];
  const repeat = (min: number, max: number, text: string) => {
    const counted = text.startsWith("{");
    const refuse = (why: boolean) => {
      if (why && counted && invalidRepeat === undefined) invalidRepeat = text;
    };
    refuse(min > MAX_REPEAT || max > MAX_REPEAT || (max >= 0 && min > max)); // before the argument, as in re2js
    const pieces = top().pieces;
    const sub = pieces.at(-1);
    if (!sub) return; // re2js: missing argument to repetition operator
    let size: number;
    if (max === -1) size = min === 0 ? 2 + sub.size : 1 + min * sub.size;
    else size = max * sub.size + Math.max(0, max - min);
    const m = max === -1 ? min : max;
    const product = max === 0 ? 1 : Math.min(CAP, (m > 0 ? m : 1) * sub.product);
    refuse((min >= 2 || max >= 2) && product > MAX_REPEAT);
    pieces[pieces.length - 1] = { size: sat(size), product };
  };
  let i = 0;
  while (i < p.length) {
    const c = p[i];
    switch (c) {
      case "(": {
        let capture = true;
        let j = i + 1;
        if (p.startsWith("(?P<", i) || p.startsWith("(?<", i)) {
          const end = p.indexOf(">", i);
          j = end < 0 ? i + 3 : end + 1;
        } else if (p[i + 1] === "?") {
          capture = false;
          j = i + 2;
          while (j < p.length && "imsU-".includes(p[j])) j++;
          if (p[j] === ")") { // flags only, e.g. (?i): no group
            i = j + 1;
            break;
          }
          if (p[j] === ":") j++;
        }
        stack.push({ capture, alternatives: [], pieces: [] });
        i = j;
        break;
      }
      case "|":
        top().alternatives.push(concat(top().pieces));
        top().pieces = [];
        i++;
        break;
      case ")":
        if (stack.length > 1) {
          const group = close(stack.pop()!);
          top().pieces.push(group);
        }
        i++;
        break;
      case "*":
      case "+":
      case "?": {
        const nonGreedy = p[i + 1] === "?";
        if (c === "*") repeat(0, -1, c);
        else if (c === "+") repeat(1, -1, c);
        else repeat(0, 1, c);
        i += nonGreedy ? 2 : 1;
        break;
      }
      case "{": {
        const r = parseRepeat(p, i);
        if (!r) {
          top().pieces.push(LEAF);
          i++;
          break;
        }
        const min = Number.isFinite(r.min) ? r.min : CAP;
        const max = Number.isFinite(r.max) ? r.max : CAP;
        repeat(min, max, p.slice(i, r.end));
        i = r.end + (p[r.end] === "?" ? 1 : 0);
        break;
      }
      case "[":
        top().pieces.push(LEAF);
        i = classEnd(p, i);
        break;
      case "\\":
        if (p[i + 1] === "Q") {
          const end = p.indexOf("\\E", i + 2);
          const literal = p.slice(i + 2, end < 0 ? p.length : end);
          for (const _ of literal) top().pieces.push(LEAF);
          i = end < 0 ? p.length : end + 2;
          break;
        }
        top().pieces.push(LEAF);
        i = p[i + 1] === undefined ? i + 1 : escapeEnd(p, i);
        break;
      default:
        top().pieces.push(LEAF);
        i = codePointEnd(p, i);
    }
  }
  while (stack.length > 1) { // re2js: missing closing )
    const group = close(stack.pop()!);
    top().pieces.push(group);
  }
  const size = close(stack[0]).size;
  return invalidRepeat === undefined ? { size } : { size, invalidRepeat };
}

/**
 * Splits a Kubernetes list (`{"kind":…,"metadata":{…},"items":[…]}`) arriving as text chunks into the JSON text of
 * each element of its top-level `items`, handed on as soon as the element is complete, and the rest of the list
 * (kind, metadata) at the end. A list of 40 objects of 1 MiB then costs one object at a time, never the page.
 *
 * Each character is looked at about once, and never one at a time where a native search can jump: strings are
 * skipped with `indexOf('"')`, the structure between them with one regular-expression search. This matters because
 * the controller runs without a JIT (`--lite-mode`), where a loop over characters in JavaScript is slow. The input
 * is trusted to be JSON (it comes from the API server): malformed text is not diagnosed here, it fails in
 * `JSON.parse` of an element or of the rest, or at {@link JsonItemSplitter.end}.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const COMMA = 0x2c;
const CLOSE_BRACKET = 0x5d;

/** The next character that is not JSON whitespace. */
const NON_SPACE = /[^ \t\n\r]/g;
/** The end of a number, `true`, `false` or `null`. */
const PRIMITIVE_END = /[,\] \t\n\r]/g;
/** The tail of the rest text just before the `[` of the top-level items. */
const ITEMS_KEY = /"items"[ \t\n\r]*:[ \t\n\r]*$/;

/** Where the reading is. */
const REST = 0; // outside the items array (the rest of the list)
const BETWEEN = 1; // in the items array, between elements
const ELEMENT = 2; // in an element that is an object, an array or a string
const PRIMITIVE = 3; // in an element that is a number or a literal

export class JsonItemSplitter {
  #depth = 0;
  #inString = false;
  /** The first character of the next chunk is escaped by a backslash at the end of this one. */
  #escaped = false;
  #where = REST;
  #itemsDone = false;
  /** Pieces of the element being read (from earlier chunks). */
  #element: string[] = [];
  /** Pieces of the rest of the list (all but the elements of its items). */
  #rest: string[] = [];
  /** The last characters of the rest, to recognise the `"items":` key before a `[`. */
  #restTail = "";

  /** `onItem` gets the JSON text of each element of the top-level `items`, in order. */
  constructor(private readonly onItem: (json: string) => void) {}

  /**
   * Reads the next chunk of the list's text. The state lives in local variables while a chunk is read: without a
   * JIT (and without inline caches, in lite mode) every property access costs a lookup.
   */
  push(chunk: string): void {
    const n = chunk.length;
    let start = 0; // where the current element or piece of the rest begins in this chunk
    let i = 0;
    let depth = this.#depth;
    let inString = this.#inString;
    let escaped = this.#escaped;
    let where = this.#where;
    // The next position of each structural character (n: none), searched again only once the reading passed it; a
    // position inside a string that is skipped is then searched again from after the string.
    let quote = -1;
    let openBrace = -1;
    let closeBrace = -1;
    let openBracket = -1;
    let closeBracket = -1;
    while (i < n) {
      if (inString) {
        // The closing quote: one not escaped by an odd run of backslashes (which may begin in the last chunk).
        let q = chunk.indexOf('"', i);
        for (;;) {
          const end = q < 0 ? n : q;
          let b = end;
          while (b > i && chunk.charCodeAt(b - 1) === BACKSLASH) b--;
          let run = end - b;
          if (b === 0 && escaped) run++;
          escaped = false;
          if (q < 0) {
            escaped = run % 2 === 1;
            break;
          }
          if (run % 2 === 0) break;
          i = q + 1;
          q = chunk.indexOf('"', i);
        }
        if (q < 0) {
          i = n;
          break;
        }
        inString = false;
        i = q + 1;
        if (where === ELEMENT && depth === 2) {
          start = this.#emit(chunk, start, i);
          where = BETWEEN;
        }
      } else if (where === BETWEEN) {
        NON_SPACE.lastIndex = i;
        if (!NON_SPACE.test(chunk)) break;
        const p = NON_SPACE.lastIndex - 1;
        const c = chunk.charCodeAt(p);
        start = p;
        i = p + 1;
        if (c === COMMA) continue;
        if (c === CLOSE_BRACKET) {
          depth = 1;
          where = REST;
          this.#itemsDone = true;
        } else if (c === QUOTE) {
          where = ELEMENT;
          inString = true;
          escaped = false;
        } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
          where = ELEMENT;
          depth = 3;
        } else {
          where = PRIMITIVE;
          i = p;
        }
      } else if (where === PRIMITIVE) {
        PRIMITIVE_END.lastIndex = i;
        if (!PRIMITIVE_END.test(chunk)) break;
        i = PRIMITIVE_END.lastIndex - 1;
        start = this.#emit(chunk, start, i);
        where = BETWEEN;
      } else {
        if (quote < i) quote = found(chunk, '"', i);
        if (openBrace < i) openBrace = found(chunk, "{", i);
        if (closeBrace < i) closeBrace = found(chunk, "}", i);
        if (openBracket < i) openBracket = found(chunk, "[", i);
        if (closeBracket < i) closeBracket = found(chunk, "]", i);
        let p = quote;
        if (openBrace < p) p = openBrace;
        if (closeBrace < p) p = closeBrace;
        if (openBracket < p) p = openBracket;
        if (closeBracket < p) p = closeBracket;
        if (p === n) break;
        i = p + 1;
        if (p === quote) {
          inString = true;
          escaped = false;
        } else if (p === openBrace || p === openBracket) {
          depth++;
          if (p === openBracket && depth === 2 && where === REST && this.#isItemsKey(chunk, start, p)) {
            this.#addRest(chunk.slice(start, i));
            where = BETWEEN;
          }
        } else {
          depth--;
          if (where === ELEMENT && depth === 2) {
            start = this.#emit(chunk, start, i);
            where = BETWEEN;
          }
        }
      }
    }
    this.#depth = depth;
    this.#inString = inString;
    this.#escaped = escaped;
    this.#where = where;
    // The chunk is read: keep what belongs to an unfinished element or to the rest.
    if (where === ELEMENT || where === PRIMITIVE) this.#element.push(chunk.slice(start));
    else if (where === REST) this.#addRest(chunk.slice(start));
  }

  /** Ends the input: returns the list without its items (`items` itself is left out). Throws on a truncated list. */
  end(): Record<string, unknown> {
    if (this.#inString || this.#depth !== 0 || this.#where !== REST) {
      throw new SyntaxError("The list ended before its JSON was complete");
    }
    const rest = JSON.parse(this.#rest.join(""));
    this.#rest = [];
    if (rest && typeof rest === "object" && !Array.isArray(rest)) {
      delete (rest as Record<string, unknown>).items;
      return rest as Record<string, unknown>;
    }
    return {};
  }

  /** Hands on the element that ends at `end`; returns where the text after it begins. */
  #emit(chunk: string, start: number, end: number): number {
    let json = chunk.slice(start, end);
    if (this.#element.length) {
      this.#element.push(json);
      json = this.#element.join("");
      this.#element = [];
    }
    this.onItem(json);
    return end;
  }

  #addRest(text: string): void {
    if (!text) return;
    this.#rest.push(text);
    this.#restTail = (this.#restTail + text).slice(-64);
  }

  #isItemsKey(chunk: string, start: number, bracket: number): boolean {
    if (this.#itemsDone) return false;
    return ITEMS_KEY.test((this.#restTail + chunk.slice(start, bracket)).slice(-64));
  }
}

/** The position of `c` in `chunk` from `from`, or the chunk's length. */
function found(chunk: string, c: string, from: number): number {
  const p = chunk.indexOf(c, from);
  return p < 0 ? chunk.length : p;
}

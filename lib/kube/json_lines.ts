/**
 * Splits a watch stream (one JSON event a line) arriving as text chunks into its lines. A line of 1 MiB arriving in
 * a thousand chunks costs one search of each chunk and one join, not a search of the whole buffer per chunk: only
 * the new text is searched for a newline, and the pieces of an unfinished line are kept apart until it ends.
 */
export class LineSplitter {
  #pieces: string[] = [];

  /** The lines completed by `chunk`, trimmed, empty ones left out. */
  push(chunk: string): string[] {
    const lines: string[] = [];
    let from = 0;
    for (let nl = chunk.indexOf("\n"); nl >= 0; nl = chunk.indexOf("\n", from)) {
      let line = chunk.slice(from, nl);
      if (this.#pieces.length) {
        this.#pieces.push(line);
        line = this.#pieces.join("");
        this.#pieces = [];
      }
      line = line.trim();
      if (line) lines.push(line);
      from = nl + 1;
    }
    if (from < chunk.length) this.#pieces.push(chunk.slice(from));
    return lines;
  }
}

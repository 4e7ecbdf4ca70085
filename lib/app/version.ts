/** The release version; the Dockerfile and releases set it, development builds say "dev". */
export const VERSION = "0.1.0-dev";

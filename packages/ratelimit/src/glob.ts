// Tool pattern globs (CONTRACT 8): `*` matches any run of characters (also none), `?` exactly one, everything else
// itself. Matched with the greedy two-pointer algorithm instead of a RegExp: a pattern is user input, and
// `*a*a*a…` compiled to a backtracking regex is polynomial in the tool key per star. This is O(pattern × key) at
// worst and linear in practice.

/** Whether `text` matches the glob `pattern` as a whole. Characters are compared by UTF-16 code unit. */
export function globMatches(pattern: string, text: string): boolean {
  let p = 0;
  let t = 0;
  // Where the last `*` was, and the text position it currently swallows up to.
  let star = -1;
  let resume = 0;
  while (t < text.length) {
    const c = pattern.charCodeAt(p);
    if (p < pattern.length && (c === 63 /* ? */ || c === text.charCodeAt(t)) && c !== 42 /* * */) {
      p += 1;
      t += 1;
    } else if (p < pattern.length && c === 42) {
      star = p;
      resume = t;
      p += 1;
    } else if (star !== -1) {
      // Let the last star swallow one more character and retry from just after it.
      p = star + 1;
      resume += 1;
      t = resume;
    } else {
      return false;
    }
  }
  while (p < pattern.length && pattern.charCodeAt(p) === 42) p += 1;
  return p === pattern.length;
}

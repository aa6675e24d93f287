/**
 * Checks that a text is one JSON value whose objects have unique member names (SPEC 6.3.4). `JSON.parse` accepts
 * duplicates and keeps the last, so they are found with a small scanner over the already-valid text.
 * Returns null when the text is acceptable, or a readable reason.
 */
export function jsonProblem(text: string): string | null {
  try {
    JSON.parse(text);
  } catch (error) {
    return `not valid JSON: ${(error as Error).message}`;
  }
  // The text is valid JSON, so strings, nesting and separators are well-formed; track keys per object.
  const stack: (Set<string> | null)[] = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i];
    if (c === '{') {
      stack.push(new Set());
      expectKey = true;
    } else if (c === '[') {
      stack.push(null);
      expectKey = false;
    } else if (c === '}' || c === ']') {
      stack.pop();
      expectKey = false;
    } else if (c === ',') {
      expectKey = stack.at(-1) instanceof Set;
    } else if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      if (expectKey) {
        const key = JSON.parse(text.slice(i, j + 1)) as string;
        const keys = stack.at(-1) as Set<string>;
        if (keys.has(key)) return `duplicate member name ${JSON.stringify(key)}`;
        keys.add(key);
        expectKey = false;
      }
      i = j;
    }
  }
  return null;
}

// Postgres cannot store every string JSON can carry: text and jsonb reject NUL (U+0000), and jsonb rejects
// unpaired UTF-16 surrogates. Deeply nested values overflow recursive validators and serialisers long before
// any size limit. Request bodies are checked once, up front, so such input is a 422 naming the field instead of
// a database error later.

/** Deepest nesting of arrays and objects accepted in a request body. */
export const MAX_JSON_DEPTH = 64;

/** Where a value cannot be stored, and why. */
export interface UnstorableValue {
  path: string;
  message: string;
}

function problemWith(text: string): string | null {
  if (text.includes('\u0000')) return 'must not contain NUL (\\u0000) characters';
  if (!text.isWellFormed()) return 'must not contain unpaired UTF-16 surrogates';
  return null;
}

/**
 * The first string (member name or value) in a parsed JSON value that Postgres cannot store, or the first place
 * nested deeper than `maxDepth`; null when the whole value is storable. Iterative, so depth cannot overflow it.
 */
export function findUnstorable(value: unknown, maxDepth = MAX_JSON_DEPTH): UnstorableValue | null {
  const stack: { value: unknown; path: string[]; depth: number }[] = [{ value, path: [], depth: 0 }];
  while (stack.length > 0) {
    const { value: current, path, depth } = stack.pop()!;
    if (typeof current === 'string') {
      const problem = problemWith(current);
      if (problem) return { path: path.join('.'), message: problem };
      continue;
    }
    if (current === null || typeof current !== 'object') continue;
    if (depth >= maxDepth) return { path: path.join('.'), message: `nested more than ${maxDepth} levels deep` };
    if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i -= 1) stack.push({ value: current[i], path: [...path, String(i)], depth: depth + 1 });
      continue;
    }
    for (const [key, member] of Object.entries(current)) {
      const problem = problemWith(key);
      if (problem) return { path: path.join('.'), message: `a member name ${problem}` };
      stack.push({ value: member, path: [...path, key], depth: depth + 1 });
    }
  }
  return null;
}

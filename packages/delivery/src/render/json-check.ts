// SPEC 6.3.4: a rendered body must be one JSON value whose objects have unique member names. The text is
// rendered from event and variable data, so a problem is reported by kind and position only: JSON.parse's own
// messages quote the text (`Unexpected token 's', "{"a": secret}" is not valid JSON`), and so would a key.

/**
 * Checks that a text is one JSON value whose objects have unique member names (SPEC 6.3.4). `JSON.parse` accepts
 * duplicates and keeps the last, so they are found with a small scanner over the already-valid text.
 * Returns null when the text is acceptable, or a reason that names a kind and a position, never the text.
 */
export function jsonProblem(text: string): string | null {
  try {
    JSON.parse(text);
  } catch {
    const syntax = firstSyntaxError(text);
    return syntax ? `not valid JSON: ${syntax.kind} at position ${syntax.position}` : 'not valid JSON';
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
        if (keys.has(key)) return `duplicate member name at position ${i}`;
        keys.add(key);
        expectKey = false;
      }
      i = j;
    }
  }
  return null;
}

/** Where and why a text is not JSON (0-based UTF-16 offset), for a text JSON.parse refused. */
export interface JsonSyntaxError {
  kind: string;
  position: number;
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const ESCAPE = /["\\/bfnrt]|u[0-9a-fA-F]{4}/y;
const LITERALS = ['true', 'false', 'null'] as const;

/**
 * The first syntax error of a text, by a one-pass scanner with an explicit stack (no recursion, so depth costs
 * nothing); null when the scanner finds none.
 */
export function firstSyntaxError(text: string): JsonSyntaxError | null {
  const n = text.length;
  const stack: ('{' | '[')[] = [];
  let i = 0;
  let state: 'value' | 'firstValue' | 'key' | 'firstKey' | 'colon' | 'after' = 'value';
  const error = (kind: string, position = i): JsonSyntaxError => ({ kind, position });

  const scanString = (): JsonSyntaxError | null => {
    let j = i + 1;
    for (;;) {
      if (j >= n) return error('unterminated string', i);
      const code = text.charCodeAt(j);
      if (code === 0x22) {
        i = j + 1;
        return null;
      }
      if (code === 0x5c) {
        ESCAPE.lastIndex = j + 1;
        const m = ESCAPE.exec(text);
        if (!m) return error('bad escape in string', j);
        j += 1 + m[0].length;
        continue;
      }
      if (code < 0x20) return error('control character in string', j);
      j++;
    }
  };

  for (;;) {
    while (i < n && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r')) i++;
    if (i >= n) return state === 'after' && stack.length === 0 ? null : error('unexpected end of text');
    const c = text[i];
    switch (state) {
      case 'firstValue':
      case 'value': {
        if (state === 'firstValue' && c === ']') {
          stack.pop();
          i++;
          state = 'after';
          continue;
        }
        if (c === '{' || c === '[') {
          stack.push(c);
          i++;
          state = c === '{' ? 'firstKey' : 'firstValue';
          continue;
        }
        if (c === '"') {
          const bad = scanString();
          if (bad) return bad;
          state = 'after';
          continue;
        }
        NUMBER.lastIndex = i;
        const number = NUMBER.exec(text);
        if (number) {
          i += number[0].length;
          state = 'after';
          continue;
        }
        const literal = LITERALS.find((word) => text.startsWith(word, i));
        if (literal === undefined) return error('unexpected character');
        i += literal.length;
        state = 'after';
        continue;
      }
      case 'firstKey':
      case 'key': {
        if (state === 'firstKey' && c === '}') {
          stack.pop();
          i++;
          state = 'after';
          continue;
        }
        if (c !== '"') return error('expected a member name');
        const bad = scanString();
        if (bad) return bad;
        state = 'colon';
        continue;
      }
      case 'colon':
        if (c !== ':') return error("expected ':'");
        i++;
        state = 'value';
        continue;
      case 'after': {
        const top = stack.at(-1);
        if (top === undefined) return error('unexpected text after the value');
        if (c === ',') {
          i++;
          state = top === '{' ? 'key' : 'value';
          continue;
        }
        if ((top === '{' && c === '}') || (top === '[' && c === ']')) {
          stack.pop();
          i++;
          continue;
        }
        return error(`expected ',' or '${top === '{' ? '}' : ']'}'`);
      }
    }
  }
}

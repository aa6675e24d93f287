// Postgres cannot store every string JSON can carry: text and jsonb reject NUL (U+0000), and jsonb rejects
// unpaired UTF-16 surrogates. Deeply nested values overflow recursive validators and serialisers long before
// any size limit, and a 5 MB body of millions of tiny values costs per value. Request bodies are checked once,
// up front, in one linear walk: such input is a 422 naming the field (or a 413 past the value count) instead
// of a database error or a stalled event loop later.

/** Deepest nesting of arrays and objects accepted in a request body. */
export const MAX_JSON_DEPTH = 64;

/**
 * Values (strings, numbers, booleans, nulls, arrays, objects, each counting one) in one request body. A full
 * 1,000-event ingestion request with rich payloads has tens of thousands; 5 MB of `[0,0,0,…]` has 2.5 million.
 */
export const MAX_JSON_NODES = 500_000;

/** Where a value cannot be stored, and why; `tooLarge` when the value has more than the allowed nodes. */
export interface UnstorableValue {
  path: string;
  message: string;
  tooLarge?: true;
}

export interface WalkLimits {
  maxDepth?: number;
  maxNodes?: number;
}

// One frame per array or object on the walk; paths are built from the parent links only for the error.
interface Frame {
  readonly value: object;
  readonly parent: Frame | null;
  /** Member name, or array index (turned into text only for an error path). */
  readonly key: string | number;
  readonly depth: number;
}

function problemWith(text: string): string | null {
  if (text.includes('\u0000')) return 'must not contain NUL (\\u0000) characters';
  if (!text.isWellFormed()) return 'must not contain unpaired UTF-16 surrogates';
  return null;
}

function pathOf(frame: Frame | null, key?: string | number): string {
  const keys: (string | number)[] = key === undefined ? [] : [key];
  for (let f = frame; f !== null && f.parent !== null; f = f.parent) keys.push(f.key);
  return keys.reverse().join('.');
}

function reverseFrom(stack: Frame[], start: number): void {
  for (let i = start, j = stack.length - 1; i < j; i += 1, j -= 1) {
    const swap = stack[i]!;
    stack[i] = stack[j]!;
    stack[j] = swap;
  }
}

/**
 * Array, plain object, or something else (a Date, a Map, a class instance). The constructor comparison is the
 * fast path (calls of Array.isArray and Object.getPrototypeOf per value add up over millions of values); a value
 * whose `constructor` is its own member (JSON `{"constructor": 1}`) takes the exact checks.
 */
function kindOf(value: object): 'array' | 'object' | 'other' {
  const ctor = (value as { constructor?: unknown }).constructor;
  if (ctor === Array) return 'array';
  if (ctor === Object) return 'object';
  if (Array.isArray(value)) return 'array';
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null ? 'object' : 'other';
}

/**
 * The first problem of a value that should be stored as JSON: a string (member name or value) Postgres cannot
 * store, a place nested deeper than `maxDepth`, more than `maxNodes` values in all, or something that is not a
 * JSON value (undefined, a function, a Date, a non-finite number: possible from in-process callers); null when
 * the whole value is storable. Iterative and linear in the value's size; a path is built only for the error.
 */
export function findUnstorable(value: unknown, limits: WalkLimits | number = {}): UnstorableValue | null {
  const { maxDepth = MAX_JSON_DEPTH, maxNodes = MAX_JSON_NODES } =
    typeof limits === 'number' ? { maxDepth: limits } : limits;
  let nodes = 0;
  const stack: Frame[] = [];

  // Checks one value found at `key` of `parent` (the root has neither); containers go on the stack.
  const check = (child: unknown, parent: Frame | null, key: string | number, depth: number): UnstorableValue | null => {
    if (++nodes > maxNodes) {
      return {
        path: pathOf(parent),
        message: `has more than ${maxNodes} values (strings, numbers, arrays, objects) in all`,
        tooLarge: true,
      };
    }
    switch (typeof child) {
      case 'string': {
        const problem = problemWith(child);
        return problem ? { path: pathOf(parent, parent === null ? undefined : key), message: problem } : null;
      }
      case 'boolean':
        return null;
      case 'number':
        // child - child is 0 exactly for finite numbers (NaN and ±Infinity give NaN); cheaper than Number.isFinite.
        return child - child === 0
          ? null
          : { path: pathOf(parent, parent === null ? undefined : key), message: 'must be a finite number' };
      case 'object': {
        if (child === null) return null;
        if (kindOf(child) === 'other') {
          return { path: pathOf(parent, parent === null ? undefined : key), message: 'is not a JSON value' };
        }
        if (depth >= maxDepth)
          return {
            path: pathOf(parent, parent === null ? undefined : key),
            message: `nested more than ${maxDepth} levels deep`,
          };
        stack.push({ value: child, parent, key, depth });
        return null;
      }
      default:
        return { path: pathOf(parent, parent === null ? undefined : key), message: 'is not a JSON value' };
    }
  };

  const root = check(value, null, '', 0);
  if (root) return root;
  while (stack.length > 0) {
    const frame = stack.pop()!;
    // Containers found below are pushed in document order; reversing them makes the walk visit them in order.
    const pushedFrom = stack.length;
    const current = frame.value;
    if (kindOf(current) === 'array') {
      const list = current as unknown[];
      for (let i = 0; i < list.length; i += 1) {
        const found = check(list[i], frame, i, frame.depth + 1);
        if (found) return found;
      }
    } else {
      // for…in rather than Object.keys: no array per object, and a plain object has no inherited enumerables.
      for (const key in current) {
        const problem = problemWith(key);
        if (problem) return { path: pathOf(frame), message: `a member name ${problem}` };
        const found = check((current as Record<string, unknown>)[key], frame, key, frame.depth + 1);
        if (found) return found;
      }
    }
    reverseFrom(stack, pushedFrom);
  }
  return null;
}

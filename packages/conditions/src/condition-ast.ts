// Looks at a parsed condition before it is type-checked: which payload fields it names (SPEC 6.2.8) and whether
// its shape could make one evaluation expensive. cel-js has parse-time limits but no evaluation budget, and a
// condition is evaluated for every event of every subscribed webhook.

import type { ASTNode } from '@marcbachmann/cel-js';

/** One reason a condition is refused, readable by the admin who wrote it. */
export interface ConditionIssue {
  message: string;
}

/** Nested comprehensions multiply: three lists of 100 nested three deep are a million steps per event. */
export const MAX_COMPREHENSION_NESTING = 2;

const COMPREHENSIONS = new Set(['all', 'exists', 'exists_one', 'map', 'filter']);

function isNode(value: unknown): value is ASTNode {
  return typeof value === 'object' && value !== null && typeof (value as { op?: unknown }).op === 'string';
}

function childrenOf(node: ASTNode): ASTNode[] {
  const children: ASTNode[] = [];
  const collect = (value: unknown): void => {
    if (Array.isArray(value)) for (const item of value) collect(item);
    else if (isNode(value)) children.push(value);
  };
  collect(node.args);
  return children;
}

/** `x.name` or `x["name"]`: the object and the key, for a key known before evaluation. */
function staticAccess(node: ASTNode): { object: ASTNode; key: string } | undefined {
  if (node.op === '.') return { object: node.args[0], key: node.args[1] };
  if (node.op === '[]') {
    const [object, index] = node.args;
    if (index.op === 'value' && typeof index.args === 'string') return { object, key: index.args };
  }
  return undefined;
}

/** The comprehension variable, when `node` is one of the iterating macros. */
function comprehensionVariable(node: ASTNode): string | undefined {
  if (node.op !== 'rcall' || !COMPREHENSIONS.has(node.args[0])) return undefined;
  const first = node.args[2][0];
  return first?.op === 'id' ? first.args : undefined;
}

/**
 * Payload field names the condition reads as `event.payload.<field>` or `event.payload["<field>"]`, including
 * inside `has()`, in order of first appearance. A comprehension variable named `event` hides the variable.
 */
export function payloadFieldsNamed(ast: ASTNode): string[] {
  const fields = new Set<string>();
  const isPayload = (node: ASTNode): boolean => {
    const access = staticAccess(node);
    return access?.key === 'payload' && access.object.op === 'id' && access.object.args === 'event';
  };
  const visit = (node: ASTNode): void => {
    const access = staticAccess(node);
    if (access && isPayload(access.object)) fields.add(access.key);
    if (node.op === 'rcall' && comprehensionVariable(node) === 'event') {
      visit(node.args[1]);
      return;
    }
    for (const child of childrenOf(node)) visit(child);
  };
  visit(ast);
  return [...fields];
}

/** Shapes whose evaluation cost is out of proportion to the expression's length. */
export function costIssues(ast: ASTNode): ConditionIssue[] {
  const issues: ConditionIssue[] = [];
  let tooDeep = false;
  const visit = (node: ASTNode, depth: number): void => {
    if (node.op === 'rcall' && node.args[0] === 'bind' && node.args[1].op === 'id' && node.args[1].args === 'cel') {
      // Rebinding `x + x` doubles a list or string per level: 40 levels fit in 1024 characters.
      issues.push({ message: 'cel.bind is not supported in conditions' });
    }
    if (node.op === 'rcall' && comprehensionVariable(node) !== undefined) {
      visit(node.args[1], depth);
      if (depth + 1 > MAX_COMPREHENSION_NESTING && !tooDeep) {
        tooDeep = true;
        issues.push({
          message: `comprehensions (all, exists, exists_one, map, filter) may nest at most ${MAX_COMPREHENSION_NESTING} deep`,
        });
      }
      for (const arg of node.args[2]) visit(arg, depth + 1);
      return;
    }
    for (const child of childrenOf(node)) visit(child, depth);
  };
  visit(ast, 0);
  return issues;
}

const NUMERIC = new Set(['int', 'uint', 'double']);

/** The checker's type name of a node, once the program is type-checked. */
function checkedTypeName(node: ASTNode): string {
  const type = (node as { checkedType?: { name?: unknown } }).checkedType;
  return typeof type?.name === 'string' ? type.name : 'dyn';
}

/**
 * Shapes that need the checker's types: `+` that concatenates (strings, bytes, lists, or dyn that may be
 * either) inside the body of a comprehension builds a new value per element, so one event can make the
 * evaluation allocate its size times its length (`changes.map(c, s + s)`). Numeric `+` is fine. The runtime
 * budget (evaluation-budget.ts) would stop such a condition on large events; refusing it at save says so up front.
 */
export function typedCostIssues(ast: ASTNode): ConditionIssue[] {
  let found: ASTNode | undefined;
  const visit = (node: ASTNode, inBody: boolean): void => {
    if (found) return;
    if (inBody && node.op === '+' && !NUMERIC.has(checkedTypeName(node))) {
      found = node;
      return;
    }
    if (node.op === 'rcall' && comprehensionVariable(node) !== undefined) {
      visit(node.args[1], inBody);
      for (const arg of node.args[2]) visit(arg, true);
      return;
    }
    for (const child of childrenOf(node)) visit(child, inBody);
  };
  visit(ast, false);
  if (!found) return [];
  const at = typeof found.start === 'number' ? ` at position ${found.start + 1}` : '';
  return [
    {
      message:
        `concatenation with + inside all, exists, exists_one, map or filter is not allowed${at}: ` +
        'it builds a new string or list for every element; compare the parts instead',
    },
  ];
}

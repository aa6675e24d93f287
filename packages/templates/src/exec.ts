// Executes parsed trees over template data with Go's text/template semantics (see values.ts for how JSON
// maps onto Go values). The structure follows Go's exec.go closely on purpose: which node an error names
// (`executing "t" at <.a.b>`) depends on the order in which nodes are visited, and users see those
// messages when a template is rejected. Execution is bounded in steps, time, output size and template
// depth, so a template cannot keep a delivery worker busy or exhaust its memory.

import { byteLength, compareStrings, toValidText } from './bytes';
import { TemplateError, locate } from './errors';
import { printString } from './fmt';
import { LimitExceeded, wallClockTimer, withBudget, type StartTimer, type Timer } from './budget';
import { Boxed, type ParamType, type TemplateFunction } from './funcs';
import {
  nodeString,
  type ArgNode,
  type BranchNode,
  type ChainNode,
  type CommandNode,
  type FieldNode,
  type IdentifierNode,
  type ListNode,
  type Node,
  type NumberNode,
  type PipeNode,
  type TemplateNode,
  type Tree,
  type VariableNode,
} from './nodes';
import { quote } from './strconv';
import { isTrue, kindOf, mapGet, mapKeys, typeName, Uint8, type GoMap } from './values';

/** Bounds of one execution. */
export interface ExecLimits {
  /** Output size in UTF-8 bytes; also caps any single string a function builds. */
  readonly maxOutputBytes: number;
  /** Nodes visited, range iterations and function calls, together. */
  readonly maxSteps: number;
  /** Time of one execution, as `timer` counts it. */
  readonly maxDurationMs: number;
  /** Starts the time budget of an execution: wall-clock time unless the caller gives a clock of its own. */
  readonly timer: StartTimer;
  /** Nesting of {{template}} calls (Go allows 100000; a JS stack does not). */
  readonly maxTemplateDepth: number;
}

/** The limits used when the caller names none: 1 MiB of output, a million steps, one second, 100 calls deep. */
export const defaultLimits: ExecLimits = {
  maxOutputBytes: 1024 * 1024,
  maxSteps: 1_000_000,
  maxDurationMs: 1000,
  timer: wallClockTimer,
  maxTemplateDepth: 100,
};

/** Plain steps between two readings of the clock (function calls and large writes read it at once). */
export const CLOCK_EVERY_STEPS = 64;

/** A write of more characters than this reads the clock at once. */
const LARGE_WRITE_CHARS = 4096;

/** The functions a template can call, and whether a name is Go's builtin (and/or short-circuit only then). */
export interface FuncTable {
  readonly get: (name: string) => { fn: TemplateFunction; builtin: boolean } | undefined;
}

const NO_FINAL: unique symbol = Symbol('no final value');
type Final = unknown;

const NORMAL = 0;
const BREAK = 1;
const CONTINUE = 2;
type Signal = typeof NORMAL | typeof BREAK | typeof CONTINUE;

interface Variable {
  readonly name: string;
  value: unknown;
  /** The value came out of a map or slice: Go sees an interface{} (it matters only in messages). */
  boxed: boolean;
}

function paramTypeName(t: ParamType | 'boxedValue'): string {
  switch (t) {
    case 'any':
      return 'interface {}';
    case 'value':
    case 'boxedValue':
      return 'reflect.Value';
    default:
      return t;
  }
}

function canBeNil(t: ParamType | 'boxedValue'): boolean {
  return t === 'any' || t === 'value' || t === 'boxedValue';
}

function isHexInt(s: string): boolean {
  return s.length > 2 && s[0] === '0' && (s[1] === 'x' || s[1] === 'X') && !/[pP]/.test(s);
}

class Execution {
  private out = '';
  private outBytes = 0;
  private node: Node | undefined;
  private vars: Variable[];
  private depth = 0;
  private steps = 0;
  private unclocked = 0;
  private readonly time: Timer;
  private tmplName: string;

  constructor(
    private readonly trees: ReadonlyMap<string, Tree>,
    private readonly tree: Tree,
    private readonly funcs: FuncTable,
    private readonly limits: ExecLimits,
    data: unknown,
  ) {
    this.vars = [{ name: '$', value: data, boxed: false }];
    this.tmplName = tree.name;
    this.time = limits.timer(limits.maxDurationMs);
  }

  run(): string {
    const budget = { time: this.time, maxDurationMs: this.limits.maxDurationMs, maxString: this.limits.maxOutputBytes };
    return withBudget(budget, () => {
      this.walk(this.vars[0]?.value, false, this.tree.root);
      return toValidText(this.out);
    });
  }

  // --- errors and limits --------------------------------------------------------------------------

  private errorf(message: string, kind: 'exec' | 'limit' = 'exec'): never {
    const node = this.node;
    if (node === undefined) throw new TemplateError(kind, `template: ${this.tmplName}: ${message}`);
    const { text, parseName } = this.tree.source;
    const { line, col } = locate(text, node.pos);
    throw new TemplateError(
      kind,
      `template: ${parseName}:${line}:${col}: executing ${quote(this.tmplName)} at <${nodeString(node)}>: ${message}`,
      line,
      col,
    );
  }

  private step(): void {
    this.steps++;
    if (this.steps > this.limits.maxSteps) {
      this.errorf(`execution stopped after ${this.limits.maxSteps} steps`, 'limit');
    }
    // Reading the clock costs as much as a cheap step, so plain steps read it every CLOCK_EVERY_STEPS; a function
    // call or a large write (the steps that can be expensive) reads it at once, and the functions themselves
    // read it between chunks of their input (budget.ts).
    if (++this.unclocked >= CLOCK_EVERY_STEPS) this.checkClock();
  }

  private checkClock(at?: Node): void {
    this.unclocked = 0;
    if (this.time.passed()) {
      if (at !== undefined) this.node = at;
      this.errorf(`execution stopped after ${this.limits.maxDurationMs} ms`, 'limit');
    }
  }

  private write(s: string): void {
    this.outBytes += byteLength(s);
    if (this.outBytes > this.limits.maxOutputBytes) {
      this.errorf(`output larger than ${this.limits.maxOutputBytes} bytes`, 'limit');
    }
    this.out += s;
    if (s.length > LARGE_WRITE_CHARS) this.checkClock();
  }

  // --- variables ----------------------------------------------------------------------------------

  private setVar(name: string, value: unknown): void {
    for (let i = this.vars.length - 1; i >= 0; i--) {
      const v = this.vars[i] as Variable;
      if (v.name === name) {
        v.value = value;
        v.boxed = false;
        return;
      }
    }
    this.errorf(`undefined variable: ${name}`);
  }

  private setTopVar(n: number, value: unknown, boxed: boolean): void {
    const v = this.vars[this.vars.length - n];
    if (v !== undefined) {
      v.value = value;
      v.boxed = boxed;
    }
  }

  private varValue(name: string): Variable {
    for (let i = this.vars.length - 1; i >= 0; i--) {
      const v = this.vars[i] as Variable;
      if (v.name === name) return v;
    }
    this.errorf(`undefined variable: ${name}`);
  }

  // --- walking ------------------------------------------------------------------------------------

  private walk(dot: unknown, dotBoxed: boolean, node: Node): Signal {
    this.step();
    this.node = node;
    switch (node.kind) {
      case 'action': {
        const val = this.evalPipeline(dot, dotBoxed, node.pipe);
        if (node.pipe.decl.length === 0) {
          this.node = node;
          this.write(val === undefined ? '<no value>' : printString(val));
        }
        return NORMAL;
      }
      case 'break':
        return BREAK;
      case 'continue':
        return CONTINUE;
      case 'comment':
        return NORMAL;
      case 'if':
      case 'with':
        return this.walkIfOrWith(dot, dotBoxed, node);
      case 'list':
        return this.walkList(dot, dotBoxed, node);
      case 'range':
        return this.walkRange(dot, dotBoxed, node);
      case 'template':
        this.walkTemplate(dot, dotBoxed, node);
        return NORMAL;
      case 'text':
        this.write(node.text);
        return NORMAL;
      default:
        this.errorf(`unknown node: ${nodeString(node)}`);
    }
  }

  private walkList(dot: unknown, dotBoxed: boolean, list: ListNode): Signal {
    for (const n of list.nodes) {
      const sig = this.walk(dot, dotBoxed, n);
      if (sig !== NORMAL) return sig;
    }
    return NORMAL;
  }

  private walkIfOrWith(dot: unknown, dotBoxed: boolean, node: BranchNode): Signal {
    const mark = this.vars.length;
    const val = this.evalPipeline(dot, dotBoxed, node.pipe);
    let sig: Signal = NORMAL;
    if (isTrue(val)) {
      sig = node.kind === 'with' ? this.walk(val, false, node.list) : this.walk(dot, dotBoxed, node.list);
    } else if (node.elseList) sig = this.walk(dot, dotBoxed, node.elseList);
    this.vars.length = mark;
    return sig;
  }

  private walkRange(dot: unknown, dotBoxed: boolean, r: BranchNode): Signal {
    this.node = r;
    const outer = this.vars.length;
    const val = this.evalPipeline(dot, dotBoxed, r.pipe);
    const mark = this.vars.length;
    const decl = r.pipe.decl.length;
    // Returns true when the body said {{break}}.
    const oneIteration = (index: unknown, elem: unknown, elemBoxed: boolean): boolean => {
      if (decl > 0) this.setTopVar(1, elem, elemBoxed);
      if (decl > 1) this.setTopVar(2, index, false);
      const sig = this.walk(elem, elemBoxed, r.list);
      this.vars.length = mark;
      return sig === BREAK;
    };
    let ran = false;
    switch (kindOf(val)) {
      case 'slice': {
        const arr = val as readonly unknown[];
        ran = arr.length > 0;
        for (let i = 0; i < arr.length; i++) if (oneIteration(BigInt(i), arr[i] ?? null, true)) break;
        break;
      }
      case 'map': {
        const m = val as GoMap;
        const keys = mapKeys(m).sort(compareStrings);
        ran = keys.length > 0;
        for (const k of keys) if (oneIteration(k, mapGet(m, k), true)) break;
        break;
      }
      case 'int':
      case 'uint': {
        // Go 1.22: {{range 5}} counts 0..4; the element is the count's type.
        if (decl > 1) this.errorf(`can't use a value of type ${typeName(val)} to iterate over more than one variable`);
        const n = val instanceof Uint8 ? BigInt(val.value) : (val as bigint);
        ran = n > 0n;
        for (let i = 0n; i < n; i++) {
          const elem = val instanceof Uint8 ? new Uint8(Number(i)) : i;
          if (oneIteration(undefined, elem, false)) break;
        }
        break;
      }
      case 'invalid':
        break;
      default:
        this.errorf(`range can't iterate over a value of type ${typeName(val)}`);
    }
    if (!ran && r.elseList) this.walk(dot, dotBoxed, r.elseList);
    this.vars.length = outer;
    return NORMAL;
  }

  private walkTemplate(dot: unknown, dotBoxed: boolean, t: TemplateNode): void {
    this.node = t;
    const tree = this.trees.get(t.name);
    if (tree === undefined) this.errorf(`template ${quote(t.name)} not defined`);
    if (this.depth >= this.limits.maxTemplateDepth) {
      this.errorf(`exceeded maximum template depth (${this.limits.maxTemplateDepth})`, 'limit');
    }
    const newDot = this.evalPipeline(dot, dotBoxed, t.pipe);
    const savedVars = this.vars;
    const savedName = this.tmplName;
    this.vars = [{ name: '$', value: newDot, boxed: false }];
    this.tmplName = t.name;
    this.depth++;
    this.walk(newDot, false, tree.root);
    this.depth--;
    this.tmplName = savedName;
    this.vars = savedVars;
  }

  // --- evaluation ---------------------------------------------------------------------------------

  private evalPipeline(dot: unknown, dotBoxed: boolean, pipe: PipeNode | undefined): unknown {
    if (pipe === undefined) return undefined;
    this.node = pipe;
    let value: unknown = NO_FINAL;
    for (const cmd of pipe.cmds) {
      value = this.evalCommand(dot, dotBoxed, cmd, value);
      // An interface{} holding nil, taken out of its box, is no value at all.
      if (value === null) value = undefined;
    }
    for (const v of pipe.decl) {
      const name = v.ident[0] as string;
      if (pipe.isAssign) this.setVar(name, value);
      else this.vars.push({ name, value, boxed: false });
    }
    return value;
  }

  private notAFunction(args: readonly ArgNode[], final: Final): void {
    if (args.length > 1 || final !== NO_FINAL) {
      this.errorf(`can't give argument to non-function ${nodeString(args[0] as ArgNode)}`);
    }
  }

  private evalCommand(dot: unknown, dotBoxed: boolean, cmd: CommandNode, final: Final): unknown {
    const first = cmd.args[0] as ArgNode;
    switch (first.kind) {
      case 'field':
        return this.evalFieldNode(dot, dotBoxed, first, cmd.args, final);
      case 'chain':
        return this.evalChainNode(dot, dotBoxed, first, cmd.args, final);
      case 'identifier':
        return this.evalFunction(dot, dotBoxed, first, cmd, cmd.args, final);
      case 'pipe':
        this.notAFunction(cmd.args, final);
        return this.evalPipeline(dot, dotBoxed, first);
      case 'variable':
        return this.evalVariableNode(first, cmd.args, final);
    }
    this.node = first;
    this.notAFunction(cmd.args, final);
    switch (first.kind) {
      case 'bool':
        return first.value;
      case 'dot':
        return dot;
      case 'nil':
        this.errorf('nil is not a command');
      case 'number':
        return this.idealConstant(first);
      case 'string':
        return first.text;
    }
  }

  private idealConstant(c: NumberNode): unknown {
    this.node = c;
    if (c.isFloat && !isHexInt(c.text) && c.text[0] !== "'" && /[.eEpP]/.test(c.text)) return c.float;
    if (c.isInt) return c.int;
    if (c.isUint) this.errorf(`${c.text} overflows int`);
    return undefined;
  }

  private evalFieldNode(
    dot: unknown,
    dotBoxed: boolean,
    field: FieldNode,
    args: readonly ArgNode[] | undefined,
    final: Final,
  ): unknown {
    this.node = field;
    return this.evalFieldChain(dot, dotBoxed, field.ident, args, final);
  }

  private evalChainNode(
    dot: unknown,
    dotBoxed: boolean,
    chain: ChainNode,
    args: readonly ArgNode[] | undefined,
    final: Final,
  ): unknown {
    this.node = chain;
    if (chain.node.kind === 'nil') this.errorf(`indirection through explicit nil in ${nodeString(chain)}`);
    const base = this.evalArg(dot, dotBoxed, undefined, chain.node);
    return this.evalFieldChain(base, false, chain.field, args, final);
  }

  private evalVariableNode(v: VariableNode, args: readonly ArgNode[] | undefined, final: Final): unknown {
    this.node = v;
    const variable = this.varValue(v.ident[0] as string);
    if (v.ident.length === 1) {
      this.notAFunction(args ?? [v], final);
      return variable.value;
    }
    return this.evalFieldChain(variable.value, variable.boxed, v.ident.slice(1), args, final);
  }

  // Go passes dot and the node along for method calls; map data has no methods, so neither is needed.
  private evalFieldChain(
    receiverIn: unknown,
    boxedIn: boolean,
    ident: readonly string[],
    args: readonly ArgNode[] | undefined,
    final: Final,
  ): unknown {
    let receiver = receiverIn;
    let boxed = boxedIn;
    const n = ident.length;
    for (let i = 0; i < n - 1; i++) {
      receiver = this.evalField(ident[i] as string, undefined, NO_FINAL, receiver, boxed);
      boxed = true;
    }
    return this.evalField(ident[n - 1] as string, args, final, receiver, boxed);
  }

  private evalField(
    fieldName: string,
    args: readonly ArgNode[] | undefined,
    final: Final,
    receiver: unknown,
    boxed: boolean,
  ): unknown {
    if (receiver === undefined) return undefined;
    if (receiver === null) this.errorf(`nil pointer evaluating interface {}.${fieldName}`);
    const hasArgs = (args !== undefined && args.length > 1) || final !== NO_FINAL;
    if (kindOf(receiver) === 'map') {
      if (hasArgs) this.errorf(`${fieldName} is not a method but has arguments`);
      return mapGet(receiver as GoMap, fieldName);
    }
    this.errorf(`can't evaluate field ${fieldName} in type ${boxed ? 'interface {}' : typeName(receiver)}`);
  }

  private evalFunction(
    dot: unknown,
    dotBoxed: boolean,
    node: IdentifierNode,
    cmd: Node,
    args: readonly ArgNode[] | undefined,
    final: Final,
  ): unknown {
    this.node = node;
    const name = node.ident;
    const found = this.funcs.get(name);
    if (found === undefined) this.errorf(`${quote(name)} is not a defined function`);
    return this.evalCall(dot, dotBoxed, found.fn, found.builtin, cmd, name, args, final);
  }

  private evalCall(
    dot: unknown,
    dotBoxed: boolean,
    fn: TemplateFunction,
    isBuiltin: boolean,
    node: Node,
    name: string,
    allArgs: readonly ArgNode[] | undefined,
    final: Final,
  ): unknown {
    this.step();
    const args = allArgs ? allArgs.slice(1) : [];
    const numIn = args.length + (final !== NO_FINAL ? 1 : 0);
    let numFixed = args.length;
    if (fn.variadic !== undefined) {
      numFixed = fn.params.length;
      if (numIn < numFixed)
        this.errorf(`wrong number of args for ${name}: want at least ${numFixed} got ${args.length}`);
    } else if (numIn !== fn.params.length) {
      this.errorf(`wrong number of args for ${name}: want ${fn.params.length} got ${numIn}`);
    }

    if (isBuiltin && (name === 'and' || name === 'or')) {
      let v: unknown;
      for (const arg of args) {
        v = this.evalArg(dot, dotBoxed, 'value', arg);
        if (isTrue(v === null ? undefined : v) === (name === 'or')) return v;
      }
      if (final !== NO_FINAL) v = this.validateType(final, 'value');
      return v;
    }

    const argv: unknown[] = [];
    let i = 0;
    for (; i < numFixed && i < args.length; i++) {
      argv.push(this.evalArg(dot, dotBoxed, fn.params[i] as ParamType, args[i] as ArgNode));
    }
    if (fn.variadic !== undefined) {
      for (; i < args.length; i++) argv.push(this.evalArg(dot, dotBoxed, fn.variadic, args[i] as ArgNode));
    }
    if (final !== NO_FINAL) {
      let t: ParamType | 'boxedValue' = fn.params[fn.params.length - 1] ?? 'any';
      if (fn.variadic !== undefined) t = numIn - 1 < numFixed ? (fn.params[numIn - 1] as ParamType) : fn.variadic;
      argv.push(this.validateType(final, t));
    }
    let result: unknown;
    try {
      result = (fn.fn as (...a: unknown[]) => unknown)(...argv);
    } catch (err) {
      if (err instanceof TemplateError || (err instanceof RangeError && /call stack/i.test(err.message))) throw err;
      this.node = node;
      if (err instanceof LimitExceeded) this.errorf(`${name}: ${err.message}`, 'limit');
      this.errorf(`error calling ${name}: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (typeof result === 'string' && result.length > this.limits.maxOutputBytes) {
      this.node = node;
      this.errorf(`${name} built a string larger than ${this.limits.maxOutputBytes} bytes`, 'limit');
    }
    this.checkClock(node);
    return result;
  }

  private validateType(value: unknown, t: ParamType | 'boxedValue' | undefined): unknown {
    if (value instanceof Boxed) return value;
    if (value === undefined) {
      if (t === undefined) return undefined;
      if (canBeNil(t)) return t === 'any' ? null : undefined;
      this.errorf(`invalid value; expected ${paramTypeName(t)}`);
    }
    if (t === undefined || t === 'any' || t === 'value' || t === 'boxedValue') return value;
    const k = kindOf(value);
    const fits =
      (t === 'string' && k === 'string') ||
      (t === 'bool' && k === 'bool') ||
      (t === 'int' && k === 'int') ||
      (t === 'float64' && k === 'float');
    if (fits) return value;
    this.errorf(`wrong type for value; expected ${t}; got ${typeName(value)}`);
  }

  /** Whether an argument expression yields a value still boxed in an interface{} (Go reflect Kind Interface). */
  private isBoxedArg(dotBoxed: boolean, n: ArgNode): boolean {
    switch (n.kind) {
      case 'field':
      case 'chain':
        return true;
      case 'dot':
        return dotBoxed;
      case 'variable':
        return n.ident.length > 1 || this.varValue(n.ident[0] as string).boxed;
      default:
        return false;
    }
  }

  private evalArg(dot: unknown, dotBoxed: boolean, t: ParamType | 'boxedValue' | undefined, n: ArgNode): unknown {
    this.node = n;
    let v: unknown;
    switch (n.kind) {
      case 'dot':
        v = this.validateType(dot, t);
        break;
      case 'nil':
        if (t !== undefined && canBeNil(t)) return t === 'any' ? null : undefined;
        return this.errorf(`cannot assign nil to ${paramTypeName(t ?? 'any')}`);
      case 'field':
        v = this.validateType(this.evalFieldNode(dot, dotBoxed, n, [n], NO_FINAL), t);
        break;
      case 'variable':
        v = this.validateType(this.evalVariableNode(n, undefined, NO_FINAL), t);
        break;
      case 'pipe':
        return this.validateType(this.evalPipeline(dot, dotBoxed, n), t);
      case 'identifier':
        return this.validateType(this.evalFunction(dot, dotBoxed, n, n, undefined, NO_FINAL), t);
      case 'chain':
        v = this.validateType(this.evalChainNode(dot, dotBoxed, n, undefined, NO_FINAL), t);
        break;
      default:
        return this.evalLiteralArg(t, n);
    }
    if (t === 'boxedValue' && v !== undefined && this.isBoxedArg(dotBoxed, n)) return new Boxed(v);
    return v;
  }

  private evalLiteralArg(t: ParamType | 'boxedValue' | undefined, n: ArgNode): unknown {
    switch (t) {
      case 'bool':
        if (n.kind === 'bool') return n.value;
        return this.errorf(`expected bool; found ${nodeString(n)}`);
      case 'float64':
        if (n.kind === 'number' && n.isFloat) return n.float;
        return this.errorf(`expected float; found ${nodeString(n)}`);
      case 'int':
        if (n.kind === 'number' && n.isInt) return n.int;
        return this.errorf(`expected integer; found ${nodeString(n)}`);
      case 'string':
        if (n.kind === 'string') return n.text;
        return this.errorf(`expected string; found ${nodeString(n)}`);
      default:
        switch (n.kind) {
          case 'bool':
            return n.value;
          case 'number':
            return this.idealConstant(n);
          case 'string':
            return n.text;
        }
        return this.errorf(`can't handle assignment of ${nodeString(n)} to empty interface argument`);
    }
  }
}

/** Runs one tree of a parsed template over data; throws TemplateError on an execution error or a limit. */
export function execute(
  trees: ReadonlyMap<string, Tree>,
  tree: Tree,
  funcs: FuncTable,
  limits: ExecLimits,
  data: unknown,
): string {
  const run = new Execution(trees, tree, funcs, limits, data);
  try {
    return run.run();
  } catch (err) {
    // Data nested deeper than the JS stack allows (printing or encoding it recurses) is a limit too.
    if (err instanceof RangeError && /call stack/i.test(err.message)) {
      throw new TemplateError('limit', `template: ${tree.name}: data nested too deeply to execute`);
    }
    throw err;
  }
}

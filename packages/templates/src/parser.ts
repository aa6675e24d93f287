// Go's text/template/parse: a recursive-descent parser with three tokens of look-ahead, producing one
// Tree per template ({{define}} and {{block}} add more). Error messages and the line they name follow Go,
// which reports the line of the most recently scanned token. Two later-Go additions are accepted:
// `{{else with}}` (Go 1.23) and ranging over an integer (Go 1.22, see exec.ts).

import { TemplateError, locate } from './errors';
import { itemString, Lexer, type Item, type ItemType } from './lexer';
import {
  isEmptyTree,
  nodeString,
  type ArgNode,
  type BranchNode,
  type ChainNode,
  type CommandNode,
  type ElseNode,
  type EndNode,
  type ListNode,
  type Node,
  type NumberNode,
  type PipeNode,
  type Source,
  type Tree,
  type VariableNode,
} from './nodes';
import { parseFloat64, parseInt64, parseUint, quote, unquote, unquoteChar } from './strconv';

/** How deep parentheses and control structures may nest; deeper input would exhaust the JS stack. */
export const MAX_PARSE_DEPTH = 200;

interface Shared {
  readonly lex: Lexer;
  readonly source: Source;
  readonly treeSet: Map<string, Tree>;
  readonly hasFunction: (name: string) => boolean;
  depth: number;
}

const NONE: Item = { type: 'eof', pos: 0, val: '', line: 0 };

class TreeParser {
  root: ListNode | undefined;
  private readonly token: Item[] = [NONE, NONE, NONE];
  private peekCount = 0;
  private vars: string[] = ['$'];
  private actionLine = 0;
  private rangeDepth = 0;

  constructor(
    private readonly s: Shared,
    public name: string,
  ) {}

  // --- token buffer -------------------------------------------------------------------------------

  private next(): Item {
    if (this.peekCount > 0) this.peekCount--;
    else this.token[0] = this.s.lex.nextItem();
    return this.token[this.peekCount] as Item;
  }

  private backup(): void {
    this.peekCount++;
  }

  private backup2(t1: Item): void {
    this.token[1] = t1;
    this.peekCount = 2;
  }

  private backup3(t2: Item, t1: Item): void {
    this.token[1] = t1;
    this.token[2] = t2;
    this.peekCount = 3;
  }

  private peek(): Item {
    if (this.peekCount > 0) return this.token[this.peekCount - 1] as Item;
    this.peekCount = 1;
    this.token[0] = this.s.lex.nextItem();
    return this.token[0];
  }

  private nextNonSpace(): Item {
    let token: Item;
    do token = this.next();
    while (token.type === 'space');
    return token;
  }

  private peekNonSpace(): Item {
    const token = this.nextNonSpace();
    this.backup();
    return token;
  }

  // --- errors -------------------------------------------------------------------------------------

  private errorf(message: string): never {
    const last = this.token[0] as Item;
    const line = last.line;
    const col = locate(this.s.source.text, last.pos).col;
    throw new TemplateError('parse', `template: ${this.s.source.parseName}:${line}: ${message}`, line, col);
  }

  private expect(expected: ItemType, context: string): Item {
    const token = this.nextNonSpace();
    if (token.type !== expected) this.unexpected(token, context);
    return token;
  }

  private expectOneOf(e1: ItemType, e2: ItemType, context: string): Item {
    const token = this.nextNonSpace();
    if (token.type !== e1 && token.type !== e2) this.unexpected(token, context);
    return token;
  }

  private unexpected(token: Item, context: string): never {
    if (token.type === 'error') {
      let extra = '';
      if (this.actionLine !== 0 && this.actionLine !== token.line) {
        extra = ` in action started at ${this.s.source.parseName}:${this.actionLine}`;
        if (token.val.endsWith(' action')) extra = extra.slice(' in action'.length);
      }
      this.errorf(itemString(token) + extra);
    }
    this.errorf(`unexpected ${itemString(token)} in ${context}`);
  }

  private unquoteOrFail(lit: string): string {
    try {
      return unquote(lit);
    } catch {
      this.errorf('invalid syntax');
    }
  }

  private enter(): void {
    if (++this.s.depth > MAX_PARSE_DEPTH) this.errorf(`nesting deeper than ${MAX_PARSE_DEPTH} levels`);
  }

  private leave(): void {
    this.s.depth--;
  }

  // --- structure ----------------------------------------------------------------------------------

  parse(): void {
    this.root = { kind: 'list', pos: this.peek().pos, nodes: [] };
    while (this.peek().type !== 'eof') {
      if (this.peek().type === 'leftDelim') {
        const delim = this.next();
        if (this.nextNonSpace().type === 'define') {
          new TreeParser(this.s, 'definition').parseDefinition();
          continue;
        }
        this.backup2(delim);
      }
      const n = this.textOrAction();
      if (n.kind === 'end' || n.kind === 'else') this.errorf(`unexpected ${nodeString(n)}`);
      this.root.nodes.push(n);
    }
  }

  private parseDefinition(): void {
    const context = 'define clause';
    const name = this.expectOneOf('string', 'rawString', context);
    this.name = this.unquoteOrFail(name.val);
    this.expect('rightDelim', context);
    const [root, end] = this.itemList();
    this.root = root;
    if (end.kind !== 'end') this.errorf(`unexpected ${nodeString(end)} in ${context}`);
    this.add();
  }

  add(): void {
    const root = this.root as ListNode;
    const tree = this.s.treeSet.get(this.name);
    if (tree === undefined || isEmptyTree(tree.root)) {
      this.s.treeSet.set(this.name, { name: this.name, root, source: this.s.source });
      return;
    }
    if (!isEmptyTree(root)) this.errorf(`template: multiple definition of template ${quote(this.name)}`);
  }

  private itemList(): [ListNode, EndNode | ElseNode] {
    const list: ListNode = { kind: 'list', pos: this.peekNonSpace().pos, nodes: [] };
    while (this.peekNonSpace().type !== 'eof') {
      const n = this.textOrAction();
      if (n.kind === 'end' || n.kind === 'else') return [list, n];
      list.nodes.push(n);
    }
    this.errorf('unexpected EOF');
  }

  private textOrAction(): Node {
    const token = this.nextNonSpace();
    switch (token.type) {
      case 'text':
        return { kind: 'text', pos: token.pos, text: token.val };
      case 'leftDelim':
        this.actionLine = token.line;
        try {
          return this.action();
        } finally {
          this.actionLine = 0;
        }
      default:
        this.unexpected(token, 'input');
    }
  }

  private action(): Node {
    const token = this.nextNonSpace();
    switch (token.type) {
      case 'block':
        return this.blockControl();
      case 'break':
        return this.breakOrContinue('break', token);
      case 'continue':
        return this.breakOrContinue('continue', token);
      case 'else':
        return this.elseControl();
      case 'end':
        return { kind: 'end', pos: this.expect('rightDelim', 'end').pos };
      case 'if':
        return this.control('if');
      case 'range':
        return this.control('range');
      case 'template':
        return this.templateControl();
      case 'with':
        return this.control('with');
    }
    this.backup();
    const start = this.peek();
    return { kind: 'action', pos: start.pos, pipe: this.pipeline('command', 'rightDelim') };
  }

  private breakOrContinue(kind: 'break' | 'continue', keyword: Item): Node {
    const token = this.nextNonSpace();
    if (token.type !== 'rightDelim') this.unexpected(token, `{{${kind}}}`);
    if (this.rangeDepth === 0) this.errorf(`{{${kind}}} outside {{range}}`);
    return { kind, pos: keyword.pos };
  }

  private elseControl(): ElseNode {
    const peek = this.peekNonSpace();
    // {{else if …}} and {{else with …}} read as {{else}}{{if …}}…{{end}}: leave the keyword pending.
    if (peek.type === 'if' || peek.type === 'with') return { kind: 'else', pos: peek.pos };
    const token = this.expect('rightDelim', 'else');
    return { kind: 'else', pos: token.pos };
  }

  private control(context: 'if' | 'range' | 'with'): BranchNode {
    this.enter();
    const mark = this.vars.length;
    try {
      const pipe = this.pipeline(context, 'rightDelim');
      if (context === 'range') this.rangeDepth++;
      let [list, next] = this.itemList();
      if (context === 'range') this.rangeDepth--;
      let elseList: ListNode | undefined;
      if (next.kind === 'else') {
        const chained = context === 'range' ? undefined : context;
        if (chained !== undefined && this.peek().type === chained) {
          this.next();
          elseList = { kind: 'list', pos: next.pos, nodes: [this.control(chained)] };
        } else {
          [elseList, next] = this.itemList();
          if (next.kind !== 'end') this.errorf(`expected end; found ${nodeString(next)}`);
        }
      }
      return { kind: context, pos: pipe.pos, pipe, list, elseList };
    } finally {
      this.vars.length = mark;
      this.leave();
    }
  }

  private blockControl(): Node {
    const context = 'block clause';
    const token = this.nextNonSpace();
    const name = this.templateName(token, context);
    const pipe = this.pipeline(context, 'rightDelim');
    const block = new TreeParser(this.s, name);
    const [root, end] = block.itemList();
    block.root = root;
    if (end.kind !== 'end') this.errorf(`unexpected ${nodeString(end)} in ${context}`);
    block.add();
    return { kind: 'template', pos: token.pos, name, pipe };
  }

  private templateControl(): Node {
    const context = 'template clause';
    const token = this.nextNonSpace();
    const name = this.templateName(token, context);
    let pipe: PipeNode | undefined;
    if (this.nextNonSpace().type !== 'rightDelim') {
      this.backup();
      pipe = this.pipeline(context, 'rightDelim');
    }
    return { kind: 'template', pos: token.pos, name, pipe };
  }

  private templateName(token: Item, context: string): string {
    if (token.type === 'string' || token.type === 'rawString') return this.unquoteOrFail(token.val);
    this.unexpected(token, context);
  }

  // --- pipelines ----------------------------------------------------------------------------------

  private pipeline(context: string, end: ItemType): PipeNode {
    const start = this.peekNonSpace();
    const pipe: PipeNode = { kind: 'pipe', pos: start.pos, isAssign: false, decl: [], cmds: [] };
    for (;;) {
      const v = this.peekNonSpace();
      if (v.type !== 'variable') break;
      this.next();
      const tokenAfterVariable = this.peek();
      const next = this.peekNonSpace();
      if (next.type === 'assign' || next.type === 'declare') {
        pipe.isAssign = next.type === 'assign';
        this.nextNonSpace();
        pipe.decl.push(variableNode(v.pos, v.val));
        this.vars.push(v.val);
      } else if (next.type === 'char' && next.val === ',') {
        this.nextNonSpace();
        pipe.decl.push(variableNode(v.pos, v.val));
        this.vars.push(v.val);
        if (context === 'range' && pipe.decl.length < 2) {
          const t = this.peekNonSpace().type;
          if (t === 'variable' || t === 'rightDelim' || t === 'rightParen') continue;
          this.errorf('range can only initialize variables');
        }
        this.errorf(`too many declarations in ${context}`);
      } else if (tokenAfterVariable.type === 'space') this.backup3(v, tokenAfterVariable);
      else this.backup2(v);
      break;
    }
    for (;;) {
      const token = this.nextNonSpace();
      if (token.type === end) {
        this.checkPipeline(pipe, context);
        return pipe;
      }
      switch (token.type) {
        case 'bool':
        case 'charConstant':
        case 'complex':
        case 'dot':
        case 'field':
        case 'identifier':
        case 'number':
        case 'nil':
        case 'rawString':
        case 'string':
        case 'variable':
        case 'leftParen':
          this.backup();
          pipe.cmds.push(this.command());
          break;
        default:
          this.unexpected(token, context);
      }
    }
  }

  private checkPipeline(pipe: PipeNode, context: string): void {
    if (pipe.cmds.length === 0) this.errorf(`missing value for ${context}`);
    pipe.cmds.slice(1).forEach((c, i) => {
      const k = c.args[0]?.kind;
      if (k === 'bool' || k === 'dot' || k === 'nil' || k === 'number' || k === 'string') {
        this.errorf(`non executable command in pipeline stage ${i + 2}`);
      }
    });
  }

  private command(): CommandNode {
    const cmd: CommandNode = { kind: 'command', pos: this.peekNonSpace().pos, args: [] };
    for (;;) {
      this.peekNonSpace();
      const operand = this.operand();
      if (operand !== undefined) cmd.args.push(operand);
      const token = this.next();
      if (token.type === 'space') continue;
      if (token.type === 'rightDelim' || token.type === 'rightParen') this.backup();
      else if (token.type !== 'pipe') this.unexpected(token, 'operand');
      break;
    }
    if (cmd.args.length === 0) this.errorf('empty command');
    return cmd;
  }

  private operand(): ArgNode | undefined {
    let node = this.term();
    if (node === undefined) return undefined;
    if (this.peek().type === 'field') {
      const chain: ChainNode = { kind: 'chain', pos: this.peek().pos, node, field: [] };
      while (this.peek().type === 'field') chain.field.push(this.next().val.slice(1));
      switch (node.kind) {
        case 'field':
          node = { kind: 'field', pos: chain.pos, ident: nodeString(chain).slice(1).split('.') };
          break;
        case 'variable':
          node = variableNode(chain.pos, nodeString(chain));
          break;
        case 'bool':
        case 'string':
        case 'number':
        case 'nil':
        case 'dot':
          this.errorf(`unexpected . after term ${quote(nodeString(node))}`);
        default:
          node = chain;
      }
    }
    return node;
  }

  private term(): ArgNode | undefined {
    const token = this.nextNonSpace();
    switch (token.type) {
      case 'identifier':
        if (!this.s.hasFunction(token.val)) this.errorf(`function ${quote(token.val)} not defined`);
        return { kind: 'identifier', pos: token.pos, ident: token.val };
      case 'dot':
        return { kind: 'dot', pos: token.pos };
      case 'nil':
        return { kind: 'nil', pos: token.pos };
      case 'variable':
        return this.useVar(token.pos, token.val);
      case 'field':
        return { kind: 'field', pos: token.pos, ident: token.val.slice(1).split('.') };
      case 'bool':
        return { kind: 'bool', pos: token.pos, value: token.val === 'true' };
      case 'charConstant':
      case 'complex':
      case 'number':
        return this.numberNode(token);
      case 'leftParen': {
        this.enter();
        try {
          return this.pipeline('parenthesized pipeline', 'rightParen');
        } finally {
          this.leave();
        }
      }
      case 'string':
      case 'rawString':
        return { kind: 'string', pos: token.pos, quoted: token.val, text: this.unquoteOrFail(token.val) };
    }
    this.backup();
    return undefined;
  }

  private useVar(pos: number, name: string): VariableNode {
    const v = variableNode(pos, name);
    const head = v.ident[0] as string;
    if (this.vars.includes(head)) return v;
    this.errorf(`undefined variable ${quote(head)}`);
  }

  private numberNode(token: Item): NumberNode {
    const text = token.val;
    const base = { kind: 'number' as const, pos: token.pos, text };
    if (token.type === 'charConstant') {
      let r: number;
      let tail: string;
      try {
        [r, , tail] = unquoteChar(text.slice(1), "'");
      } catch {
        this.errorf('invalid syntax');
      }
      if (tail !== "'") this.errorf(`malformed character constant: ${text}`);
      const n = BigInt(r);
      return { ...base, isInt: true, isUint: true, isFloat: true, int: n, uint: n, float: r };
    }
    if (token.type === 'complex' || (text.endsWith('i') && parseFloat64(text.slice(0, -1)) !== undefined)) {
      this.errorf(`complex constants are not supported: ${quote(text)}`);
    }
    const u = parseUint(text);
    const i = parseInt64(text);
    let isUint = u !== undefined;
    let uint = u ?? 0n;
    const isInt = i !== undefined;
    const int = i ?? 0n;
    if (isInt && int === 0n) {
      isUint = true;
      uint = u ?? 0n;
    }
    if (isInt) return { ...base, isInt, isUint, isFloat: true, int, uint, float: Number(int) };
    if (isUint) return { ...base, isInt, isUint, isFloat: true, int, uint, float: Number(uint) };
    const f = parseFloat64(text);
    if (f === undefined) this.errorf(`illegal number syntax: ${quote(text)}`);
    if (!/[.eEpP]/.test(text)) this.errorf(`integer overflow: ${quote(text)}`);
    const fitsInt = Number.isInteger(f) && f >= -(2 ** 63) && f < 2 ** 63;
    const fitsUint = Number.isInteger(f) && f >= 0 && f < 2 ** 64;
    return {
      ...base,
      isInt: fitsInt,
      isUint: fitsUint,
      isFloat: true,
      int: fitsInt ? BigInt(f) : 0n,
      uint: fitsUint ? BigInt(f) : 0n,
      float: f,
    };
  }
}

function variableNode(pos: number, ident: string): VariableNode {
  return { kind: 'variable', pos, ident: ident.split('.') };
}

/**
 * Parses a template text into its trees: the named one plus every {{define}} and {{block}}.
 * Throws TemplateError (kind 'parse') with Go's message.
 */
export function parseTrees(name: string, text: string, hasFunction: (name: string) => boolean): Map<string, Tree> {
  const source: Source = { text, parseName: name };
  const lex = new Lexer(text, !hasFunction('break'), !hasFunction('continue'));
  const shared: Shared = { lex, source, treeSet: new Map(), hasFunction, depth: 0 };
  const top = new TreeParser(shared, name);
  top.parse();
  top.add();
  return shared.treeSet;
}

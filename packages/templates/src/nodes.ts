// The parse tree, shaped like Go's text/template/parse nodes because Go's error messages quote a node's
// source form (`executing "t" at <.A.B>`), which nodeString reproduces.

import { quote } from './strconv';

/** Shared by every node of one parse: the source text and the name errors are reported under. */
export interface Source {
  readonly text: string;
  readonly parseName: string;
}

interface Base {
  /** Offset of the node in Source.text (UTF-16 units; converted to Go's byte column on error). */
  readonly pos: number;
}

export interface ListNode extends Base {
  readonly kind: 'list';
  readonly nodes: Node[];
}
export interface TextNode extends Base {
  readonly kind: 'text';
  readonly text: string;
}
export interface CommentNode extends Base {
  readonly kind: 'comment';
  readonly text: string;
}
export interface ActionNode extends Base {
  readonly kind: 'action';
  readonly pipe: PipeNode;
}
export interface PipeNode extends Base {
  readonly kind: 'pipe';
  isAssign: boolean;
  readonly decl: VariableNode[];
  readonly cmds: CommandNode[];
}
export interface CommandNode extends Base {
  readonly kind: 'command';
  readonly args: ArgNode[];
}
export interface IdentifierNode extends Base {
  readonly kind: 'identifier';
  readonly ident: string;
}
export interface VariableNode extends Base {
  readonly kind: 'variable';
  readonly ident: string[];
}
export interface DotNode extends Base {
  readonly kind: 'dot';
}
export interface NilNode extends Base {
  readonly kind: 'nil';
}
export interface FieldNode extends Base {
  readonly kind: 'field';
  readonly ident: string[];
}
export interface ChainNode extends Base {
  readonly kind: 'chain';
  readonly node: ArgNode;
  readonly field: string[];
}
export interface BoolNode extends Base {
  readonly kind: 'bool';
  readonly value: boolean;
}
export interface NumberNode extends Base {
  readonly kind: 'number';
  readonly text: string;
  readonly isInt: boolean;
  readonly isUint: boolean;
  readonly isFloat: boolean;
  readonly int: bigint;
  readonly uint: bigint;
  readonly float: number;
}
export interface StringNode extends Base {
  readonly kind: 'string';
  readonly quoted: string;
  readonly text: string;
}
export interface BranchNode extends Base {
  readonly kind: 'if' | 'range' | 'with';
  readonly pipe: PipeNode;
  readonly list: ListNode;
  readonly elseList: ListNode | undefined;
}
export interface TemplateNode extends Base {
  readonly kind: 'template';
  readonly name: string;
  readonly pipe: PipeNode | undefined;
}
export interface BreakNode extends Base {
  readonly kind: 'break';
}
export interface ContinueNode extends Base {
  readonly kind: 'continue';
}
/** Only seen by the parser: {{end}} and {{else}} terminate item lists. */
export interface EndNode extends Base {
  readonly kind: 'end';
}
export interface ElseNode extends Base {
  readonly kind: 'else';
}

export type ArgNode =
  | IdentifierNode
  | VariableNode
  | DotNode
  | NilNode
  | FieldNode
  | ChainNode
  | BoolNode
  | NumberNode
  | StringNode
  | PipeNode;

export type Node =
  | ListNode
  | TextNode
  | CommentNode
  | ActionNode
  | PipeNode
  | CommandNode
  | ArgNode
  | BranchNode
  | TemplateNode
  | BreakNode
  | ContinueNode
  | EndNode
  | ElseNode;

/** A parsed template: its body, and the source it came from. */
export interface Tree {
  readonly name: string;
  root: ListNode;
  readonly source: Source;
}

function pipeString(p: PipeNode): string {
  let s = '';
  if (p.decl.length > 0) s = p.decl.map(nodeString).join(', ') + ' := ';
  return s + p.cmds.map(nodeString).join(' | ');
}

/** The source form of a node, as Go's Node.String() writes it. */
export function nodeString(n: Node): string {
  switch (n.kind) {
    case 'list':
      return n.nodes.map(nodeString).join('');
    case 'text':
      return n.text;
    case 'comment':
      return '{{' + n.text + '}}';
    case 'action':
      return '{{' + pipeString(n.pipe) + '}}';
    case 'pipe':
      return pipeString(n);
    case 'command':
      return n.args.map((a) => (a.kind === 'pipe' ? '(' + pipeString(a) + ')' : nodeString(a))).join(' ');
    case 'identifier':
      return n.ident;
    case 'variable':
      return n.ident.join('.');
    case 'dot':
      return '.';
    case 'nil':
      return 'nil';
    case 'field':
      return n.ident.map((id) => '.' + id).join('');
    case 'chain':
      return (
        (n.node.kind === 'pipe' ? '(' + pipeString(n.node) + ')' : nodeString(n.node)) +
        n.field.map((f) => '.' + f).join('')
      );
    case 'bool':
      return n.value ? 'true' : 'false';
    case 'number':
      return n.text;
    case 'string':
      return n.quoted;
    case 'if':
    case 'range':
    case 'with':
      return (
        '{{' +
        n.kind +
        ' ' +
        pipeString(n.pipe) +
        '}}' +
        nodeString(n.list) +
        (n.elseList ? '{{else}}' + nodeString(n.elseList) : '') +
        '{{end}}'
      );
    case 'template':
      return '{{template ' + quote(n.name) + (n.pipe ? ' ' + pipeString(n.pipe) : '') + '}}';
    case 'break':
      return '{{break}}';
    case 'continue':
      return '{{continue}}';
    case 'end':
      return '{{end}}';
    case 'else':
      return '{{else}}';
  }
}

/** Whether a tree holds nothing but space and comments (Go's parse.IsEmptyTree). */
export function isEmptyTree(n: Node): boolean {
  switch (n.kind) {
    case 'comment':
      return true;
    case 'list':
      return n.nodes.every(isEmptyTree);
    case 'text':
      return n.text.trim().length === 0;
    default:
      return false;
  }
}

// The public face of the engine: parse once (at save, or when a webhook's template is loaded), execute per
// event. A Template is immutable and holds no per-execution state, so one instance serves every delivery.

import { TemplateError } from './errors';
import { defaultLimits, execute, type ExecLimits, type FuncTable } from './exec';
import { builtinFuncs, type TemplateFunction } from './funcs';
import { gatehookFuncs } from './gatehook-funcs';
import type { Tree } from './nodes';
import { parseTrees } from './parser';

export { TemplateError, FuncError } from './errors';
export type { TemplateErrorKind } from './errors';
export type { ExecLimits } from './exec';
export type { ParamType, TemplateFunction } from './funcs';

/** The functions every Gatehook template has besides Go's builtins: json, escape, epoch, hasSuffix. */
export const defaultFuncs: ReadonlyMap<string, TemplateFunction> = gatehookFuncs;

export interface ParseOptions {
  /**
   * Functions by name, replacing `defaultFuncs` (pass `{...Object.fromEntries(defaultFuncs), extra}` to
   * extend them). A name that is also a Go builtin replaces the builtin, as Template.Funcs does in Go.
   */
  readonly funcs?: ReadonlyMap<string, TemplateFunction> | Readonly<Record<string, TemplateFunction>>;
}

export interface ExecuteOptions {
  /** Overrides of the default execution limits (1 MiB output, 1e6 steps, 1 s, 100 nested calls). */
  readonly limits?: Partial<ExecLimits>;
}

const identifier = /^[\p{L}_][\p{L}\p{Nd}_]*$/u;

function funcTable(funcs: ParseOptions['funcs']): FuncTable {
  const own = new Map<string, TemplateFunction>(
    funcs === undefined ? defaultFuncs : funcs instanceof Map ? funcs : Object.entries(funcs),
  );
  for (const name of own.keys()) {
    // Go panics on such a name in Template.Funcs; it could never be called from a template anyway.
    if (!identifier.test(name)) throw new Error(`function name ${JSON.stringify(name)} is not a valid identifier`);
  }
  return {
    get(name) {
      const fn = own.get(name);
      if (fn !== undefined) return { fn, builtin: false };
      const builtin = builtinFuncs.get(name);
      return builtin === undefined ? undefined : { fn: builtin, builtin: true };
    },
  };
}

/** A parsed Go text/template, with the templates it {{define}}s, ready to execute many times. */
export class Template {
  private constructor(
    readonly name: string,
    private readonly trees: ReadonlyMap<string, Tree>,
    private readonly funcs: FuncTable,
  ) {}

  /** Parses template text; throws TemplateError (kind 'parse') with Go's message. */
  static parse(name: string, text: string, opts: ParseOptions = {}): Template {
    const funcs = funcTable(opts.funcs);
    const trees = parseTrees(name, text, (fn) => funcs.get(fn) !== undefined);
    return new Template(name, trees, funcs);
  }

  /** Names of every template the text defines, the top-level one included. */
  get templateNames(): string[] {
    return [...this.trees.keys()].sort();
  }

  /** Renders the template over data (JSON-shaped); throws TemplateError (kind 'exec' or 'limit'). */
  execute(data: unknown, opts: ExecuteOptions = {}): string {
    const limits = opts.limits ? { ...defaultLimits, ...opts.limits } : defaultLimits;
    const tree = this.trees.get(this.name);
    if (tree === undefined)
      throw new TemplateError('exec', `template: ${this.name}: "${this.name}" is an incomplete or empty template`);
    return execute(this.trees, tree, this.funcs, limits, data);
  }
}

/** Parses template text into a reusable Template; throws TemplateError (kind 'parse') with Go's message. */
export function parseTemplate(name: string, text: string, opts?: ParseOptions): Template {
  return Template.parse(name, text, opts);
}

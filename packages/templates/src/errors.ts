import { byteLength } from './bytes';

/** Which stage failed: parsing the text, executing it, or a safety limit of execution. */
export type TemplateErrorKind = 'parse' | 'exec' | 'limit';

/**
 * A template that does not parse or does not execute. The message is Go's (`template: NAME:LINE: …` for
 * parse errors, `template: NAME:LINE:COL: executing "NAME" at <node>: …` for execution errors).
 */
export class TemplateError extends Error {
  readonly kind: TemplateErrorKind;
  /** 1-based line of the error, when known. */
  readonly line: number | undefined;
  /** Column as Go counts it: the 0-based byte offset within the line, when known. */
  readonly col: number | undefined;

  constructor(kind: TemplateErrorKind, message: string, line?: number, col?: number) {
    super(message);
    this.name = 'TemplateError';
    this.kind = kind;
    this.line = line;
    this.col = col;
  }
}

/** Thrown by a template function to fail the call; execution reports `error calling NAME: message`. */
export class FuncError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FuncError';
  }
}

/** Go's line and column (0-based byte offset within the line) of an offset in the source text. */
export function locate(text: string, pos: number): { line: number; col: number } {
  const before = text.slice(0, pos);
  const nl = before.lastIndexOf('\n');
  let line = 1;
  for (let i = before.indexOf('\n'); i >= 0; i = before.indexOf('\n', i + 1)) line++;
  return { line, col: byteLength(before.slice(nl + 1)) };
}

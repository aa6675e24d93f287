// The functions Gatehook adds to every payload template (CONTRACT 7a): json, escape, epoch, hasSuffix.
// printf is Go's builtin. The Go fixture generator registers the same four with the same signatures.

import { escapeInChunks } from './budget';
import { epoch } from './epoch';
import type { TemplateFunction } from './funcs';
import { marshalJSON } from './json';

/** Neutralises markup for receivers that re-parse text: & < > become entities. */
export function escapeMarkup(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** json, escape, epoch and hasSuffix, with their Go signatures. */
export const gatehookFuncs: ReadonlyMap<string, TemplateFunction> = new Map<string, TemplateFunction>([
  ['json', { params: ['any'], fn: marshalJSON }],
  ['escape', { params: ['string'], fn: (s: string) => escapeInChunks(s, escapeMarkup) }],
  ['epoch', { params: ['string'], fn: epoch }],
  ['hasSuffix', { params: ['string', 'string'], fn: (s: string, suffix: string) => s.endsWith(suffix) }],
]);

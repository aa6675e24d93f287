// Every case under test/cases was run through Go's own text/template by test/gen (npm run fixtures);
// the engine must produce the same output, or the same error with the same message.

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseTemplate, TemplateError } from '../src/template';

interface Fixture {
  name: string;
  template: string;
  data: unknown;
  templateName: string;
  source: string;
  output?: string;
  error?: { kind: 'parse' | 'exec'; message: string };
}

const dir = join(__dirname, 'fixtures');
const files = readdirSync(dir).filter((f) => f.endsWith('.json'));

/**
 * Cases whose message differs from Go's in a documented way (README, "Divergences"): the test then
 * checks that the same kind of error occurs and that Go's message starts with the part we assert.
 */
const relaxed: Readonly<Record<string, string>> = {
  // Go pastes the template name into a format string unescaped, so a '%' in it garbles Go's message.
  'edge.json: template name with percent': 'template: 50%',
};

/**
 * Go prints the offending value in these messages; ours name its type instead, because the value is event or
 * variable data (a secret, perhaps) and errors are shown to users (README, "Divergences"). Everything before
 * the marker must still match Go exactly.
 */
const redacted: readonly string[] = [
  "range can't iterate over ",
  "can't use ",
  'non-comparable type',
  'not an ISO 8601 timestamp',
];

function redactedPrefix(message: string): string | undefined {
  for (const marker of redacted) {
    const at = message.indexOf(marker);
    if (at >= 0) return message.slice(0, at + marker.length);
  }
  return undefined;
}

function run(f: Fixture): { output?: string; error?: { kind: string; message: string } } {
  try {
    const t = parseTemplate(f.templateName, f.template);
    try {
      return { output: t.execute(f.data) };
    } catch (err) {
      if (err instanceof TemplateError) return { error: { kind: err.kind, message: err.message } };
      throw err;
    }
  } catch (err) {
    if (err instanceof TemplateError) return { error: { kind: err.kind, message: err.message } };
    throw err;
  }
}

describe.each(files)('%s', (file) => {
  const { cases } = JSON.parse(readFileSync(join(dir, file), 'utf8')) as { cases: Fixture[] };
  it.each(cases.map((c) => [c.name, c] as const))('%s', (_name, f) => {
    const got = run(f);
    const prefix = relaxed[`${file}: ${f.name}`] ?? (f.error ? redactedPrefix(f.error.message) : undefined);
    if (f.error && prefix !== undefined) {
      expect(got.error?.kind).toBe(f.error.kind);
      expect(f.error.message.startsWith(prefix)).toBe(true);
      expect(got.error?.message.startsWith(prefix)).toBe(true);
      return;
    }
    expect(got).toEqual(f.error ? { error: f.error } : { output: f.output });
  });
});

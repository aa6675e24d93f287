import { validateHeaderValue } from 'node:http';
import { createWebhookSchema, patchWebhookSchema } from '@gatehook/core/webhook-schema';

const valid = { name: 'SIEM', url: 'https://siem.example.com/ingest', events: ['policy.created'] };

function issues(input: unknown, schema = createWebhookSchema) {
  const result = schema.safeParse(input);
  return result.success ? [] : result.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
}

describe('createWebhookSchema', () => {
  it('fills the contract defaults', () => {
    expect(createWebhookSchema.parse(valid)).toEqual({
      ...valid,
      condition: '',
      destination: null,
      format: 'single',
      max_events: 1,
      template: '',
      vars: {},
      headers: {},
      rate_limit_per_second: null,
      client_certificate: null,
      auth: null,
    });
  });

  it.each([
    [{ ...valid, name: '' }, 'name'],
    [{ ...valid, name: 'x'.repeat(201) }, 'name'],
    [{ ...valid, events: [] }, 'events'],
    [{ ...valid, events: ['nope.happened'] }, 'events.0'],
    [{ ...valid, events: ['*', 'policy.created'] }, 'events.0'],
    [{ ...valid, events: ['policy.created', 'policy.created'] }, 'events.1'],
    [{ ...valid, max_events: 0 }, 'max_events'],
    [{ ...valid, max_events: 101 }, 'max_events'],
    [{ ...valid, max_events: 1.5 }, 'max_events'],
    [{ ...valid, format: 'xml' }, 'format'],
    [{ ...valid, destination: 'myspace' }, 'destination'],
    [{ ...valid, condition: 'a'.repeat(1025) }, 'condition'],
    [{ ...valid, headers: { 'Content-Type': 'text/plain' } }, 'headers.Content-Type'],
    [{ ...valid, headers: { 'webhook-signature': 'v1,x' } }, 'headers.webhook-signature'],
    [{ ...valid, headers: { 'bad header': 'x' } }, 'headers.bad header'],
    [{ ...valid, headers: { 'X-Token': 'a\r\nInjected: yes' } }, 'headers.X-Token'],
    [{ ...valid, headers: { 'X-A': 'a', 'x-a': 'b' } }, 'headers.x-a'],
    [{ ...valid, vars: { '1bad': 'x' } }, 'vars.1bad'],
    [{ ...valid, vars: { ok: 5 } }, 'vars.ok'],
    [{ ...valid, url: 42 }, 'url'],
    [{ ...valid, secret: 'whsec_x' }, ''],
  ])('rejects %j at %s', (input, path) => {
    expect(issues(input).map((i) => i.path)).toContain(path);
  });

  it.each([
    ['a control character', 'Bearer a\u0001b'],
    ['DEL', 'Bearer a\u007fb'],
    ['a character past U+00FF', 'Bearer ✓'],
    ['an emoji', 'token 🎉'],
  ])('refuses a header value with %s, as Node would refuse to send it, naming the header', (_name, value) => {
    expect(() => validateHeaderValue('X-Token', value)).toThrow();
    expect(issues({ ...valid, headers: { 'X-Token': value } })).toEqual([
      { path: 'headers.X-Token', message: expect.stringMatching(/up to U\+00FF/) },
    ]);
    const patched = patchWebhookSchema.safeParse({ headers: { 'X-Token': value } });
    expect(patched.success ? [] : patched.error.issues.map((i) => i.path.join('.'))).toEqual(['headers.X-Token']);
  });

  it("accepts exactly the header values Node's HTTP client sends, for every UTF-16 unit", () => {
    const differ: number[] = [];
    for (let unit = 0; unit <= 0xffff; unit++) {
      const value = `a${String.fromCharCode(unit)}b`;
      let node = true;
      try {
        validateHeaderValue('X-Token', value);
      } catch {
        node = false;
      }
      if (node !== (issues({ ...valid, headers: { 'X-Token': value } }).length === 0)) differ.push(unit);
    }
    expect(differ).toEqual([]);
  });

  it('never echoes a header value in its messages', () => {
    const messages = issues({ ...valid, headers: { 'X-Token': 'plantedsecret\n' } })
      .map((i) => i.message)
      .join(' ');
    expect(messages).not.toContain('plantedsecret');
  });
});

describe('patchWebhookSchema', () => {
  it('accepts a partial body and leaves absent fields absent', () => {
    expect(patchWebhookSchema.parse({ name: 'New' })).toEqual({ name: 'New' });
    expect(patchWebhookSchema.parse({ url: '' })).toEqual({ url: '' });
  });
});

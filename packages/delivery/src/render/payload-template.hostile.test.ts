import {
  checkPayloadTemplate,
  renderWithTemplate,
  sampleEvent,
  SAVE_RENDER_LIMITS,
} from '@gatehook/delivery/render/payload-template';
import { parseTemplate } from '@gatehook/templates/template';

const SECRET = 'sk_live_v4r_value_never_echoed';

describe('hostile payload templates', () => {
  it(`bounds the save-time render at SAVE_RENDER_LIMITS (${SAVE_RENDER_LIMITS.maxDurationMs} ms)`, () => {
    expect(SAVE_RENDER_LIMITS.maxDurationMs).toBe(250);
    // Each iteration escapes a string that doubles: steps are few, the work per step is not.
    const text = '{{$s := .Vars.pad}}{{range 40}}{{$s = printf "%s%s" $s $s}}{{$x := urlquery $s}}{{end}}{}';
    const started = performance.now();
    const check = checkPayloadTemplate(text, { pad: '<é& "'.repeat(50) }, ['policy.created']);
    expect(performance.now() - started).toBeLessThan(3000);
    expect(check.ok).toBe(false);
    if (!check.ok) expect(check.message).toMatch(/limit|larger than|stopped after/);
  });

  it('a blank PATCH value cannot read a stored variable back through a JSON error', () => {
    const check = checkPayloadTemplate('{"a": {{.Vars.token}}}', { token: SECRET }, ['policy.created']);
    expect(check.ok).toBe(false);
    if (!check.ok) {
      expect(check.message).toMatch(/not valid JSON: unexpected character at position 6/);
      expect(check.message).not.toContain('sk_live');
    }
  });

  it('neither a duplicate key made of a variable nor epoch of a variable echoes it', () => {
    for (const text of [
      '{"{{.Vars.token}}":1,"{{.Vars.token}}":2}',
      '{"t": {{epoch .Vars.token}}}',
      '{"t": {{range .Vars.token}}{{end}}}',
    ]) {
      const check = checkPayloadTemplate(text, { token: SECRET }, ['policy.created']);
      expect(check.ok).toBe(false);
      if (!check.ok) expect(check.message).not.toContain('sk_live');
    }
  });

  it('a render at delivery reports kinds and positions, never the rendered body', () => {
    const template = parseTemplate('template', '{"a": {{json .Vars.token}} {{.Vars.token}}}');
    const result = renderWithTemplate(template, sampleEvent(['policy.created']), { token: SECRET });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).not.toContain('sk_live');
  });
});

describe('hostile payload templates: NUL and binary output', () => {
  it('a NUL the template prints never reaches the error text', () => {
    const template = parseTemplate('template', '{"a": "{{printf "%c" 0}}"}');
    const result = renderWithTemplate(template, sampleEvent(['policy.created']), {});
    expect(result).toEqual({
      ok: false,
      error: expect.stringMatching(/^the rendered body is not valid JSON: control character in string at position 7$/),
    });
  });

  it('a NUL escaped by json is valid JSON and stays escaped in the body', () => {
    const template = parseTemplate('template', '{"a": {{json .Vars.x}}}');
    const result = renderWithTemplate(template, sampleEvent(['policy.created']), { x: 'a\u0000b' });
    expect(result).toEqual({ ok: true, json: '{"a": "a\\u0000b"}' });
  });
});

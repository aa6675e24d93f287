// Data objects are JSON maps: names that JavaScript objects inherit must read as missing keys, and no
// template can reach a JavaScript built-in or run code held in the data.

import { parseTemplate } from './template';

function render(text: string, data: unknown): string {
  return parseTemplate('t', text).execute(data);
}

const inherited = [
  'constructor',
  '__proto__',
  'toString',
  'hasOwnProperty',
  'valueOf',
  '__defineGetter__',
  'prototype',
];

describe('no prototype access', () => {
  it.each(inherited)('.%s on a data object is a missing key', (name) => {
    expect(render(`{{.${name}}}|{{index . "${name}"}}|{{json .${name}}}|{{if .${name}}}y{{end}}`, { a: 1 })).toBe(
      '<no value>|<no value>|null|',
    );
  });

  it('does not walk into inherited members', () => {
    expect(render('[{{.constructor.name}}][{{.toString.call}}]', {})).toBe('[<no value>][<no value>]');
  });

  it('treats own keys with those names as data', () => {
    const data = JSON.parse('{"__proto__": "p", "constructor": {"name": "n"}}') as unknown;
    expect(render('{{.__proto__}} {{.constructor.name}} {{len .}}', data)).toBe('p n 2');
  });

  it('ignores inherited keys when printing, ranging, counting and encoding', () => {
    const data = Object.create({ inherited: 'x' }) as Record<string, unknown>;
    data.own = 1;
    // Not a plain object (its prototype carries data), so it is not a map at all.
    expect(() => render('{{.inherited}}', data)).toThrow("can't evaluate field inherited");
    const plain = { own: 1 };
    expect(render('{{.}} {{range $k, $v := .}}{{$k}}{{end}} {{len .}} {{json .}}', plain)).toBe(
      'map[own:1] own 1 {"own":1}',
    );
  });

  it('never calls functions held in data', () => {
    let called = false;
    const data = {
      f: () => {
        called = true;
        return 'ran';
      },
    };
    expect(() => render('{{call .f}}', data)).toThrow('error calling call: non-function of type unsupported');
    expect(() => render('{{.f.x}}', data)).toThrow("can't evaluate field x");
    expect(called).toBe(false);
  });

  it('does not expose array or string properties as fields', () => {
    expect(() => render('{{.a.length}}', { a: [1] })).toThrow("can't evaluate field length in type interface {}");
    expect(() => render('{{.s.length}}', { s: 'abc' })).toThrow("can't evaluate field length in type interface {}");
  });
});

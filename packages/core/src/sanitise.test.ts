import { MAX_STORED_TEXT_LENGTH, sanitiseText } from '@gatehook/core/sanitise';

describe('sanitiseText', () => {
  it('replaces NUL and lone surrogates, keeps pairs and ordinary text', () => {
    expect(sanitiseText('a\u0000b')).toBe('a\uFFFDb');
    expect(sanitiseText('x\uD800y\uDC00z')).toBe('x\uFFFDy\uFFFDz');
    expect(sanitiseText('pair \uD83D\uDE00 ok')).toBe('pair \uD83D\uDE00 ok');
    expect(sanitiseText('\uDC00\uD800')).toBe('\uFFFD\uFFFD');
    expect(sanitiseText('plain text, é')).toBe('plain text, é');
  });

  it('bounds the length at MAX_STORED_TEXT_LENGTH by default', () => {
    expect(MAX_STORED_TEXT_LENGTH).toBe(1024);
    expect(sanitiseText('a'.repeat(5000))).toHaveLength(MAX_STORED_TEXT_LENGTH);
    expect(sanitiseText('a'.repeat(50), 10)).toBe('a'.repeat(10));
  });

  it('does not split a surrogate pair at the cut', () => {
    const cut = sanitiseText('abc\uD83D\uDE00', 4);
    expect(cut).toBe('abc');
    expect(sanitiseText('ab\uD83D\uDE00', 4)).toBe('ab\uD83D\uDE00');
  });

  it('decodes bytes as UTF-8 and makes a binary body storable', () => {
    const gif = Buffer.from([0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x00, 0x00, 0xff, 0xfe, 0xc3]);
    const out = sanitiseText(gif);
    expect(out.startsWith('GIF89a')).toBe(true);
    expect(out).not.toContain('\u0000');
    expect(Buffer.from(out, 'utf8').toString('utf8')).toBe(out);
    expect(sanitiseText(new Uint8Array([0x61, 0xff, 0x62]))).toBe('a\uFFFDb');
    expect(sanitiseText(new Uint8Array([0x61, 0xe2, 0x82]))).toBe('a');
  });

  it('is linear on large hostile input', () => {
    const hostile = '\u0000\uD800'.repeat(500_000);
    const started = performance.now();
    const out = sanitiseText(hostile, hostile.length);
    expect(performance.now() - started).toBeLessThan(5000); // quadratic would take minutes
    expect(out).toBe('\uFFFD'.repeat(hostile.length));
  });
});

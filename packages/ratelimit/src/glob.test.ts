import { globMatches } from './glob';

// A reference: the glob as an anchored RegExp (fine for the short strings of this test).
function reference(pattern: string, text: string): boolean {
  const source = [...pattern]
    .map((c) => (c === '*' ? '[\\s\\S]*' : c === '?' ? '[\\s\\S]' : c.replace(/[.+^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`).test(text);
}

describe('globMatches', () => {
  it.each([
    ['*', '', true],
    ['*', 'anything', true],
    ['', '', true],
    ['', 'a', false],
    ['github.*', 'github.create_issue', true],
    ['github.*', 'gitlab.create_issue', false],
    ['*.delete_*', 'github.delete_repo', true],
    ['*.delete_*', 'github.create_repo', false],
    ['fs.read?', 'fs.read1', true],
    ['fs.read?', 'fs.read', false],
    ['fs.read?', 'fs.read12', false],
    ['a*b*c', 'abc', true],
    ['a*b*c', 'aXbYc', true],
    ['a*b*c', 'aXbYcZ', false],
    ['**', 'x', true],
    ['*?', '', false],
    ['.', 'x', false], // no regex meaning
    ['[ab]', 'a', false],
    ['[ab]', '[ab]', true],
  ])('%j against %j is %s', (pattern, text, expected) => {
    expect(globMatches(pattern, text)).toBe(expected);
  });

  it('agrees with a regex reference on 5,000 random pairs', () => {
    let seed = 7;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const alphabet = ['a', 'b', '.', '*', '?'];
    for (let i = 0; i < 5_000; i += 1) {
      const pattern = Array.from({ length: rand(7) }, () => alphabet[rand(5)]).join('');
      const text = Array.from({ length: rand(8) }, () => alphabet[rand(3)]).join('');
      if (globMatches(pattern, text) !== reference(pattern, text)) throw new Error(`${pattern} vs ${text}`);
    }
  });

  it('stays fast on a pattern that makes a backtracking regex blow up', () => {
    const pattern = `${'*a'.repeat(120)}*b`;
    const text = 'a'.repeat(256);
    // Correctness is the assertion; the regex form of this pattern would not finish in any reasonable time.
    expect(globMatches(pattern, text)).toBe(false);
    expect(globMatches(pattern, `${text}b`)).toBe(true);
  });
});

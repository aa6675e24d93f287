import { maskUrl } from '@gatehook/core/masking';

describe('maskUrl', () => {
  it('keeps only the origin and the last four characters', () => {
    expect(maskUrl('https://hooks.example.com/services/T0/B1/abc9fQz')).toBe('https://hooks.example.com/…9fQz');
  });

  it('keeps a non-default port and drops credentials', () => {
    expect(maskUrl('https://user:pa55@example.com:8443/x?token=secretvalue')).toBe('https://example.com:8443/…alue');
  });

  it('never echoes an unparseable value beyond its tail', () => {
    expect(maskUrl('not a url with secret')).toBe('invalid-url/…cret');
  });
});

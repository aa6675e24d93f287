import { secretsValidAt } from './request-view';

describe('secretsValidAt', () => {
  const overlap = 86_400;
  const rotatedAt = new Date('2030-01-02T00:00:00Z');
  const secrets = { current: 'new', previous: 'old', previousValidUntil: new Date(rotatedAt.getTime() + overlap * 1000) };

  it('is the current secret alone when none was rotated', () => {
    expect(secretsValidAt({ current: 'only', previous: null, previousValidUntil: null }, new Date(), overlap)).toEqual(['only']);
  });
  it('is the secret replaced later for an attempt made before the rotation', () => {
    expect(secretsValidAt(secrets, new Date(rotatedAt.getTime() - 1), overlap)).toEqual(['old']);
  });
  it('is both, newest first, during the overlap', () => {
    expect(secretsValidAt(secrets, rotatedAt, overlap)).toEqual(['new', 'old']);
  });
  it('is the current one alone once the overlap ended', () => {
    expect(secretsValidAt(secrets, secrets.previousValidUntil, overlap)).toEqual(['new']);
  });
});

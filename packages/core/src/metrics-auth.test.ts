import { metricsAuthorised, MIN_METRICS_TOKEN_LENGTH } from '@gatehook/core/metrics-auth';
import { parseConfig } from '@gatehook/core/config';

const token = 'm3tr1cs-t0ken-for-tests';

describe('metricsAuthorised', () => {
  it('lets anyone read when no token is configured', () => {
    expect(metricsAuthorised(undefined, undefined)).toBe(true);
    expect(metricsAuthorised('Bearer x', '')).toBe(true);
  });

  it('needs the exact bearer token when one is configured', () => {
    expect(metricsAuthorised(`Bearer ${token}`, token)).toBe(true);
    expect(metricsAuthorised(`bearer ${token}`, token)).toBe(true);
    expect(metricsAuthorised(undefined, token)).toBe(false);
    expect(metricsAuthorised(token, token)).toBe(false);
    expect(metricsAuthorised(`Bearer ${token}x`, token)).toBe(false);
    expect(metricsAuthorised(`Bearer ${token.slice(1)}`, token)).toBe(false);
    expect(metricsAuthorised(`Basic ${token}`, token)).toBe(false);
    expect(metricsAuthorised(`Bearer ${'a'.repeat(100_000)}`, token)).toBe(false);
  });

  it('refuses a METRICS_TOKEN shorter than MIN_METRICS_TOKEN_LENGTH at start-up', () => {
    expect(MIN_METRICS_TOKEN_LENGTH).toBe(16);
    expect(() => parseConfig({ NODE_ENV: 'test', METRICS_TOKEN: 'short' })).toThrow(/METRICS_TOKEN/);
    expect(parseConfig({ NODE_ENV: 'test', METRICS_TOKEN: token }).METRICS_TOKEN).toBe(token);
    expect(parseConfig({ NODE_ENV: 'test' }).METRICS_TOKEN).toBeUndefined();
  });
});

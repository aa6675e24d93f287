import {
  ConfigError,
  DEVELOPMENT_ENCRYPTION_KEY,
  developerCommandEnv,
  isLocalDatabase,
  openMetricsWarning,
  parseConfig,
} from '@gatehook/core/config';
import { generateEncryptionKey } from '@gatehook/core/encryption';
import { parseSeed, redisTarget } from '@gatehook/core/redis';

describe('parseConfig', () => {
  it('applies the contract defaults', () => {
    const config = parseConfig({ NODE_ENV: 'development' });
    expect(config.DATABASE_URL).toBe('postgresql://postgres@127.0.0.1:5432/gatehook');
    expect(config.REDIS_URL).toBe('redis://127.0.0.1:6379');
    expect(config.PORT).toBe(3000);
    expect(config.WORKER_PORT).toBe(3001);
    expect(config.GRPC_PORT).toBe(3002);
    expect(config.GRPC_TLS_CERT_FILE).toBe('');
    expect(config.REDIS_PREFIX).toBe('gatehook');
    expect(config.DELIVERY_RETRY_SCHEDULE).toEqual([0, 5, 300, 1800, 7200, 18000, 36000, 36000]);
    expect(config.CIRCUIT_BREAKER_SECONDS).toBe(259200);
    expect(config.RATE_LIMIT_STORE).toBe('memory');
    expect(config.GATEHOOK_ENCRYPTION_KEY).toBe(DEVELOPMENT_ENCRYPTION_KEY);
    expect(config.startupWarnings.join(' ')).toMatch(/DEVELOPMENT key/);
  });

  it('parses overrides, treating empty values as unset', () => {
    const key = generateEncryptionKey();
    const config = parseConfig({
      PORT: '4000',
      DELIVERY_RETRY_SCHEDULE: '0,1,1,1,1,1,1,1',
      GATEHOOK_ENCRYPTION_KEY: key,
      EGRESS_ALLOW_CIDRS: '127.0.0.1/32',
      REDIS_PREFIX: '',
    });
    expect(config.PORT).toBe(4000);
    expect(config.DELIVERY_RETRY_SCHEDULE).toEqual([0, 1, 1, 1, 1, 1, 1, 1]);
    expect(config.REDIS_PREFIX).toBe('gatehook');
    expect(config.startupWarnings.join(' ')).toMatch(/EGRESS_ALLOW_CIDRS/);
  });

  it('takes GRPC_PORT 0 as off and the gRPC TLS files only as a pair', () => {
    expect(parseConfig({ NODE_ENV: 'test', GRPC_PORT: '0' }).GRPC_PORT).toBe(0);
    expect(() => parseConfig({ NODE_ENV: 'test', GRPC_PORT: '70000' })).toThrow(/GRPC_PORT/);
    expect(
      parseConfig({ NODE_ENV: 'test', GRPC_TLS_CERT_FILE: '/c.pem', GRPC_TLS_KEY_FILE: '/k.pem' }).GRPC_TLS_KEY_FILE,
    ).toBe('/k.pem');
    expect(() => parseConfig({ NODE_ENV: 'test', GRPC_TLS_CERT_FILE: '/c.pem' })).toThrow(
      /GRPC_TLS_CERT_FILE, GRPC_TLS_KEY_FILE: set both/,
    );
  });

  it('takes an http(s) CONNECT proxy URL and refuses anything else without quoting it (it may carry credentials)', () => {
    const base = { NODE_ENV: 'test' };
    expect(parseConfig({ ...base }).EGRESS_PROXY_URL).toBe('');
    expect(parseConfig({ ...base, EGRESS_PROXY_URL: 'http://user:pass@proxy.internal:3128' }).EGRESS_PROXY_URL).toBe(
      'http://user:pass@proxy.internal:3128',
    );
    expect(parseConfig({ ...base, EGRESS_PROXY_URL: 'https://proxy.internal' }).EGRESS_PROXY_URL).toBe(
      'https://proxy.internal',
    );
    for (const bad of [
      'socks5://user:hunter2@proxy:1080',
      'http://user:hunter2@proxy:3128/path',
      'not a url hunter2',
    ]) {
      expect(() => parseConfig({ ...base, EGRESS_PROXY_URL: bad })).toThrow(/EGRESS_PROXY_URL/);
      expect(() => parseConfig({ ...base, EGRESS_PROXY_URL: bad })).not.toThrow(/hunter2/);
    }
  });

  it('names every invalid variable in one readable error', () => {
    expect(() => parseConfig({ PORT: 'eighty', DELIVERY_RETRY_SCHEDULE: '1,2', RATE_LIMIT_STORE: 'disk' })).toThrow(
      ConfigError,
    );
    try {
      parseConfig({ PORT: 'eighty', DELIVERY_RETRY_SCHEDULE: '1,2', RATE_LIMIT_STORE: 'disk' });
    } catch (error) {
      const message = (error as Error).message;
      expect(message).toMatch(/PORT/);
      expect(message).toMatch(/DELIVERY_RETRY_SCHEDULE: must be 8/);
      expect(message).toMatch(/RATE_LIMIT_STORE/);
    }
  });

  it('requires a real key in production and validates key length', () => {
    expect(() => parseConfig({ NODE_ENV: 'production' })).toThrow(/GATEHOOK_ENCRYPTION_KEY: required/);
    expect(() => parseConfig({ GATEHOOK_ENCRYPTION_KEY: 'c2hvcnQ=' })).toThrow(/32 bytes/);
  });

  it('refuses the development key when NODE_ENV is unset or empty: unset counts as production', () => {
    for (const env of [{}, { NODE_ENV: '' }]) {
      expect(() => parseConfig(env)).toThrow(
        /GATEHOOK_ENCRYPTION_KEY: required unless NODE_ENV is development or test \(NODE_ENV is not set/,
      );
    }
    const key = generateEncryptionKey();
    const config = parseConfig({ GATEHOOK_ENCRYPTION_KEY: key });
    expect(config.NODE_ENV).toBe('production');
    expect(config.startupWarnings.join(' ')).not.toMatch(/DEVELOPMENT key/);
  });

  it('uses the development key only when NODE_ENV is explicitly development or test', () => {
    for (const NODE_ENV of ['development', 'test']) {
      expect(parseConfig({ NODE_ENV }).GATEHOOK_ENCRYPTION_KEY).toBe(DEVELOPMENT_ENCRYPTION_KEY);
    }
  });

  it('warns at start-up when /metrics is open in production (METRICS_TOKEN unset, NODE_ENV production or unset)', () => {
    const key = generateEncryptionKey();
    for (const env of [{ GATEHOOK_ENCRYPTION_KEY: key }, { GATEHOOK_ENCRYPTION_KEY: key, NODE_ENV: 'production' }]) {
      expect(parseConfig(env).startupWarnings.join(' ')).toMatch(
        /METRICS_TOKEN is not set: GET \/metrics answers anyone/,
      );
    }
    const token = 'a-metrics-token-of-32-characters';
    expect(parseConfig({ GATEHOOK_ENCRYPTION_KEY: key, METRICS_TOKEN: token }).startupWarnings.join(' ')).not.toMatch(
      /METRICS_TOKEN/,
    );
    for (const NODE_ENV of ['development', 'test']) {
      expect(parseConfig({ NODE_ENV }).startupWarnings.join(' ')).not.toMatch(/METRICS_TOKEN/);
    }
    expect(openMetricsWarning({ NODE_ENV: 'production', METRICS_TOKEN: token })).toBeNull();
    expect(openMetricsWarning({ NODE_ENV: 'production' })).toMatch(/METRICS_TOKEN is not set/);
  });

  it('reads REDIS_CLUSTER_NODES as seed URLs (then REDIS_URL is ignored), and keeps REDIS_PREFIX free of hash tags', () => {
    const config = parseConfig({
      NODE_ENV: 'test',
      REDIS_CLUSTER_NODES: 'redis://10.0.0.1:7000, rediss://gh:p%40ss@redis-b.internal:6380',
    });
    expect(config.REDIS_CLUSTER_NODES).toEqual(['redis://10.0.0.1:7000', 'rediss://gh:p%40ss@redis-b.internal:6380']);
    expect(redisTarget(config)).toEqual({ url: 'redis://127.0.0.1:6379', clusterNodes: config.REDIS_CLUSTER_NODES });
    expect(parseSeed(config.REDIS_CLUSTER_NODES[1]!)).toEqual({
      host: 'redis-b.internal',
      port: 6380,
      username: 'gh',
      password: 'p@ss',
      tls: true,
    });
    expect(redisTarget(parseConfig({ NODE_ENV: 'test' }))).toEqual({ url: 'redis://127.0.0.1:6379' });
    expect(parseConfig({ NODE_ENV: 'test' }).DELIVERY_QUEUE_SHARDS).toBe(8);
    expect(() => parseConfig({ NODE_ENV: 'test', REDIS_CLUSTER_NODES: 'http://10.0.0.1:7000' })).toThrow(
      /REDIS_CLUSTER_NODES: http:\/\/10.0.0.1:7000: must be redis:\/\/ or rediss:\/\//,
    );
    expect(() => parseConfig({ NODE_ENV: 'test', REDIS_CLUSTER_NODES: 'nonsense' })).toThrow(
      /REDIS_CLUSTER_NODES: nonsense: not a URL/,
    );
    expect(() => parseConfig({ NODE_ENV: 'test', REDIS_CLUSTER_NODES: 'http://gh:s3cret@10.0.0.1:7000' })).toThrow(
      'http://gh:***@10.0.0.1:7000: must be',
    );
    expect(() => parseConfig({ NODE_ENV: 'test', REDIS_PREFIX: '{gatehook}' })).toThrow(/REDIS_PREFIX/);
    expect(() => parseConfig({ NODE_ENV: 'test', DELIVERY_QUEUE_SHARDS: '0' })).toThrow(/DELIVERY_QUEUE_SHARDS/);
  });
});

describe('developerCommandEnv (pnpm start, db:migrate, gatehook)', () => {
  it('keeps NODE_ENV when it is set, whatever the database', () => {
    for (const NODE_ENV of ['production', 'test', 'development']) {
      expect(developerCommandEnv({ NODE_ENV, DATABASE_URL: 'postgresql://u@db.internal/x' }).NODE_ENV).toBe(NODE_ENV);
      expect(developerCommandEnv({ NODE_ENV }).NODE_ENV).toBe(NODE_ENV);
    }
  });

  it('makes an unset NODE_ENV development only for a database on this machine (the default included)', () => {
    expect(developerCommandEnv({}).NODE_ENV).toBe('development');
    expect(developerCommandEnv({ NODE_ENV: '', DATABASE_URL: '' }).NODE_ENV).toBe('development');
    for (const url of [
      'postgresql://postgres@127.0.0.1:5432/gatehook',
      'postgres://u:p@localhost/db',
      'postgresql://u@127.0.1.1/db',
      'postgresql://u@[::1]:5432/db',
      'postgresql:///db?host=/var/run/postgresql',
      'postgresql:///db',
    ]) {
      expect(isLocalDatabase(url)).toBe(true);
      expect(developerCommandEnv({ DATABASE_URL: url }).NODE_ENV).toBe('development');
    }
  });

  it('leaves it unset, so production, for a database elsewhere', () => {
    for (const url of [
      'postgresql://u@db.internal:5432/x',
      'postgresql://u@10.0.0.5/x',
      'postgresql://u@localhost.evil.com/x',
      'postgresql://u@127.0.0.1/x?host=db.internal',
      'not a url',
    ]) {
      expect(isLocalDatabase(url)).toBe(false);
      const env = developerCommandEnv({ DATABASE_URL: url });
      expect(env.NODE_ENV).toBeUndefined();
      expect(() => parseConfig(env)).toThrow(
        /GATEHOOK_ENCRYPTION_KEY: required unless NODE_ENV is development or test/,
      );
    }
  });
});

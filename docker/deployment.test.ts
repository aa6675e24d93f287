import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { SERVICE_NODE_FLAGS } from '@gatehook/core/service';

// Docker cannot run on the CI machines, so these checks keep the files honest: they parse, name the services
// the README promises, and use only configuration docs/configuration.md documents.
const root = path.resolve(__dirname, '..');
const compose = parse(readFileSync(path.join(__dirname, 'compose.yaml'), 'utf8'), { merge: true });
const dockerfile = readFileSync(path.join(__dirname, 'Dockerfile'), 'utf8');
const configuration = readFileSync(path.join(root, 'docs', 'configuration.md'), 'utf8');
const documented = new Set([...configuration.matchAll(/^\| `([A-Z_]+)` \|/gm)].map((m) => m[1]));

describe('docker/compose.yaml', () => {
  it('has postgres, redis, a one-shot migration, one api and two workers', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['api', 'migrate', 'postgres', 'redis', 'worker']);
    expect(compose.services.worker.deploy.replicas).toBe(2);
    expect(compose.services.api.depends_on.migrate.condition).toBe('service_completed_successfully');
    expect(compose.services.worker.depends_on.migrate.condition).toBe('service_completed_successfully');
    expect(compose.services.migrate.depends_on.postgres.condition).toBe('service_healthy');
    for (const name of ['migrate', 'api', 'worker']) {
      expect(compose.services[name].build.dockerfile).toBe('docker/Dockerfile');
      expect(compose.services[name].build.target).toBe(name);
    }
  });

  it('configures Gatehook only with variables docs/configuration.md documents', () => {
    expect(documented.size).toBeGreaterThan(15);
    for (const name of ['migrate', 'api', 'worker']) {
      const env = Object.keys(compose.services[name].environment);
      expect(env).toEqual(expect.arrayContaining(['DATABASE_URL', 'REDIS_URL', 'GATEHOOK_ENCRYPTION_KEY']));
      for (const variable of env)
        expect(`${name}: ${variable} ${documented.has(variable) ? 'documented' : 'undocumented'}`).toBe(
          `${name}: ${variable} documented`,
        );
    }
  });
});

describe('docker/Dockerfile', () => {
  it('builds on Node 22 LTS, runs as a non-root user and has the three targets', () => {
    const bases = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map((m) => m[1]);
    expect(bases.filter((b) => b?.startsWith('node:'))).toEqual(['node:22-bookworm-slim', 'node:22-bookworm-slim']);
    expect(dockerfile).toMatch(/^USER node$/m);
    for (const target of ['api', 'worker', 'migrate'])
      expect(dockerfile).toMatch(new RegExp(`^FROM runtime AS ${target}$`, 'm'));
    expect(dockerfile).toContain('pnpm install --frozen-lockfile');
  });
});

describe('service launchers', () => {
  // Every way of starting an API or a worker process gives node the same flags (SERVICE_NODE_FLAGS); scripts/start.ts
  // and the test kit spread the constant itself.
  it('pass SERVICE_NODE_FLAGS in the package scripts and the Docker images', () => {
    const scripts = (file: string) =>
      (JSON.parse(readFileSync(path.join(root, file), 'utf8')) as { scripts: Record<string, string> }).scripts;
    const launchers = [
      scripts('package.json')['start:api'],
      scripts('package.json')['start:worker'],
      scripts('apps/api/package.json').start,
      scripts('apps/worker/package.json').start,
      ...[...dockerfile.matchAll(/^CMD (\[.*main\.ts"\])$/gm)].map((m) => (JSON.parse(m[1]!) as string[]).join(' ')),
    ];
    expect(launchers).toHaveLength(6);
    for (const launcher of launchers)
      expect(launcher).toMatch(new RegExp(`^node ${SERVICE_NODE_FLAGS.join(' ')} --import tsx `));
  });
});

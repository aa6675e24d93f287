import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { TEST_DATABASE_URL } from '@gatehook/testkit/env';
import { startTestApi, type TestApi } from '@gatehook/testkit/api';

const run = promisify(execFile);
const root = path.resolve(__dirname, '../../..');

// The exact command scripts rely on (CONTRACT section 2).
async function gatehook(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run('pnpm', ['--silent', 'gatehook', ...args], {
      cwd: root,
      // The API's Redis prefix, so that a revocation reaches it.
      env: {
        ...process.env,
        DATABASE_URL: TEST_DATABASE_URL,
        REDIS_PREFIX: api.config.REDIS_PREFIX,
        LOG_LEVEL: 'silent',
      },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(() => api.close());

describe('pnpm --silent gatehook keys', () => {
  it('creates a member key as one JSON line, creating the organisation, and revokes it', async () => {
    const org = randomUUID();
    const created = await gatehook(
      'keys',
      'create',
      '--org',
      org,
      '--name',
      'ci reader',
      '--role',
      'member',
      '--permissions',
      'manage_webhooks',
    );
    expect(created.code).toBe(0);
    const lines = created.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const issued = JSON.parse(lines[0]!);
    expect(Object.keys(issued).sort()).toEqual(['id', 'key', 'org_id']);
    expect(issued.org_id).toBe(org);
    expect(issued.key).toMatch(/^ghk_[A-Za-z0-9_-]{43}$/);
    expect(await api.db.organization.findUnique({ where: { id: org } })).not.toBeNull();

    const stored = await api.db.apiKey.findUniqueOrThrow({ where: { id: issued.id } });
    expect(stored.keyHash).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(stored)).not.toContain(issued.key.slice(4));

    expect((await api.call('GET', '/webhooks', { key: issued.key })).status).toBe(200);
    expect((await api.call('POST', '/webhooks', { key: issued.key, body: {} })).status).toBe(403);

    const revoked = await gatehook('keys', 'revoke', issued.id);
    expect(revoked.code).toBe(0);
    expect(revoked.stderr).toBe('');
    // The API caches verified keys; the CLI's announcement drops this one within a second.
    const deadline = Date.now() + 1000;
    let status = (await api.call('GET', '/webhooks', { key: issued.key })).status;
    while (status === 200 && Date.now() < deadline)
      status = (await api.call('GET', '/webhooks', { key: issued.key })).status;
    expect(status).toBe(401);
  }, 60_000);

  it('revokes a key once: a second revocation succeeds and keeps the first instant', async () => {
    const org = randomUUID();
    const issued = JSON.parse(
      (await gatehook('keys', 'create', '--org', org, '--name', 'r', '--role', 'admin')).stdout,
    );
    expect((await gatehook('keys', 'revoke', issued.id)).code).toBe(0);
    const first = await api.db.apiKey.findUniqueOrThrow({ where: { id: issued.id } });
    expect(first.revokedAt).not.toBeNull();
    expect((await gatehook('keys', 'revoke', issued.id)).code).toBe(0);
    const second = await api.db.apiKey.findUniqueOrThrow({ where: { id: issued.id } });
    expect(second.revokedAt).toEqual(first.revokedAt);
  }, 60_000);

  it('creates an admin key for an existing organisation, storing no permissions for it even when given some', async () => {
    const org = randomUUID();
    const first = JSON.parse(
      (await gatehook('keys', 'create', '--org', org, '--name', 'one', '--role', 'admin')).stdout,
    );
    const second = JSON.parse(
      (
        await gatehook(
          'keys',
          'create',
          '--org',
          org,
          '--name',
          'two',
          '--role',
          'admin',
          '--permissions',
          'manage_webhooks',
        )
      ).stdout,
    );
    expect(second.org_id).toBe(first.org_id);
    const organisation = await api.db.organization.findUniqueOrThrow({ where: { id: org } });
    expect(organisation.name).toBe(org);
    const stored = await api.db.apiKey.findUniqueOrThrow({ where: { id: second.id } });
    expect(stored).toMatchObject({ orgId: org, name: 'two', role: 'admin', permissions: [], revokedAt: null });
    const r = await api.call('POST', '/webhooks', {
      key: second.key,
      body: { name: 'x', url: 'https://93.184.215.14/', events: ['*'] },
    });
    expect(r.status).toBe(201);
  }, 60_000);

  it.each([
    [['keys', 'create', '--org', 'not-a-uuid', '--name', 'x', '--role', 'admin'], /--org must be a uuid/],
    [['keys', 'create', '--org', randomUUID(), '--name', 'x', '--role', 'owner'], /--role must be admin or member/],
    [
      ['keys', 'create', '--org', randomUUID(), '--name', 'x', '--role', 'member', '--permissions', 'root'],
      /unknown permission "root"/,
    ],
    [['keys', 'revoke', randomUUID()], /no API key with id/],
    [['keys', 'delete'], /usage/],
  ])(
    'refuses %j with exit code 2 and nothing on stdout',
    async (args, message) => {
      const r = await gatehook(...args);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(message);
    },
    60_000,
  );
});

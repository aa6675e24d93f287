import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import path from 'node:path';
import { createTestDatabase } from '@gatehook/testkit/database';
import { TEST_REDIS_URL } from '@gatehook/testkit/env';
import { freePort } from '@gatehook/testkit/processes';
import { waitFor } from '@gatehook/testkit/until';

const root = path.resolve(__dirname, '../../..');

// Not listening yet, or not ready yet: try again.
const answer = (url: string, deadline: number) =>
  waitFor(
    async () => {
      const response = await fetch(url).catch(() => undefined);
      return response?.ok ? response : undefined;
    },
    { timeoutMs: Math.max(0, deadline - Date.now()), everyMs: 200, what: url },
  );

describe('pnpm start', () => {
  it('migrates, then serves the API and a worker, and stops both on SIGTERM', async () => {
    const [apiPort, workerPort, grpcPort] = [await freePort(), await freePort(), await freePort()];
    // Its own database: the worker's reconciler must not pick up other tests' events.
    const database = await createTestDatabase();
    const child = spawn('pnpm', ['start'], {
      cwd: root,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        DATABASE_URL: database.url,
        REDIS_URL: TEST_REDIS_URL,
        REDIS_PREFIX: `test_${randomBytes(6).toString('hex')}`,
        PORT: String(apiPort),
        WORKER_PORT: String(workerPort),
        GRPC_PORT: String(grpcPort),
        LOG_LEVEL: 'info',
      },
    });
    let [stdout, stderr] = ['', ''];
    child.stdout!.on('data', (chunk) => (stdout += chunk));
    child.stderr!.on('data', (chunk) => (stderr += chunk));
    try {
      const deadline = Date.now() + 45_000;
      await answer(`http://127.0.0.1:${apiPort}/healthz`, deadline);
      await answer(`http://127.0.0.1:${workerPort}/healthz`, deadline);
      expect(await (await answer(`http://127.0.0.1:${apiPort}/readyz`, deadline)).json()).toEqual({
        status: 'ok',
        checks: { postgres: 'ok', redis: 'ok' },
      });
      expect(await (await answer(`http://127.0.0.1:${workerPort}/readyz`, deadline)).json()).toEqual({
        status: 'ok',
        checks: { postgres: 'ok', redis: 'ok' },
      });
      expect(stderr).toMatch(/migrations: \d+ applied, \d+ already applied/);
      // The gRPC check path was warmed before its port listened (docs/rate-limits.md, "Warm-up at start").
      const warmed = stdout
        .split('\n')
        .filter((line) => line.includes('"grpc check path warmed"'))
        .map((line) => JSON.parse(line) as { calls: number; failed: number });
      expect(warmed).toEqual([expect.objectContaining({ failed: 0 })]);
      expect(warmed[0]!.calls).toBeGreaterThan(0);
    } finally {
      process.kill(-child.pid!, 'SIGTERM');
    }
    const [code, signal] = (await once(child, 'exit')) as [number | null, string | null];
    expect(code === 0 || signal === 'SIGTERM').toBe(true);
    await expect(fetch(`http://127.0.0.1:${apiPort}/healthz`)).rejects.toThrow();
    await database.drop();
  }, 60_000);

  it('runs as production when NODE_ENV is unset and the database is elsewhere: no development key', async () => {
    const env: Record<string, string | undefined> = {
      ...process.env,
      DATABASE_URL: 'postgresql://postgres@db.example.invalid:5432/gatehook',
      GATEHOOK_ENCRYPTION_KEY: '',
    };
    delete env.NODE_ENV;
    const child = spawn('pnpm', ['start'], { cwd: root, stdio: ['ignore', 'ignore', 'pipe'], env });
    let stderr = '';
    child.stderr!.on('data', (chunk) => (stderr += chunk));
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).not.toBe(0);
    expect(stderr).toContain(
      'GATEHOOK_ENCRYPTION_KEY: required unless NODE_ENV is development or test (NODE_ENV is not set, which counts as production)',
    );
  }, 60_000);
});

import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';

const root = path.resolve(__dirname, '../../..');

/** A TCP port that was free a moment ago. */
export async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

async function waitUntil(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`${what} did not come up within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A private Redis server (no persistence), so a test may FLUSHALL or restart it without touching other tests. */
export async function startRedisServer(): Promise<{ url: string; flushAll(): Promise<void>; close(): Promise<void> }> {
  const port = await freePort();
  const dir = mkdtempSync(path.join(tmpdir(), 'gatehook-redis-'));
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
  const url = `redis://127.0.0.1:${port}`;
  const admin = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => 100 });
  admin.on('error', () => undefined);
  await waitUntil(async () => (await admin.ping()) === 'PONG', 10_000, 'redis-server');
  const exited = once(child, 'exit');
  return {
    url,
    async flushAll() {
      await admin.flushall();
    },
    /** Kills the server; safe to call twice. */
    async close() {
      admin.disconnect();
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited.catch(() => undefined);
    },
  };
}

export interface ServiceProcess {
  port: number;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/** Runs apps/<app>/src/main.ts as its own process (tsx), and waits until its /healthz answers. */
export async function startServiceProcess(app: 'api' | 'worker', env: Record<string, string>): Promise<ServiceProcess> {
  const port = await freePort();
  // node itself (not the tsx CLI, which runs the script in a child): a signal must reach the service process.
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', path.join(root, `apps/${app}/src/main.ts`)], {
    cwd: root,
    env: { ...process.env, ...env, [app === 'api' ? 'PORT' : 'WORKER_PORT']: String(port), LOG_LEVEL: env.LOG_LEVEL ?? 'warn' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = once(child, 'exit');
  await waitUntil(async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok, 30_000, `${app} process`);
  return {
    port,
    async kill(signal: NodeJS.Signals = 'SIGKILL') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}

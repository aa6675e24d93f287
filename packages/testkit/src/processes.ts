import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { Client } from 'pg';
import { SERVICE_NODE_FLAGS } from '@gatehook/core/service';
import { waitFor } from './until';

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

// Waits for a process to answer; an error from the check means not yet.
async function waitUntil(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  await waitFor(() => check().catch(() => false), { timeoutMs, everyMs: 100, what: `${what} coming up` });
}

/** A private Redis server (no persistence), so a test may FLUSHALL or restart it without touching other tests. */
export async function startRedisServer(): Promise<{
  url: string;
  pid: number;
  flushAll(): Promise<void>;
  close(): Promise<void>;
}> {
  const port = await freePort();
  const dir = mkdtempSync(path.join(tmpdir(), 'gatehook-redis-'));
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
    { stdio: 'ignore' },
  );
  const url = `redis://127.0.0.1:${port}`;
  const admin = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => 100 });
  admin.on('error', () => undefined);
  await waitUntil(async () => (await admin.ping()) === 'PONG', 10_000, 'redis-server');
  const exited = once(child, 'exit');
  return {
    url,
    pid: child.pid!,
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

/** The bin directory of the installed PostgreSQL server (pg_config, else the newest /usr/lib/postgresql/<v>). */
function postgresBinDir(): string {
  try {
    const dir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim();
    if (existsSync(path.join(dir, 'initdb'))) return dir;
  } catch {
    // No pg_config on PATH (or only the client's): look for a server install.
  }
  const base = '/usr/lib/postgresql';
  const versions = existsSync(base)
    ? readdirSync(base).filter((v) => existsSync(path.join(base, v, 'bin/initdb')))
    : [];
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0];
  if (!newest)
    throw new Error('no PostgreSQL server binaries found (pg_config --bindir, /usr/lib/postgresql/<version>/bin)');
  return path.join(base, newest, 'bin');
}

/** Postgres refuses to run as root: as root, the cluster belongs to (and runs as) the `postgres` OS user. */
function postgresUser(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

export interface PostgresServer {
  /** postgresql://postgres@127.0.0.1:<port> (no database; append `/<name>`). */
  url: string;
  /** Fast shutdown (clients are disconnected); resolves once the server is down. */
  stop(): Promise<void>;
  /** Starts it again on the same port and data directory; resolves once it accepts connections. */
  start(): Promise<void>;
  /** Stops it and removes its directory; safe to call twice. */
  close(): Promise<void>;
}

/**
 * A private PostgreSQL cluster (trust auth, fsync off, its own port and socket directory), so a test may stop and
 * restart it without touching the machine's server that the other tests share.
 */
export async function startPostgresServer(): Promise<PostgresServer> {
  const bin = postgresBinDir();
  const owner = postgresUser();
  const as = { ...(owner ?? {}), env: { ...process.env, LC_ALL: 'C' } };
  const dir = mkdtempSync(path.join(tmpdir(), 'gatehook-pg-'));
  const data = path.join(dir, 'data');
  let child: ChildProcess | null = null;
  let exited: Promise<unknown> = Promise.resolve();
  // A test runner that exits without close() must not leave a postmaster behind.
  const killOnExit = () => {
    child?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', killOnExit);

  const stop = async (signal: NodeJS.Signals) => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited.catch(() => undefined);
    child = null;
  };
  try {
    if (owner) chownSync(dir, owner.uid, owner.gid);
    execFileSync(
      path.join(bin, 'initdb'),
      ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-locale', '--no-sync'],
      { ...as, cwd: dir, stdio: 'ignore' },
    );
    const port = await freePort();
    const url = `postgresql://postgres@127.0.0.1:${port}`;
    const start = async () => {
      if (child) throw new Error('postgres is already running');
      const settings = {
        listen_addresses: '127.0.0.1',
        port: String(port),
        unix_socket_directories: dir,
        fsync: 'off',
      };
      const args = ['-D', data, ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`])];
      const started = spawn(path.join(bin, 'postgres'), args, { ...as, cwd: dir, stdio: 'ignore' });
      child = started;
      exited = once(started, 'exit');
      await waitUntil(
        async () => {
          const client = new Client({ connectionString: `${url}/postgres`, connectionTimeoutMillis: 1000 });
          client.on('error', () => undefined);
          try {
            await client.connect();
            await client.query('SELECT 1');
            return true;
          } finally {
            await client.end().catch(() => undefined);
          }
        },
        30_000,
        'postgres',
      );
    };
    await start();
    let closed = false;
    return {
      url,
      stop: () => stop('SIGINT'),
      start,
      async close() {
        if (closed) return;
        closed = true;
        await stop('SIGQUIT');
        process.removeListener('exit', killOnExit);
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await stop('SIGKILL');
    process.removeListener('exit', killOnExit);
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

export interface ServiceProcess {
  port: number;
  /** The API's gRPC port (CONTRACT 19): a free one unless the env names GRPC_PORT (0: none); 0 for a worker. */
  grpcPort: number;
  /** The OS process id (benchmarks read its CPU time from /proc). */
  pid: number;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * GATEHOOK_TEST_SERVICE_NODE_FLAGS: node flags added to every API and worker process a test or bench starts, to look
 * into one (`--cpu-prof --cpu-prof-dir=/tmp/prof` writes each thread's CPU profile when the process stops).
 */
function extraNodeFlags(): string[] {
  return (process.env.GATEHOOK_TEST_SERVICE_NODE_FLAGS ?? '').split(/\s+/).filter((flag) => flag !== '');
}

/**
 * Longest a service process may take to answer /healthz. An API alone starts in 8 to 17 s on a 2-core machine: it
 * loads its code through tsx, its render threads each load theirs, its connections open and warm, and its gRPC path
 * warms for up to GRPC_WARM_UP.maxMs. The chaos suite starts up to six such processes at once beside other suites,
 * where 30 s was once not enough. A process that exits before it answers fails the wait at once.
 */
const SERVICE_START_MS = 90_000;

/** Runs apps/<app>/src/main.ts as its own process (tsx), and waits until its /healthz answers. */
export async function startServiceProcess(app: 'api' | 'worker', env: Record<string, string>): Promise<ServiceProcess> {
  // A port found free can be taken before the process binds it (by another test's listener, or as the local port of
  // an outgoing connection, drawn from the same ephemeral range): a process that exits on EADDRINUSE for a port chosen
  // here is started again on fresh ports. Any other exit fails at once.
  for (let attempt = 1; ; attempt += 1) {
    const started = await startOnce(app, env);
    if ('process' in started) return started.process;
    // A GRPC_PORT the caller named may be the port taken, and is not the kit's to change (0 means no gRPC port).
    const fixedGrpcPort = env.GRPC_PORT !== undefined && env.GRPC_PORT !== '0';
    if (!started.portTaken || fixedGrpcPort || attempt >= 3) throw started.error;
  }
}

async function startOnce(
  app: 'api' | 'worker',
  env: Record<string, string>,
): Promise<{ process: ServiceProcess } | { error: Error; portTaken: boolean }> {
  const port = await freePort();
  // Every API process serves gRPC (3002 by default): each gets a free port, so that several can run at once.
  const grpcPort = app === 'api' ? Number(env.GRPC_PORT ?? (await freePort())) : 0;
  // node itself (not the tsx CLI, which runs the script in a child): a signal must reach the service process.
  const child: ChildProcess = spawn(
    process.execPath,
    [...SERVICE_NODE_FLAGS, ...extraNodeFlags(), '--import', 'tsx', path.join(root, `apps/${app}/src/main.ts`)],
    {
      cwd: root,
      env: {
        ...process.env,
        ...env,
        [app === 'api' ? 'PORT' : 'WORKER_PORT']: String(port),
        ...(app === 'api' ? { GRPC_PORT: String(grpcPort) } : {}),
        LOG_LEVEL: env.LOG_LEVEL ?? 'warn',
      },
      // GATEHOOK_TEST_SERVICE_LOGS=1 shows the services' logs (LOG_LEVEL, warn by default) when a scenario needs looking
      // into. Standard error is passed on as it comes, its end kept to tell a port taken meanwhile.
      stdio: ['ignore', process.env.GATEHOOK_TEST_SERVICE_LOGS ? 'inherit' : 'ignore', 'pipe'],
    },
  );
  let stderrTail = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    process.stderr.write(chunk);
    stderrTail = (stderrTail + chunk.toString()).slice(-8192);
  });
  const exited = once(child, 'exit');
  // A spawn error rejects `exited`; kill() awaits it, and the wait below reports the exit.
  exited.catch(() => undefined);
  try {
    await waitFor(
      async () => {
        // A process that has exited will never answer: fail at once rather than at the end of the bound.
        if (child.exitCode !== null || child.signalCode !== null) {
          throw new Error(`${app} process exited (${child.exitCode ?? child.signalCode}) before answering /healthz`);
        }
        return fetch(`http://127.0.0.1:${port}/healthz`).then(
          (response) => response.ok,
          () => false,
        );
      },
      { timeoutMs: SERVICE_START_MS, everyMs: 100, what: `${app} process coming up` },
    );
  } catch (error) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited.catch(() => undefined);
    return { error: error as Error, portTaken: stderrTail.includes('EADDRINUSE') };
  }
  return {
    process: {
      port,
      grpcPort,
      pid: child.pid!,
      async kill(signal: NodeJS.Signals = 'SIGKILL') {
        if (child.exitCode === null && child.signalCode === null) child.kill(signal);
        await exited;
      },
    },
  };
}

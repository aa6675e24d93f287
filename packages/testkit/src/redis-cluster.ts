import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { freePort } from './processes';
import { waitFor as waitForProbe } from './until';

const run = promisify(execFile);

/** A Redis Cluster of local redis-server processes, started for tests; every process is stopped by its pid. */
export interface TestRedisCluster {
  /** Seed URLs, one per node, for REDIS_CLUSTER_NODES. */
  seeds: string[];
  /** The ports of the masters and of the replicas, as created. */
  masters: number[];
  replicas: number[];
  dir: string;
  /** The pid of the node on a port. */
  pid(port: number): number;
  /** The port of the master that serves a key's slot now. */
  masterOf(key: string): Promise<number>;
  /** Kills one node (SIGKILL, by pid): a master so killed is replaced by its replica, if it has one. */
  kill(port: number): Promise<void>;
  /** FLUSHALL on every node that is a master now (its replicas follow); resolves to the masters flushed. */
  flushAll(): Promise<number[]>;
  /** Stops every node (by pid) and removes the directory; safe to call twice. */
  close(): Promise<void>;
}

async function cli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 10_000 });
  return stdout;
}

// An error from the check means not yet.
async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  await waitForProbe(() => check().catch(() => false), { timeoutMs, everyMs: 100, what });
}

function readPid(dir: string, port: number): number {
  return Number(readFileSync(path.join(dir, `redis-${port}.pid`), 'utf8').trim());
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A node whose port or cluster bus port (port + 10000) was taken before it bound them is started on others. */
const NODE_START_TRIES = 3;

/**
 * Starts one cluster node (daemonized, no persistence, its pid file and log in `dir`) on a free port not in `taken`,
 * and waits until it answers. A free port can be taken before the node binds it, and so can its bus port, which
 * nothing checks beforehand (an outgoing connection's local port among others): a node whose log says so is started
 * again on fresh ports.
 */
async function startNode(dir: string, taken: readonly number[], nodeTimeoutMs: number): Promise<number> {
  for (let attempt = 1; ; attempt += 1) {
    const port = await freePort();
    if (port + 10_000 > 65_535 || taken.includes(port)) continue;
    const log = path.join(dir, `redis-${port}.log`);
    await run('redis-server', [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--cluster-enabled',
      'yes',
      '--cluster-config-file',
      path.join(dir, `nodes-${port}.conf`),
      '--cluster-node-timeout',
      String(nodeTimeoutMs),
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      dir,
      '--daemonize',
      'yes',
      '--pidfile',
      path.join(dir, `redis-${port}.pid`),
      '--logfile',
      log,
    ]);
    const portTaken = () => existsSync(log) && readFileSync(log, 'utf8').includes('Address already in use');
    let answered = false;
    await waitFor(
      async () => portTaken() || (answered = (await cli(port, 'ping')).trim() === 'PONG'),
      10_000,
      `redis ${port}`,
    );
    if (answered) return port;
    if (attempt >= NODE_START_TRIES) throw new Error(`redis ${port}: its port or bus port was taken ${attempt} times`);
  }
}

/**
 * Starts `masters` masters with `replicasPerMaster` replicas each (redis-server --cluster-enabled, no persistence,
 * daemonized with a pid file in a temp dir), creates the cluster and waits until every node says it is ok.
 */
export async function startRedisCluster(
  options: { masters?: number; replicasPerMaster?: number; nodeTimeoutMs?: number } = {},
): Promise<TestRedisCluster> {
  const masters = options.masters ?? 3;
  const replicasPerMaster = options.replicasPerMaster ?? 0;
  const count = masters * (1 + replicasPerMaster);
  const dir = mkdtempSync(path.join(tmpdir(), 'gatehook-cluster-'));
  const ports: number[] = [];
  const stopAll = async () => {
    for (const port of ports) {
      const file = path.join(dir, `redis-${port}.pid`);
      if (!existsSync(file)) continue;
      const pid = readPid(dir, port);
      if (alive(pid)) process.kill(pid, 'SIGKILL');
      await waitFor(async () => !alive(pid), 5_000, `redis ${port} exit`).catch(() => undefined);
    }
  };
  try {
    for (let node = 0; node < count; node += 1) ports.push(await startNode(dir, ports, options.nodeTimeoutMs ?? 2_000));
    await run(
      'redis-cli',
      [
        '--cluster',
        'create',
        ...ports.map((p) => `127.0.0.1:${p}`),
        '--cluster-replicas',
        String(replicasPerMaster),
        '--cluster-yes',
      ],
      { timeout: 30_000 },
    );
    for (const port of ports) {
      await waitFor(
        async () => (await cli(port, 'cluster', 'info')).includes('cluster_state:ok'),
        20_000,
        `cluster state of ${port}`,
      );
    }
  } catch (error) {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  // redis-cli gives the first `masters` addresses the slots and makes the others their replicas.
  const roles = await Promise.all(
    ports.map(async (port) => ((await cli(port, 'role')).split('\n')[0]!.trim() === 'master' ? 'master' : 'replica')),
  );
  let closed = false;
  return {
    seeds: ports.map((port) => `redis://127.0.0.1:${port}`),
    masters: ports.filter((_, i) => roles[i] === 'master'),
    replicas: ports.filter((_, i) => roles[i] === 'replica'),
    dir,
    pid: (port) => readPid(dir, port),
    async masterOf(key) {
      const alivePort = ports.find((p) => alive(readPid(dir, p)))!;
      const slot = Number((await cli(alivePort, 'cluster', 'keyslot', key)).trim());
      const admin = new Redis(alivePort, '127.0.0.1', { lazyConnect: true });
      try {
        await admin.connect();
        const ranges = (await admin.cluster('SLOTS')) as unknown as [number, number, [string, number]][];
        const owner = ranges.find(([start, end]) => slot >= start && slot <= end);
        if (!owner) throw new Error(`no master serves slot ${slot}`);
        return owner[2][1];
      } finally {
        admin.disconnect();
      }
    },
    async flushAll() {
      const live = ports.filter((p) => alive(readPid(dir, p)));
      const roles = await Promise.all(live.map(async (p) => (await cli(p, 'role')).split('\n')[0]!.trim()));
      const current = live.filter((_, i) => roles[i] === 'master');
      await Promise.all(current.map((p) => cli(p, 'flushall')));
      return current;
    },
    async kill(port) {
      const pid = readPid(dir, port);
      if (alive(pid)) process.kill(pid, 'SIGKILL');
      await waitFor(async () => !alive(pid), 5_000, `redis ${port} exit`);
    },
    async close() {
      if (closed) return;
      closed = true;
      await stopAll();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Stops a cluster started elsewhere (jest's global setup, in another module instance) from its directory. */
export async function stopRedisClusterIn(dir: string): Promise<void> {
  if (!existsSync(dir)) return;
  const { readdirSync } = await import('node:fs');
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.pid'))) {
    const pid = Number(readFileSync(path.join(dir, file), 'utf8').trim());
    if (alive(pid)) process.kill(pid, 'SIGKILL');
  }
  rmSync(dir, { recursive: true, force: true });
}

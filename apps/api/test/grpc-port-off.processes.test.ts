import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '@gatehook/testkit/env';
import { startServiceProcess, type ServiceProcess } from '@gatehook/testkit/processes';

// CONTRACT 19: GRPC_PORT 0 turns the gRPC server off. An API process started so listens on its HTTP port alone (the
// chaos suite relies on it to start its APIs without the gRPC warm-up).

jest.setTimeout(120_000);

/** The TCP ports a process listens on, from the sockets among its open files and the kernel's socket tables. */
function listeningPorts(pid: number): number[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
      if (inode) inodes.add(inode);
    } catch {
      // closed meanwhile
    }
  }
  const ports = new Set<number>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      // local_address is ADDR:PORT in hex, st 0A is LISTEN, inode is the tenth field.
      if (fields.length > 9 && fields[3] === '0A' && inodes.has(fields[9]!)) {
        ports.add(parseInt(fields[1]!.split(':')[1]!, 16));
      }
    }
  }
  return [...ports].sort((a, b) => a - b);
}

describe('an API process with GRPC_PORT 0', () => {
  let api: ServiceProcess | undefined;
  afterAll(async () => {
    await api?.kill('SIGKILL');
  });

  it('serves HTTP and listens on no gRPC port', async () => {
    api = await startServiceProcess('api', {
      DATABASE_URL: TEST_DATABASE_URL,
      REDIS_URL: TEST_REDIS_URL,
      REDIS_PREFIX: `test_${randomBytes(6).toString('hex')}`,
      NODE_ENV: 'test',
      GRPC_PORT: '0',
    });
    expect(api.grpcPort).toBe(0);
    expect((await fetch(`http://127.0.0.1:${api.port}/healthz`)).status).toBe(200);
    expect(listeningPorts(api.pid)).toEqual([api.port]);
  });
});

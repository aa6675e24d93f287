import { once } from 'node:events';
import { createServer, type Socket } from 'node:net';
import { TEST_DATABASE_URL, TEST_PG_SERVER } from '@gatehook/testkit/env';
import { createDb, sqlPool, warmPool } from './client';
import { isDatabaseUnavailable } from './errors';

/** One backend message of the Postgres wire protocol: type byte, int32 length (itself included), body. */
function message(type: string, body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.write(type, 0, 'latin1');
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

/**
 * A server that accepts every connection (trust) and, in the same TCP chunk as "ready for query", terminates it
 * as Postgres does on a fast shutdown: the client is handed out by the pool with the FATAL already on its way.
 */
async function shutdownRacingServer(): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.once('data', () => {
      const authOk = message('R', Buffer.from([0, 0, 0, 0]));
      const ready = message('Z', Buffer.from('I'));
      const fields = ['SFATAL', 'VFATAL', 'C57P01', 'Mterminating connection due to administrator command'];
      const fatal = message('E', Buffer.concat([...fields.map((f) => Buffer.from(`${f}\0`)), Buffer.from([0])]));
      socket.end(Buffer.concat([authOk, ready, fatal]));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  return {
    url: `postgresql://postgres@127.0.0.1:${port}/gatehook`,
    async close() {
      for (const s of sockets) s.destroy();
      server.close();
      await once(server, 'close');
    },
  };
}

describe('createDb', () => {
  it('a connection terminated the moment it is handed out fails the transaction as unavailable, and does not crash the process', async () => {
    const server = await shutdownRacingServer();
    const db = createDb(server.url, { poolSize: 1 });
    try {
      const error = await db
        .$transaction(async (tx) => tx.$queryRaw`SELECT 1`)
        .then(
          () => null,
          (e: unknown) => e,
        );
      expect(error).not.toBeNull();
      expect(isDatabaseUnavailable(error)).toBe(true);
    } finally {
      await db.$disconnect();
      await server.close();
    }
  });

  it('an idle connection that Postgres terminates is dropped without ending the process; the next query reconnects', async () => {
    const db = createDb(`${TEST_PG_SERVER}/postgres`, { poolSize: 1 });
    const pool = sqlPool(db);
    try {
      const { rows } = await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      const gone = new Promise((resolve) => pool.once('remove', resolve));
      const admin = createDb(`${TEST_PG_SERVER}/postgres`, { poolSize: 1 });
      await sqlPool(admin).query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
      await admin.$disconnect();
      await gone;
      const again = await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      expect(again.rows[0]!.pid).not.toBe(rows[0]!.pid);
    } finally {
      await db.$disconnect();
    }
  });

  it('$disconnect closes the pool even when only the hot path (sqlPool) used it', async () => {
    const db = createDb(`${TEST_PG_SERVER}/postgres`, { poolSize: 1 });
    const pool = sqlPool(db);
    await pool.query('SELECT 1');
    await db.$disconnect();
    expect(pool.ended).toBe(true);
    expect(pool.totalCount).toBe(0);
  });
});

describe('warmPool', () => {
  it('opens and warms every connection of the pool, which the first requests then use', async () => {
    const db = createDb(TEST_DATABASE_URL, { poolSize: 3 });
    try {
      const pool = sqlPool(db);
      expect(pool.totalCount).toBe(0);
      expect(await warmPool(db)).toEqual({ connections: 3, warmed: true });
      expect(pool.totalCount).toBe(3);
      expect(pool.idleCount).toBe(3);
      // A query now takes one of them: nothing new is opened.
      await pool.query('SELECT 1');
      expect(pool.totalCount).toBe(3);
    } finally {
      await db.$disconnect();
    }
  });

  it('on a database without the schema it reports that nothing was warmed, and the pool still works', async () => {
    const db = createDb(`${TEST_PG_SERVER}/postgres`, { poolSize: 2 });
    try {
      expect(await warmPool(db)).toEqual({ connections: 2, warmed: false });
      expect((await sqlPool(db).query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await db.$disconnect();
    }
  });

  it('on a database that cannot be reached it reports that nothing was warmed instead of throwing', async () => {
    const db = createDb('postgresql://postgres@127.0.0.1:1/none', { poolSize: 2 });
    try {
      expect(await warmPool(db)).toEqual({ connections: 0, warmed: false });
    } finally {
      await db.$disconnect();
    }
  });

  it('on a database that accepts connections and never answers it gives up within its bound instead of holding the start', async () => {
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => undefined);
    });
    silent.listen(0, '127.0.0.1');
    await once(silent, 'listening');
    const { port } = silent.address() as { port: number };
    const db = createDb(`postgresql://postgres@127.0.0.1:${port}/none`, { poolSize: 2 });
    try {
      expect(await warmPool(db, { timeoutMs: 200 })).toEqual({ connections: 2, warmed: false });
    } finally {
      for (const socket of sockets) socket.destroy();
      silent.close();
      await db.$disconnect().catch(() => undefined);
    }
  });
});

import { parseArgs } from 'node:util';
import { z } from 'zod';
import type { Config } from '@gatehook/core/config';
import { parsePermissions, ROLES } from '@gatehook/core/api-keys';
import { loadCommandConfig } from './env';

// Each command loads what it uses when it runs (`await import`): `keys create` does not load the development
// receiver's TLS and signature code or Redis's client, and needs no Prisma client (README, "API keys"), so a script
// or a provisioning job that issues keys one process at a time pays little CPU per key.

const USAGE = `usage:
  gatehook keys create --org <uuid> --name <text> --role admin|member [--permissions a,b]
  gatehook keys revoke <key id>
  gatehook db migrate
  gatehook listen [--port <port>] [--secret whsec_…]   (development: a local HTTPS receiver)`;

/** The port `gatehook listen` takes unless told otherwise. */
const LISTEN_PORT = 4443;

class UsageError extends Error {}

const createOptions = z.object({
  org: z.uuid('--org must be a uuid'),
  name: z.string().trim().min(1, '--name is required').max(200, '--name is at most 200 characters'),
  role: z.enum(ROLES, '--role must be admin or member'),
  permissions: z.string().default(''),
});

/**
 * Tells every API process to forget the key at once (they cache verified keys). The revocation is committed
 * either way: when Redis cannot be reached, processes stop accepting the key within API_KEY_CACHE_TTL_MS.
 */
async function announceRevocation(config: Config, keyHash: string): Promise<void> {
  const [{ connectRedis, redisTarget }, { within }, { announceApiKeyChange }] = await Promise.all([
    import('@gatehook/core/redis'),
    import('@gatehook/core/readiness'),
    import('./http/api-keys'),
  ]);
  const redis = connectRedis(redisTarget(config), {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    reconnect: false,
  });
  redis.on('error', () => undefined);
  try {
    await within(
      redis.connect().then(() => announceApiKeyChange(redis, config.REDIS_PREFIX, [keyHash])),
      5_000,
    );
  } catch {
    process.stderr.write(
      `warning: the revocation could not be announced through Redis; API processes stop accepting the key within ${config.API_KEY_CACHE_TTL_MS} ms\n`,
    );
  } finally {
    redis.disconnect();
  }
}

const listenOptions = z.object({
  port: z.coerce
    .number('--port must be a number')
    .int('--port must be a whole number')
    .min(0)
    .max(65535, '--port must be at most 65535')
    .default(LISTEN_PORT),
  secret: z.string().startsWith('whsec_', "--secret must be the webhook's signing secret (whsec_…)").optional(),
});

/** `gatehook listen`: runs the development receiver until SIGINT or SIGTERM. */
async function listen(args: string[]): Promise<undefined> {
  const { values } = parseArgs({
    args,
    options: { port: { type: 'string' }, secret: { type: 'string' } },
    strict: true,
    allowPositionals: false,
  });
  const parsed = listenOptions.safeParse(values);
  if (!parsed.success) throw new UsageError(`${parsed.error.issues.map((i) => i.message).join('; ')}\n${USAGE}`);
  const { startListener } = await import('./listen');
  let listener;
  try {
    listener = await startListener({
      port: parsed.data.port,
      secret: parsed.data.secret,
      write: (line) => process.stdout.write(`${line}\n`),
    });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') throw new UsageError(`port ${parsed.data.port} is in use; choose another with --port`);
    // standardwebhooks rejects a secret that is not base64 after its prefix; its message holds no part of it.
    if (parsed.data.secret && !code)
      throw new UsageError('--secret is not a valid signing secret (whsec_ followed by base64)');
    throw error;
  }
  process.stderr.write(
    parsed.data.secret
      ? 'listening: each delivery is verified with the given secret (Ctrl-C stops)\n'
      : 'listening: no --secret given, so signatures are NOT verified (Ctrl-C stops)\n',
  );
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
  await listener.close();
  process.stderr.write(`listen: stopped (${signal})\n`);
  return undefined;
}

async function run(argv: string[]): Promise<string | undefined> {
  const [group, command, ...rest] = argv;
  // The receiver needs neither the database nor the service's configuration.
  if (group === 'listen') return listen(argv.slice(1));
  const config = loadCommandConfig();
  const { applyMigrations } = await import('@gatehook/db/migrate');
  if (group === 'db' && command === 'migrate') {
    const result = await applyMigrations(config.DATABASE_URL);
    return JSON.stringify({ applied: result.applied, already_applied: result.alreadyApplied.length });
  }
  if (group !== 'keys' || (command !== 'create' && command !== 'revoke')) throw new UsageError(USAGE);

  // Keys need the tables; applying pending migrations first makes the CLI work on a fresh database.
  await applyMigrations(config.DATABASE_URL);
  const [{ Pool }, { issueApiKey, revokeApiKey }] = await Promise.all([import('pg'), import('@gatehook/db/api-keys')]);
  // One statement per command: one connection, no Prisma client.
  const sql = new Pool({ connectionString: config.DATABASE_URL, max: 1 });
  sql.on('error', () => undefined);
  try {
    if (command === 'create') {
      const { values } = parseArgs({
        args: rest,
        options: {
          org: { type: 'string' },
          name: { type: 'string' },
          role: { type: 'string' },
          permissions: { type: 'string' },
        },
        strict: true,
        allowPositionals: false,
      });
      const parsed = createOptions.safeParse(values);
      if (!parsed.success) throw new UsageError(`${parsed.error.issues.map((i) => i.message).join('; ')}\n${USAGE}`);
      let permissions;
      try {
        permissions = parsePermissions(parsed.data.permissions);
      } catch (error) {
        throw new UsageError((error as Error).message);
      }
      const issued = await issueApiKey(sql, {
        orgId: parsed.data.org,
        name: parsed.data.name,
        role: parsed.data.role,
        permissions,
      });
      return JSON.stringify(issued);
    }
    const id = rest[0];
    if (!id || rest.length !== 1 || !z.uuid().safeParse(id).success)
      throw new UsageError(`revoke takes one key id (uuid)\n${USAGE}`);
    const revoked = await revokeApiKey(sql, id);
    if (!revoked) throw new UsageError(`no API key with id ${id}`);
    await announceRevocation(config, revoked.keyHash);
    return JSON.stringify({ id, revoked: true });
  } finally {
    await sql.end();
  }
}

run(process.argv.slice(2))
  .then((line) => {
    if (line) process.stdout.write(`${line}\n`);
    process.exit(0);
  })
  .catch((error: unknown) => {
    if (error instanceof UsageError || (error instanceof Error && error.name === 'ConfigError')) {
      process.stderr.write(`error: ${error.message}\n`);
      process.exit(2);
    }
    if (error instanceof Error && error.message.startsWith('Unknown option')) {
      process.stderr.write(`error: ${error.message}\n${USAGE}\n`);
      process.exit(2);
    }
    process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });

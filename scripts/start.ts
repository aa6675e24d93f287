// `pnpm start`: apply migrations, then run the API and one worker in this terminal. If either exits, the other
// is stopped and start exits with its code; SIGINT/SIGTERM are passed on so both shut down gracefully.
// NODE_ENV unset means development only when the database is on this machine (developerCommandEnv); in development
// it also lets deliveries reach `pnpm gatehook listen` on this machine (developmentEgressEnv).
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { developerCommandEnv, parseConfig } from '@gatehook/core/config';
import { SERVICE_NODE_FLAGS } from '@gatehook/core/service';
import { applyMigrations } from '@gatehook/db/migrate';
import { developmentEgressEnv } from '@gatehook/egress/development-ca';

const root = path.resolve(__dirname, '..');

async function main(): Promise<void> {
  const command = developerCommandEnv(process.env);
  const env = { ...command, ...developmentEgressEnv(command) };
  const config = parseConfig(env);
  const result = await applyMigrations(config.DATABASE_URL);
  process.stderr.write(
    `migrations: ${result.applied.length} applied, ${result.alreadyApplied.length} already applied\n`,
  );

  const children: ChildProcess[] = ['apps/api/src/main.ts', 'apps/worker/src/main.ts'].map((entry) =>
    // node itself rather than the tsx CLI, so that signals reach the services directly.
    spawn(process.execPath, [...SERVICE_NODE_FLAGS, '--import', 'tsx', path.join(root, entry)], {
      cwd: root,
      stdio: 'inherit',
      env,
    }),
  );
  let exiting = false;
  const stopAll = (signal: NodeJS.Signals) => {
    for (const child of children) if (child.exitCode === null) child.kill(signal);
  };
  for (const child of children) {
    child.on('exit', (code) => {
      if (!exiting) {
        exiting = true;
        stopAll('SIGTERM');
      }
      if (children.every((c) => c.exitCode !== null || c.signalCode !== null)) process.exit(code ?? 0);
    });
  }
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      exiting = true;
      stopAll(signal);
    });
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});

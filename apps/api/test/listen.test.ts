import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { ensureDevelopmentCa } from '@gatehook/egress/development-ca';
import { freePort } from '@gatehook/testkit/processes';
import { auditEvent, startStack, type Stack } from '@gatehook/testkit/stack';
import { startListener } from '../src/listen';

const root = path.resolve(__dirname, '../../..');

/** `pnpm --silent gatehook listen …` with its output gathered line by line. */
function listen(args: string[]): {
  child: ChildProcessWithoutNullStreams;
  lines: string[];
  stderr: () => string;
  waitForLine(match: (line: string) => boolean, timeoutMs?: number): Promise<string>;
} {
  const child = spawn('pnpm', ['--silent', 'gatehook', 'listen', ...args], {
    cwd: root,
    detached: true,
    env: { ...process.env, NODE_ENV: 'development' },
  });
  const lines: string[] = [];
  let partial = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    const parts = (partial + chunk.toString('utf8')).split('\n');
    partial = parts.pop()!;
    lines.push(...parts);
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  return {
    child,
    lines,
    stderr: () => stderr,
    async waitForLine(match, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = lines.find(match);
        if (found) return found;
        if (Date.now() > deadline || child.exitCode !== null)
          throw new Error(`no such line; got ${JSON.stringify(lines)}; stderr ${stderr}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
  };
}

let stack: Stack;
beforeAll(async () => {
  // The stack trusts the development CA, as `pnpm start` makes the service do in development.
  stack = await startStack({ EGRESS_EXTRA_CA_FILE: ensureDevelopmentCa().certFile });
});
afterAll(async () => {
  await stack.close();
});

describe('pnpm gatehook listen', () => {
  it('prints the webhook URL first, then a verified line per delivery naming its webhook-id and every data.id', async () => {
    const port = await freePort();
    const hook = await stack.api.call('POST', '/webhooks', {
      key: stack.org.admin,
      body: { name: 'local', url: `https://127.0.0.1:${port}/webhook`, events: ['*'], format: 'array', max_events: 10 },
    });
    expect(hook.status).toBe(201);
    const listener = listen(['--port', String(port), '--secret', hook.body.secret]);
    try {
      await listener.waitForLine(() => true);
      expect(listener.lines[0]).toBe(`https://127.0.0.1:${port}/webhook`);
      const ids = await stack.ingest([auditEvent(), auditEvent()]);
      const line = await listener.waitForLine((l) => l.includes('webhook-id'));
      const [delivery] = await stack.deliveries(hook.body.id, (items) => items[0]?.status === 'succeeded');
      expect(line).toContain(`webhook-id ${delivery!.id}`);
      for (const id of ids) expect(line).toContain(id);
      expect(line).toContain('signature verified');
      expect(line).not.toContain(hook.body.secret);
    } finally {
      process.kill(-listener.child.pid!, 'SIGINT');
      await once(listener.child, 'exit');
    }
  });

  it('without --secret says it verifies nothing; with a wrong one it refuses the delivery', async () => {
    const lines: string[] = [];
    const unchecked = await startListener({ port: 0, write: (l) => lines.push(l) });
    const otherSecret = (await stack.webhook(await stack.receiver())).secret;
    const port = Number(new URL(unchecked.url).port);
    const wrong = await startListener({ port: 0, secret: otherSecret, write: (l) => lines.push(l) });
    try {
      const uncheckedHook = await stack.webhook({ url: () => unchecked.url } as never, {
        format: 'ndjson',
        max_events: 5,
      });
      const refusedHook = await stack.webhook({ url: () => wrong.url } as never);
      const [a, b] = await stack.ingest([auditEvent(), auditEvent()]);
      await stack.deliveries(
        refusedHook.id,
        (items) =>
          items.length === 2 &&
          items.every((d) => d.attempt_count > 0 && d.attempts.every((t) => t.status_code === 401)),
      );
      await stack.deliveries(uncheckedHook.id, (items) => items.length === 1 && items[0]!.status === 'succeeded');
      const uncheckedLine = lines.find((l) => l.includes('not checked'));
      expect(uncheckedLine).toMatch(/webhook-id [0-9a-f-]{36}/);
      expect(uncheckedLine).toContain(a);
      expect(uncheckedLine).toContain(b);
      expect(lines.some((l) => l.includes('signature NOT verified'))).toBe(true);
      expect(lines[0]).toBe(`https://127.0.0.1:${port}/webhook`);
    } finally {
      await unchecked.close();
      await wrong.close();
    }
  });
});

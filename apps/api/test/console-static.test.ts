import { mkdtempSync, writeFileSync, mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import express from 'express';
import { createLogger } from '@gatehook/core/logger';
import { consoleRouter } from '@gatehook/api/http/console';
import { errorHandler } from '@gatehook/api/http/errors';

async function serve(dist: string) {
  const app = express();
  app.use('/console', consoleRouter(dist));
  app.use(errorHandler(createLogger({ name: 'test', level: 'silent' })));
  const server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { get: (p: string) => fetch(`${base}${p}`), close: () => new Promise((r) => server.close(r)) };
}

describe('console static files', () => {
  it('serves the build and index.html for client routes, with a same-origin CSP', async () => {
    const dist = mkdtempSync(path.join(tmpdir(), 'console-'));
    mkdirSync(path.join(dist, 'assets'));
    writeFileSync(path.join(dist, 'index.html'), '<!doctype html><div id="root"></div>');
    writeFileSync(path.join(dist, 'assets', 'a.js'), 'console.log(1)');
    const s = await serve(dist);
    try {
      const deep = await s.get('/console/webhooks/123');
      expect(deep.status).toBe(200);
      expect(await deep.text()).toContain('id="root"');
      expect(deep.headers.get('content-security-policy')).toContain("default-src 'self'");
      const asset = await s.get('/console/assets/a.js');
      expect(asset.status).toBe(200);
      expect(asset.headers.get('content-type')).toContain('javascript');
    } finally {
      await s.close();
    }
  });

  it('explains a missing build with a 404 in the error shape', async () => {
    const s = await serve(path.join(tmpdir(), 'no-such-console-build'));
    try {
      const response = await s.get('/console');
      expect(response.status).toBe(404);
      expect(((await response.json()) as { error: { message: string } }).error.message).toContain(
        'pnpm --filter @gatehook/console build',
      );
    } finally {
      await s.close();
    }
  });
});

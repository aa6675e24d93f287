import { existsSync } from 'node:fs';
import path from 'node:path';
import express, { type Router } from 'express';
import { AppError } from '@gatehook/core/errors';

/** Where `pnpm --filter @gatehook/console build` puts the console (apps/console/dist). */
export const CONSOLE_DIST = path.resolve(__dirname, '../../../console/dist');

// Only this origin: the console bundles its fonts, icons and logos (CONTRACT 13). Inline styles are React's
// style attributes; scripts stay 'self' only.
const CSP =
  "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/**
 * Serves the console at /console (CONTRACT 13): its static files, and index.html for the client-side routes.
 * Without a build the API works as before and /console explains how to build it.
 */
export function consoleRouter(dist = CONSOLE_DIST): Router {
  const router = express.Router();
  const index = path.join(dist, 'index.html');
  router.use((_req, res, next) => {
    res.set({ 'content-security-policy': CSP, 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer' });
    next();
  });
  router.use(express.static(dist, { index: false, immutable: true, maxAge: '365d' }));
  router.get(/.*/, (_req, res, next) => {
    if (!existsSync(index)) {
      next(
        new AppError(
          'not_found',
          'The console is not built: run `pnpm --filter @gatehook/console build` (pnpm install does it)',
        ),
      );
      return;
    }
    res.set('cache-control', 'no-cache').sendFile(index);
  });
  return router;
}

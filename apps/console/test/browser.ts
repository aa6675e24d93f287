import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

const root = path.resolve(__dirname, '..');
/** Debian's Chromium (`apt-get install chromium`); no tool downloads a browser. */
export const CHROMIUM = '/usr/bin/chromium';
export const SCREENSHOTS = path.resolve(root, '../../docs/screenshots');

function newest(dir: string): number {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(full) : statSync(full).mtimeMs);
  }
  return latest;
}

/** Builds the console when its build is missing or older than its sources (pnpm install builds it too). */
export function ensureConsoleBuilt(): void {
  const index = path.join(root, 'dist', 'index.html');
  if (existsSync(index) && statSync(index).mtimeMs >= newest(path.join(root, 'src'))) return;
  execFileSync('pnpm', ['--filter', '@gatehook/console', 'build'], { cwd: root, stdio: 'ignore' });
}

export async function launch(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium`);
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}

const axeSource = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

/** Serious or critical axe-core violations of the page as it is now. */
export async function axeViolations(page: Page): Promise<{ id: string; impact: string; nodes: string[] }[]> {
  // Evaluated as page-side source text: this file is type-checked for Node, without the DOM's types.
  if (!(await page.evaluate("'axe' in window"))) await page.addScriptTag({ content: axeSource });
  const result = (await page.evaluate("axe.run(document, { resultTypes: ['violations'] })")) as {
    violations: { id: string; impact: string; nodes: { target: string[] }[] }[];
  };
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(' ')) }));
}

/** Opens the console at `baseUrl` and signs in with `key` (the sign-in may be refused: nothing is awaited after it). */
export async function signIn(page: Page, baseUrl: string, key: string): Promise<void> {
  await page.goto(`${baseUrl}/console/`);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
}

/**
 * A page of a browser context of its own (1280×900), signed in to the console with the organisation's admin key and
 * showing the webhook list. `bypassCSP` (the default) only lets the axe-core script be injected; the console itself
 * runs under its CSP. `watch` sees the page before it loads anything (request listeners).
 */
export async function signedInPage(
  browser: Browser,
  stack: { api: { baseUrl: string }; org: { admin: string } },
  options: { timeoutMs?: number; bypassCSP?: boolean; watch?: (page: Page) => void } = {},
): Promise<Page> {
  const context = await browser.newContext({
    viewport: { width: 1280, height: 900 },
    ...(options.bypassCSP === false ? {} : { bypassCSP: true }),
  });
  context.setDefaultTimeout(options.timeoutMs ?? 8000);
  const page = await context.newPage();
  options.watch?.(page);
  await signIn(page, stack.api.baseUrl, stack.org.admin);
  await page.getByRole('heading', { name: 'Webhooks' }).waitFor();
  return page;
}

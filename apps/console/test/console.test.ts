import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { auditEvent, startStack, type Stack } from '@gatehook/testkit/stack';
import type { TestReceiver } from '@gatehook/testkit/receiver';
import { axeViolations, ensureConsoleBuilt, launch, SCREENSHOTS, signIn as signInAs } from './browser';
import { waitFor } from '@gatehook/testkit/until';

// The console in Debian's Chromium against the real API, worker engine and HTTPS receivers.
jest.setTimeout(60_000);

let stack: Stack;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let receiver: TestReceiver;
let webhookId = '';
const offOrigin: string[] = [];

const shot = (name: string) => page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
const url = (p: string) => `${stack.api.baseUrl}/console${p}`;

const signIn = (key: string) => signInAs(page, stack.api.baseUrl, key);

beforeAll(async () => {
  ensureConsoleBuilt();
  // One after the other, each kept as soon as it is up: afterAll closes whatever started, even if the other failed
  // (a browser left open keeps jest from exiting).
  browser = await launch();
  stack = await startStack({ CIRCUIT_BREAKER_SECONDS: '1', DELIVERY_RETRY_SCHEDULE: '0,0.4,0.4,0.4,0.4,0.4,0.4,0.4' });
  receiver = await stack.receiver();
  // bypassCSP only so that the axe-core script can be injected; the console itself runs under its CSP.
  context = await browser.newContext({ viewport: { width: 1280, height: 900 }, bypassCSP: true });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: stack.api.baseUrl });
  context.setDefaultTimeout(8000);
  page = await context.newPage();
  page.on('request', (r) => {
    if (!r.url().startsWith(stack.api.baseUrl) && !r.url().startsWith('data:')) offOrigin.push(r.url());
  });
});

afterAll(async () => {
  await browser?.close();
  await stack?.close();
});

it('signs in with a key kept in sessionStorage, explaining a refused key', async () => {
  await signIn('ghk_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa');
  await page.getByText('Your key is not accepted (401)').waitFor();
  await shot('sign-in');
  await page.getByLabel('API key').fill(stack.org.admin);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('heading', { name: 'Webhooks' }).waitFor();
  await page.getByText('No webhooks yet.').waitFor();
  expect(await page.evaluate('sessionStorage.getItem("gatehook.apiKey")')).toBe(stack.org.admin);
});

it('creates a webhook from a preset with a live preview, and shows its secret once', async () => {
  await page.getByRole('link', { name: 'New webhook' }).click();
  await page.getByRole('radio', { name: 'Slack' }).check();
  await expect(page.getByLabel(/Payload template/).inputValue()).resolves.toContain('"text"');
  await page.getByTestId('preview-body').filter({ hasText: '"text": "Anomaly Finding Created' }).waitFor();
  // A template error from the API is shown at the field on save.
  await page.getByLabel('Name').fill('Ops channel');
  await page.getByLabel('URL (HTTPS)').fill(receiver.url('/slack'));
  await page.getByRole('checkbox', { name: 'policy.created' }).check();
  await page.getByLabel('Condition (CEL, optional)').fill('event.payload.severity == "high"');
  await page.getByRole('button', { name: 'Create webhook' }).click();
  await page.locator('#condition-error').filter({ hasText: 'severity' }).waitFor();
  await page.getByLabel('Condition (CEL, optional)').fill('event.action.startsWith("policy.")');
  await shot('webhook-form');
  await page.getByRole('button', { name: 'Create webhook' }).click();
  await page.getByRole('region', { name: 'New signing secret' }).waitFor();
  expect(await page.getByTestId('secret').textContent()).toMatch(/^whsec_/);
  webhookId = page.url().split('/').pop()!;
  await page.getByRole('button', { name: 'I have stored it' }).click();
});

it('shows a delivery that reached the receiver, with its attempt timeline', async () => {
  await stack.ingest([auditEvent()]);
  await receiver.waitFor((r) => r.length === 1);
  expect(JSON.parse(receiver.requests[0]!.body).text).toContain('Policy Created');
  await page.getByRole('row').filter({ hasText: 'succeeded' }).getByRole('link').click();
  await page.getByRole('heading', { name: 'Attempt timeline' }).waitFor();
  await page.getByText(/Attempt 1 · .* status 200/).waitFor();
  await shot('delivery');
  await page.getByRole('link', { name: '← Back to the webhook' }).click();
});

it('sends a test event and shows the result', async () => {
  await page.getByRole('button', { name: 'Send test event' }).click();
  const result = page.getByRole('status').filter({ hasText: 'Result' });
  await result.getByText('success').waitFor();
  await expect(result.textContent()).resolves.toContain('200');
  await receiver.waitFor((r) => r.some((q) => q.body.includes('Webhook Test')));
});

it('rotates the secret: shown once with a copy button and the end of the overlap', async () => {
  await page.getByRole('button', { name: 'Rotate secret' }).click();
  await page.getByRole('button', { name: 'Yes, rotate secret' }).click();
  const region = page.getByRole('region', { name: 'New signing secret' });
  await region.getByText('The previous secret stays valid until').waitFor();
  await region.getByRole('button', { name: 'Copy' }).click();
  await region.getByRole('button', { name: 'Copied' }).waitFor();
  expect(await page.evaluate('navigator.clipboard.readText()')).toMatch(/^whsec_/);
  await shot('webhook-detail');
  await region.getByRole('button', { name: 'I have stored it' }).click();
});

it('pauses and resumes', async () => {
  await page.getByRole('button', { name: 'Pause' }).click();
  await page.getByRole('button', { name: 'Resume' }).waitFor();
  expect((await stack.api.call('GET', `/webhooks/${webhookId}`, { key: stack.org.admin })).body.status).toBe('paused');
  await page.getByRole('button', { name: 'Resume' }).click();
  await page.getByRole('button', { name: 'Pause' }).waitFor();
  expect((await stack.api.call('GET', `/webhooks/${webhookId}`, { key: stack.org.admin })).body.status).toBe('active');
});

it('reads the notification of a circuit-breaker disable, re-enables and retries the failed delivery', async () => {
  const failing = await stack.receiver(() => ({ status: 500, body: 'down' }));
  const hook = await stack.webhook(failing, { name: 'Flaky SIEM', events: ['policy.created'], destination: 'splunk' });
  await stack.ingest([auditEvent()]);
  await waitFor(
    async () =>
      (await stack.api.call('GET', `/webhooks/${hook.id}`, { key: stack.org.admin })).body.status === 'disabled',
    { timeoutMs: 20_000, everyMs: 100, what: 'circuit breaker' },
  );
  await stack.deliveries(hook.id, (items) => items.length > 0 && items.every((d) => d.status === 'failed'));

  await page.goto(url('/webhooks'));
  await page
    .getByRole('link', { name: /Notifications/ })
    .getByLabel('1 unread')
    .waitFor();
  await shot('webhooks-list');
  await page.getByRole('link', { name: /Notifications/ }).click();
  await page
    .getByText(/circuit/i)
    .first()
    .waitFor();
  await shot('notifications');
  await page.getByRole('link', { name: 'Open the webhook' }).click();
  await page.getByRole('heading', { name: 'Flaky SIEM' }).waitFor();
  await page.getByRole('button', { name: 'Re-enable' }).click();
  await page.getByRole('button', { name: 'Pause' }).waitFor();
  failing.reply(() => ({ status: 200, body: 'back' }));
  await page.getByRole('row').filter({ hasText: 'failed' }).first().getByRole('link').click();
  await page.getByRole('button', { name: 'Retry delivery' }).click();
  await page.getByText('Retry scheduled').waitFor();
  await page.getByText(/status 200/).waitFor();
  await page
    .getByRole('heading', { name: /Delivery/ })
    .locator('..')
    .getByText('succeeded')
    .waitFor();
});

it('shows recover and replay, explained when the API does not offer them', async () => {
  await page.goto(url(`/webhooks/${webhookId}`));
  const tasks = page.getByRole('region', { name: 'Recover and replay' });
  await tasks.getByText(/Not available on this server|No recover or replay task/).waitFor();
});

it('creates and edits a rate limit rule, showing its derived budget', async () => {
  await page.getByRole('link', { name: 'Rate limit rules' }).click();
  await page.getByRole('link', { name: 'New rule' }).click();
  await page.getByLabel('Name', { exact: true }).fill('Per-user tool calls');
  await page.getByLabel('Calls allowed per window (limit)').fill('1000');
  await page.getByLabel('Window in seconds (1 to 3600)').fill('3600');
  await page.getByRole('checkbox', { name: 'user' }).check();
  await page.getByText('17 calls per 61.2 s').waitFor();
  await page.getByRole('button', { name: 'Create rule' }).click();
  await page.getByTestId('budget').getByText('17 calls per 61.2 s').waitFor();
  await shot('rule-detail');
  await page.getByRole('link', { name: 'Edit' }).click();
  await page.getByLabel('Burst').fill('5000');
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page.locator('#burst-error').waitFor();
  await page.getByLabel('Burst').fill('30');
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page.getByTestId('budget').getByText('30 calls per 108 s').waitFor();
  await page.getByRole('link', { name: '← All rules' }).click();
  await page.getByRole('cell', { name: 'Per-user tool calls' }).waitFor();
  await shot('rules');
});

it('has no serious or critical accessibility violation on the main screens', async () => {
  const screens = [
    '/webhooks',
    `/webhooks/${webhookId}`,
    `/webhooks/${webhookId}/edit`,
    '/rate-limits',
    '/notifications',
  ];
  for (const screen of screens) {
    await page.goto(url(screen));
    await page.locator('main h1').first().waitFor();
    await page
      .getByText(/^Loading/)
      .first()
      .waitFor({ state: 'detached' })
      .catch(() => undefined);
    expect([screen, await axeViolations(page)]).toEqual([screen, []]);
  }
});

it('gives a member key a restricted view, and explains a refused page', async () => {
  await page.getByRole('button', { name: 'Sign out' }).click();
  expect(await page.evaluate('sessionStorage.getItem("gatehook.apiKey")')).toBeNull();
  await signIn(await stack.org.key('member', ['view_rate_limits']));
  await page.getByRole('heading', { name: 'Rate limit rules' }).waitFor();
  await page.getByText('Read only').waitFor();
  expect(await page.getByRole('link', { name: 'New rule' }).count()).toBe(0);
  expect(await page.getByRole('link', { name: 'Webhooks' }).count()).toBe(0);
  expect(await page.getByRole('link', { name: /Notifications/ }).count()).toBe(0);
  await page.getByRole('link', { name: 'Per-user tool calls' }).click();
  await page.getByTestId('budget').waitFor();
  expect(await page.getByRole('button', { name: 'Disable' }).count()).toBe(0);
  await shot('member-view');
  await page.goto(url('/webhooks'));
  await page.getByText('Not allowed for this key (403)').waitFor();
});

it('checks route ids before they go into an API path: a crafted id shows not found and makes no request', async () => {
  // A context of its own, signed in as admin, so the session of the tests above is left alone.
  const own = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const tab = await own.newPage();
  const apiRequests: string[] = [];
  tab.on('request', (r) => {
    const { pathname, search } = new URL(r.url());
    if (r.url().startsWith(stack.api.baseUrl) && !pathname.startsWith('/console'))
      apiRequests.push(`${r.method()} ${pathname}${search}`);
  });
  await tab.goto(url('/'));
  await tab.evaluate(`sessionStorage.setItem("gatehook.apiKey", ${JSON.stringify(stack.org.admin)})`);
  const crafted = '..%2F..%2Frate-limits%2Frules';
  const real = webhookId;
  const screens = [
    `/webhooks/${crafted}`,
    `/webhooks/${crafted}/edit`,
    `/webhooks/${real}/deliveries/${crafted}`,
    `/webhooks/${crafted}/deliveries/${real}`,
    `/rate-limits/${crafted}`,
    `/rate-limits/${crafted}/edit`,
    '/webhooks/not-a-uuid',
  ];
  // What the shell itself asks on every page (the access probe, the notification count): nothing else may go out.
  const shell = new Set([
    'POST /webhooks/preview',
    'GET /webhooks?limit=1',
    'GET /rate-limits/rules?limit=1',
    'POST /rate-limits/rules',
    'GET /notifications?limit=100',
  ]);
  for (const screen of screens) {
    await tab.goto(url(screen));
    await tab.getByText('Not found (404)').waitFor();
    await tab.getByText('the address does not hold a valid id').waitFor();
  }
  // A real id on the same page does go out, and only to its own path: the check lets valid ids through.
  await tab.goto(url(`/webhooks/${real}`));
  await tab.locator('code', { hasText: real }).first().waitFor();
  await own.close();
  expect(apiRequests.filter((r) => !shell.has(r) && !r.startsWith(`GET /webhooks/${real}`))).toEqual([]);
  expect(apiRequests).toContain(`GET /webhooks/${real}`);
});

it('made no request to any other origin', () => {
  expect(offOrigin).toEqual([]);
});

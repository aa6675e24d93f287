import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { systemLookup } from '@gatehook/egress/address-policy';
import { startStack, type Stack } from '@gatehook/testkit/stack';
import type { TestReceiver } from '@gatehook/testkit/receiver';
import { axeViolations, ensureConsoleBuilt, launch, SCREENSHOTS, signedInPage } from './browser';

// The Microsoft Sentinel preset's OAuth 2.0 form (CONTRACT 20) in Debian's Chromium against the real API.
jest.setTimeout(60_000);

let stack: Stack;
let browser: Browser;
let page: Page;
let receiver: TestReceiver;
const TENANT = '72f988bf-86f1-41af-91ab-2d7cd011db47';
const CLIENT_SECRET = 'entra-client-secret~Zq8Q';

beforeAll(async () => {
  ensureConsoleBuilt();
  browser = await launch();
  // Entra's name resolves to one of its public addresses here: the test machine has no DNS for it.
  stack = await startStack(
    {},
    { lookup: async (host) => (host === 'login.microsoftonline.com' ? ['20.190.160.1'] : systemLookup(host)) },
  );
  receiver = await stack.receiver();
  page = await signedInPage(browser, stack);
});

afterAll(async () => {
  await browser?.close();
  await stack?.close();
});

it('creates a Sentinel webhook through the preset form: tenant, client id and client secret; the secret is never shown', async () => {
  await page.getByRole('link', { name: 'New webhook' }).click();
  await page.getByRole('radio', { name: 'Microsoft Sentinel' }).check();
  await page.getByText('OAuth 2.0 credentials (tenant, client id, client secret)').waitFor();
  await page.getByLabel('Name').fill('Sentinel');
  await page
    .getByLabel('URL (HTTPS)')
    .fill(receiver.url('/dataCollectionRules/dcr-1/streams/Custom-Gatehook_CL?api-version=2023-01-01'));
  await page.getByRole('checkbox', { name: 'policy.created' }).check();
  // The preset asks for these three, not for a token URL or an Authorization header.
  await expect(page.getByLabel('Token URL (HTTPS)').count()).resolves.toBe(0);
  await page.getByLabel('Directory (tenant) ID').fill(TENANT);
  await page.getByLabel('Application (client) ID').fill('00000000-aaaa-4bbb-8ccc-000000000001');
  // Without the secret the API refuses it, at the auth field.
  await page.getByRole('button', { name: 'Create webhook' }).click();
  await page.locator('#auth-error').filter({ hasText: 'client_secret or private_key is required' }).waitFor();
  await page.getByLabel('Client secret').fill(CLIENT_SECRET);
  expect(await axeViolations(page)).toEqual([]);
  await page.screenshot({ path: path.join(SCREENSHOTS, 'webhook-form-sentinel.png'), fullPage: true });
  await page.getByRole('button', { name: 'Create webhook' }).click();
  await page.getByRole('region', { name: 'New signing secret' }).waitFor();
  const webhookId = page.url().split('/').pop()!;
  await page.getByRole('button', { name: 'I have stored it' }).click();

  const tokenUrl = `https://login.microsoftonline.com/${TENANT}/oauth2/v2.0/token`;
  await page.getByText(`token URL ${tokenUrl}`).waitFor();
  expect((await page.content()).includes(CLIENT_SECRET)).toBe(false);
  const stored = (await stack.api.call('GET', `/webhooks/${webhookId}`, { key: stack.org.admin })).body;
  expect(stored).toMatchObject({
    destination: 'sentinel',
    format: 'array',
    headers: {},
    auth: {
      type: 'oauth2_client_credentials',
      token_url: tokenUrl,
      client_id: '00000000-aaaa-4bbb-8ccc-000000000001',
      scope: 'https://monitor.azure.com//.default',
      client_secret: '',
    },
  });

  // Editing keeps the stored secret when the field is left blank.
  await page.getByRole('link', { name: 'Edit' }).click();
  await page.getByLabel('Client secret', { exact: true }).waitFor();
  expect(await page.getByLabel('Client secret', { exact: true }).inputValue()).toBe('');
  await page.getByLabel('Scope (optional)').fill('https://monitor.azure.com//.default');
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page.getByRole('heading', { name: 'Configuration' }).waitFor();
  const row = await stack.api.db.webhook.findUniqueOrThrow({ where: { id: webhookId } });
  expect(row.authSecretEncrypted).not.toBeNull();
  expect(row.authSecretEncrypted).not.toContain(CLIENT_SECRET);
});

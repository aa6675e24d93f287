import { X509Certificate } from 'node:crypto';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { createClientCa } from '@gatehook/testkit/pki';
import { startStack, type Stack } from '@gatehook/testkit/stack';
import type { TestReceiver } from '@gatehook/testkit/receiver';
import { axeViolations, ensureConsoleBuilt, launch, SCREENSHOTS, signedInPage } from './browser';

// The webhook form's rate limit and client certificate (CONTRACT 18) in Debian's Chromium against the real API.
jest.setTimeout(60_000);

let stack: Stack;
let browser: Browser;
let page: Page;
let receiver: TestReceiver;
let webhookId = '';
const ca = createClientCa();
const first = ca.issue({ commonName: 'console-first' });
const second = ca.issue({ commonName: 'console-second' });

beforeAll(async () => {
  ensureConsoleBuilt();
  browser = await launch();
  stack = await startStack();
  receiver = await stack.receiver();
  page = await signedInPage(browser, stack);
});

afterAll(async () => {
  await browser?.close();
  await stack?.close();
});

it('creates a webhook with a rate limit and a pasted certificate and an uploaded key, shown by fingerprint and expiry', async () => {
  await page.getByRole('link', { name: 'New webhook' }).click();
  await page.getByLabel('Name').fill('Partner over mTLS');
  await page.getByLabel('URL (HTTPS)').fill(receiver.url('/mtls'));
  await page.getByRole('checkbox', { name: 'policy.created' }).check();
  // Out of range first: refused at the field before any request.
  await page.getByLabel(/Rate limit/).fill('0');
  await page.getByRole('button', { name: 'Create webhook' }).click();
  await page.locator('#rate_limit_per_second-error').filter({ hasText: '1 to 10000' }).waitFor();
  await page.getByLabel(/Rate limit/).fill('50');
  await page.getByLabel('Certificate (PEM, leaf first)', { exact: true }).fill(first.certPem);
  await page
    .getByLabel('Private key (PEM, unencrypted) file')
    .setInputFiles({ name: 'client.key', mimeType: 'text/plain', buffer: Buffer.from(first.keyPem) });
  // The file is read into the field (page-side source text: this file is type-checked without the DOM's types).
  await page.waitForFunction("document.getElementById('client-key').value.includes('PRIVATE KEY')");
  expect(await axeViolations(page)).toEqual([]);
  await page.screenshot({ path: path.join(SCREENSHOTS, 'webhook-form-egress.png'), fullPage: true });
  await page.getByRole('button', { name: 'Create webhook' }).click();
  await page.getByRole('region', { name: 'New signing secret' }).waitFor();
  webhookId = page.url().split('/').pop()!;
  await page.getByRole('button', { name: 'I have stored it' }).click();

  const fingerprint = new X509Certificate(first.certPem).fingerprint256;
  await page.getByText('50 requests/s').waitFor();
  await page.getByText(fingerprint).waitFor();
  expect((await page.content()).includes('PRIVATE KEY')).toBe(false);
  const stored = (await stack.api.call('GET', `/webhooks/${webhookId}`, { key: stack.org.admin })).body;
  expect(stored).toMatchObject({ rate_limit_per_second: 50, client_certificate: { fingerprint_sha256: fingerprint } });
});

it('shows the API refusing a key that does not match, replaces the certificate, then removes it and the rate limit', async () => {
  await page.getByRole('link', { name: 'Edit' }).click();
  await page
    .getByRole('group', { name: 'Stored client certificate' })
    .or(page.getByLabel('Stored client certificate'))
    .getByText(new X509Certificate(first.certPem).fingerprint256)
    .waitFor();
  await page.getByLabel('New certificate (PEM; blank keeps the stored one)', { exact: true }).fill(second.certPem);
  await page.getByLabel('Private key (PEM, unencrypted)', { exact: true }).fill(first.keyPem);
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page.locator('#client_certificate-error').filter({ hasText: 'key does not match the certificate' }).waitFor();
  await page.getByLabel('Private key (PEM, unencrypted)', { exact: true }).fill(second.keyPem);
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page.getByText(new X509Certificate(second.certPem).fingerprint256).waitFor();
  expect(
    (await stack.api.call('GET', `/webhooks/${webhookId}`, { key: stack.org.admin })).body.client_certificate
      .fingerprint_sha256,
  ).toBe(new X509Certificate(second.certPem).fingerprint256);

  await page.getByRole('link', { name: 'Edit' }).click();
  await page.getByLabel('Remove the stored certificate').check();
  await page.getByLabel(/Rate limit/).fill('');
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page.getByRole('heading', { name: 'Configuration' }).waitFor();
  await page.getByText('Partner over mTLS').first().waitFor();
  const after = (await stack.api.call('GET', `/webhooks/${webhookId}`, { key: stack.org.admin })).body;
  expect(after).toMatchObject({ client_certificate: null, rate_limit_per_second: null });
});

import { generateKeyPairSync } from 'node:crypto';
import { SecretBox } from '@gatehook/core/encryption';
import { createTestOrg, startTestApi, type TestApi, type TestOrg } from '@gatehook/testkit/api';
import { testLookup } from './lookup';

// CONTRACT 20 at save: the shape of `auth`, its secrets write-only and encrypted, and every validation rule.

let api: TestApi;
let org: TestOrg;
let box: SecretBox;
const base = { name: 'SIEM', url: 'https://siem.example.com/ingest', events: ['policy.created'] };
const TOKEN_URL = 'https://hooks.example.com/oauth2/token';
const SECRET = 'client-secret-value-9f8e7d';
const pem = (pair: { privateKey: { export(o: { type: 'pkcs8'; format: 'pem' }): string | Buffer } }) =>
  pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const rsa2048 = pem(generateKeyPairSync('rsa', { modulusLength: 2048 }));
const ecP256 = pem(generateKeyPairSync('ec', { namedCurve: 'P-256' }));
const ecP384 = pem(generateKeyPairSync('ec', { namedCurve: 'P-384' }));
const rsa1024 = pem(generateKeyPairSync('rsa', { modulusLength: 1024 }));
const ecP521 = pem(generateKeyPairSync('ec', { namedCurve: 'P-521' }));
const ed25519 = pem(generateKeyPairSync('ed25519'));
const encrypted = generateKeyPairSync('rsa', { modulusLength: 2048 })
  .privateKey.export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'pw' })
  .toString();
const withSecret = {
  type: 'oauth2_client_credentials',
  token_url: TOKEN_URL,
  client_id: 'gatehook',
  client_secret: SECRET,
  scope: 'https://monitor.azure.com//.default',
};

beforeAll(async () => {
  api = await startTestApi({ lookup: testLookup });
  org = await createTestOrg(api.db);
  box = new SecretBox(api.config.GATEHOOK_ENCRYPTION_KEY);
});
afterAll(() => api.close());

const create = (body: Record<string, unknown>) =>
  api.call('POST', '/webhooks', { key: org.admin, body: { ...base, ...body } });
const patch = (id: string, body: Record<string, unknown>) =>
  api.call('PATCH', `/webhooks/${id}`, { key: org.admin, body });
const paths = (r: { body: { error?: { details?: { path: string }[] } } }) =>
  (r.body.error?.details ?? []).map((d) => d.path);

async function created(body: Record<string, unknown>) {
  const r = await create(body);
  expect(r.status).toBe(201);
  return r.body;
}

async function storedSecret(id: string): Promise<string | null> {
  const row = await api.db.webhook.findUniqueOrThrow({ where: { id } });
  return row.authSecretEncrypted === null
    ? null
    : box.decrypt(row.authSecretEncrypted, { column: 'webhooks.auth_secret_encrypted', row: id });
}

describe('auth (CONTRACT 20)', () => {
  it('defaults to null', async () => {
    expect((await created({})).auth).toBeNull();
  });

  it('stores the client secret encrypted and returns it as ""', async () => {
    const hook = await created({ auth: withSecret });
    expect(hook.auth).toEqual({
      type: 'oauth2_client_credentials',
      token_url: TOKEN_URL,
      client_id: 'gatehook',
      client_auth: 'body',
      key_id: null,
      scope: 'https://monitor.azure.com//.default',
      audience: null,
      client_secret: '',
    });
    const row = await api.db.webhook.findUniqueOrThrow({ where: { id: hook.id } });
    expect(JSON.stringify(row.auth)).not.toContain(SECRET);
    expect(row.authSecretEncrypted).not.toContain(SECRET);
    expect(await storedSecret(hook.id)).toBe(SECRET);
    const got = await api.call('GET', `/webhooks/${hook.id}`, { key: org.admin });
    expect(got.body.auth.client_secret).toBe('');
    expect(got.text).not.toContain(SECRET);
  });

  it.each([
    ['RSA 2048', rsa2048],
    ['EC P-256', ecP256],
    ['EC P-384', ecP384],
  ])('accepts a %s private key (private_key_jwt and JWT-bearer)', async (_name, key) => {
    const client = await created({
      auth: {
        type: 'oauth2_client_credentials',
        token_url: TOKEN_URL,
        client_id: 'gatehook',
        private_key: key,
        key_id: 'k1',
      },
    });
    expect(client.auth).toMatchObject({ private_key: '', key_id: 'k1' });
    expect(JSON.stringify(client)).not.toContain('PRIVATE KEY');
    const bearer = await created({
      auth: {
        type: 'oauth2_jwt_bearer',
        token_url: TOKEN_URL,
        issuer: 'svc@example.iam',
        private_key: key,
        subject: 'me@example.com',
        scope: 'logs',
      },
    });
    expect(bearer.auth).toEqual({
      type: 'oauth2_jwt_bearer',
      token_url: TOKEN_URL,
      issuer: 'svc@example.iam',
      subject: 'me@example.com',
      key_id: null,
      scope: 'logs',
      audience: null,
      private_key: '',
    });
    expect(await storedSecret(bearer.id)).toBe(key);
  });

  it.each([
    ['both client_secret and private_key', { ...withSecret, private_key: rsa2048 }, 'auth'],
    ['neither client_secret nor private_key', { ...withSecret, client_secret: '' }, 'auth'],
    [
      'a JWT-bearer grant without private_key',
      { type: 'oauth2_jwt_bearer', token_url: TOKEN_URL, issuer: 'svc' },
      'auth.private_key',
    ],
    [
      'a JWT-bearer grant without issuer',
      { type: 'oauth2_jwt_bearer', token_url: TOKEN_URL, private_key: rsa2048 },
      'auth.issuer',
    ],
    ['no client_id', { ...withSecret, client_id: undefined }, 'auth.client_id'],
    ['an http token_url', { ...withSecret, token_url: 'http://hooks.example.com/token' }, 'auth.token_url'],
    ['a token_url that is not a URL', { ...withSecret, token_url: 'token' }, 'auth.token_url'],
    [
      'a token_url on a private address',
      { ...withSecret, token_url: 'https://internal.example.com/token' },
      'auth.token_url',
    ],
    [
      'a token_url on a metadata address',
      { ...withSecret, token_url: 'https://169.254.169.254/token' },
      'auth.token_url',
    ],
    [
      'a token_url whose name does not resolve',
      { ...withSecret, token_url: 'https://nowhere.example.com/token' },
      'auth.token_url',
    ],
    ['an unknown type', { ...withSecret, type: 'api_key' }, 'auth.type'],
    ['an unknown field', { ...withSecret, password: 'x' }, 'auth.password'],
    ['client_auth other than body or basic', { ...withSecret, client_auth: 'jwt' }, 'auth.client_auth'],
    [
      'client_auth basic with a private key',
      {
        type: 'oauth2_client_credentials',
        token_url: TOKEN_URL,
        client_id: 'c',
        private_key: rsa2048,
        client_auth: 'basic',
      },
      'auth.client_auth',
    ],
    [
      'an RSA key under 2048 bits',
      { type: 'oauth2_client_credentials', token_url: TOKEN_URL, client_id: 'c', private_key: rsa1024 },
      'auth.private_key',
    ],
    [
      'an EC key on P-521',
      { type: 'oauth2_jwt_bearer', token_url: TOKEN_URL, issuer: 'svc', private_key: ecP521 },
      'auth.private_key',
    ],
    [
      'an Ed25519 key',
      { type: 'oauth2_jwt_bearer', token_url: TOKEN_URL, issuer: 'svc', private_key: ed25519 },
      'auth.private_key',
    ],
    [
      'an encrypted key',
      { type: 'oauth2_jwt_bearer', token_url: TOKEN_URL, issuer: 'svc', private_key: encrypted },
      'auth.private_key',
    ],
    [
      'a key that is not PEM',
      { type: 'oauth2_jwt_bearer', token_url: TOKEN_URL, issuer: 'svc', private_key: 'not a key' },
      'auth.private_key',
    ],
    ['auth that is not an object', 'oauth', 'auth'],
  ])('refuses %s with 422 on the field', async (_name, auth, path) => {
    const r = await create({ auth });
    expect(r.status).toBe(422);
    expect(paths(r)).toContain(path);
    expect(r.text).not.toContain(SECRET);
    expect(r.text).not.toContain('PRIVATE KEY');
  });

  it('refuses a custom Authorization header beside auth, on create and on PATCH', async () => {
    const both = await create({ auth: withSecret, headers: { Authorization: 'SharedAccessSignature x' } });
    expect(both.status).toBe(422);
    expect(paths(both)).toEqual(['headers.Authorization']);

    const withHeader = await created({ headers: { authorization: 'Bearer fixed' } });
    const addAuth = await patch(withHeader.id, { auth: withSecret });
    expect(addAuth.status).toBe(422);
    expect(paths(addAuth)).toEqual(['headers.authorization']);
    // Removing the header in the same PATCH is fine.
    expect((await patch(withHeader.id, { auth: withSecret, headers: {} })).status).toBe(200);

    const withAuth = await created({ auth: withSecret });
    const addHeader = await patch(withAuth.id, { headers: { Authorization: 'Bearer fixed' } });
    expect(addHeader.status).toBe(422);
    expect(paths(addHeader)).toEqual(['headers.Authorization']);
  });

  it('PATCH: absent keeps; a blank secret keeps the stored one when the type is unchanged; null removes; audits no secret', async () => {
    const hook = await created({ auth: withSecret });
    expect((await patch(hook.id, { name: 'renamed' })).body.auth.client_secret).toBe('');
    const kept = await patch(hook.id, {
      auth: { ...withSecret, client_secret: '', scope: 'other', client_auth: 'basic' },
    });
    expect(kept.status).toBe(200);
    expect(kept.body.auth).toMatchObject({ scope: 'other', client_auth: 'basic', client_secret: '' });
    expect(await storedSecret(hook.id)).toBe(SECRET);
    // Absent secret keeps it too.
    const { client_secret: _omitted, ...noSecret } = withSecret;
    expect((await patch(hook.id, { auth: noSecret })).status).toBe(200);
    expect(await storedSecret(hook.id)).toBe(SECRET);

    // Another type needs its secret.
    const otherType = await patch(hook.id, {
      auth: { type: 'oauth2_jwt_bearer', token_url: TOKEN_URL, issuer: 'svc' },
    });
    expect(otherType.status).toBe(422);
    expect(paths(otherType)).toEqual(['auth.private_key']);

    // A key replaces the secret.
    const toKey = await patch(hook.id, {
      auth: { type: 'oauth2_client_credentials', token_url: TOKEN_URL, client_id: 'gatehook', private_key: ecP256 },
    });
    expect(toKey.body.auth).toMatchObject({ private_key: '' });
    expect(toKey.body.auth.client_secret).toBeUndefined();
    expect(await storedSecret(hook.id)).toBe(ecP256);

    const removed = await patch(hook.id, { auth: null });
    expect(removed.status).toBe(200);
    expect(removed.body.auth).toBeNull();
    const row = await api.db.webhook.findUniqueOrThrow({ where: { id: hook.id } });
    expect(row.auth).toBeNull();
    expect(row.authSecretEncrypted).toBeNull();

    const events = await api.db.auditEvent.findMany({
      where: { orgId: org.orgId, resourceId: hook.id, action: 'webhook.updated' },
    });
    const diffs = JSON.stringify(events.map((e) => e.changes));
    expect(diffs).toContain('"auth"');
    expect(diffs).not.toContain(SECRET);
    expect(diffs).not.toContain('PRIVATE KEY');
  });

  it("a URL on another origin needs auth's secret again (CONTRACT 15)", async () => {
    const hook = await created({ auth: withSecret });
    const leftOut = await patch(hook.id, { url: 'https://hooks.example.com/elsewhere' });
    expect(leftOut.status).toBe(422);
    expect(paths(leftOut)).toEqual(['auth.client_secret']);
    const blank = await patch(hook.id, {
      url: 'https://hooks.example.com/elsewhere',
      auth: { ...withSecret, client_secret: '' },
    });
    expect(blank.status).toBe(422);
    expect(paths(blank)).toEqual(['auth.client_secret']);
    const again = await patch(hook.id, { url: 'https://hooks.example.com/elsewhere', auth: withSecret });
    expect(again.status).toBe(200);
    // The same origin keeps it.
    expect((await patch(hook.id, { url: 'https://hooks.example.com/another/path' })).status).toBe(200);
    // Removing auth on a new origin needs nothing.
    expect((await patch(hook.id, { url: 'https://siem.example.com/new', auth: null })).status).toBe(200);
  });

  it('GET /destinations: the sentinel preset carries auth; applied with a tenant, client id and secret it saves', async () => {
    const presets = await api.call('GET', '/destinations', { key: org.admin });
    const sentinel = presets.body.items.find((p: { id: string }) => p.id === 'sentinel');
    expect(sentinel).toMatchObject({
      headers: [],
      auth: {
        type: 'oauth2_client_credentials',
        token_url: 'https://login.microsoftonline.com/{tenant}/oauth2/v2.0/token',
        scope: 'https://monitor.azure.com//.default',
      },
    });
    expect(presets.body.items.find((p: { id: string }) => p.id === 'slack').auth).toBeNull();
    const tenant = '72f988bf-86f1-41af-91ab-2d7cd011db47';
    const lookup = await startTestApi({
      lookup: async (host) => (host === 'login.microsoftonline.com' ? ['20.190.160.1'] : testLookup(host)),
    });
    try {
      const orgHere = await createTestOrg(lookup.db);
      const hook = await lookup.call('POST', '/webhooks', {
        key: orgHere.admin,
        body: {
          ...base,
          destination: 'sentinel',
          format: sentinel.format,
          max_events: sentinel.max_events,
          template: sentinel.template,
          auth: {
            ...sentinel.auth,
            token_url: sentinel.auth.token_url.replace('{tenant}', tenant),
            client_id: 'app-id',
            client_secret: SECRET,
          },
        },
      });
      expect(hook.status).toBe(201);
      expect(hook.body.auth).toMatchObject({
        token_url: `https://login.microsoftonline.com/${tenant}/oauth2/v2.0/token`,
        client_id: 'app-id',
        client_secret: '',
      });
    } finally {
      await lookup.close();
    }
  });

  it('is documented in /openapi.json from the validating schemas', async () => {
    const r = await api.call('GET', '/openapi.json');
    expect(r.status).toBe(200);
    const create = r.body.paths['/webhooks'].post.requestBody.content['application/json'].schema;
    const text = JSON.stringify(create.properties.auth);
    for (const field of [
      'oauth2_client_credentials',
      'oauth2_jwt_bearer',
      'token_url',
      'client_secret',
      'private_key',
      'client_auth',
      'issuer',
    ])
      expect(text).toContain(field);
    const view = r.body.paths['/webhooks/{id}'].get.responses['200'].content['application/json'].schema;
    expect(JSON.stringify(view)).toContain('token_url');
    const presets = JSON.stringify(r.body.paths['/destinations'].get.responses['200']);
    expect(presets).toContain('token_url');
  });
});

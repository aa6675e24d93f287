import {
  bearerReply,
  startJwtBearerServer,
  startOidcProvider,
  TEST_SCOPE,
  TEST_RESOURCE,
} from '@gatehook/testkit/authorization-server';
import { startOtlpCollector, type OtlpCollector } from '@gatehook/testkit/otlp-collector';
import { startProxy, type TestProxy } from '@gatehook/testkit/proxy';
import { startReceiver, type TestReceiver } from '@gatehook/testkit/receiver';
import { auditEvent, startStack, type Stack } from '@gatehook/testkit/stack';
import { until } from '@gatehook/testkit/until';

// CONTRACT 20 end to end: the real API and worker engine, a real OAuth 2.0 authorization server (oidc-provider) and a
// JWT-bearer token endpoint on 127.0.0.1 over HTTPS, and receivers that accept only the tokens those servers issued.

type OidcServer = Awaited<ReturnType<typeof startOidcProvider>>;

function clientCredentials(
  server: OidcServer,
  method: 'post' | 'basic' | 'jwt',
  overrides: Record<string, unknown> = {},
) {
  const { clients } = server;
  const credential =
    method === 'jwt'
      ? { client_id: clients.jwt.clientId, private_key: clients.jwt.key.privateKeyPem, key_id: clients.jwt.keyId }
      : {
          client_id: clients[method].clientId,
          client_secret: clients[method].clientSecret,
          client_auth: method === 'basic' ? 'basic' : 'body',
        };
  return {
    type: 'oauth2_client_credentials',
    token_url: server.tokenUrl,
    scope: TEST_SCOPE,
    ...credential,
    ...overrides,
  };
}

async function latestAttempt(
  stack: Stack,
  webhookId: string,
  predicate: (a: { status_code: number; error: string }) => boolean,
) {
  const [delivery] = await stack.deliveries(webhookId, (items) => {
    const attempt = items[0]?.attempts.at(-1);
    return attempt !== undefined && predicate(attempt);
  });
  return delivery!;
}

describe('deliveries with auth', () => {
  let stack: Stack;
  let server: OidcServer;

  beforeAll(async () => {
    server = await startOidcProvider();
    stack = await startStack();
  });
  afterAll(async () => {
    await stack?.close();
    await server?.close();
  });

  it.each(['post', 'basic', 'jwt'] as const)(
    'client credentials with client authentication %s: the receiver gets a token the server issued',
    async (method) => {
      const r = await stack.receiver(bearerReply(server));
      const before = server.tokenRequests();
      const hook = await stack.webhook(r, { events: ['policy.created'], auth: clientCredentials(server, method) });
      const ids = await stack.ingest([auditEvent(), auditEvent()]);
      await stack.settle(ids);
      const deliveries = await stack.deliveries(hook.id, (items) => items.length === 2);
      expect(deliveries.map((d) => d.status)).toEqual(['succeeded', 'succeeded']);
      expect(r.requests).toHaveLength(2);
      const token = String(r.requests[0]!.headers.authorization).slice('Bearer '.length);
      const claims = await server.verify(token);
      expect(claims).toMatchObject({ aud: TEST_RESOURCE, scope: TEST_SCOPE });
      // The second delivery reused the cached token.
      expect(r.requests[1]!.headers.authorization).toBe(r.requests[0]!.headers.authorization);
      expect(server.tokenRequests() - before).toBe(1);
      expect(await stack.engine.metrics.registry.getSingleMetricAsString('gatehook_oauth_token_fetches_total')).toMatch(
        /gatehook_oauth_token_fetches_total\{outcome="success"\} [1-9]/,
      );
    },
  );

  it('at most 2 token requests for 100 concurrent deliveries of one webhook', async () => {
    const r = await stack.receiver(bearerReply(server));
    const before = server.tokenRequests();
    const hook = await stack.webhook(r, { events: ['policy.created'], auth: clientCredentials(server, 'post') });
    const ids = await stack.ingest(Array.from({ length: 100 }, () => auditEvent()));
    await stack.settle(ids, 30_000);
    const deliveries = await stack.deliveries(hook.id, (items) => items.length === 100);
    expect(deliveries.every((d) => d.status === 'succeeded')).toBe(true);
    expect(r.requests).toHaveLength(100);
    expect(server.tokenRequests() - before).toBeLessThanOrEqual(2);
    expect(server.tokenRequests() - before).toBeGreaterThanOrEqual(1);
  });

  it('a 401 from the receiver drops the token: the next attempt fetches a new one and succeeds', async () => {
    const accept = bearerReply(server);
    const r = await stack.receiver((request, index) =>
      index === 0 ? { status: 401, body: 'token revoked' } : accept(request, index),
    );
    const before = server.tokenRequests();
    const hook = await stack.webhook(r, { events: ['policy.created'], auth: clientCredentials(server, 'basic') });
    const ids = await stack.ingest([auditEvent()]);
    await stack.settle(ids);
    const [delivery] = await stack.deliveries(hook.id, (items) => items[0]?.status === 'succeeded');
    expect(delivery!.attempts.map((a) => a.status_code)).toEqual([401, 200]);
    expect(server.tokenRequests() - before).toBe(2);
    expect(r.requests[1]!.headers.authorization).not.toBe(r.requests[0]!.headers.authorization);
  });

  it('test send uses the token too', async () => {
    const r = await stack.receiver(bearerReply(server));
    const hook = await stack.webhook(r, { events: ['policy.created'], auth: clientCredentials(server, 'jwt') });
    const tested = await stack.api.call('POST', `/webhooks/${hook.id}/test`, { key: stack.org.admin });
    expect(tested.body).toMatchObject({ success: true, status_code: 200 });
    expect(r.requests).toHaveLength(1);
  });

  it('a change of auth drops the cached token', async () => {
    const r = await stack.receiver(bearerReply(server));
    const hook = await stack.webhook(r, { events: ['policy.created'], auth: clientCredentials(server, 'post') });
    await stack.settle(await stack.ingest([auditEvent()]));
    const before = server.tokenRequests();
    const patched = await stack.api.call('PATCH', `/webhooks/${hook.id}`, {
      key: stack.org.admin,
      body: {
        auth: {
          ...clientCredentials(server, 'post'),
          client_secret: '',
          scope: `${TEST_SCOPE}`,
          audience: TEST_RESOURCE,
        },
      },
    });
    expect(patched.status).toBe(200);
    await stack.settle(await stack.ingest([auditEvent()]));
    expect(server.tokenRequests() - before).toBe(1);
    expect(r.requests.map((q) => q.headers.authorization)).toHaveLength(2);
    expect(r.requests[1]!.headers.authorization).not.toBe(r.requests[0]!.headers.authorization);
  });
});

describe('the JWT-bearer grant (RFC 7523)', () => {
  let stack: Stack;
  let server: Awaited<ReturnType<typeof startJwtBearerServer>>;

  beforeAll(async () => {
    server = await startJwtBearerServer({ keyType: 'ec' });
    stack = await startStack();
  });
  afterAll(async () => {
    await stack?.close();
    await server?.close();
  });

  it('signs an assertion the server verifies and delivers with the token it issued', async () => {
    const r = await stack.receiver(bearerReply(server));
    const hook = await stack.webhook(r, {
      events: ['policy.created'],
      auth: {
        type: 'oauth2_jwt_bearer',
        token_url: server.tokenUrl,
        issuer: server.account.issuer,
        private_key: server.account.key.privateKeyPem,
        key_id: server.account.keyId,
        subject: 'admin@gatehook.test',
        scope: 'logs.write',
      },
    });
    const ids = await stack.ingest([auditEvent()]);
    await stack.settle(ids);
    const [delivery] = await stack.deliveries(hook.id, (items) => items.length === 1);
    expect(delivery!.status).toBe('succeeded');
    expect(server.assertions).toHaveLength(1);
    const assertion = server.assertions[0]!;
    expect(assertion).toMatchObject({
      iss: server.account.issuer,
      sub: 'admin@gatehook.test',
      aud: server.tokenUrl,
      scope: 'logs.write',
    });
    expect(assertion.exp! - assertion.iat!).toBeLessThanOrEqual(300);
    const claims = await server.verify(String(r.requests[0]!.headers.authorization).slice('Bearer '.length));
    expect(claims).toMatchObject({ sub: 'admin@gatehook.test', scope: 'logs.write' });
  });
});

describe('renewal before expiry', () => {
  let stack: Stack;
  let server: OidcServer;

  beforeAll(async () => {
    // Tokens of 4 s: renewed at half their life, so no delivery ever carries an expired one.
    server = await startOidcProvider({ accessTokenTtl: 4 });
    stack = await startStack();
  });
  afterAll(async () => {
    await stack?.close();
    await server?.close();
  });

  it('fetches a new token before the cached one expires, and the receiver never sees an expired one', async () => {
    const r = await stack.receiver(bearerReply(server));
    const before = server.tokenRequests();
    const hook = await stack.webhook(r, { events: ['policy.created'], auth: clientCredentials(server, 'post') });
    await until(
      async () => {
        await stack.settle(await stack.ingest([auditEvent()]));
        return server.tokenRequests() - before;
      },
      (fetched) => fetched >= 2,
      30_000,
    );
    const deliveries = await stack.deliveries(hook.id, (items) => items.length === r.requests.length);
    expect(deliveries.every((d) => d.status === 'succeeded' && d.attempt_count === 1)).toBe(true);
    expect(new Set(r.requests.map((q) => q.headers.authorization)).size).toBeGreaterThanOrEqual(2);
  });
});

describe('token endpoint failures', () => {
  let stack: Stack;
  let server: OidcServer;
  const endpoints: TestReceiver[] = [];

  beforeAll(async () => {
    server = await startOidcProvider();
    stack = await startStack({
      CIRCUIT_BREAKER_SECONDS: '1',
      DELIVERY_RETRY_SCHEDULE: '0,0.3,0.3,0.3,0.3,0.3,0.3,0.3',
    });
  });
  afterAll(async () => {
    await Promise.allSettled(endpoints.map((e) => e.close()));
    await stack?.close();
    await server?.close();
  });

  async function tokenEndpoint(reply: Parameters<typeof startReceiver>[0]): Promise<string> {
    const endpoint = await startReceiver(reply);
    endpoints.push(endpoint);
    return endpoint.url('/token');
  }

  it('invalid_client: the attempt fails with auth_failed and no request to the receiver, counts toward the breaker', async () => {
    const r = await stack.receiver();
    const hook = await stack.webhook(r, {
      events: ['policy.created'],
      auth: clientCredentials(server, 'post', { client_secret: 'wrong-secret' }),
    });
    await stack.ingest([auditEvent()]);
    const delivery = await latestAttempt(stack, hook.id, () => true);
    expect(delivery.attempts[0]).toMatchObject({ status_code: 0, error: 'auth_failed: invalid_client' });
    await until(
      async () => (await stack.api.call('GET', `/webhooks/${hook.id}`, { key: stack.org.admin })).body,
      (webhook) => webhook.status === 'disabled',
      30_000,
    ).then((webhook) => expect(webhook).toMatchObject({ status: 'disabled', disabled_reason: 'circuit_breaker' }));
    expect(r.requests).toHaveLength(0);
    expect(await stack.engine.metrics.registry.getSingleMetricAsString('gatehook_oauth_token_fetches_total')).toMatch(
      /gatehook_oauth_token_fetches_total\{outcome="failure"\} [1-9]/,
    );

    const tested = await stack.api.call('POST', `/webhooks/${hook.id}/test`, { key: stack.org.admin });
    expect(tested.status).toBe(200);
    expect(tested.body).toMatchObject({ success: false, error: 'auth_failed: invalid_client' });
    expect(tested.body.status_code).toBeUndefined();
  });

  it.each([
    [
      'an HTTP error without an OAuth error body',
      () => tokenEndpoint(() => ({ status: 503, body: 'down for maintenance' })),
      'auth_failed: http_503',
    ],
    [
      'an OAuth error body',
      () =>
        tokenEndpoint(() => ({
          status: 400,
          headers: { 'content-type': 'application/json' },
          body: '{"error":"invalid_scope"}',
        })),
      'auth_failed: invalid_scope',
    ],
    [
      'a 200 without access_token',
      () =>
        tokenEndpoint(() => ({
          status: 200,
          headers: { 'content-type': 'application/json' },
          body: '{"token_type":"Bearer"}',
        })),
      'auth_failed: invalid_token_response',
    ],
    ['a token endpoint that hangs', () => tokenEndpoint(() => 'hang'), 'auth_failed: timeout'],
    [
      'a token endpoint that refuses connections',
      async () => {
        const closed = await startReceiver();
        await closed.close();
        return closed.url('/token');
      },
      'auth_failed: connection_refused',
    ],
  ])('%s', async (_name, endpoint, error) => {
    const r = await stack.receiver();
    const hook = await stack.webhook(r, {
      events: ['policy.created'],
      auth: { type: 'oauth2_client_credentials', token_url: await endpoint(), client_id: 'c', client_secret: 's' },
    });
    await stack.ingest([auditEvent()]);
    const delivery = await latestAttempt(stack, hook.id, () => true);
    expect(delivery.attempts[0]).toMatchObject({ status_code: 0, error });
    const webhook = await stack.api.call('GET', `/webhooks/${hook.id}`, { key: stack.org.admin });
    expect(webhook.body.failing_since).not.toBeNull();
    expect(r.requests).toHaveLength(0);
  });
});

describe('token requests go out through the egress client', () => {
  let stack: Stack;
  let server: OidcServer;
  let proxy: TestProxy;

  beforeAll(async () => {
    server = await startOidcProvider();
    proxy = await startProxy();
    stack = await startStack({ EGRESS_PROXY_URL: proxy.url });
  });
  afterAll(async () => {
    await stack?.close();
    await server?.close();
    await proxy?.close();
  });

  it('through EGRESS_PROXY_URL, asked for the checked address of the token endpoint', async () => {
    const r = await stack.receiver(bearerReply(server));
    const hook = await stack.webhook(r, { events: ['policy.created'], auth: clientCredentials(server, 'post') });
    await stack.settle(await stack.ingest([auditEvent()]));
    const [delivery] = await stack.deliveries(hook.id, (items) => items.length === 1);
    expect(delivery!.status).toBe('succeeded');
    expect(proxy.requests.map((q) => q.target)).toContain(`127.0.0.1:${new URL(server.tokenUrl).port}`);
  });

  it('under the address policy at connect: a token URL on a private address stored behind the API is refused', async () => {
    const r = await stack.receiver();
    const hook = await stack.webhook(r, { events: ['policy.created'], auth: clientCredentials(server, 'post') });
    const row = await stack.api.db.webhook.findUniqueOrThrow({ where: { id: hook.id } });
    await stack.writeWebhookRow(hook.id, {
      auth: { ...(row.auth as Record<string, unknown>), token_url: 'https://10.1.2.3/token' },
    });
    await stack.ingest([auditEvent()]);
    const delivery = await latestAttempt(stack, hook.id, () => true);
    expect(delivery.attempts[0]).toMatchObject({ status_code: 0, error: 'auth_failed: blocked_address' });
    expect(r.requests).toHaveLength(0);
  });
});

describe('a proxy that is down, for the token request', () => {
  let stack: Stack;
  let server: OidcServer;

  beforeAll(async () => {
    server = await startOidcProvider();
    const dead = await startProxy();
    await dead.close();
    stack = await startStack({
      EGRESS_PROXY_URL: dead.url,
      CIRCUIT_BREAKER_SECONDS: '1',
      DELIVERY_RETRY_SCHEDULE: '0,0.3,0.3,0.3,0.3,0.3,0.3,0.3',
    });
  });
  afterAll(async () => {
    await stack?.close();
    await server?.close();
  });

  it('records auth_failed: proxy_error, retried, never starting the failure streak', async () => {
    const r = await stack.receiver();
    const hook = await stack.webhook(r, { events: ['policy.created'], auth: clientCredentials(server, 'post') });
    await stack.settle(await stack.ingest([auditEvent()]), 30_000);
    const [delivery] = await stack.deliveries(hook.id, (items) => items[0]?.status === 'failed');
    expect(new Set(delivery!.attempts.map((a) => a.error))).toEqual(new Set(['auth_failed: proxy_error']));
    const webhook = await stack.api.call('GET', `/webhooks/${hook.id}`, { key: stack.org.admin });
    expect(webhook.body).toMatchObject({ status: 'active', failing_since: null });
  });
});

describe('secrets and tokens stay out of every response, log line, span, audit diff and request view', () => {
  let stack: Stack;
  let server: OidcServer;
  let collector: OtlpCollector;
  const logLines: string[] = [];

  beforeAll(async () => {
    server = await startOidcProvider();
    collector = await startOtlpCollector();
    stack = await startStack(
      {
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_SERVICE_NAME: 'gatehook-oauth',
        OTEL_BSP_SCHEDULE_DELAY: '50',
      },
      { logLines },
    );
  });
  afterAll(async () => {
    await stack?.close();
    await collector?.close();
    await server?.close();
  });

  it('shows authorization: [redacted] and never the secret, key or token', async () => {
    const r = await stack.receiver(bearerReply(server));
    const responses: string[] = [];
    const call = async (...args: Parameters<Stack['api']['call']>) => {
      const res = await stack.api.call(...args);
      responses.push(res.text);
      return res;
    };
    const created = await call('POST', '/webhooks', {
      key: stack.org.admin,
      body: {
        name: 'secret',
        url: r.url('/hook'),
        events: ['policy.created'],
        auth: clientCredentials(server, 'post'),
      },
    });
    expect(created.status).toBe(201);
    expect(created.body.auth).toEqual({
      type: 'oauth2_client_credentials',
      token_url: server.tokenUrl,
      client_id: server.clients.post.clientId,
      client_auth: 'body',
      key_id: null,
      scope: TEST_SCOPE,
      audience: null,
      client_secret: '',
    });
    const id = created.body.id as string;
    const jwtPatch = await call('PATCH', `/webhooks/${id}`, {
      key: stack.org.admin,
      body: { auth: clientCredentials(server, 'jwt') },
    });
    expect(jwtPatch.body.auth).toMatchObject({ private_key: '', key_id: server.clients.jwt.keyId });
    expect(jwtPatch.body.auth.client_secret).toBeUndefined();
    await call('PATCH', `/webhooks/${id}`, { key: stack.org.admin, body: { auth: clientCredentials(server, 'post') } });
    await stack.settle(await stack.ingest([auditEvent()]));
    const [delivery] = await stack.deliveries(id, (items) => items[0]?.status === 'succeeded');
    await call('POST', `/webhooks/${id}/test`, { key: stack.org.admin });
    const view = await call('GET', `/webhooks/${id}/deliveries/${delivery!.id}/request`, { key: stack.org.admin });
    expect(view.status).toBe(200);
    expect(view.body.headers.authorization).toBe('[redacted]');
    await call('GET', `/webhooks/${id}`, { key: stack.org.admin });
    await call('GET', '/webhooks', { key: stack.org.admin });
    await call('GET', `/webhooks/${id}/deliveries`, { key: stack.org.admin });

    const tokens = [...new Set(r.requests.map((q) => String(q.headers.authorization).slice('Bearer '.length)))];
    expect(tokens.length).toBeGreaterThanOrEqual(1);
    const audit = await stack.api.db.auditEvent.findMany({ where: { orgId: stack.org.orgId } });
    expect(audit.some((e) => JSON.stringify(e.changes).includes('"auth"'))).toBe(true);
    await until(
      async () => collector.spans().filter((s) => s.name === 'gatehook.delivery.attempt').length,
      (n) => n >= 1,
    );

    const keyBody = server.clients.jwt.key.privateKeyPem.split('\n')[1]!;
    const secrets = [server.clients.post.clientSecret, keyBody, ...tokens];
    const places = {
      responses: responses.join('\n'),
      logs: logLines.join('\n'),
      spans: JSON.stringify(collector.requests.map((q) => q.body.toString('utf8'))),
      audit: JSON.stringify(audit),
    };
    for (const secret of secrets) {
      for (const [place, text] of Object.entries(places))
        expect({ place, leaked: text.includes(secret) }).toEqual({ place, leaked: false });
    }
  });
});

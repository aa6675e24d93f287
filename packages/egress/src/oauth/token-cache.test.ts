import { startReceiver, testCa, type TestReceiver } from '@gatehook/testkit/receiver';
import { parseCidrList } from '@gatehook/egress/address-policy';
import { createEgressClient, type EgressClient } from '@gatehook/egress/client';
import { DestinationTokens, type TokenFetchOutcome } from './token-cache';
import type { DestinationAuth, TokenExchange } from './token-request';

// The token cache against a real HTTPS token endpoint on 127.0.0.1, with the clock in the test's hands.

let endpoint: TestReceiver;
let client: EgressClient;
/** What the endpoint answers next: a lifetime for a fresh token, or a failure. */
let answer: { expiresIn?: number } | 'fail' = { expiresIn: 100 };
const exchange: TokenExchange = async (request) => {
  const result = await client.send(request);
  return {
    statusCode: result.statusCode,
    error: result.error,
    ...(result.headers ? { headers: result.headers } : {}),
    body: Buffer.from(result.responseSnippet),
  };
};

beforeAll(async () => {
  endpoint = await startReceiver((_request, index) => {
    if (answer === 'fail')
      return { status: 400, headers: { 'content-type': 'application/json' }, body: '{"error":"invalid_client"}' };
    const lifetime = answer.expiresIn === undefined ? {} : { expires_in: answer.expiresIn };
    return {
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ access_token: `token-${index}`, token_type: 'Bearer', ...lifetime }),
    };
  });
  client = createEgressClient({
    allow: parseCidrList('127.0.0.1/32'),
    extraCaPem: testCa().pki.caPem,
    timeoutMs: 2000,
    userAgent: 'test',
  });
});
afterAll(async () => {
  await client.close();
  await endpoint.close();
});

let keys = 0;
function auth(): DestinationAuth {
  keys += 1;
  return {
    type: 'oauth2_client_credentials',
    token_url: endpoint.url('/token'),
    client_id: 'c',
    credential: 'client_secret',
    client_auth: 'body',
    key_id: null,
    scope: null,
    audience: null,
    secret: 's',
    cacheKey: `webhook-${keys}`,
  };
}

function clock() {
  let at = 1_000_000;
  return { now: () => at, advance: (seconds: number) => (at += seconds * 1000) };
}

const tokenOf = (result: Awaited<ReturnType<DestinationTokens['token']>>) =>
  result.ok ? result.accessToken : `failed: ${result.reason}`;

beforeEach(() => {
  answer = { expiresIn: 100 };
});

it('keeps a token until 60 s before it expires, then fetches a new one', async () => {
  answer = { expiresIn: 3600 };
  const time = clock();
  const tokens = new DestinationTokens(exchange, undefined, time.now);
  const a = auth();
  const first = tokenOf(await tokens.token(a));
  time.advance(3539);
  expect(tokenOf(await tokens.token(a))).toBe(first);
  time.advance(2);
  expect(tokenOf(await tokens.token(a))).not.toBe(first);
});

it('counts a token without expires_in as 300 s', async () => {
  answer = {};
  const time = clock();
  const tokens = new DestinationTokens(exchange, undefined, time.now);
  const a = auth();
  const first = tokenOf(await tokens.token(a));
  time.advance(239);
  expect(tokenOf(await tokens.token(a))).toBe(first);
  time.advance(2);
  expect(tokenOf(await tokens.token(a))).not.toBe(first);
});

it('renews a short-lived token at half its life', async () => {
  answer = { expiresIn: 10 };
  const time = clock();
  const tokens = new DestinationTokens(exchange, undefined, time.now);
  const a = auth();
  const first = tokenOf(await tokens.token(a));
  time.advance(4.9);
  expect(tokenOf(await tokens.token(a))).toBe(first);
  time.advance(0.2);
  expect(tokenOf(await tokens.token(a))).not.toBe(first);
});

it('shares one request between concurrent callers, and keeps tokens of different keys apart', async () => {
  const tokens = new DestinationTokens(exchange);
  const before = endpoint.requests.length;
  const a = auth();
  const b = auth();
  const results = await Promise.all([...Array.from({ length: 20 }, () => tokens.token(a)), tokens.token(b)]);
  expect(endpoint.requests.length - before).toBe(2);
  expect(new Set(results.slice(0, 20).map(tokenOf)).size).toBe(1);
  expect(tokenOf(results[20]!)).not.toBe(tokenOf(results[0]!));
});

it('keeps using a token that has not expired when its renewal fails; fails once it has expired', async () => {
  const time = clock();
  const outcomes: TokenFetchOutcome[] = [];
  const tokens = new DestinationTokens(exchange, (outcome) => outcomes.push(outcome), time.now);
  const a = auth();
  const first = tokenOf(await tokens.token(a));
  answer = 'fail';
  time.advance(50);
  expect(tokenOf(await tokens.token(a))).toBe(first);
  time.advance(51);
  expect(tokenOf(await tokens.token(a))).toBe('failed: invalid_client');
  expect(outcomes).toEqual(['success', 'failure', 'failure']);
});

it('drops a token only if it is still the cached one', async () => {
  const tokens = new DestinationTokens(exchange);
  const a = auth();
  const first = tokenOf(await tokens.token(a));
  tokens.drop(a.cacheKey, 'some-older-token');
  expect(tokenOf(await tokens.token(a))).toBe(first);
  tokens.drop(a.cacheKey, first);
  expect(tokenOf(await tokens.token(a))).not.toBe(first);
});

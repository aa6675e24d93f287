// OAuth 2.0 destinations (CONTRACT 20): deliveries per second to one webhook with `auth` (client credentials
// against a real oidc-provider authorization server on 127.0.0.1 over HTTPS) next to the same webhook without it,
// in the same run on the same stack (API and one worker process), in the order A B B A. With a token cached per
// process, the OAuth webhook pays one header more per request and a token request per token lifetime.
import { startOidcProvider, TEST_SCOPE } from '@gatehook/testkit/authorization-server';
import { arrivalsPerSecond, figure, ingestFeed, withRig } from './delivery';
import type { Figure } from './measure';

const ROUNDS = 2;

export async function oauthFigures(seconds: number): Promise<Figure[]> {
  const server = await startOidcProvider();
  try {
    return await withRig(async (rig) => {
      await rig.startWorker();
      const receiver = await rig.receiver();
      const plain = await rig.org();
      await plain.webhook(receiver.url('/plain'));
      const oauth = await rig.org();
      const { clientId, clientSecret } = server.clients.post;
      await oauth.webhook(receiver.url('/oauth'), {
        auth: {
          type: 'oauth2_client_credentials',
          token_url: server.tokenUrl,
          client_id: clientId,
          client_secret: clientSecret,
          scope: TEST_SCOPE,
        },
      });
      const rates = { plain: [] as number[], oauth: [] as number[] };
      // A pass of each, not counted: the first window of a fresh stack runs well below the later ones.
      for (const org of [plain, oauth]) await arrivalsPerSecond(receiver, 1, ingestFeed(org, receiver, 100, 2000));
      // A B B A: a drift of the machine over the run (other load, a warming JIT) falls on both sides alike.
      for (let round = 0; round < ROUNDS; round += 1) {
        for (const side of round % 2 === 0 ? (['plain', 'oauth'] as const) : (['oauth', 'plain'] as const)) {
          await rig.checkpoint();
          const org = side === 'plain' ? plain : oauth;
          rates[side].push(await arrivalsPerSecond(receiver, seconds, ingestFeed(org, receiver, 100, 2000)));
        }
      }
      const mean = (values: number[]) => Math.round(values.reduce((a, b) => a + b, 0) / values.length);
      const result = figure(
        'deliveries/s of one webhook with OAuth 2.0 client credentials (one worker)',
        mean(rates.oauth),
        'deliveries/s',
        'the same webhook without auth',
        mean(rates.plain),
      );
      return [
        {
          ...result,
          note: `${server.tokenRequests()} token request(s) for the whole run; rounds ${rates.oauth.join(', ')} vs ${rates.plain.join(', ')}`,
        },
      ];
    });
  } finally {
    await server.close();
  }
}

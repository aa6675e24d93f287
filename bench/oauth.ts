// OAuth 2.0 destinations (CONTRACT 20): deliveries per second to one webhook with `auth` (client credentials
// against a real oidc-provider authorization server on 127.0.0.1 over HTTPS) next to the same webhook without it,
// in the same run on the same stack (API and one worker process), alternating twice. With a token cached per
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
      await oauth.webhook(receiver.url('/oauth'), { auth: { type: 'oauth2_client_credentials', token_url: server.tokenUrl, client_id: clientId, client_secret: clientSecret, scope: TEST_SCOPE } });
      const rates = { plain: [] as number[], oauth: [] as number[] };
      for (let round = 0; round < ROUNDS; round += 1) {
        await rig.checkpoint();
        rates.plain.push(await arrivalsPerSecond(receiver, seconds, ingestFeed(plain, receiver, 100, 2000)));
        await rig.checkpoint();
        rates.oauth.push(await arrivalsPerSecond(receiver, seconds, ingestFeed(oauth, receiver, 100, 2000)));
      }
      const mean = (values: number[]) => Math.round(values.reduce((a, b) => a + b, 0) / values.length);
      const result = figure('deliveries/s of one webhook with OAuth 2.0 client credentials (one worker)', mean(rates.oauth), 'deliveries/s', 'the same webhook without auth', mean(rates.plain));
      return [{ ...result, note: `${server.tokenRequests()} token request(s) for the whole run; rounds ${rates.oauth.join(', ')} vs ${rates.plain.join(', ')}` }];
    });
  } finally {
    await server.close();
  }
}

// A real OAuth 2.0 authorization server (oidc-provider) for tests, in a process of its own (oidc-provider is an
// ES module with its own web framework; jest's module system is kept out of it). Its configuration comes as JSON
// on stdin; it prints `listening <port>` once it answers, then `token` for each token request. The parent ends it with SIGTERM.
import { createServer } from 'node:https';
import { once } from 'node:events';
import Provider from 'oidc-provider';

let input = '';
for await (const chunk of process.stdin) input += chunk;
const settings = JSON.parse(input);

let provider;
const server = createServer({ key: settings.keyPem, cert: settings.certPem }, (req, res) => {
  if (req.method === 'POST' && req.url?.startsWith('/token')) process.stdout.write('token\n');
  provider.callback()(req, res);
});
server.listen(0, '127.0.0.1');
await once(server, 'listening');
const { port } = server.address();

provider = new Provider(`https://127.0.0.1:${port}`, {
  clients: settings.clients,
  scopes: [settings.scope],
  jwks: { keys: [settings.signingJwk] },
  clientAuthMethods: ['client_secret_post', 'client_secret_basic', 'private_key_jwt'],
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    introspection: { enabled: false },
    revocation: { enabled: false },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => settings.resource,
      useGrantedResource: () => true,
      getResourceServerInfo: () => ({
        scope: settings.scope,
        audience: settings.resource,
        accessTokenTTL: settings.accessTokenTtl,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: 'RS256' } },
      }),
    },
  },
  // Tests assert on what the client sent, not on the server's logs.
  renderError: async (ctx, out) => {
    ctx.type = 'json';
    ctx.body = out;
  },
});
provider.on('server_error', (_ctx, error) => process.stderr.write(`server_error ${error.message}\n`));
process.stdout.write(`listening ${port}\n`);

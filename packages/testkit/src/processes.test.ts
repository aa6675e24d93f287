import { startServiceProcess } from './processes';

describe('startServiceProcess', () => {
  it('fails as soon as the process exits, naming its exit, rather than waiting out its start bound', async () => {
    // An encryption key that is not 32 bytes of base64: the worker's configuration refuses it and the process exits.
    const started = startServiceProcess('worker', { NODE_ENV: 'production', GATEHOOK_ENCRYPTION_KEY: 'not-a-key' });
    await expect(started).rejects.toThrow(/worker process exited \(1\) before answering \/healthz/);
  });
});

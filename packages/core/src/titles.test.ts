import { actionTitle } from '@gatehook/core/titles';

describe('actionTitle', () => {
  it('titles an action name', () => {
    expect(actionTitle('anomaly_finding.created')).toBe('Anomaly Finding Created');
    expect(actionTitle('webhook.test')).toBe('Webhook Test');
  });
});

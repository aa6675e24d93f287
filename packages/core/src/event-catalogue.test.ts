import { EVENT_CATALOGUE, isKnownAction, payloadFieldsOf } from '@gatehook/core/event-catalogue';

describe('event catalogue', () => {
  it('holds the actions the contract names, once each', () => {
    const actions = EVENT_CATALOGUE.map((t) => t.action);
    expect(new Set(actions).size).toBe(actions.length);
    for (const action of [
      'gateway.tool.called',
      'gateway.tool.error',
      'gateway.tool.denied',
      'policy.created',
      'policy.updated',
      'policy.deleted',
      'anomaly_finding.created',
      'anomaly_finding.escalated',
      'tag.created',
      'webhook.test',
      'webhook.disabled',
      'webhook.created',
      'webhook.updated',
      'webhook.deleted',
      'webhook.secret_rotated',
      'rate_limit_rule.created',
      'rate_limit_rule.updated',
      'rate_limit_rule.deleted',
      'rate_limit.exceeded',
      'webhook.recovery_started',
      'webhook.replay_started',
    ]) {
      expect(isKnownAction(action)).toBe(true);
    }
    expect(isKnownAction('policy.*')).toBe(false);
  });

  it('gives anomaly_finding.created its payload fields and none to gateway.tool.error', () => {
    expect([...payloadFieldsOf(['anomaly_finding.created']).keys()]).toEqual([
      'severity',
      'score',
      'detector',
      'subject',
    ]);
    expect(payloadFieldsOf(['gateway.tool.error']).has('severity')).toBe(false);
  });

  it('allows every catalogue field for *', () => {
    const all = payloadFieldsOf(['*']);
    expect(all.has('severity')).toBe(true);
    expect(all.has('error_code')).toBe(true);
  });
});

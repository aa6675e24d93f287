import { compileEventCondition, type ConditionEventInput, type ConditionIssue } from './event-condition';

function anomalyCreated(overrides: Partial<ConditionEventInput> = {}): ConditionEventInput {
  return {
    id: '0b6f3c1e-5d0a-4c8e-9a43-2f7d9b1c0a11',
    org_id: '6a1d2c3b-4e5f-4a6b-8c7d-9e0f1a2b3c4d',
    action: 'anomaly_finding.created',
    actor_type: 'system',
    actor_id: 'detector-volume',
    actor_display_name: 'Volume detector',
    resource_type: 'anomaly_finding',
    resource_id: 'f-1042',
    resource_display_name: 'Unusual tool volume',
    resources: { agent_slug: 'support-bot', agent_display_name: 'Support Bot', mcp_slug: 'github' },
    context: { ip: '10.1.2.3', country: 'DE', trace_id: 'abc123', attempt: 2 },
    changes: [],
    payload: { severity: 'high', score: 0.87, detector: 'volume', subject: 'agent:support-bot' },
    created_at: '2026-03-04T10:20:30.123Z',
    ...overrides,
  };
}

const toolError: ConditionEventInput = {
  ...anomalyCreated(),
  action: 'gateway.tool.error',
  actor_type: 'agent',
  actor_id: 'support-bot',
  actor_display_name: 'Support Bot',
  resource_type: 'tool',
  resource_id: 'github.create_issue',
  resource_display_name: 'Create issue',
  payload: {
    tool_key: 'github.create_issue',
    mcp_slug: 'github',
    duration_ms: 1200,
    error_code: 'upstream_timeout',
    error_message: 'timed out',
  },
};

const policyCreated: ConditionEventInput = {
  ...anomalyCreated(),
  action: 'policy.created',
  actor_type: 'user',
  actor_id: 'u-7',
  actor_display_name: 'Ada Lovelace',
  resource_type: 'policy',
  resource_id: 'p-1',
  resource_display_name: 'Block deletes',
  changes: [{ field: 'effect', from: null, to: 'deny' }],
  payload: { policy_name: 'Block deletes', effect: 'deny' },
  created_at: '2025-12-31T23:59:59.999Z',
};

function issuesOf(expression: string, events: readonly string[]): string[] {
  const result = compileEventCondition(expression, events);
  return result.ok ? [] : result.issues.map((issue) => issue.message);
}

function evaluate(expression: string, events: readonly string[], event: ConditionEventInput) {
  const result = compileEventCondition(expression, events);
  if (!result.ok) throw new Error(`does not compile: ${result.issues.map((i) => i.message).join('; ')}`);
  return result.condition.evaluate(event);
}

const ANOMALY = ['anomaly_finding.created'];
const TOOL_ERROR = ['gateway.tool.error'];

describe('compileEventCondition accepts', () => {
  it.each<[string, string, readonly string[]]>([
    ['prefix filtering', 'event.action.startsWith("policy.")', ['policy.created', 'policy.updated']],
    ['a known payload field', 'event.payload.severity in ["high", "critical"]', ANOMALY],
    ['a payload field for *', 'event.payload.severity == "high"', ['*']],
    ['any catalogue field for *', 'event.payload.error_code == "x" || event.payload.denied', ['*']],
    [
      'a field carried by one of several actions',
      'event.payload.severity == "high"',
      ['gateway.tool.error', 'anomaly_finding.created'],
    ],
    ['has() on a known field', 'has(event.payload.score)', ANOMALY],
    ['bracket access to a known field', 'event.payload["detector"] == "volume"', ANOMALY],
    [
      'double and int literals against a number field',
      'event.payload.score > 0.5 && event.payload.score < 1 && event.payload.score != 2',
      ANOMALY,
    ],
    ['timestamps', 'event.created_at > timestamp("2026-01-01T00:00:00Z")', ['*']],
    ['resources and context', 'event.resources.mcp_slug == "github" && event.context.country in ["DE", "FR"]', ['*']],
    [
      'the grouped actor and resource',
      'event.actor.type == "user" && event.actor.name.contains("Ada") && event.resource.type == "policy"',
      ['*'],
    ],
    ['id and org_id', 'event.id != "" && event.org_id != ""', ['*']],
    ['one comprehension over changes', 'event.changes.exists(c, c.field == "effect")', ['policy.created']],
    ['two nested comprehensions', '[1, 2].all(x, [3].exists(y, y > x))', ['*']],
    ['a comprehension variable named event', '[1].exists(event, event == 1)', TOOL_ERROR],
    ['matches with an RE2 pattern', 'event.actor.name.matches("^(?i)ada\\\\b")', ['*']],
    ['the function form of matches', 'matches(event.actor.name, "Ada")', ['*']],
    ['a map payload field', 'event.payload.call.tool_key == "x"', ['rate_limit.exceeded']],
    ['a bool payload field as the whole condition', 'event.payload.denied', ['rate_limit.exceeded']],
    ['exactly 1024 characters', `event.action == "${'x'.repeat(1024 - 'event.action == ""'.length)}"`, ['*']],
  ])('%s', (_name, expression, events) => {
    expect(issuesOf(expression, events)).toEqual([]);
  });
});

describe('compileEventCondition rejects', () => {
  it.each<[string, string, readonly string[], RegExp | string]>([
    ['a syntax error', 'event.action == ', ['*'], /^syntax error at position \d+: /],
    ['an unknown function', 'event.action.shout()', ['*'], /^type error/],
    ['a non-boolean result', 'event.action', ['*'], 'condition must evaluate to a boolean, but evaluates to string'],
    [
      'a number result',
      'event.payload.score',
      ANOMALY,
      'condition must evaluate to a boolean, but evaluates to double',
    ],
    ['a dyn result', 'event.context.flag', ['*'], 'condition must evaluate to a boolean, but evaluates to dyn'],
    ['an empty condition', '   ', ['*'], 'condition is empty'],
    [
      'more than 1024 characters',
      `event.action == "${'x'.repeat(1025 - 'event.action == ""'.length)}"`,
      ['*'],
      'condition is 1025 characters long, at most 1024 are allowed',
    ],
    [
      'a payload field the subscription lacks',
      'event.payload.severity == "high"',
      TOOL_ERROR,
      'payload field "severity" is carried by none of the subscribed events',
    ],
    [
      'has() of a payload field the subscription lacks',
      'has(event.payload.severity)',
      TOOL_ERROR,
      'payload field "severity" is carried by none of the subscribed events',
    ],
    [
      'bracket access to a field the subscription lacks',
      'event.payload["severity"] == "x"',
      TOOL_ERROR,
      'payload field "severity" is carried by none of the subscribed events',
    ],
    [
      'a field outside the catalogue for *',
      'event.payload.nonsense == 1',
      ['*'],
      'payload field "nonsense" is carried by none of the subscribed events',
    ],
    [
      'any payload field without subscriptions',
      'event.payload.severity == "x"',
      [],
      'payload field "severity" is carried by none of the subscribed events',
    ],
    ['a wrongly typed comparison', 'event.payload.severity > 3', ANOMALY, /^type error.*string > int/],
    [
      'int arithmetic on a number field, with a hint',
      'event.payload.duration_ms / 1000 > 2',
      TOOL_ERROR,
      /double \/ int \(payload numbers are doubles: write 1\.0 rather than 1\)$/,
    ],
    [
      'an int list for a number field, with a hint',
      'event.payload.score in [1, 2]',
      ANOMALY,
      /double in list<int> \(payload numbers are doubles/,
    ],
    [
      'an unknown event field',
      'event.actor_display_name == "x"',
      ['*'],
      /^type error.*No such key: actor_display_name/,
    ],
    ['an undeclared variable', 'request.path == "/"', ['*'], /^type error/],
    [
      'an invalid regex literal',
      'event.actor.name.matches("(unclosed")',
      ['*'],
      /^syntax error at position \d+: invalid regular expression "\(unclosed": /,
    ],
    [
      'matches on a non-string',
      'event.created_at.matches("2026")',
      ['*'],
      /no such overload: matches\(google\.protobuf\.Timestamp, string\)/,
    ],
    [
      'three nested comprehensions',
      '[1].all(a, [1].all(b, [1].all(c, true)))',
      ['*'],
      'comprehensions (all, exists, exists_one, map, filter) may nest at most 2 deep',
    ],
    ['cel.bind', 'cel.bind(x, event.action, x == "a")', ['*'], 'cel.bind is not supported in conditions'],
    ['absurd nesting', `${'('.repeat(70)}true${')'.repeat(70)}`, ['*'], /^syntax error.*Exceeded maxDepth/],
    [
      'a huge list literal',
      `event.action in [${Array.from({ length: 300 }, () => '""').join(',')}]`,
      ['*'],
      /Exceeded maxListElements/,
    ],
  ])('%s', (_name, expression, events, expected) => {
    const issues = issuesOf(expression, events);
    expect(issues).toHaveLength(1);
    if (typeof expected === 'string') expect(issues[0]).toBe(expected);
    else expect(issues[0]).toMatch(expected);
  });

  it('names every unknown payload field once, in order', () => {
    expect(
      issuesOf('event.payload.severity == "x" || event.payload.score > 1 || has(event.payload.severity)', TOOL_ERROR),
    ).toEqual([
      'payload field "severity" is carried by none of the subscribed events',
      'payload field "score" is carried by none of the subscribed events',
    ]);
  });

  it('rejects a condition that was valid before the subscription narrowed', () => {
    const expression = 'event.payload.severity == "critical" || event.payload.error_code == "upstream_timeout"';
    expect(issuesOf(expression, ['anomaly_finding.created', 'gateway.tool.error'])).toEqual([]);
    expect(issuesOf(expression, ['gateway.tool.error'])).toEqual([
      'payload field "severity" is carried by none of the subscribed events',
    ]);
  });
});

describe('CompiledCondition.evaluate', () => {
  it.each<[string, string, readonly string[], ConditionEventInput, boolean]>([
    ['prefix filtering, policy event', 'event.action.startsWith("policy.")', ['*'], policyCreated, true],
    ['prefix filtering, other event', 'event.action.startsWith("policy.")', ['*'], toolError, false],
    ['severity in list', 'event.payload.severity in ["high", "critical"]', ANOMALY, anomalyCreated(), true],
    [
      'severity not in list',
      'event.payload.severity in ["high", "critical"]',
      ANOMALY,
      anomalyCreated({ payload: { severity: 'low', score: 0.1 } }),
      false,
    ],
    ['score above a double', 'event.payload.score > 0.5', ANOMALY, anomalyCreated(), true],
    ['score above an int', 'event.payload.score > 5', ANOMALY, anomalyCreated({ payload: { score: 7 } }), true],
    ['score below an int', 'event.payload.score > 5', ANOMALY, anomalyCreated(), false],
    [
      'JSON integer equals an int literal',
      'event.payload.score == 7',
      ANOMALY,
      anomalyCreated({ payload: { score: 7 } }),
      true,
    ],
    [
      'JSON integer equals a double literal',
      'event.payload.score == 7.0',
      ANOMALY,
      anomalyCreated({ payload: { score: 7 } }),
      true,
    ],
    [
      'JSON fraction is not the int',
      'event.payload.score != 7',
      ANOMALY,
      anomalyCreated({ payload: { score: 7.5 } }),
      true,
    ],
    ['duration in a double list', 'event.payload.duration_ms in [1200.0, 1500.0]', TOOL_ERROR, toolError, true],
    [
      'created_at after a timestamp',
      'event.created_at > timestamp("2026-01-01T00:00:00Z")',
      ['*'],
      anomalyCreated(),
      true,
    ],
    [
      'created_at before a timestamp',
      'event.created_at > timestamp("2026-01-01T00:00:00Z")',
      ['*'],
      policyCreated,
      false,
    ],
    [
      'created_at keeps milliseconds',
      'event.created_at == timestamp("2026-03-04T10:20:30.123Z")',
      ['*'],
      anomalyCreated(),
      true,
    ],
    ['timestamp accessors', 'event.created_at.getHours() == 10', ['*'], anomalyCreated(), true],
    [
      'resources map',
      'event.resources.mcp_slug == "github" && event.resources["agent_slug"].endsWith("-bot")',
      ['*'],
      anomalyCreated(),
      true,
    ],
    [
      'context map',
      'event.context.ip.startsWith("10.") && event.context.country == "DE"',
      ['*'],
      anomalyCreated(),
      true,
    ],
    [
      'context JSON number against an int',
      'event.context.attempt == 2 && event.context.attempt > 1',
      ['*'],
      anomalyCreated(),
      true,
    ],
    ['has() on a present resource key', 'has(event.resources.mcp_slug)', ['*'], anomalyCreated(), true],
    ['has() on an absent context key', 'has(event.context.user_agent)', ['*'], anomalyCreated(), false],
    [
      'has() on an absent payload field',
      'has(event.payload.severity) && event.payload.severity == "high"',
      ['*'],
      toolError,
      false,
    ],
    [
      'has() on a null payload field',
      'has(event.payload.subject)',
      ANOMALY,
      anomalyCreated({ payload: { severity: 'high', subject: null } }),
      false,
    ],
    [
      'actor and resource grouping',
      'event.actor.name == "Ada Lovelace" && event.actor.type == "user" && event.resource.name == "Block deletes"',
      ['*'],
      policyCreated,
      true,
    ],
    ['changes', 'event.changes.exists(c, c.field == "effect" && c.to == "deny")', ['*'], policyCreated, true],
    ['empty changes', 'size(event.changes) == 0', ['*'], anomalyCreated(), true],
    [
      'negation and or',
      '!(event.actor.type == "system") || event.payload.detector == "volume"',
      ANOMALY,
      anomalyCreated(),
      true,
    ],
    ['matches', 'event.resource.id.matches("^github\\\\.[a-z_]+$")', ['*'], toolError, true],
    ['matches is a partial match', 'event.actor.name.matches("Bot")', ['*'], toolError, true],
  ])('%s', (_name, expression, events, event, matches) => {
    expect(evaluate(expression, events, event)).toEqual({ ok: true, matches });
  });

  it.each<[string, string, readonly string[], ConditionEventInput, RegExp]>([
    [
      'a payload field the event lacks',
      'event.payload.severity == "high"',
      ['gateway.tool.error', 'anomaly_finding.created'],
      toolError,
      /No such key: severity/,
    ],
    ['a missing resources key', 'event.resources.policy_id == "p"', ['*'], anomalyCreated(), /No such key: policy_id/],
    [
      'a payload value of the wrong type',
      'event.payload.score > 0.5',
      ANOMALY,
      anomalyCreated({ payload: { score: '0.9' } }),
      /score.*double/,
    ],
    [
      'a created_at that is not a timestamp',
      'event.action != ""',
      ['*'],
      anomalyCreated({ created_at: 'yesterday' }),
      /created_at is not a timestamp/,
    ],
    ['a runtime type error through dyn', 'event.context.country > 3', ['*'], anomalyCreated(), /no such overload/],
  ])('errors on %s', (_name, expression, events, event, error) => {
    const result = evaluate(expression, events, event);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toMatch(error);
  });

  it('short-circuits around a missing payload field', () => {
    const events = ['gateway.tool.error', 'anomaly_finding.created'];
    const expression = 'event.action == "anomaly_finding.created" && event.payload.severity == "high"';
    expect(evaluate(expression, events, toolError)).toEqual({ ok: true, matches: false });
    expect(evaluate(expression, events, anomalyCreated())).toEqual({ ok: true, matches: true });
  });

  it('keeps the expression it was compiled from', () => {
    const result = compileEventCondition('event.action == "x"', ['*']);
    expect(result.ok && result.condition.expression).toBe('event.action == "x"');
  });

  it('does not modify the event it is given', () => {
    const event = anomalyCreated({ payload: { severity: 'high', subject: null } });
    const before = JSON.parse(JSON.stringify(event));
    evaluate('has(event.payload.subject) || event.payload.severity == "high"', ANOMALY, event);
    expect(event).toEqual(before);
  });
});

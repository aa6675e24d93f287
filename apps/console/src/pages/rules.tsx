import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState, type FormEvent } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import {
  KEY_BY_VALUES,
  patchRuleSchema,
  RULE_ACTIONS,
  RULE_STATUSES,
  ruleDefinitionSchema,
} from '@gatehook/core/rate-limit-rule-schema';
import { budgetOf } from '@gatehook/ratelimit/budget';
import { useAccess } from '../access';
import { api, ApiError, query, type FieldIssue, type Page, type Rule } from '../api';
import { ConfirmButton, Empty, ErrorBox, FieldError, Loading, Status, usePager, When } from '../ui';

/** "17 calls per 61.2 s": the derived budget of SPEC 2.5, from the limiter's own arithmetic. */
export function budgetText(rule: { limit: number; window_seconds: number; burst: number }): string {
  const { calls, windowMs } = budgetOf({ limit: rule.limit, windowSeconds: rule.window_seconds, burst: rule.burst });
  return `${calls} call${calls === 1 ? '' : 's'} per ${Number((windowMs / 1000).toFixed(3))} s`;
}

export function RulesList() {
  const access = useAccess();
  const [status, setStatus] = useState('');
  const pager = usePager();
  const list = useQuery({
    queryKey: ['rules', status, pager.cursor],
    queryFn: () => api<Page<Rule>>('GET', `/rate-limits/rules${query({ limit: 50, status, cursor: pager.cursor })}`),
    placeholderData: (p) => p,
  });
  return (
    <section>
      <div className="title-row">
        <h1>Rate limit rules</h1>
        {access.manageRules && (
          <Link className="button primary" to="/rate-limits/new">
            New rule
          </Link>
        )}
      </div>
      {!access.manageRules && (
        <p className="muted" role="note">
          Read only: this key may view rules but not change them (manage_rate_limits).
        </p>
      )}
      <div className="filters">
        <label>
          Status
          <select
            value={status}
            onChange={(e) => {
              setStatus(e.target.value);
              pager.reset();
            }}
          >
            <option value="">all</option>
            {RULE_STATUSES.map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </label>
      </div>
      {list.isPending && <Loading what="rules" />}
      {list.isError && <ErrorBox error={list.error} />}
      {list.data && list.data.items.length === 0 && <Empty>No {status} rules yet.</Empty>}
      {list.data && list.data.items.length > 0 && (
        <table>
          <caption className="sr-only">Rate limit rules</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Status</th>
              <th scope="col">Limit</th>
              <th scope="col">Budget</th>
              <th scope="col">Counted per</th>
              <th scope="col">Action</th>
            </tr>
          </thead>
          <tbody>
            {list.data.items.map((r) => (
              <tr key={r.id}>
                <td>
                  <Link to={`/rate-limits/${r.id}`}>{r.name}</Link>
                </td>
                <td>
                  <Status value={r.status} />
                </td>
                <td>
                  {r.limit} / {r.window_seconds} s
                </td>
                <td>{budgetText(r)}</td>
                <td>{r.key_by.join(', ')}</td>
                <td>{r.action}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {list.data && pager.controls(list.data.next_cursor)}
    </section>
  );
}

export function RuleDetail() {
  const { id = '' } = useParams();
  const access = useAccess();
  const client = useQueryClient();
  const navigate = useNavigate();
  const rule = useQuery({ queryKey: ['rule', id], queryFn: () => api<Rule>('GET', `/rate-limits/rules/${id}`) });
  const patch = useMutation({
    mutationFn: (status: string) => api<Rule>('PATCH', `/rate-limits/rules/${id}`, { status }),
    onSuccess: (r) => {
      client.setQueryData(['rule', id], r);
      void client.invalidateQueries({ queryKey: ['rules'] });
    },
  });
  const remove = useMutation({
    mutationFn: () => api('DELETE', `/rate-limits/rules/${id}`),
    onSuccess: () => {
      void client.invalidateQueries({ queryKey: ['rules'] });
      navigate('/rate-limits');
    },
  });
  if (rule.isPending) return <Loading what="the rule" />;
  if (rule.isError) return <ErrorBox error={rule.error} />;
  const r = rule.data;
  const scope = Object.entries(r.scope).filter(
    ([k, v]) => k !== 'type' && v !== undefined && v !== '' && !(Array.isArray(v) && v.length === 0),
  );
  return (
    <section>
      <p>
        <Link to="/rate-limits">← All rules</Link>
      </p>
      <div className="title-row">
        <h1>{r.name}</h1>
        <Status value={r.status} />
      </div>
      {access.manageRules && (
        <div className="actions" role="toolbar" aria-label="Rule operations">
          <Link className="button" to={`/rate-limits/${id}/edit`}>
            Edit
          </Link>
          {r.status === 'active' ? (
            <button type="button" onClick={() => patch.mutate('disabled')}>
              Disable
            </button>
          ) : (
            <button type="button" onClick={() => patch.mutate('active')}>
              Enable
            </button>
          )}
          <ConfirmButton danger label="Delete" confirm={`Delete rule “${r.name}”?`} onConfirm={() => remove.mutate()} />
        </div>
      )}
      {[patch, remove].map((m, i) => m.isError && <ErrorBox key={i} error={m.error} />)}
      <p className="budget" data-testid="budget">
        Derived budget: <strong>{budgetText(r)}</strong> (limit {r.limit} per {r.window_seconds} s, burst {r.burst})
      </p>
      <dl className="fields">
        <div>
          <dt>description</dt>
          <dd>{r.description ?? '—'}</dd>
        </div>
        <div>
          <dt>action</dt>
          <dd>{r.action}</dd>
        </div>
        <div>
          <dt>key_by</dt>
          <dd>{r.key_by.join(', ')}</dd>
        </div>
        <div>
          <dt>scope</dt>
          <dd>
            {r.scope.type}
            {scope.length
              ? scope.map(([k, v]) => (
                  <div key={k}>
                    <code>{k}</code>: {Array.isArray(v) ? v.join(', ') : String(v)}
                  </div>
                ))
              : ' (every call)'}
          </dd>
        </div>
        <div>
          <dt>id</dt>
          <dd>
            <code>{r.id}</code>
          </dd>
        </div>
        <div>
          <dt>created_at</dt>
          <dd>
            <When at={r.created_at} />
          </dd>
        </div>
        <div>
          <dt>updated_at</dt>
          <dd>
            <When at={r.updated_at} />
          </dd>
        </div>
      </dl>
    </section>
  );
}

interface RuleDraft {
  name: string;
  description: string;
  status: string;
  action: string;
  limit: string;
  window_seconds: string;
  burst: string;
  key_by: string[];
  tool_patterns: string;
  condition: string;
}

const emptyRule: RuleDraft = {
  name: '',
  description: '',
  status: 'active',
  action: 'deny',
  limit: '100',
  window_seconds: '60',
  burst: '1',
  key_by: ['org'],
  tool_patterns: '',
  condition: '',
};
const list = (text: string) =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

export function RuleForm() {
  const { id } = useParams();
  const editing = id !== undefined;
  const navigate = useNavigate();
  const client = useQueryClient();
  const existing = useQuery({
    queryKey: ['rule', id],
    queryFn: () => api<Rule>('GET', `/rate-limits/rules/${id}`),
    enabled: editing,
  });
  const [draft, setDraft] = useState<RuleDraft>(emptyRule);
  const [loaded, setLoaded] = useState(!editing);
  const [issues, setIssues] = useState<FieldIssue[]>([]);
  useEffect(() => {
    if (existing.data && !loaded) {
      const r = existing.data;
      setDraft({
        name: r.name,
        description: r.description ?? '',
        status: r.status,
        action: r.action,
        limit: String(r.limit),
        window_seconds: String(r.window_seconds),
        burst: String(r.burst),
        key_by: r.key_by,
        tool_patterns: (r.scope.tool_patterns ?? []).join(', '),
        condition: r.scope.condition ?? '',
      });
      setLoaded(true);
    }
  }, [existing.data, loaded]);

  const scope = {
    ...(existing.data?.scope ?? { type: 'mcp_tool_call' as const }),
    tool_patterns: list(draft.tool_patterns),
    condition: draft.condition,
  };
  const body = {
    name: draft.name,
    description: draft.description.trim() === '' ? null : draft.description,
    status: draft.status,
    action: draft.action,
    limit: Number(draft.limit),
    window_seconds: Number(draft.window_seconds),
    burst: Number(draft.burst),
    key_by: draft.key_by,
    scope,
  };
  const save = useMutation({
    mutationFn: () =>
      editing ? api<Rule>('PATCH', `/rate-limits/rules/${id}`, body) : api<Rule>('POST', '/rate-limits/rules', body),
    onSuccess: (r) => {
      client.setQueryData(['rule', r.id], r);
      void client.invalidateQueries({ queryKey: ['rules'] });
      navigate(`/rate-limits/${r.id}`);
    },
    onError: (e) => setIssues(e instanceof ApiError ? e.details : []),
  });
  function submit(e: FormEvent) {
    e.preventDefault();
    const checked = (editing ? patchRuleSchema : ruleDefinitionSchema).safeParse(body);
    if (!checked.success)
      return setIssues(checked.error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message })));
    setIssues([]);
    save.mutate();
  }
  if (editing && existing.isError) return <ErrorBox error={existing.error} />;
  if (!loaded) return <Loading what="the rule" />;
  const err = (f: string) =>
    issues
      .filter((i) => i.path === f || i.path.startsWith(`${f}.`))
      .map((i) => (i.path === f ? i.message : `${i.path.slice(f.length + 1)}: ${i.message}`));
  const valid =
    Number(draft.limit) >= 1 &&
    Number(draft.window_seconds) >= 1 &&
    Number(draft.window_seconds) <= 3600 &&
    Number(draft.burst) >= 0;
  const input = (f: keyof RuleDraft, label: string, type = 'text') => (
    <>
      <label htmlFor={`rule-${f}`}>{label}</label>
      <input
        id={`rule-${f}`}
        type={type}
        value={draft[f] as string}
        onChange={(e) => setDraft({ ...draft, [f]: e.target.value })}
        aria-invalid={err(f).length > 0}
        aria-describedby={err(f).length ? `${f}-error` : undefined}
      />
      <FieldError id={`${f}-error`} messages={err(f)} />
    </>
  );
  return (
    <section>
      <h1>{editing ? `Edit ${existing.data?.name}` : 'New rate limit rule'}</h1>
      <form onSubmit={submit} noValidate className="narrow" aria-label={editing ? 'Edit rule' : 'New rule'}>
        {input('name', 'Name')}
        {input('description', 'Description (optional)')}
        {input('limit', 'Calls allowed per window (limit)', 'number')}
        {input('window_seconds', 'Window in seconds (1 to 3600)', 'number')}
        {input('burst', 'Burst', 'number')}
        <p className="budget" role="status">
          Derived budget:{' '}
          <strong>
            {valid
              ? budgetText({
                  limit: Number(draft.limit),
                  window_seconds: Number(draft.window_seconds),
                  burst: Number(draft.burst),
                })
              : '—'}
          </strong>
        </p>
        <fieldset aria-describedby={err('key_by').length ? 'key_by-error' : undefined}>
          <legend>Counted per (key_by)</legend>
          {KEY_BY_VALUES.map((k) => (
            <label key={k} className="check">
              <input
                type="checkbox"
                checked={draft.key_by.includes(k)}
                onChange={(e) =>
                  setDraft({
                    ...draft,
                    key_by: e.target.checked ? [...draft.key_by, k] : draft.key_by.filter((x) => x !== k),
                  })
                }
              />{' '}
              {k}
            </label>
          ))}
          <FieldError id="key_by-error" messages={err('key_by')} />
        </fieldset>
        <div className="row">
          <label>
            Action{' '}
            <select value={draft.action} onChange={(e) => setDraft({ ...draft, action: e.target.value })}>
              {RULE_ACTIONS.map((a) => (
                <option key={a}>{a}</option>
              ))}
            </select>
          </label>
          <label>
            Status{' '}
            <select value={draft.status} onChange={(e) => setDraft({ ...draft, status: e.target.value })}>
              {RULE_STATUSES.map((a) => (
                <option key={a}>{a}</option>
              ))}
            </select>
          </label>
        </div>
        {input('tool_patterns', 'Tool patterns (comma-separated globs, optional)')}
        <FieldError id="scope-error" messages={err('scope')} />
        {input('condition', 'Scope condition (CEL over call, optional)')}
        {save.isError && !(save.error instanceof ApiError && save.error.status === 422) && (
          <ErrorBox error={save.error} what="Saving" />
        )}
        {issues.length > 0 && (
          <p role="alert" className="failing">
            Not saved: fix the fields marked above.
          </p>
        )}
        <div className="actions">
          <button type="submit" className="primary" disabled={save.isPending}>
            {editing ? 'Save changes' : 'Create rule'}
          </button>
          <Link className="button" to={editing ? `/rate-limits/${id}` : '/rate-limits'}>
            Cancel
          </Link>
        </div>
      </form>
    </section>
  );
}

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Link, useLocation, useNavigate, useParams } from 'react-router';
import { WEBHOOK_STATUSES } from '@gatehook/core/webhook-schema';
import { useAccess } from '../access';
import { api, ApiError, query, type Delivery, type Page, type Task, type TestResult, type Webhook } from '../api';
import { DestinationLogo } from '../logos';
import { ConfirmButton, Empty, ErrorBox, Loading, Status, usePager, When } from '../ui';
import { WebhookStats } from './webhook-stats';
import { authSummary } from './auth-editor';

const DELIVERY_STATUSES = ['pending', 'retrying', 'succeeded', 'failed'] as const;

/** Webhooks, newest first, one API page at a time; search narrows the page shown by name or URL. */
export function WebhooksList() {
  const access = useAccess();
  const [status, setStatus] = useState('');
  const [search, setSearch] = useState('');
  const pager = usePager();
  const list = useQuery({
    queryKey: ['webhooks', status, pager.cursor],
    queryFn: () => api<Page<Webhook>>('GET', `/webhooks${query({ limit: 50, status, cursor: pager.cursor })}`),
    placeholderData: (previous) => previous,
  });
  const needle = search.trim().toLowerCase();
  const items = (list.data?.items ?? []).filter(
    (w) =>
      !needle ||
      w.name.toLowerCase().includes(needle) ||
      w.url.toLowerCase().includes(needle) ||
      (w.destination ?? '').includes(needle),
  );
  return (
    <section>
      <div className="title-row">
        <h1>Webhooks</h1>
        {access.admin && (
          <Link className="button primary" to="/webhooks/new">
            New webhook
          </Link>
        )}
      </div>
      <div className="filters" role="search">
        <label>
          Search this page{' '}
          <input
            type="search"
            value={search}
            onChange={(e) => setSearch(e.target.value)}
            placeholder="name, URL or destination"
          />
        </label>
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
            {WEBHOOK_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
      </div>
      {list.isPending && <Loading what="webhooks" />}
      {list.isError && <ErrorBox error={list.error} />}
      {list.data && items.length === 0 && (
        <Empty>
          {list.data.items.length === 0
            ? status
              ? `No ${status} webhooks.`
              : 'No webhooks yet.'
            : 'No webhook on this page matches the search.'}
        </Empty>
      )}
      {items.length > 0 && (
        <table>
          <caption className="sr-only">Webhooks</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Status</th>
              <th scope="col">Failing since</th>
              <th scope="col">Format</th>
              <th scope="col">Events</th>
              <th scope="col">URL</th>
            </tr>
          </thead>
          <tbody>
            {items.map((w) => (
              <tr key={w.id}>
                <td>
                  <span className="with-logo">
                    <DestinationLogo id={w.destination} />
                    <Link to={`/webhooks/${w.id}`}>{w.name}</Link>
                  </span>
                </td>
                <td>
                  <Status value={w.status} />
                  {w.disabled_reason && <span className="muted"> ({w.disabled_reason})</span>}
                </td>
                <td>
                  {w.failing_since ? (
                    <span className="failing">
                      <When at={w.failing_since} />
                    </span>
                  ) : (
                    <span className="muted">—</span>
                  )}
                </td>
                <td>
                  {w.format}
                  {w.max_events > 1 ? ` ×${w.max_events}` : ''}
                </td>
                <td className="events">{w.events.join(', ')}</td>
                <td>
                  <code>{w.url}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {list.data && pager.controls(list.data.next_cursor)}
    </section>
  );
}

function Secret({
  secret,
  previousValidUntil,
  onDone,
}: {
  secret: string;
  previousValidUntil?: string;
  onDone: () => void;
}) {
  const [copied, setCopied] = useState(false);
  return (
    <div className="secret" role="region" aria-label="New signing secret">
      <p>
        <strong>New signing secret</strong>: shown this once, store it now.
      </p>
      <code data-testid="secret">{secret}</code>{' '}
      <button
        type="button"
        onClick={() =>
          void navigator.clipboard?.writeText(secret).then(
            () => setCopied(true),
            () => setCopied(false),
          )
        }
      >
        {copied ? 'Copied' : 'Copy'}
      </button>
      {previousValidUntil && (
        <p>
          The previous secret stays valid until <When at={previousValidUntil} />.
        </p>
      )}
      <button type="button" onClick={onDone}>
        I have stored it
      </button>
    </div>
  );
}

function TestSend({ id }: { id: string }) {
  const test = useMutation({ mutationFn: () => api<TestResult>('POST', `/webhooks/${id}/test`) });
  return (
    <div>
      <button type="button" onClick={() => test.mutate()} disabled={test.isPending}>
        {test.isPending ? 'Sending test…' : 'Send test event'}
      </button>
      {test.isError && <ErrorBox error={test.error} what="Test send" />}
      {test.data && (
        <dl className={`test-result ${test.data.success ? 'ok' : 'bad'}`} aria-label="Test result" role="status">
          <dt>Result</dt>
          <dd>{test.data.success ? 'success' : 'failure'}</dd>
          <dt>Status code</dt>
          <dd>{test.data.status_code ?? '—'}</dd>
          <dt>Duration</dt>
          <dd>{test.data.duration_ms} ms</dd>
          {test.data.error && (
            <>
              <dt>Error</dt>
              <dd>{test.data.error}</dd>
            </>
          )}
          {test.data.response_snippet !== undefined && (
            <>
              <dt>Response</dt>
              <dd>
                <pre>{test.data.response_snippet}</pre>
              </dd>
            </>
          )}
        </dl>
      )}
    </div>
  );
}

/** One webhook: every field as the API returns it, its operations, deliveries and tasks. */
export function WebhookDetail() {
  const { id = '' } = useParams();
  const access = useAccess();
  const client = useQueryClient();
  const navigate = useNavigate();
  // A webhook just created arrives with its secret in the navigation state: shown once, never stored.
  const created = (useLocation().state as { secret?: string } | null)?.secret;
  const [secret, setSecret] = useState<{ secret: string; previous_valid_until: string } | null>(
    created ? { secret: created, previous_valid_until: '' } : null,
  );
  const webhook = useQuery({ queryKey: ['webhook', id], queryFn: () => api<Webhook>('GET', `/webhooks/${id}`) });
  const refresh = (w: Webhook) => {
    client.setQueryData(['webhook', id], w);
    void client.invalidateQueries({ queryKey: ['webhooks'] });
  };
  const operation = useMutation({
    mutationFn: (op: string) => api<Webhook>('POST', `/webhooks/${id}/${op}`),
    onSuccess: refresh,
  });
  const rotate = useMutation({
    mutationFn: () => api<{ secret: string; previous_valid_until: string }>('POST', `/webhooks/${id}/rotate-secret`),
    onSuccess: setSecret,
  });
  const remove = useMutation({
    mutationFn: () => api('DELETE', `/webhooks/${id}`),
    onSuccess: () => {
      void client.invalidateQueries({ queryKey: ['webhooks'] });
      navigate('/webhooks');
    },
  });

  if (webhook.isPending) return <Loading what="the webhook" />;
  if (webhook.isError) return <ErrorBox error={webhook.error} />;
  const w = webhook.data;
  const fields: [string, React.ReactNode][] = [
    ['id', <code>{w.id}</code>],
    ['org_id', <code>{w.org_id}</code>],
    ['url', <code>{w.url}</code>],
    ['destination', w.destination ?? '—'],
    ['events', w.events.join(', ')],
    ['condition', w.condition ? <pre>{w.condition}</pre> : <span className="muted">none: every subscribed event</span>],
    ['format', w.format],
    ['max_events', w.max_events],
    ['template', w.template ? <pre>{w.template}</pre> : <span className="muted">blank: the default envelope</span>],
    [
      'vars',
      Object.keys(w.vars).length
        ? Object.keys(w.vars).map((n) => (
            <code key={n} className="name">
              {n}
            </code>
          ))
        : '—',
    ],
    [
      'headers',
      Object.keys(w.headers).length
        ? Object.keys(w.headers).map((n) => (
            <code key={n} className="name">
              {n}
            </code>
          ))
        : '—',
    ],
    [
      'rate_limit_per_second',
      w.rate_limit_per_second === null ? <span className="muted">none</span> : `${w.rate_limit_per_second} requests/s`,
    ],
    ['auth', authSummary(w.auth)],
    [
      'client_certificate',
      w.client_certificate ? (
        <>
          SHA-256 <code className="fingerprint">{w.client_certificate.fingerprint_sha256}</code>, expires{' '}
          <When at={w.client_certificate.not_after} />
        </>
      ) : (
        '—'
      ),
    ],
    [
      'status',
      <>
        <Status value={w.status} />
        {w.disabled_reason && ` (${w.disabled_reason})`}
      </>,
    ],
    ['disabled_reason', w.disabled_reason ?? '—'],
    ['failing_since', <When at={w.failing_since} />],
    ['created_at', <When at={w.created_at} />],
    ['updated_at', <When at={w.updated_at} />],
  ];
  return (
    <section>
      <div className="title-row">
        <h1 className="with-logo">
          <DestinationLogo id={w.destination} size={36} />
          {w.name}
        </h1>
        <Status value={w.status} />
      </div>
      <div className="actions" role="toolbar" aria-label="Webhook operations">
        {access.admin && (
          <Link className="button" to={`/webhooks/${id}/edit`}>
            Edit
          </Link>
        )}
        {access.admin && w.status === 'active' && (
          <button type="button" onClick={() => operation.mutate('pause')}>
            Pause
          </button>
        )}
        {access.admin && w.status === 'paused' && (
          <button type="button" onClick={() => operation.mutate('resume')}>
            Resume
          </button>
        )}
        {access.admin && w.status !== 'disabled' && (
          <button type="button" onClick={() => operation.mutate('disable')}>
            Disable
          </button>
        )}
        {access.admin && w.status === 'disabled' && (
          <button type="button" onClick={() => operation.mutate('enable')}>
            Re-enable
          </button>
        )}
        {access.admin && (
          <ConfirmButton
            label="Rotate secret"
            confirm="Issue a new signing secret?"
            onConfirm={() => rotate.mutate()}
          />
        )}
        {access.admin && (
          <ConfirmButton
            danger
            label="Delete"
            confirm={`Delete “${w.name}” and cancel its pending deliveries?`}
            onConfirm={() => remove.mutate()}
          />
        )}
      </div>
      {[operation, rotate, remove].map((m, i) => m.isError && <ErrorBox key={i} error={m.error} />)}
      {secret && (
        <Secret
          secret={secret.secret}
          previousValidUntil={secret.previous_valid_until}
          onDone={() => {
            setSecret(null);
            navigate('.', { replace: true, state: null });
          }}
        />
      )}
      <TestSend id={id} />
      <h2>Configuration</h2>
      <dl className="fields">
        {fields.map(([k, v]) => (
          <div key={k}>
            <dt>{k}</dt>
            <dd>{v}</dd>
          </div>
        ))}
      </dl>
      <WebhookStats webhookId={id} />
      <Deliveries webhookId={id} />
      <Tasks webhookId={id} active={w.status === 'active'} />
    </section>
  );
}

function Deliveries({ webhookId }: { webhookId: string }) {
  const [status, setStatus] = useState('');
  const pager = usePager();
  const list = useQuery({
    queryKey: ['deliveries', webhookId, status, pager.cursor],
    queryFn: () =>
      api<Page<Delivery>>(
        'GET',
        `/webhooks/${webhookId}/deliveries${query({ limit: 25, status, cursor: pager.cursor })}`,
      ),
    refetchInterval: 3000,
    placeholderData: (previous) => previous,
  });
  return (
    <section aria-labelledby="deliveries-title">
      <h2 id="deliveries-title">Deliveries</h2>
      <div className="filters">
        <label>
          Delivery status
          <select
            value={status}
            onChange={(e) => {
              setStatus(e.target.value);
              pager.reset();
            }}
          >
            <option value="">all</option>
            {DELIVERY_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
      </div>
      {list.isPending && <Loading what="deliveries" />}
      {list.isError && <ErrorBox error={list.error} />}
      {list.data && list.data.items.length === 0 && (
        <Empty>No deliveries{status ? ` with status ${status}` : ''} yet.</Empty>
      )}
      {list.data && list.data.items.length > 0 && (
        <table>
          <caption className="sr-only">Deliveries, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Delivery</th>
              <th scope="col">Status</th>
              <th scope="col">Events</th>
              <th scope="col">Attempts</th>
              <th scope="col">Last answer</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {list.data.items.map((d) => {
              const last = d.attempts[d.attempts.length - 1];
              return (
                <tr key={d.id}>
                  <td>
                    <Link to={`/webhooks/${webhookId}/deliveries/${d.id}`}>
                      <code>{d.id.slice(0, 8)}</code>
                    </Link>
                  </td>
                  <td>
                    <Status value={d.status} />
                  </td>
                  <td>{d.event_count}</td>
                  <td>{d.attempt_count}</td>
                  <td>{last ? last.error || last.status_code : '—'}</td>
                  <td>
                    <When at={d.created_at} />
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {list.data && pager.controls(list.data.next_cursor)}
    </section>
  );
}

/** One delivery and its attempt timeline, with a retry when the API allows it. */
export function DeliveryDetail() {
  const { id = '', deliveryId = '' } = useParams();
  const client = useQueryClient();
  const delivery = useQuery({
    queryKey: ['delivery', deliveryId],
    queryFn: () => api<Delivery>('GET', `/webhooks/${id}/deliveries/${deliveryId}`),
    refetchInterval: (q) => (q.state.data && ['pending', 'retrying'].includes(q.state.data.status) ? 1000 : false),
  });
  const retry = useMutation({
    mutationFn: () => api<Delivery>('POST', `/webhooks/${id}/deliveries/${deliveryId}/retry`),
    onSuccess: () => {
      void client.invalidateQueries({ queryKey: ['delivery', deliveryId] });
      void client.invalidateQueries({ queryKey: ['deliveries', id] });
    },
  });
  if (delivery.isPending) return <Loading what="the delivery" />;
  if (delivery.isError) return <ErrorBox error={delivery.error} />;
  const d = delivery.data;
  return (
    <section>
      <p>
        <Link to={`/webhooks/${id}`}>← Back to the webhook</Link>
      </p>
      <div className="title-row">
        <h1>
          Delivery <code>{d.id}</code>
        </h1>
        <Status value={d.status} />
      </div>
      <dl className="fields">
        <div>
          <dt>events</dt>
          <dd>
            {d.event_count}
            {d.event_ids && d.event_ids.length > 0 && (
              <>
                {' '}
                (<code>{d.event_ids.join(', ')}</code>)
              </>
            )}
          </dd>
        </div>
        <div>
          <dt>attempts</dt>
          <dd>{d.attempt_count}</dd>
        </div>
        <div>
          <dt>next retry</dt>
          <dd>
            <When at={d.next_retry_at} />
          </dd>
        </div>
        <div>
          <dt>retryable</dt>
          <dd>{d.retryable ? 'yes' : 'no'}</dd>
        </div>
        {d.error && (
          <div>
            <dt>error</dt>
            <dd>{d.error}</dd>
          </div>
        )}
        <div>
          <dt>created_at</dt>
          <dd>
            <When at={d.created_at} />
          </dd>
        </div>
      </dl>
      {d.attempt_count > 0 && (
        <p>
          <Link className="button" to={`/webhooks/${id}/deliveries/${deliveryId}/request`}>
            Request as sent
          </Link>
        </p>
      )}
      {d.status === 'failed' && (
        <p>
          <button type="button" disabled={!d.retryable || retry.isPending} onClick={() => retry.mutate()}>
            Retry delivery
          </button>
          {!d.retryable && <span className="muted"> Not retryable: this delivery never produced a body.</span>}
        </p>
      )}
      {retry.isError && <ErrorBox error={retry.error} what="Retry" />}
      {retry.isSuccess && <p role="status">Retry scheduled: a fresh cycle of 8 attempts.</p>}
      <h2>Attempt timeline</h2>
      {d.attempts.length === 0 && <Empty>No attempt yet{d.next_retry_at ? '; the first is due now' : ''}.</Empty>}
      <ol className="timeline" aria-label="Attempts, oldest first">
        {d.attempts.map((a, i) => (
          <li key={i} className={a.status_code >= 200 && a.status_code < 300 ? 'ok' : 'bad'}>
            <strong>Attempt {i + 1}</strong> · <When at={a.at} /> · status {a.status_code || 'none'} · {a.duration_ms}{' '}
            ms
            {a.error && (
              <>
                {' '}
                · error <code>{a.error}</code>
              </>
            )}
            {a.response_snippet && <pre>{a.response_snippet}</pre>}
          </li>
        ))}
      </ol>
      {d.next_retry_at && (
        <p>
          Next retry: <When at={d.next_retry_at} />
        </p>
      )}
    </section>
  );
}

/** Recover and replay tasks (CONTRACT 11); explained when this API does not offer them yet. */
function Tasks({ webhookId, active }: { webhookId: string; active: boolean }) {
  const access = useAccess();
  const client = useQueryClient();
  const tasks = useQuery({
    queryKey: ['tasks', webhookId],
    queryFn: () => api<Page<Task>>('GET', `/webhooks/${webhookId}/tasks?limit=10`),
    refetchInterval: (q) => (q.state.data?.items.some((t) => t.status === 'running') ? 1000 : false),
  });
  const [kind, setKind] = useState<'recover' | 'replay'>('recover');
  const [since, setSince] = useState('');
  const [until, setUntil] = useState('');
  const start = useMutation({
    mutationFn: () =>
      api<Task>('POST', `/webhooks/${webhookId}/${kind}`, {
        since: new Date(since).toISOString(),
        ...(until ? { until: new Date(until).toISOString() } : {}),
      }),
    onSuccess: () => void client.invalidateQueries({ queryKey: ['tasks', webhookId] }),
  });
  const unsupported = tasks.error instanceof ApiError && tasks.error.status === 404;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    start.mutate();
  };
  return (
    <section aria-labelledby="tasks-title">
      <h2 id="tasks-title">Recover and replay</h2>
      {unsupported && (
        <div role="alert" className="error-box">
          <strong>Not available on this server</strong>
          <p>
            The API answered 404 for this webhook's tasks: this Gatehook version does not offer recover and replay yet.
          </p>
        </div>
      )}
      {tasks.isPending && <Loading what="tasks" />}
      {tasks.isError && !unsupported && <ErrorBox error={tasks.error} />}
      {tasks.data && tasks.data.items.length === 0 && (
        <Empty>No recover or replay task has run for this webhook.</Empty>
      )}
      {tasks.data && tasks.data.items.length > 0 && (
        <ul className="tasks">
          {tasks.data.items.map((t) => (
            <li key={t.id}>
              <strong>{t.kind}</strong> <Status value={t.status} /> <When at={t.since} /> → <When at={t.until} />
              <progress max={t.total ?? undefined} value={t.processed} aria-label={`${t.kind} progress`} />{' '}
              {t.processed}
              {t.total !== null ? ` / ${t.total}` : ''}
              {t.error && <span className="failing"> {t.error}</span>}
            </li>
          ))}
        </ul>
      )}
      {access.admin && !unsupported && tasks.isSuccess && (
        <form className="inline-form" onSubmit={submit}>
          <label>
            Task{' '}
            <select value={kind} onChange={(e) => setKind(e.target.value as 'recover' | 'replay')}>
              <option value="recover">recover failed deliveries</option>
              <option value="replay">replay events</option>
            </select>
          </label>
          <label>
            Since <input type="datetime-local" required value={since} onChange={(e) => setSince(e.target.value)} />
          </label>
          <label>
            Until (optional) <input type="datetime-local" value={until} onChange={(e) => setUntil(e.target.value)} />
          </label>
          <button
            type="submit"
            disabled={!active || start.isPending}
            title={active ? undefined : 'The webhook must be active'}
          >
            Start
          </button>
        </form>
      )}
      {start.isError && <ErrorBox error={start.error} what="Starting the task" />}
    </section>
  );
}

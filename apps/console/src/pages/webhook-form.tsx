import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useMemo, useState, type FormEvent } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { createWebhookSchema, patchWebhookSchema, WEBHOOK_FORMATS } from '@gatehook/core/webhook-schema';
import { api, ApiError, type EventType, type FieldIssue, type Preset, type Webhook } from '../api';
import { DestinationLogo } from '../logos';
import { AuthEditor, authDraftOf, authDraftOfPreset, authField, blankAuth, type AuthDraft } from './auth-editor';
import { ErrorBox, FieldError, Loading } from '../ui';

interface Pair {
  name: string;
  value: string;
}

interface Draft {
  name: string;
  url: string;
  destination: string | null;
  events: string[];
  condition: string;
  format: (typeof WEBHOOK_FORMATS)[number];
  max_events: number;
  template: string;
  vars: Pair[];
  headers: Pair[];
  /** Requests per second at most, as typed; blank: none. */
  rate: string;
  /** PEMs of a new client certificate (blank: keep the stored one), or the stored one's removal. */
  certificate: { cert: string; key: string; remove: boolean };
  auth: AuthDraft;
}

const blank: Draft = {
  name: '',
  url: '',
  destination: null,
  events: [],
  condition: '',
  format: 'single',
  max_events: 1,
  template: '',
  vars: [],
  headers: [],
  rate: '',
  certificate: { cert: '', key: '', remove: false },
  auth: blankAuth,
};

/** What the form sends for the client certificate: a new one, null to remove it, or nothing to keep it. */
function certificateField(draft: Draft): { client_certificate?: { cert: string; key: string } | null } {
  if (draft.certificate.remove) return { client_certificate: null };
  const { cert, key } = draft.certificate;
  return cert.trim() !== '' || key.trim() !== '' ? { client_certificate: { cert, key } } : {};
}

/** A PEM field that takes pasted text or an uploaded file. */
function PemInput({
  id,
  label,
  value,
  onChange,
  describedBy,
}: {
  id: string;
  label: string;
  value: string;
  onChange: (v: string) => void;
  describedBy: string | undefined;
}) {
  return (
    <>
      <label htmlFor={id}>{label}</label>
      <textarea
        id={id}
        rows={4}
        spellCheck={false}
        autoComplete="off"
        value={value}
        placeholder="-----BEGIN …-----"
        onChange={(e) => onChange(e.target.value)}
        aria-describedby={describedBy}
      />
      <label className="file">
        Or upload a file{' '}
        <input
          type="file"
          accept=".pem,.crt,.cer,.key,text/plain"
          aria-label={`${label} file`}
          onChange={(e) => {
            const file = e.target.files?.[0];
            if (file) void file.text().then(onChange);
          }}
        />
      </label>
    </>
  );
}

function ClientCertificateEditor({
  draft,
  setDraft,
  stored,
  errors,
}: {
  draft: Draft;
  setDraft: (d: Draft) => void;
  stored: Webhook['client_certificate'] | undefined;
  errors: string[];
}) {
  const set = (part: Partial<Draft['certificate']>) =>
    setDraft({ ...draft, certificate: { ...draft.certificate, ...part } });
  const describedBy = errors.length ? 'client_certificate-error' : undefined;
  return (
    <fieldset aria-describedby={describedBy}>
      <legend>Client certificate (mTLS)</legend>
      <p className="muted">
        Presented when the receiver asks for one. The certificate and key are stored encrypted and never shown again;
        only the fingerprint and expiry are.
      </p>
      {stored ? (
        <dl className="fields" aria-label="Stored client certificate">
          <div>
            <dt>SHA-256 fingerprint</dt>
            <dd>
              <code className="fingerprint">{stored.fingerprint_sha256}</code>
            </dd>
          </div>
          <div>
            <dt>expires</dt>
            <dd>
              <time dateTime={stored.not_after}>{stored.not_after}</time>
            </dd>
          </div>
        </dl>
      ) : (
        <p className="muted">{draft.certificate.remove ? 'Removed on save.' : 'None stored.'}</p>
      )}
      {stored && (
        <label className="check">
          <input
            type="checkbox"
            checked={draft.certificate.remove}
            onChange={(e) => set({ remove: e.target.checked, cert: '', key: '' })}
          />{' '}
          Remove the stored certificate
        </label>
      )}
      {!draft.certificate.remove && (
        <>
          <PemInput
            id="client-cert"
            label={stored ? 'New certificate (PEM; blank keeps the stored one)' : 'Certificate (PEM, leaf first)'}
            value={draft.certificate.cert}
            onChange={(cert) => set({ cert })}
            describedBy={describedBy}
          />
          <PemInput
            id="client-key"
            label="Private key (PEM, unencrypted)"
            value={draft.certificate.key}
            onChange={(key) => set({ key })}
            describedBy={describedBy}
          />
        </>
      )}
      <FieldError id="client_certificate-error" messages={errors} />
    </fieldset>
  );
}

const toMap = (pairs: Pair[]) =>
  Object.fromEntries(pairs.filter((p) => p.name.trim() !== '').map((p) => [p.name.trim(), p.value]));
const withNames = (pairs: Pair[], names: string[]) => [
  ...pairs,
  ...names.filter((n) => !pairs.some((p) => p.name === n)).map((name) => ({ name, value: '' })),
];

function useDebounced<T>(value: T, ms: number): T {
  const [current, setCurrent] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setCurrent(value), ms);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return current;
}

/** Issues by the first segment of their path (`vars.token` → `vars`), as the API names them. */
function byField(issues: FieldIssue[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const issue of issues) {
    const [field = '', ...rest] = issue.path.split('.');
    (out[field] ??= []).push(rest.length ? `${rest.join('.')}: ${issue.message}` : issue.message);
  }
  return out;
}

function PairsEditor({
  legend,
  field,
  pairs,
  onChange,
  errors,
  keep,
}: {
  legend: string;
  field: string;
  pairs: Pair[];
  onChange: (p: Pair[]) => void;
  errors: string[];
  keep: boolean;
}) {
  return (
    <fieldset aria-describedby={errors.length ? `${field}-error` : undefined}>
      <legend>{legend}</legend>
      <p className="muted">
        Values are stored encrypted and never shown again.
        {keep ? ' Leave a value blank to keep the stored one; remove a row to delete it.' : ''}
      </p>
      {pairs.map((pair, i) => (
        <div className="pair" key={i}>
          <label>
            Name{' '}
            <input
              value={pair.name}
              onChange={(e) => onChange(pairs.map((p, j) => (j === i ? { ...p, name: e.target.value } : p)))}
            />
          </label>
          <label>
            Value{' '}
            <input
              type="password"
              autoComplete="off"
              value={pair.value}
              placeholder={keep ? 'unchanged' : ''}
              onChange={(e) => onChange(pairs.map((p, j) => (j === i ? { ...p, value: e.target.value } : p)))}
            />
          </label>
          <button
            type="button"
            aria-label={`Remove ${pair.name || 'row'}`}
            onClick={() => onChange(pairs.filter((_, j) => j !== i))}
          >
            Remove
          </button>
        </div>
      ))}
      <button type="button" onClick={() => onChange([...pairs, { name: '', value: '' }])}>
        Add {field === 'vars' ? 'variable' : 'header'}
      </button>
      <FieldError id={`${field}-error`} messages={errors} />
    </fieldset>
  );
}

function Preview({ draft }: { draft: Draft }) {
  const input = useDebounced(
    { template: draft.template, format: draft.format, max_events: draft.max_events, vars: toMap(draft.vars) },
    400,
  );
  const preview = useQuery({
    queryKey: ['preview', input],
    queryFn: () => api<{ bodies: { content_type: string; body: string }[] }>('POST', '/webhooks/preview', input),
    placeholderData: (previous) => previous,
    retry: false,
  });
  return (
    <section className="preview" aria-labelledby="preview-title" aria-live="polite">
      <h2 id="preview-title">
        Live preview <span className="muted">(sample event)</span>
      </h2>
      {preview.isPending && <Loading what="the preview" />}
      {preview.isError &&
        (preview.error instanceof ApiError && preview.error.status === 422 ? (
          <div role="alert" className="error-box">
            <strong>The API would refuse this</strong>
            <ul>
              {preview.error.details.map((d, i) => (
                <li key={i}>
                  <code>{d.path}</code>: {d.message}
                </li>
              ))}
            </ul>
          </div>
        ) : (
          <ErrorBox error={preview.error} what="Preview" />
        ))}
      {preview.data &&
        !preview.isError &&
        preview.data.bodies.map((b, i) => (
          <figure key={i}>
            <figcaption>
              Body {i + 1} · <code>{b.content_type}</code>
            </figcaption>
            <pre data-testid="preview-body" tabIndex={0}>
              {b.content_type === 'application/json' ? JSON.stringify(JSON.parse(b.body), null, 2) : b.body}
            </pre>
          </figure>
        ))}
    </section>
  );
}

/** Create or edit a webhook: destination presets, events, condition, template, secrets, live preview. */
export function WebhookForm() {
  const { id } = useParams();
  const editing = id !== undefined;
  const navigate = useNavigate();
  const client = useQueryClient();
  const presets = useQuery({
    queryKey: ['destinations'],
    queryFn: () => api<{ items: Preset[] }>('GET', '/destinations'),
    staleTime: Infinity,
  });
  const eventTypes = useQuery({
    queryKey: ['event-types'],
    queryFn: () => api<{ items: EventType[] }>('GET', '/event-types'),
    staleTime: Infinity,
  });
  const existing = useQuery({
    queryKey: ['webhook', id],
    queryFn: () => api<Webhook>('GET', `/webhooks/${id}`),
    enabled: editing,
  });
  const [draft, setDraft] = useState<Draft>(blank);
  const [loaded, setLoaded] = useState(!editing);
  const [issues, setIssues] = useState<FieldIssue[]>([]);

  useEffect(() => {
    if (editing && existing.data && !loaded) {
      const w = existing.data;
      setDraft({
        name: w.name,
        url: '',
        destination: w.destination,
        events: w.events,
        condition: w.condition,
        format: w.format,
        max_events: w.max_events,
        template: w.template,
        vars: Object.keys(w.vars).map((name) => ({ name, value: '' })),
        headers: Object.keys(w.headers).map((name) => ({ name, value: '' })),
        rate: w.rate_limit_per_second === null ? '' : String(w.rate_limit_per_second),
        certificate: { cert: '', key: '', remove: false },
        auth: authDraftOf(w.auth),
      });
      setLoaded(true);
    }
  }, [editing, existing.data, loaded]);

  // A message belongs to the value it was given for: editing the form clears it until the next save.
  useEffect(() => setIssues([]), [draft]);

  const body = useMemo(() => {
    const fields = {
      name: draft.name,
      events: draft.events,
      condition: draft.condition,
      destination: draft.destination,
      format: draft.format,
      max_events: draft.max_events,
      template: draft.template,
      vars: toMap(draft.vars),
      headers: toMap(draft.headers),
      rate_limit_per_second: draft.rate.trim() === '' ? null : Number(draft.rate),
      ...certificateField(draft),
      ...authField(draft.auth, existing.data?.auth),
    };
    return editing ? { ...fields, ...(draft.url ? { url: draft.url } : {}) } : { ...fields, url: draft.url };
  }, [draft, editing, existing.data]);

  const save = useMutation({
    mutationFn: () =>
      editing
        ? api<Webhook>('PATCH', `/webhooks/${id}`, body)
        : api<Webhook & { secret: string }>('POST', '/webhooks', body),
    onSuccess: (saved) => {
      void client.invalidateQueries({ queryKey: ['webhooks'] });
      client.setQueryData(['webhook', saved.id], saved);
      navigate(`/webhooks/${saved.id}`, { state: 'secret' in saved ? { secret: saved.secret } : undefined });
    },
    onError: (error) => setIssues(error instanceof ApiError ? error.details : []),
  });

  function submit(event: FormEvent) {
    event.preventDefault();
    // The API's own zod schema first, so a field rule is shown before any request; the API checks again.
    const checked = (editing ? patchWebhookSchema : createWebhookSchema).safeParse(body);
    if (!checked.success) {
      setIssues(checked.error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message })));
      return;
    }
    setIssues([]);
    save.mutate();
  }

  function applyPreset(preset: Preset) {
    setDraft((d) => ({
      ...d,
      destination: preset.id,
      format: preset.format,
      max_events: preset.max_events,
      template: preset.template,
      vars: withNames(d.vars, preset.vars),
      headers: withNames(d.headers, preset.headers),
      auth: authDraftOfPreset(preset, d.auth),
    }));
  }

  if (editing && existing.isError) return <ErrorBox error={existing.error} />;
  if (!loaded || presets.isPending || eventTypes.isPending) return <Loading what="the form" />;
  if (presets.isError || eventTypes.isError) return <ErrorBox error={presets.error ?? eventTypes.error} />;
  const errors = byField(issues);
  const err = (f: string) => errors[f] ?? [];
  const describedBy = (f: string) => (err(f).length ? `${f}-error` : undefined);
  const all = draft.events.includes('*');
  const toggle = (action: string, on: boolean) =>
    setDraft((d) => ({
      ...d,
      events:
        action === '*'
          ? on
            ? ['*']
            : []
          : on
            ? [...d.events.filter((e) => e !== '*'), action]
            : d.events.filter((e) => e !== action),
    }));
  const chosen = presets.data.items.find((p) => p.id === draft.destination);

  return (
    <section>
      <h1>{editing ? `Edit ${existing.data?.name ?? 'webhook'}` : 'New webhook'}</h1>
      <div className="form-grid">
        <form onSubmit={submit} noValidate aria-label={editing ? 'Edit webhook' : 'New webhook'}>
          <fieldset>
            <legend>Destination</legend>
            <p className="muted">
              A preset fills in template, format and batching, and names the variables and headers the receiver needs.
            </p>
            <div className="destinations" role="radiogroup" aria-label="Destination">
              {presets.data.items.map((p) => (
                <label key={p.id} className={draft.destination === p.id ? 'picked' : undefined}>
                  <input
                    type="radio"
                    name="destination"
                    value={p.id}
                    checked={draft.destination === p.id}
                    onChange={() => applyPreset(p)}
                  />
                  <DestinationLogo id={p.id} /> {p.label}
                </label>
              ))}
            </div>
            {chosen && (chosen.vars.length > 0 || chosen.headers.length > 0 || chosen.auth) && (
              <p className="hint">
                {chosen.label} needs{' '}
                {[
                  ...chosen.vars.map((v) => `variable ${v}`),
                  ...chosen.headers.map((h) => `header ${h}`),
                  ...(chosen.auth ? ['OAuth 2.0 credentials (tenant, client id, client secret)'] : []),
                ].join(', ')}
                : fill them in below.
              </p>
            )}
          </fieldset>
          <label htmlFor="name">Name</label>
          <input
            id="name"
            value={draft.name}
            onChange={(e) => setDraft({ ...draft, name: e.target.value })}
            aria-invalid={err('name').length > 0}
            aria-describedby={describedBy('name')}
          />
          <FieldError id="name-error" messages={err('name')} />
          <label htmlFor="url">URL (HTTPS)</label>
          <input
            id="url"
            type="url"
            value={draft.url}
            placeholder={editing ? `${existing.data?.url ?? ''} (leave blank to keep)` : 'https://…'}
            onChange={(e) => setDraft({ ...draft, url: e.target.value })}
            aria-invalid={err('url').length > 0}
            aria-describedby={describedBy('url')}
          />
          <FieldError id="url-error" messages={err('url')} />
          <fieldset aria-describedby={describedBy('events')}>
            <legend>Events</legend>
            <label className="check">
              <input type="checkbox" checked={all} onChange={(e) => toggle('*', e.target.checked)} /> <code>*</code>{' '}
              every event
            </label>
            <div className="event-list">
              {eventTypes.data.items.map((t) => (
                <label key={t.action} className="check" title={t.description}>
                  <input
                    type="checkbox"
                    disabled={all}
                    checked={draft.events.includes(t.action)}
                    onChange={(e) => toggle(t.action, e.target.checked)}
                  />{' '}
                  <code>{t.action}</code>
                </label>
              ))}
            </div>
            <FieldError id="events-error" messages={err('events')} />
          </fieldset>
          <label htmlFor="condition">Condition (CEL, optional)</label>
          <textarea
            id="condition"
            rows={2}
            value={draft.condition}
            placeholder='event.payload.severity == "critical"'
            onChange={(e) => setDraft({ ...draft, condition: e.target.value })}
            aria-invalid={err('condition').length > 0}
            aria-describedby={describedBy('condition')}
          />
          <FieldError id="condition-error" messages={err('condition')} />
          <div className="row">
            <label>
              Format
              <select
                value={draft.format}
                onChange={(e) => setDraft({ ...draft, format: e.target.value as Draft['format'] })}
              >
                {WEBHOOK_FORMATS.map((f) => (
                  <option key={f}>{f}</option>
                ))}
              </select>
            </label>
            <label>
              Events per request (max_events)
              <input
                type="number"
                min={1}
                max={100}
                value={draft.max_events}
                onChange={(e) => setDraft({ ...draft, max_events: Number(e.target.value) })}
                aria-describedby={describedBy('max_events')}
              />
            </label>
          </div>
          <FieldError id="max_events-error" messages={err('max_events')} />
          <label htmlFor="template">Payload template (Go text/template; blank sends the default envelope)</label>
          <textarea
            id="template"
            rows={8}
            spellCheck={false}
            value={draft.template}
            onChange={(e) => setDraft({ ...draft, template: e.target.value })}
            aria-invalid={err('template').length > 0}
            aria-describedby={describedBy('template')}
          />
          <FieldError id="template-error" messages={err('template')} />
          <PairsEditor
            legend="Variables (.Vars)"
            field="vars"
            pairs={draft.vars}
            onChange={(vars) => setDraft({ ...draft, vars })}
            errors={err('vars')}
            keep={editing}
          />
          <PairsEditor
            legend="Custom headers"
            field="headers"
            pairs={draft.headers}
            onChange={(headers) => setDraft({ ...draft, headers })}
            errors={err('headers')}
            keep={editing}
          />
          <label htmlFor="rate">
            Rate limit (requests per second to this webhook, across all workers; blank: none)
          </label>
          <input
            id="rate"
            type="number"
            min={1}
            max={10_000}
            step={1}
            value={draft.rate}
            placeholder="none"
            onChange={(e) => setDraft({ ...draft, rate: e.target.value })}
            aria-invalid={err('rate_limit_per_second').length > 0}
            aria-describedby={describedBy('rate_limit_per_second')}
          />
          <FieldError id="rate_limit_per_second-error" messages={err('rate_limit_per_second')} />
          <AuthEditor
            draft={draft.auth}
            setDraft={(auth) => setDraft({ ...draft, auth })}
            stored={existing.data?.auth}
            errors={err('auth')}
          />
          <ClientCertificateEditor
            draft={draft}
            setDraft={setDraft}
            stored={existing.data?.client_certificate}
            errors={err('client_certificate')}
          />
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
              {editing ? 'Save changes' : 'Create webhook'}
            </button>
            <Link className="button" to={editing ? `/webhooks/${id}` : '/webhooks'}>
              Cancel
            </Link>
          </div>
        </form>
        <Preview draft={draft} />
      </div>
    </section>
  );
}

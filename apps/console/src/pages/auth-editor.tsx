import type { Preset, Webhook } from '../api';
import { FieldError } from '../ui';

/** The OAuth 2.0 part of the webhook form (CONTRACT 20), as typed. */
export interface AuthDraft {
  type: 'none' | 'oauth2_client_credentials' | 'oauth2_jwt_bearer';
  token_url: string;
  /** A preset's token URL with `{tenant}` in it; the tenant field fills it in. */
  token_url_template: string | null;
  tenant: string;
  client_id: string;
  credential: 'client_secret' | 'private_key';
  client_secret: string;
  private_key: string;
  client_auth: 'body' | 'basic';
  key_id: string;
  issuer: string;
  subject: string;
  scope: string;
  audience: string;
}

export const blankAuth: AuthDraft = {
  type: 'none',
  token_url: '',
  token_url_template: null,
  tenant: '',
  client_id: '',
  credential: 'client_secret',
  client_secret: '',
  private_key: '',
  client_auth: 'body',
  key_id: '',
  issuer: '',
  subject: '',
  scope: '',
  audience: '',
};

/** The form's draft of a stored `auth` (its secret is never returned: blank keeps it). */
export function authDraftOf(stored: Webhook['auth']): AuthDraft {
  if (!stored) return blankAuth;
  return {
    ...blankAuth,
    type: stored.type,
    token_url: stored.token_url,
    client_id: stored.client_id ?? '',
    credential: stored.private_key !== undefined ? 'private_key' : 'client_secret',
    client_auth: stored.client_auth ?? 'body',
    key_id: stored.key_id ?? '',
    issuer: stored.issuer ?? '',
    subject: stored.subject ?? '',
    scope: stored.scope ?? '',
    audience: stored.audience ?? '',
  };
}

/** A preset's `auth` applied to the draft: its token URL (with `{tenant}` to fill in) and scope. */
export function authDraftOfPreset(preset: Preset, current: AuthDraft): AuthDraft {
  if (!preset.auth) return current;
  const templated = preset.auth.token_url.includes('{tenant}');
  return {
    ...current,
    type: preset.auth.type,
    credential: 'client_secret',
    client_auth: preset.auth.client_auth,
    scope: preset.auth.scope,
    token_url: templated ? '' : preset.auth.token_url,
    token_url_template: templated ? preset.auth.token_url : null,
  };
}

const orNull = (value: string) => (value.trim() === '' ? null : value.trim());

/** What the form sends as `auth`: an object, null to remove one, or nothing (create without auth). */
export function authField(
  draft: AuthDraft,
  stored: Webhook['auth'] | undefined,
): { auth?: Record<string, unknown> | null } {
  if (draft.type === 'none') return stored ? { auth: null } : {};
  const token_url = draft.token_url_template
    ? draft.token_url_template.replace('{tenant}', encodeURIComponent(draft.tenant.trim()))
    : draft.token_url.trim();
  const common = {
    type: draft.type,
    token_url,
    key_id: orNull(draft.key_id),
    scope: orNull(draft.scope),
    audience: orNull(draft.audience),
  };
  if (draft.type === 'oauth2_jwt_bearer')
    return {
      auth: { ...common, issuer: draft.issuer.trim(), subject: orNull(draft.subject), private_key: draft.private_key },
    };
  const secret =
    draft.credential === 'client_secret'
      ? { client_secret: draft.client_secret, client_auth: draft.client_auth }
      : { private_key: draft.private_key };
  return { auth: { ...common, client_id: draft.client_id.trim(), ...secret } };
}

function Text({
  id,
  label,
  value,
  onChange,
  type = 'text',
  placeholder,
}: {
  id: string;
  label: string;
  value: string;
  onChange: (v: string) => void;
  type?: string;
  placeholder?: string;
}) {
  return (
    <>
      <label htmlFor={id}>{label}</label>
      <input
        id={id}
        type={type}
        autoComplete="off"
        spellCheck={false}
        value={value}
        placeholder={placeholder}
        onChange={(e) => onChange(e.target.value)}
      />
    </>
  );
}

/**
 * OAuth 2.0: the service obtains and renews an access token and sends it as `Authorization: Bearer`. With a preset
 * whose token URL names a tenant (Microsoft Sentinel), the form asks only for tenant, client id and client secret.
 */
export function AuthEditor({
  draft,
  setDraft,
  stored,
  errors,
}: {
  draft: AuthDraft;
  setDraft: (d: AuthDraft) => void;
  stored: Webhook['auth'] | undefined;
  errors: string[];
}) {
  const set = (part: Partial<AuthDraft>) => setDraft({ ...draft, ...part });
  const keep = stored !== null && stored !== undefined && stored.type === draft.type;
  const secretPlaceholder = keep ? 'unchanged' : '';
  const describedBy = errors.length ? 'auth-error' : undefined;
  const preset = draft.token_url_template !== null;
  return (
    <fieldset aria-describedby={describedBy}>
      <legend>Authentication (OAuth 2.0)</legend>
      <p className="muted">
        The service obtains an access token, renews it before it expires, and sends it as{' '}
        <code>Authorization: Bearer</code>. Secrets are stored encrypted and never shown again.
        {keep ? ' Leave a secret blank to keep the stored one.' : ''}
      </p>
      <label htmlFor="auth-type">Type</label>
      <select
        id="auth-type"
        value={draft.type}
        onChange={(e) => set({ type: e.target.value as AuthDraft['type'], token_url_template: null })}
      >
        <option value="none">None</option>
        <option value="oauth2_client_credentials">Client credentials</option>
        <option value="oauth2_jwt_bearer">JWT bearer (service account)</option>
      </select>
      {draft.type !== 'none' && (
        <>
          {preset ? (
            <Text
              id="auth-tenant"
              label="Directory (tenant) ID"
              value={draft.tenant}
              onChange={(tenant) => set({ tenant })}
              placeholder="00000000-0000-0000-0000-000000000000"
            />
          ) : (
            <Text
              id="auth-token-url"
              label="Token URL (HTTPS)"
              value={draft.token_url}
              onChange={(token_url) => set({ token_url })}
              placeholder="https://…/token"
            />
          )}
          {draft.type === 'oauth2_client_credentials' ? (
            <>
              <Text
                id="auth-client-id"
                label={preset ? 'Application (client) ID' : 'Client ID'}
                value={draft.client_id}
                onChange={(client_id) => set({ client_id })}
              />
              {!preset && (
                <label>
                  Client authentication
                  <select
                    value={draft.credential === 'private_key' ? 'private_key_jwt' : draft.client_auth}
                    onChange={(e) =>
                      set(
                        e.target.value === 'private_key_jwt'
                          ? { credential: 'private_key' }
                          : { credential: 'client_secret', client_auth: e.target.value as 'body' | 'basic' },
                      )
                    }
                  >
                    <option value="body">Client secret in the body</option>
                    <option value="basic">Client secret as HTTP Basic</option>
                    <option value="private_key_jwt">Private key (private_key_jwt)</option>
                  </select>
                </label>
              )}
              {draft.credential === 'client_secret' ? (
                <Text
                  id="auth-client-secret"
                  label="Client secret"
                  type="password"
                  value={draft.client_secret}
                  placeholder={secretPlaceholder}
                  onChange={(client_secret) => set({ client_secret })}
                />
              ) : (
                <KeyField draft={draft} set={set} placeholder={secretPlaceholder} />
              )}
            </>
          ) : (
            <>
              <Text
                id="auth-issuer"
                label="Issuer (service account)"
                value={draft.issuer}
                onChange={(issuer) => set({ issuer })}
              />
              <Text
                id="auth-subject"
                label="Subject (optional)"
                value={draft.subject}
                onChange={(subject) => set({ subject })}
              />
              <KeyField draft={draft} set={set} placeholder={secretPlaceholder} />
            </>
          )}
          {!preset && (
            <>
              <Text id="auth-scope" label="Scope (optional)" value={draft.scope} onChange={(scope) => set({ scope })} />
              <Text
                id="auth-audience"
                label="Audience (optional)"
                value={draft.audience}
                onChange={(audience) => set({ audience })}
              />
            </>
          )}
        </>
      )}
      <FieldError id="auth-error" messages={errors} />
    </fieldset>
  );
}

function KeyField({
  draft,
  set,
  placeholder,
}: {
  draft: AuthDraft;
  set: (part: Partial<AuthDraft>) => void;
  placeholder: string;
}) {
  return (
    <>
      <label htmlFor="auth-private-key">Private key (PEM, unencrypted; RSA 2048–4096 or EC P-256/P-384)</label>
      <textarea
        id="auth-private-key"
        rows={4}
        spellCheck={false}
        autoComplete="off"
        value={draft.private_key}
        placeholder={placeholder || '-----BEGIN PRIVATE KEY-----'}
        onChange={(e) => set({ private_key: e.target.value })}
      />
      <Text
        id="auth-key-id"
        label="Key ID (kid, optional)"
        value={draft.key_id}
        onChange={(key_id) => set({ key_id })}
      />
    </>
  );
}

/** The stored `auth` as the webhook page shows it. */
export function authSummary(auth: Webhook['auth']): string {
  if (!auth) return '—';
  const who =
    auth.type === 'oauth2_client_credentials' ? `client ${auth.client_id ?? ''}` : `issuer ${auth.issuer ?? ''}`;
  const secret = auth.private_key !== undefined ? 'private key stored' : 'client secret stored';
  const kind = auth.type === 'oauth2_client_credentials' ? 'OAuth 2.0 client credentials' : 'OAuth 2.0 JWT bearer';
  return `${kind}, ${who}, token URL ${auth.token_url}${auth.scope ? `, scope ${auth.scope}` : ''} (${secret})`;
}

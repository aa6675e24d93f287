import { useState, type FormEvent } from 'react';
import { useLocation, useNavigate } from 'react-router';
import { api, session } from '../api';
import { ErrorBox } from '../ui';

/** Sign in with an API key: checked against the API, then kept in this tab's sessionStorage only. */
export function SignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const navigate = useNavigate();
  const from = (useLocation().state as { from?: string } | null)?.from ?? '/';

  async function submit(event: FormEvent) {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      // Any valid key may read the event catalogue: a 401 here means the key is not accepted.
      await api('GET', '/event-types', undefined, key.trim());
      session.signIn(key.trim());
      onSignedIn();
      navigate(from === '/signin' ? '/' : from, { replace: true });
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  }

  return (
    <main id="main" className="signin">
      <h1>Gatehook console</h1>
      <form onSubmit={submit} aria-describedby="signin-help">
        <label htmlFor="api-key">API key</label>
        <input
          id="api-key"
          name="api-key"
          type="password"
          autoComplete="off"
          required
          pattern="ghk_[A-Za-z0-9_\-]{43}"
          value={key}
          onChange={(e) => setKey(e.target.value)}
          placeholder="ghk_…"
        />
        <p id="signin-help" className="muted">
          The key stays in this browser tab only and is forgotten when you sign out or close the tab.
        </p>
        <button type="submit" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
      {error !== null && <ErrorBox error={error} what="Sign in" />}
    </main>
  );
}

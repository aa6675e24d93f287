import { useState, type ReactNode } from 'react';
import { ApiError, session } from './api';

/** Explains an error in words: what went wrong and what to do; never a blank screen. */
export function explain(error: unknown): { title: string; text: string } {
  if (!(error instanceof ApiError))
    return { title: 'Something went wrong', text: String((error as Error)?.message ?? error) };
  switch (error.status) {
    case 0:
      return { title: 'The API cannot be reached', text: 'Check that the Gatehook API is running, then try again.' };
    case 401:
      return {
        title: 'Your key is not accepted (401)',
        text: 'The API key is missing, unknown or revoked. Sign out and sign in with a valid key.',
      };
    case 403:
      return {
        title: 'Not allowed for this key (403)',
        text: `${error.message}. Ask an administrator for a key with the permission this needs.`,
      };
    case 404:
      return { title: 'Not found (404)', text: error.message };
    case 409:
      return { title: 'Not possible right now (409)', text: error.message };
    case 429:
      return { title: 'Too many requests (429)', text: `${error.message}. Wait a moment and try again.` };
    default:
      return { title: `Error ${error.status} (${error.code})`, text: error.message };
  }
}

export function ErrorBox({ error, what }: { error: unknown; what?: string }) {
  const { title, text } = explain(error);
  const unauthorised =
    error instanceof ApiError && error.status === 401 && !window.location.pathname.endsWith('/signin');
  return (
    <div role="alert" className="error-box">
      <strong>{what ? `${what}: ${title}` : title}</strong>
      <p>{text}</p>
      {unauthorised && (
        <button
          type="button"
          onClick={() => {
            session.signOut();
            window.location.assign(`${import.meta.env.BASE_URL}signin`);
          }}
        >
          Sign in again
        </button>
      )}
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p className="muted" role="status" aria-live="polite">
      Loading {what}…
    </p>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <p className="empty">{children}</p>;
}

export function Status({ value }: { value: string }) {
  return <span className={`badge badge-${value}`}>{value}</span>;
}

export function When({ at }: { at: string | null | undefined }) {
  if (!at) return <span className="muted">—</span>;
  return (
    <time dateTime={at} title={at}>
      {new Date(at).toLocaleString()}
    </time>
  );
}

/** A button that asks for confirmation in place before it acts (no browser dialog). */
export function ConfirmButton({
  label,
  confirm,
  onConfirm,
  danger,
  disabled,
}: {
  label: string;
  confirm: string;
  onConfirm: () => void;
  danger?: boolean;
  disabled?: boolean;
}) {
  const [asking, setAsking] = useState(false);
  if (!asking) {
    return (
      <button
        type="button"
        className={danger ? 'danger' : undefined}
        disabled={disabled}
        onClick={() => setAsking(true)}
      >
        {label}
      </button>
    );
  }
  return (
    <span className="confirm" role="group" aria-label={confirm}>
      <span>{confirm}</span>
      <button
        type="button"
        className="danger"
        autoFocus
        onClick={() => {
          setAsking(false);
          onConfirm();
        }}
      >
        Yes, {label.toLowerCase()}
      </button>
      <button type="button" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </span>
  );
}

/** Previous/next over a cursor-paged list route: the cursors seen so far form the way back. */
export function usePager() {
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const cursor = cursors[cursors.length - 1];
  return {
    cursor,
    page: cursors.length,
    reset: () => setCursors([undefined]),
    controls: (next: string | null | undefined) => (
      <nav className="pager" aria-label="Pages">
        <button type="button" disabled={cursors.length <= 1} onClick={() => setCursors((c) => c.slice(0, -1))}>
          Previous page
        </button>
        <span>Page {cursors.length}</span>
        <button type="button" disabled={!next} onClick={() => next && setCursors((c) => [...c, next])}>
          Next page
        </button>
      </nav>
    ),
  };
}

/** The messages of field `path` among a 422's details or a client-side check. */
export function FieldError({ id, messages }: { id: string; messages: string[] }) {
  if (messages.length === 0) return null;
  return (
    <ul id={id} className="field-error" role="alert">
      {messages.map((m, i) => (
        <li key={i}>{m}</li>
      ))}
    </ul>
  );
}

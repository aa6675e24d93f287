import { useQuery } from '@tanstack/react-query';
import { Link, useParams } from 'react-router';
import { api, type SentRequest } from '../api';
import { ErrorBox, Loading } from '../ui';

const REDACTED = '[redacted]';

/** The request a delivery's last attempt sent (CONTRACT 17): headers and body, secrets shown as [redacted]. */
export function DeliveryRequest() {
  const { id = '', deliveryId = '' } = useParams();
  const request = useQuery({
    queryKey: ['delivery-request', deliveryId],
    queryFn: () => api<SentRequest>('GET', `/webhooks/${id}/deliveries/${deliveryId}/request`),
  });
  const back = (
    <p>
      <Link to={`/webhooks/${id}/deliveries/${deliveryId}`}>← Back to the delivery</Link>
    </p>
  );
  if (request.isPending)
    return (
      <section>
        {back}
        <Loading what="the request" />
      </section>
    );
  if (request.isError)
    return (
      <section>
        {back}
        <ErrorBox error={request.error} what="Request as sent" />
      </section>
    );
  const r = request.data;
  const redacted = r.body.includes(REDACTED) || Object.values(r.headers).includes(REDACTED);
  // The API withholds a whole body rendered before a variable or header value changed (docs/operations.md).
  const withheld = r.body === REDACTED;
  return (
    <section>
      {back}
      <h1>Request as sent</h1>
      <p className="muted">
        The last attempt of delivery <code>{deliveryId}</code>: <code>POST</code> with these headers and this body.
        Custom header values, and every variable or custom header value found in the body, are shown as{' '}
        <code>{REDACTED}</code>.
        {withheld
          ? ' The body is withheld: it was rendered before a variable or header value of the webhook changed, so it may hold a value that can no longer be recognised.'
          : redacted
            ? ' Something was redacted here, so the signature does not verify against the body shown.'
            : ' Nothing needed redacting: the body is byte for byte what was signed.'}
      </p>
      <h2>Headers</h2>
      <table className="headers">
        <caption className="sr-only">Request headers</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Value</th>
          </tr>
        </thead>
        <tbody>
          {Object.entries(r.headers).map(([name, value]) => (
            <tr key={name}>
              <th scope="row">
                <code>{name}</code>
              </th>
              <td>
                <code className={value === REDACTED ? 'redacted' : undefined}>{value}</code>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>
        Body <span className="muted">({r.content_type})</span>
      </h2>
      <pre data-testid="request-body" className="request-body">
        {r.body}
      </pre>
    </section>
  );
}

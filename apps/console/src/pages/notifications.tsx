import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { api, query, type Notification, type Page } from '../api';
import { Empty, ErrorBox, Loading, usePager, When } from '../ui';

/** In-app notifications (automatic webhook disables), newest first, each linking to its webhook. */
export function NotificationsPage() {
  const pager = usePager();
  const list = useQuery({
    queryKey: ['notifications', pager.cursor],
    queryFn: () => api<Page<Notification>>('GET', `/notifications${query({ limit: 50, cursor: pager.cursor })}`),
  });
  return (
    <section>
      <h1>Notifications</h1>
      {list.isPending && <Loading what="notifications" />}
      {list.isError && <ErrorBox error={list.error} />}
      {list.data && list.data.items.length === 0 && (
        <Empty>
          No notifications. Webhooks disabled automatically (circuit breaker, gone, template error) are reported here.
        </Empty>
      )}
      {list.data && list.data.items.length > 0 && (
        <ul className="notifications">
          {list.data.items.map((n) => (
            <li key={n.id} className={n.read_at ? 'read' : 'unread'}>
              <p>{n.message}</p>
              <p className="muted">
                <When at={n.created_at} /> · {n.kind}
                {n.webhook_id && (
                  <>
                    {' '}
                    · <Link to={`/webhooks/${n.webhook_id}`}>Open the webhook</Link>
                  </>
                )}
              </p>
            </li>
          ))}
        </ul>
      )}
      {list.data && pager.controls(list.data.next_cursor)}
    </section>
  );
}

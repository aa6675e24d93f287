import { QueryClient, QueryClientProvider, useQuery } from '@tanstack/react-query';
import { StrictMode, type ReactNode } from 'react';
import { createRoot } from 'react-dom/client';
import {
  BrowserRouter,
  Link,
  Navigate,
  NavLink,
  Route,
  Routes,
  useLocation,
  useNavigate,
  useParams,
} from 'react-router';
import { AccessProvider, useAccess, useAccessProbe } from './access';
import { api, ApiError, session, type Notification, type Page } from './api';
import { DeliveryRequest } from './pages/delivery-request';
import { NotificationsPage } from './pages/notifications';
import { RuleDetail, RuleForm, RulesList } from './pages/rules';
import { SignIn } from './pages/signin';
import { WebhookForm } from './pages/webhook-form';
import { DeliveryDetail, WebhookDetail, WebhooksList } from './pages/webhooks';
import { ErrorBox, Loading } from './ui';
import './styles.css';

const queryClient = new QueryClient({
  defaultOptions: {
    // A 4xx will answer the same again: show it at once instead of retrying.
    queries: {
      retry: (count, error) => !(error instanceof ApiError && error.status >= 400 && error.status < 500) && count < 2,
      refetchOnWindowFocus: false,
    },
  },
});

function UnreadBadge() {
  const notifications = useQuery({
    queryKey: ['notifications', 'unread'],
    queryFn: () => api<Page<Notification>>('GET', '/notifications?limit=100'),
    refetchInterval: 15_000,
  });
  const unread = notifications.data?.items.filter((n) => n.read_at === null).length ?? 0;
  return (
    <NavLink to="/notifications">
      Notifications{' '}
      <span className="count" aria-label={`${unread} unread`}>
        {unread}
      </span>
    </NavLink>
  );
}

function Shell({ children }: { children: ReactNode }) {
  const access = useAccess();
  const navigate = useNavigate();
  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <Link to="/" className="brand">
          Gatehook
        </Link>
        <nav aria-label="Main">
          {access.manageWebhooks && <NavLink to="/webhooks">Webhooks</NavLink>}
          {access.viewRules && <NavLink to="/rate-limits">Rate limit rules</NavLink>}
          {access.admin && <UnreadBadge />}
        </nav>
        <button
          type="button"
          onClick={() => {
            session.signOut();
            queryClient.clear();
            navigate('/signin');
          }}
        >
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        {children}
      </main>
    </>
  );
}

function Home() {
  const access = useAccess();
  if (access.manageWebhooks) return <Navigate to="/webhooks" replace />;
  if (access.viewRules) return <Navigate to="/rate-limits" replace />;
  return (
    <section>
      <h1>Nothing to show for this key</h1>
      <p>
        This key holds neither <code>manage_webhooks</code> nor <code>view_rate_limits</code>, so the console has
        nothing it may show. Ask an administrator for a key with one of them.
      </p>
    </section>
  );
}

function Guarded({ allowed, what, children }: { allowed: boolean; what: string; children: ReactNode }) {
  if (allowed) return <>{children}</>;
  return <ErrorBox error={new ApiError(403, 'forbidden', `This key may not ${what}`)} />;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Renders its page only when every parameter of the route is a UUID, as every id of the API is. Pages put their
 * route's ids into API paths; the router hands them over decoded, so `..%2F..%2Frate-limits%2Frules` would be
 * `../../rate-limits/rules` there and the browser would resolve the request to another route of the API. Anything
 * else shows not found and makes no request.
 */
function IdParams({ children }: { children: ReactNode }) {
  const params = useParams();
  if (Object.values(params).every((value) => value !== undefined && UUID.test(value))) return <>{children}</>;
  return <ErrorBox error={new ApiError(404, 'not_found', 'No such item: the address does not hold a valid id')} />;
}

function SignedIn() {
  const probe = useAccessProbe();
  if (probe.isPending) return <Loading what="your permissions" />;
  if (probe.isError) return <ErrorBox error={probe.error} what="Signing in" />;
  const a = probe.data;
  return (
    <AccessProvider value={a}>
      <Shell>
        <Routes>
          <Route path="/" element={<Home />} />
          <Route
            path="/webhooks"
            element={
              <Guarded allowed={a.manageWebhooks} what="list webhooks (manage_webhooks)">
                <WebhooksList />
              </Guarded>
            }
          />
          <Route
            path="/webhooks/new"
            element={
              <Guarded allowed={a.admin} what="create webhooks (admin)">
                <WebhookForm />
              </Guarded>
            }
          />
          <Route
            path="/webhooks/:id"
            element={
              <Guarded allowed={a.manageWebhooks} what="view webhooks (manage_webhooks)">
                <IdParams>
                  <WebhookDetail />
                </IdParams>
              </Guarded>
            }
          />
          <Route
            path="/webhooks/:id/edit"
            element={
              <Guarded allowed={a.admin} what="edit webhooks (admin)">
                <IdParams>
                  <WebhookForm />
                </IdParams>
              </Guarded>
            }
          />
          <Route
            path="/webhooks/:id/deliveries/:deliveryId"
            element={
              <Guarded allowed={a.manageWebhooks} what="view deliveries (manage_webhooks)">
                <IdParams>
                  <DeliveryDetail />
                </IdParams>
              </Guarded>
            }
          />
          <Route
            path="/webhooks/:id/deliveries/:deliveryId/request"
            element={
              <Guarded allowed={a.manageWebhooks} what="view deliveries (manage_webhooks)">
                <IdParams>
                  <DeliveryRequest />
                </IdParams>
              </Guarded>
            }
          />
          <Route
            path="/notifications"
            element={
              <Guarded allowed={a.admin} what="read notifications (admin)">
                <NotificationsPage />
              </Guarded>
            }
          />
          <Route
            path="/rate-limits"
            element={
              <Guarded allowed={a.viewRules} what="view rate limit rules (view_rate_limits)">
                <RulesList />
              </Guarded>
            }
          />
          <Route
            path="/rate-limits/new"
            element={
              <Guarded allowed={a.manageRules} what="create rules (manage_rate_limits)">
                <RuleForm />
              </Guarded>
            }
          />
          <Route
            path="/rate-limits/:id"
            element={
              <Guarded allowed={a.viewRules} what="view rate limit rules (view_rate_limits)">
                <IdParams>
                  <RuleDetail />
                </IdParams>
              </Guarded>
            }
          />
          <Route
            path="/rate-limits/:id/edit"
            element={
              <Guarded allowed={a.manageRules} what="edit rules (manage_rate_limits)">
                <IdParams>
                  <RuleForm />
                </IdParams>
              </Guarded>
            }
          />
          <Route
            path="*"
            element={<ErrorBox error={new ApiError(404, 'not_found', 'No console page at this address')} />}
          />
        </Routes>
      </Shell>
    </AccessProvider>
  );
}

function App() {
  const location = useLocation();
  if (location.pathname === '/signin') return <SignIn onSignedIn={() => queryClient.clear()} />;
  if (!session.key()) return <Navigate to="/signin" replace state={{ from: location.pathname }} />;
  return <SignedIn />;
}

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <BrowserRouter basename="/console">
        <App />
      </BrowserRouter>
    </QueryClientProvider>
  </StrictMode>,
);

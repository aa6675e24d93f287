import { useQuery } from '@tanstack/react-query';
import { createContext, useContext, type ReactNode } from 'react';
import { api, ApiError } from './api';

/** What the signed-in key may do, probed from the API's own answers (no route is added for it). */
export interface Access {
  admin: boolean;
  manageWebhooks: boolean;
  viewRules: boolean;
  manageRules: boolean;
}

// Each probe is side-effect free: a read, or a write whose permission is checked before its (invalid) body, so
// the answer is 403 without the permission and 200 or 422 with it.
async function allowed(call: Promise<unknown>): Promise<boolean> {
  try {
    await call;
    return true;
  } catch (error) {
    if (error instanceof ApiError && error.status === 403) return false;
    if (error instanceof ApiError && error.status === 422) return true;
    throw error;
  }
}

export async function probeAccess(): Promise<Access> {
  const [admin, manageWebhooks, viewRules, manageRules] = await Promise.all([
    allowed(api('POST', '/webhooks/preview', {})),
    allowed(api('GET', '/webhooks?limit=1')),
    allowed(api('GET', '/rate-limits/rules?limit=1')),
    allowed(api('POST', '/rate-limits/rules', {})),
  ]);
  return { admin, manageWebhooks, viewRules, manageRules };
}

const AccessContext = createContext<Access>({
  admin: false,
  manageWebhooks: false,
  viewRules: false,
  manageRules: false,
});

export function useAccess(): Access {
  return useContext(AccessContext);
}

export function useAccessProbe() {
  return useQuery({ queryKey: ['access'], queryFn: probeAccess, staleTime: Infinity, retry: false });
}

export function AccessProvider({ value, children }: { value: Access; children: ReactNode }) {
  return <AccessContext.Provider value={value}>{children}</AccessContext.Provider>;
}

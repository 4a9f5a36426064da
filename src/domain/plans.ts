import { PLANS, type Plan } from '../store/tables.js';

/** The plans an account may be on: its row's (src/store/tables.ts). */
export { PLANS, type Plan };

export interface Limits {
  readonly perMinute: number;
  readonly perDay: number;
}

/** The seed's plan table. Enterprise numbers are set per account (CLI `accounts set-plan`). */
const PLAN_LIMITS: Record<Exclude<Plan, 'enterprise'>, Limits> = {
  free: { perMinute: 60, perDay: 1_000 },
  pro: { perMinute: 300, perDay: 10_000 },
  business: { perMinute: 1_000, perDay: 100_000 },
};

export function isPlan(value: string): value is Plan {
  return (PLANS as readonly string[]).includes(value);
}

/** Enterprise without custom numbers yet gets Business numbers until they are set. */
export function limitsFor(plan: Plan, custom: Partial<Limits> = {}): Limits {
  const base = plan === 'enterprise' ? PLAN_LIMITS.business : PLAN_LIMITS[plan];
  if (plan !== 'enterprise') return base;
  return { perMinute: custom.perMinute ?? base.perMinute, perDay: custom.perDay ?? base.perDay };
}

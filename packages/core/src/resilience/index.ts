export type {
  ResilienceBreakerOptions,
  ResilienceBudgetOptions,
  ResilienceEvent,
  ResilienceOptions,
  ResilienceSnapshot,
  ResilienceWindow,
} from './types';
export { RESILIENCE_DEFAULTS, resolveResilience, type ResolvedResilience } from './options';
export {
  createResilienceGate,
  WHOLE_CONSUMER_KEY,
  type Admitted,
  type Refused,
  type ResilienceGate,
} from './gate';
export { withResilience, type ResilientInbox } from './resilient-inbox';
export { driveIntake, IntakeDriver, type Intake, type IntakeDriving } from './intake';

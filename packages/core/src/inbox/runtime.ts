import { errorText } from '../common/errors';
import { storableDiagnostic, textOf } from '../common/text';
import type { ActivityRecorder } from './activity';
import type { Instruments } from './instruments';
import type { ResolvedInboxOptions } from './options';
import type { InboxStep } from './types';

/** What the processing functions of one inbox share. @internal */
export interface InboxRuntime {
  readonly options: ResolvedInboxOptions;
  readonly instruments: Instruments;
  /** Per-minute counts for `consumer_activity`, flushed off the hot path. */
  readonly activity: ActivityRecorder;
  /** Runs the `onStep` hook, if any; a throw propagates like a crash at that point. */
  step(step: InboxStep, messageId: string): Promise<void>;
}

/**
 * The error as stored in attempt counters: name, message and code, never a payload, made
 * storable (an error message may quote the bad input itself). @internal
 */
export function storedError(error: Error): { name: string; message: string; code?: string } {
  const code = (error as { code?: unknown }).code;
  return {
    name: storableDiagnostic(textOf(error.name)),
    message: errorText(textOf(error.message)),
    ...(typeof code === 'string' || typeof code === 'number'
      ? { code: storableDiagnostic(textOf(code)) }
      : {}),
  };
}
